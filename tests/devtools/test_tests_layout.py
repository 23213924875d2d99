"""The test suite's own layout (tests/README.md, issue #53 item 7): test modules in folders that mirror
src/modprefs or in a named group, unique file names, shared helpers imported from the ``support`` package,
no ``sys.path`` edits and no imports from test modules or conftest."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
SRC = ROOT / "src" / "modprefs"
#: folders of test modules that test no one module of src/modprefs
GROUPS = {"workflow", "docs", "benchmarks"}


def _py_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def _mirrors_src(folder: str) -> bool:
    """A subpackage of src/modprefs, or the name (or the prefix of a family) of its top-level modules."""
    if (SRC / folder).is_dir() and any((SRC / folder).glob("*.py")):
        return True
    return any(m.stem == folder or m.stem.startswith(folder + "_") for m in SRC.glob("*.py"))


def test_every_test_module_is_in_a_folder_that_mirrors_src_or_a_named_group():
    misplaced = []
    for path in TESTS.rglob("test_*.py"):
        parts = path.relative_to(TESTS).parts
        if len(parts) < 2 or not (_mirrors_src(parts[0]) or parts[0] in GROUPS):
            misplaced.append(str(path.relative_to(ROOT)))
        elif parts[0] == "stats" and len(parts) > 2 and not (SRC / Path(*parts[:-1])).is_dir():
            misplaced.append(str(path.relative_to(ROOT)))  # tests/stats/<x>/ mirrors src/modprefs/stats/<x>/
    assert not misplaced, f"test modules outside a folder named in tests/README.md: {sorted(misplaced)}"


def test_test_module_names_are_unique_and_folders_are_not_packages():
    """pytest's default (prepend) import mode imports a test module by its file name alone."""
    seen: dict[str, list[str]] = {}
    for path in TESTS.rglob("test_*.py"):
        seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert not {n: p for n, p in seen.items() if len(p) > 1}
    packages = [str(p.relative_to(ROOT)) for p in TESTS.rglob("__init__.py") if p.parent.name != "support"]
    assert not packages, f"only tests/support is a package: {packages}"


def _edits_sys_path(tree: ast.AST) -> list[int]:
    """Lines that touch ``sys.path`` outside an ``if __package__ ...`` block (a helper run as a script)."""
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "__package__" in ast.unparse(node.test):
            allowed.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
        and node.lineno not in allowed
    ]


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            if node.module == "support":
                found += [(node.lineno, f"support.{alias.name}") for alias in node.names]
    return found


def test_no_sys_path_edits_and_no_imports_from_test_modules():
    problems = []
    for path in _py_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = path.relative_to(ROOT)
        problems += [f"{rel}:{line}: sys.path" for line in _edits_sys_path(tree)]
        for line, module in _imported_modules(tree):
            last = module.rsplit(".", 1)[-1]
            if last.startswith("test_") or last == "conftest" or module.split(".")[0].startswith("test_"):
                problems.append(f"{rel}:{line}: imports {module} (move what it needs to tests/support)")
    assert not problems, "\n".join(problems)


def test_the_ordering_lists_name_existing_files():
    """tests/conftest.py orders files by their path (LONGEST_FIRST, ON_THE_DEFAULT_RUN): a moved file must be
    renamed there too. Read from its source, as importing a conftest by name is what this module forbids."""
    tree = ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8"))
    listed = [
        const.value
        for node in tree.body
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets)
        for const in ast.walk(node.value)
        if isinstance(const, ast.Constant) and isinstance(const.value, str) and const.value.startswith("tests/")
    ]
    assert len(listed) >= 2 and [p for p in listed if not (ROOT / p).is_file()] == []
