"""The codebase's shape, checked: no import cycles in ``src/``, thin adapters, short functions and modules.

Four rules a newcomer can rely on (issues #16 and #53):

1. **No import cycles** among ``modprefs`` modules (:func:`import_cycles`): every import counts,
   at module level or inside a function (a lazy import hides a cycle from Python, not from a reader),
   except those under ``if TYPE_CHECKING:``.
2. **Thin adapters** (:func:`long_files`): every ``workflow/scripts/*.py`` has at most
   :data:`MAX_ADAPTER_LINES` lines; logic lives in the library, where it is tested.
3. **Short functions** (:func:`long_functions`): no function or method in ``src/`` spans more than
   :data:`MAX_FUNCTION_LINES` lines (decorators to last line; nested functions count towards their parent).
4. **Modules split at their seams** (:func:`long_modules`): no module in ``src/`` has more than
   :data:`MAX_MODULE_LINES` lines unless its docstring states why, in a sentence beginning
   ``Kept in one module:``.

    python -m modprefs.devtools.layout        # prints every violation; exit 1 if any
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
MAX_ADAPTER_LINES = 40
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 600
KEPT_WHOLE = "Kept in one module:"


def module_name(path: Path, src: Path) -> str:
    """``src/modprefs/stats/reliability/icc.py`` -> ``modprefs.stats.reliability.icc``.

    A package's ``__init__`` is the package.
    """
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _type_checking_lines(tree: ast.Module) -> set[int]:
    """Line numbers inside ``if TYPE_CHECKING:`` blocks (imports for annotations only)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imported_modules(path: Path, name: str, known: set[str]) -> set[str]:
    """The ``known`` modules that the file ``path`` (module ``name``) imports, anywhere in it."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skip = _type_checking_lines(tree)
    out: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                sub = f"{module}.{alias.name}"
                out.add(sub if sub in known else module)
    return {m for m in out if m in known and m != name}


def import_graph(src: Path) -> dict[str, set[str]]:
    """{module: the modules it imports} over every ``*.py`` under ``src`` (names relative to ``src``)."""
    files = {module_name(p, src): p for p in sorted(src.rglob("*.py"))}
    known = set(files)
    return {name: imported_modules(path, name, known) for name, path in files.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (each sorted; Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return sorted(cycles)


def long_files(folder: Path, limit: int = MAX_ADAPTER_LINES) -> list[tuple[str, int]]:
    """``(path, lines)`` of every ``*.py`` directly in ``folder`` with more than ``limit`` lines."""
    out = []
    for path in sorted(folder.glob("*.py")):
        n = len(path.read_text().splitlines())
        if n > limit:
            out.append((str(path), n))
    return out


@dataclass(frozen=True)
class LongFunction:
    """A function over the limit: file, qualified name, first line and length in lines."""

    path: str
    name: str
    line: int
    lines: int


def long_functions(src: Path, limit: int = MAX_FUNCTION_LINES) -> list[LongFunction]:
    """Every function or method under ``src`` spanning more than ``limit`` lines (outermost only)."""
    out = []
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        todo: list[tuple[ast.AST, str]] = [(tree, "")]
        while todo:
            node, prefix = todo.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    todo.append((child, f"{prefix}{child.name}."))
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    n = (child.end_lineno or child.lineno) - start + 1
                    if n > limit:
                        out.append(LongFunction(str(path), f"{prefix}{child.name}", start, n))
    return sorted(out, key=lambda f: (f.path, f.line))


def long_modules(src: Path, limit: int = MAX_MODULE_LINES) -> list[tuple[str, int]]:
    """``(path, lines)`` of every module under ``src`` over ``limit`` lines whose docstring gives no
    reason (a sentence beginning :data:`KEPT_WHOLE`)."""
    out = []
    for path in sorted(src.rglob("*.py")):
        text = path.read_text()
        n = len(text.splitlines())
        if n > limit and KEPT_WHOLE not in (ast.get_docstring(ast.parse(text, filename=str(path))) or ""):
            out.append((str(path), n))
    return out


def _relative(path: str, repo: Path) -> str:
    p = Path(path)
    return str(p.relative_to(repo)) if p.is_relative_to(repo) else path


def violations(repo: Path = REPO) -> list[str]:
    """Every violation of the four rules in ``repo``, one line each."""
    src = repo / "src"
    lines = [f"import cycle: {' <-> '.join(c)}" for c in import_cycles(import_graph(src))]
    lines += [
        f"adapter over {MAX_ADAPTER_LINES} lines: {_relative(p, repo)} ({n})"
        for p, n in long_files(repo / "workflow/scripts")
    ]
    lines += [
        f"function over {MAX_FUNCTION_LINES} lines: {_relative(f.path, repo)}:{f.line} {f.name} ({f.lines})"
        for f in long_functions(src)
    ]
    lines += [
        f"module over {MAX_MODULE_LINES} lines without a reason: {_relative(p, repo)} ({n})"
        for p, n in long_modules(src)
    ]
    return lines


def main() -> int:
    found = violations()
    for line in found:
        print(line)
    print(f"{len(found)} violation(s)" if found else "layout: no import cycles; adapters, functions and modules short")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
