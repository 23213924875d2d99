"""Does every conda environment in ``envs/`` list what its rules' scripts import?

``snakemake --use-conda`` runs each rule's script in the environment named by its ``conda:``
directive. Nothing at run time checks that the environment holds every distribution the script
imports, directly or through ``modprefs``; on a laptop (one virtualenv with everything) a missing
entry goes unnoticed until a cluster user runs with conda. This module finds, statically:

1. each rule's environment and script (:func:`rule_environments`, from ``rules/*.smk``);
2. the script's import closure (:func:`third_party_imports`): the ``modprefs`` modules it loads (module-level
   imports, followed into their sources), and every third-party module any of those imports, at module
   level or inside a function. A ``modprefs`` module imported only inside a function is an optional
   feature loaded on use (e.g. the ``hf://`` ratings source) and is not followed; imports guarded by
   ``try: ... except ImportError`` or ``if TYPE_CHECKING:`` are left out;
3. the distributions providing those modules, from this interpreter's installed metadata
   (:func:`importlib.metadata.packages_distributions`), compared with what the environment file's conda
   and pip entries install: the listed distributions and their own requirements, transitively, as
   installed here (:func:`environment_distributions`).

    python -m modprefs.devtools.env_closure      # prints each rule's missing distributions; exit 1 if any
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import packages_distributions
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
# conda-forge names that differ from the PyPI distribution (both normalised)
CONDA_TO_PYPI = {"pysoundfile": "soundfile", "pytorch": "torch"}
# provided by the tool running the rule, not by the rule's environment
PROVIDED = {"snakemake", "modprefs"}


@dataclass(frozen=True)
class RuleEnvironment:
    """A rule whose ``script:`` runs in a conda environment (absolute paths)."""

    rule: str
    smk: Path
    env: Path
    script: Path


def normalise(name: str) -> str:
    """PEP 503 normalised distribution name (``Foo_Bar`` -> ``foo-bar``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def rule_environments(rules_dir: Path = REPO / "rules") -> list[RuleEnvironment]:
    """Every ``rule``/``checkpoint`` in ``rules_dir/*.smk`` with both a ``conda:`` and a ``script:`` directive."""
    out = []
    for smk in sorted(rules_dir.glob("*.smk")):
        blocks = re.split(r"^(?=(?:rule|checkpoint) \w+:)", smk.read_text(encoding="utf-8"), flags=re.M)
        for block in blocks:
            name = re.match(r"(?:rule|checkpoint) (\w+):", block)
            env = re.search(r"^\s+conda:\s*\n\s+\"([^\"]+)\"", block, flags=re.M)
            script = re.search(r"^\s+script:\s*\n\s+\"([^\"]+)\"", block, flags=re.M)
            if name and env and script:
                out.append(
                    RuleEnvironment(
                        name.group(1),
                        smk,
                        (smk.parent / env.group(1)).resolve(),
                        (smk.parent / script.group(1)).resolve(),
                    )
                )
    return out


def _in_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    parent = parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return True
        parent = parents.get(parent)
    return False


def _guarded(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether an import is optional (``try: ... except ImportError``, ``if TYPE_CHECKING:``)."""
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.Try) and child in parent.body:
            names = {ast.unparse(h.type) for h in parent.handlers if h.type is not None}
            if any(n in text for text in names for n in ("ImportError", "ModuleNotFoundError")):
                return True
        if isinstance(parent, ast.If) and "TYPE_CHECKING" in ast.unparse(parent.test) and child in parent.body:
            return True
        child, parent = parent, parents.get(parent)
    return False


def _imports(path: Path, package: str | None) -> set[tuple[str, bool]]:
    """(absolute dotted name, imported inside a function) for each import of the module at ``path``
    (``package``: its package, for relative imports)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    names: set[tuple[str, bool]] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom) or _guarded(node, parents):
            continue
        lazy = _in_function(node, parents)
        if isinstance(node, ast.Import):
            names.update((alias.name, lazy) for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            parts = (package or "").split(".")
            parts = parts[: len(parts) - node.level + 1]
            base = ".".join([*parts, base] if base else parts)
        names.add((base, lazy))
        names.update((f"{base}.{alias.name}", lazy) for alias in node.names)  # a submodule, or an attribute
    return names


def _module_file(name: str, src: Path) -> Path | None:
    rel = src.joinpath(*name.split("."))
    for candidate in (rel.with_suffix(".py"), rel / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def third_party_imports(script: Path, src: Path = REPO / "src") -> set[str]:
    """Top-level names of the non-stdlib modules in ``script``'s import closure through ``modprefs``."""
    seen: set[Path] = set()
    todo: list[tuple[Path, str | None]] = [(script, None)]
    found: set[str] = set()
    while todo:
        path, package = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name, lazy in _imports(path, package):
            top = name.split(".")[0]
            if top == "modprefs" and lazy:
                continue
            if top == "modprefs":
                parts = name.split(".")
                for i in range(1, len(parts) + 1):  # importing a.b.c runs a, a.b and a.b.c
                    file = _module_file(".".join(parts[:i]), src)
                    if file is not None:
                        pkg = ".".join(parts[:i]) if file.name == "__init__.py" else ".".join(parts[: i - 1])
                        todo.append((file, pkg))
            elif top and top not in sys.stdlib_module_names and top != "__future__":
                found.add(top)
    return found


def _with_requirements(names: set[str]) -> set[str]:
    """``names`` and, transitively, the requirements (no extras) their installed metadata declares."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement

    out, todo = set(names), list(names)
    while todo:
        try:
            reqs = requires(todo.pop()) or []
        except PackageNotFoundError:
            continue
        for text in reqs:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            name = normalise(req.name)
            if name not in out:
                out.add(name)
                todo.append(name)
    return out


def environment_distributions(env_file: Path) -> set[str]:
    """Normalised names of the distributions an environment file installs: its conda entries and ``pip:``
    list, and their requirements (transitively, from the metadata installed here)."""
    spec = yaml.safe_load(env_file.read_text(encoding="utf-8"))
    names: set[str] = set()

    def add(entry: str) -> None:
        name = normalise(re.split(r"[<>=!~ \[]", entry.strip(), maxsplit=1)[0])
        names.add(CONDA_TO_PYPI.get(name, name))

    for dep in spec.get("dependencies", []):
        if isinstance(dep, dict):
            for entry in dep.get("pip", []):
                add(entry)
        else:
            add(dep)
    return _with_requirements(names)


def missing_distributions(
    rules: Iterable[RuleEnvironment] | None = None, src: Path = REPO / "src"
) -> dict[str, dict[str, list[str]]]:
    """Rule -> {module: distributions providing it} for every imported module whose distribution(s) the
    rule's environment does not list (``"?"`` when nothing installed here provides the module)."""
    providers = packages_distributions()
    out: dict[str, dict[str, list[str]]] = {}
    for r in rules if rules is not None else rule_environments():
        listed = environment_distributions(r.env)
        for module in sorted(third_party_imports(r.script, src) - PROVIDED):
            dists = sorted({normalise(d) for d in providers.get(module, [])}) or ["?"]
            if not set(dists) & listed:
                out.setdefault(r.rule, {})[module] = dists
    return out


def main() -> int:
    envs = {r.rule: r for r in rule_environments()}
    problems = missing_distributions(envs.values())
    for rule, modules in problems.items():
        r = envs[rule]
        print(
            f"{r.env.relative_to(REPO)} (rule {rule}, {r.script.relative_to(REPO)}): missing "
            + ", ".join(f"{m} ({'/'.join(d)})" for m, d in modules.items())
        )
    print(f"{len(envs)} rules checked, {len(problems)} with missing distributions")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
