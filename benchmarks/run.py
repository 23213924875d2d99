"""Run a benchmark by name: the one entry point to benchmarks/performance, benchmarks/validity and benchmarks/tools.

    .venv/bin/python benchmarks/run.py --list            # every script, its group and its question
    .venv/bin/python benchmarks/run.py NAME [ARGS...]    # runs benchmarks/<group>/NAME.py ARGS... (e.g. table2_null)

The script runs as itself (a new Python process, the same interpreter), so its ``--help``, its outputs in
benchmarks/out and its exit status are the script's own. benchmarks/README.md indexes what each script answers,
what it writes and where that is cited.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GROUPS = ("performance", "validity", "tools")


def scripts() -> dict[str, Path]:
    """{name: path} of every benchmark script (helpers whose name starts with ``_`` are left out)."""
    found: dict[str, Path] = {}
    for group in GROUPS:
        for path in sorted((HERE / group).glob("*.py")):
            if not path.name.startswith("_"):
                found[path.stem] = path
    return found


def question(path: Path) -> str:
    """The first line of the script's docstring."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return doc.splitlines()[0] if doc else ""


def main(argv: list[str]) -> int:
    found = scripts()
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if argv[0] == "--list":
        for name, path in found.items():
            print(f"{path.parent.name:12s} {name:26s} {question(path)}")
        return 0
    name = argv[0].removesuffix(".py")
    if name not in found:
        print(f"no benchmark {name!r}; `benchmarks/run.py --list` lists them", file=sys.stderr)
        return 2
    return subprocess.call([sys.executable, str(found[name]), *argv[1:]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
