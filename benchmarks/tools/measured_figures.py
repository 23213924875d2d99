"""Which benchmark figures does the report quote, and do the package's copies equal benchmarks/out? (issue #53)

The report (:mod:`modprefs.report.measured`, :mod:`modprefs.report.html`) quotes the summaries of a few benchmark
outputs (``QUOTED``: ICC interval coverage, Table 2's and Table 4's false-positive rates). An installed wheel has
no benchmarks/out, so their summaries ship as package data, src/modprefs/report/measured_figures.json
({file name: {"summary": ...}}). This script writes that file from benchmarks/out; ``--check`` exits 1 when it
differs (tests/report/test_wheel_report.py checks the same, so the shipped figures cannot drift from the measured ones).
Run it after any of the quoted benchmarks (or their ``--summarise-only``).

    .venv/bin/python benchmarks/tools/measured_figures.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from modprefs.report.measured import FIGURES, QUOTED  # noqa: E402

OUT = ROOT / "benchmarks" / "out"


def figures(out: Path = OUT) -> dict:
    """{file name: {"summary": its summary}} of the quoted benchmark outputs present in ``out``."""
    return {
        name: {"summary": json.loads((out / name).read_text(encoding="utf-8"))["summary"]}
        for name in QUOTED
        if (out / name).is_file()
    }


def render(out: Path = OUT) -> str:
    return json.dumps(figures(out), indent=1, sort_keys=False) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the package's copy differs; write nothing")
    args = ap.parse_args()
    text = render()
    if args.check:
        same = FIGURES.is_file() and FIGURES.read_text(encoding="utf-8") == text
        print(f"{FIGURES.relative_to(ROOT)}: {'up to date' if same else 'differs from benchmarks/out'}")
        sys.exit(0 if same else 1)
    FIGURES.write_text(text, encoding="utf-8")
    print(f"wrote {FIGURES.relative_to(ROOT)} ({len(text)} bytes, {len(json.loads(text))} outputs)")


if __name__ == "__main__":
    main()
