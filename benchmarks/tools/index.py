"""Write benchmarks/README.md, the index: script -> the question it answers -> its outputs -> where they are cited.

The question is the first line of each script's docstring; the outputs (files in benchmarks/out) are declared here in
``OUTPUTS`` (tests/benchmarks/test_benchmark_index.py checks that every file in benchmarks/out belongs to a script
listed here and that every script is listed); where cited is found by searching README.md, docs/ and src/
for the script's and the outputs' file names. Run it after adding a script or an output, or moving a citation.

    .venv/bin/python benchmarks/tools/index.py [--check]
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
OUT = BENCH / "out"
GROUPS = {
    "performance": "how fast, how big, how much memory: timings and resources on a stated machine",
    "validity": "whether the statistics and simulations are right: sizes, coverage, recovery, calibration",
    "tools": "helpers and generators the other scripts use, and maintenance scripts",
}

#: script name -> its outputs, relative to benchmarks/out (globs allowed); a note after " -- " says how it is made
OUTPUTS: dict[str, list[str]] = {
    # performance
    "dag_checks": ["dag_checks.json"],
    "dag_scale": ["dag_scale.json"],
    "default_run": ["default_run.json", "default_run_compare.json -- --compare BASE_REV"],
    "given_long_audio": ["given_long_audio.json", "given_long_audio.md"],
    "judges_concurrency": ["judges_concurrency.json"],
    "plan_grid": ["plan_grid.json"],
    "reward_memory": ["reward_memory.json"],
    "reward_stage": ["reward_stage.json"],
    "reward_train": ["reward_train.json"],
    "stats_alpha": ["stats_alpha.json"],
    "stats_icc_bootstrap": ["stats_icc_bootstrap.json"],
    "stats_lmm": ["stats_lmm.json"],
    "stats_suite": ["stats_suite.json"],
    "test_loop": ["test_loop.json"],
    "tts_profile": ["tts_profile.json"],
    "tts_qc": ["tts_qc.json", "tts_qc_avx2.json -- --out, on an AVX2-only CPU"],
    "tts_rtf": [
        "tts_rtf.json",
        "tts_rtf_avx2.json -- --out, on an AVX2-only CPU",
        "tts_rtf_cpu.json -- --threads 1 --texts 6 --out",
    ],
    # validity
    "given_qc_defaults": ["given_qc_defaults.json", "given_qc_defaults.md"],
    "icc_coverage": [
        "icc_coverage.json",
        "icc_coverage.md",
        "icc_coverage_methods.json -- --out, every method (a first comparison stopped at ~70 studies per cell)",
        "icc_coverage_methods.md -- with icc_coverage_methods.json",
    ],
    "icc_difference_null": [
        "icc_difference_null_v2.json",
        "icc_difference_null_v2.md",
        "records/icc_difference_null_v2/*.jsonl.gz -- per-study records",
        "alpha_difference_null.json -- --no-icc --out",
        "alpha_difference_null.md -- --no-icc --out",
        "records/alpha_difference_null/*.jsonl.gz -- per-study records",
    ],
    "icc_difference_rules": ["icc_difference_rules.json", "icc_difference_rules.md"],
    "icc_null_world_fidelity": ["icc_null_world_fidelity.json", "icc_null_world_fidelity.md"],
    "icc_interval_width": ["icc_interval_width.json", "icc_interval_width.md"],
    "icc_jackknife_components": ["icc_jackknife_components.json"],
    "judges_allocation": ["judges_allocation.json", "judges_allocation.png"],
    "judges_local": ["judges_local.json"],
    "justifications_null": ["justifications_null.json", "justifications_null.md"],
    "live_allocation": [
        "live_allocation.json",
        "live_allocation.md",
        "records/live_allocation/*.jsonl.gz -- per-study records",
    ],
    "plan_fastsim": ["plan_fastsim.json"],
    "plan_interval": ["plan_interval_*.json -- one per --method"],
    "plan_pilot": ["plan_pilot.json"],
    "plan_validation": ["plan_null.json", "plan_null_calibrated.json", "plan_power_*.json", "plan_precision.json"],
    "ratings_calibration": ["ratings_calibration.json", "ratings_calibration.md"],
    "recovery": ["recovery.json"],
    "reward_planted_audio_cue": ["reward_planted_audio_cue.json", "reward_planted_audio_cue.md"],
    "reward_planted_cue": ["reward_planted_cue.json", "reward_planted_cue.md", "reward_planted_cue.png"],
    "stopping_coverage": ["stopping_coverage.json", "stopping_coverage.md"],
    "table2_length_small": ["table2_length_small.json"],
    "table2_null": [
        "table2_null.json",
        "table2_null_slopes.json -- --experiment slopes",
        "table2_null_slopes.md -- --experiment slopes",
        "records/table2_null_slopes/*.jsonl.gz -- per-study records",
        "table2_null_main.json -- --experiment main",
        "table2_null_main.md -- --experiment main",
        "records/table2_null_main/*.jsonl.gz -- per-study records",
    ],
    # tools
    "_plan_common": [],
    "_records": [],
    "generators": [],
    "index": [],
    "make_prism_scale": [],
    "measured_figures": [],
    "restructure_diff": ["restructure_diff.json"],
}
#: what a tool writes outside benchmarks/out
ELSEWHERE = {
    "index": "benchmarks/README.md",
    "make_prism_scale": "a synthetic PRISM-scale conversations file (dag_scale and dag_checks make their own)",
    "measured_figures": "src/modprefs/report/measured_figures.json (the figures the report quotes, package data)",
}
SEARCHED = ("README.md", "docs", "src")


def scripts() -> dict[str, Path]:
    """{name: path} of every script in the groups."""
    return {p.stem: p for group in GROUPS for p in sorted((BENCH / group).glob("*.py"))}


def question(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.split("\n\n")[0].split()) if doc else ""


def out_files() -> list[str]:
    """Every file under benchmarks/out, relative to it (temporary files left out)."""
    return sorted(
        str(p.relative_to(OUT)) for p in OUT.rglob("*") if p.is_file() and not p.name.endswith((".tmp", ".pyc"))
    )


def pattern(entry: str) -> str:
    return entry.split(" -- ")[0]


def writer_of(name: str) -> str | None:
    """The script whose declared outputs match ``name`` (a path relative to benchmarks/out)."""
    for script, entries in OUTPUTS.items():
        if any(fnmatch.fnmatch(name, pattern(e)) for e in entries):
            return script
    return None


def _texts() -> dict[str, str]:
    texts = {}
    for top in SEARCHED:
        base = ROOT / top
        files = [base] if base.is_file() else sorted([*base.rglob("*.md"), *base.rglob("*.py")])
        for f in files:
            if f.is_file() and "__pycache__" not in f.parts:
                texts[str(f.relative_to(ROOT))] = f.read_text(encoding="utf-8", errors="replace")
    return texts


def cited(needles: list[str], texts: dict[str, str]) -> list[str]:
    return sorted(f for f, t in texts.items() if any(n in t for n in needles))


def render() -> str:
    found, texts, files = scripts(), _texts(), out_files()
    lines = [
        "# Benchmarks",
        "",
        "Every script that measures the project, grouped by what it measures, with the question it answers, the "
        "files it writes in `benchmarks/out/` and where those are cited (README.md, docs/, src/). Run any of them by "
        "name through the one runner:",
        "",
        "    .venv/bin/python benchmarks/run.py --list",
        "    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/run.py NAME [ARGS...]   # e.g. table2_null --help",
        "",
        "Benchmarks that keep every simulated study write a small summary JSON (what the report and the docs read) "
        "and the studies as gzip'd JSON lines, one file per cell, under `benchmarks/out/records/<name>/` "
        "(`tools/_records.py`), so that no tracked file is over 1 MB; their `--summarise-only` rebuilds the summary "
        "from the records byte for byte (tests/benchmarks/test_benchmark_records.py). The figures the report quotes "
        "also ship with the package (`tools/measured_figures.py` writes src/modprefs/report/measured_figures.json; "
        "tests/report/test_wheel_report.py). This file is written by `tools/index.py` "
        "(tests/benchmarks/test_benchmark_index.py checks that it lists every script and every output).",
        "",
    ]
    for group, what in GROUPS.items():
        lines += [
            f"## {group}",
            "",
            f"{what[0].upper()}{what[1:]}.",
            "",
            "| script | question | outputs (benchmarks/out) | cited in |",
            "|---|---|---|---|",
        ]
        for name, path in found.items():
            if path.parent.name != group:
                continue
            outs = []
            for entry in OUTPUTS.get(name, []):
                pat, _, note = entry.partition(" -- ")
                n = sum(fnmatch.fnmatch(f, pat) for f in files)
                shown = f"`{pat}`" + (f" ({n} files)" if "*" in pat else "") + (f" ({note})" if note else "")
                outs.append(shown)
            if name in ELSEWHERE:
                outs.append(ELSEWHERE[name])
            names = [f"{name}.py", *(pattern(e).split("/")[-1] for e in OUTPUTS.get(name, []) if "*" not in e)]
            names += [pattern(e).split("/")[1] for e in OUTPUTS.get(name, []) if pattern(e).startswith("records/")]
            where = cited(names, texts)
            lines.append(
                f"| [`{group}/{name}.py`]({group}/{name}.py) | {question(path).replace('|', '/')} | "
                + ("<br>".join(outs) or "-")
                + " | "
                + (", ".join(f"`{w}`" for w in where) or "-")
                + " |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when benchmarks/README.md is not what this writes")
    args = ap.parse_args()
    target = BENCH / "README.md"
    text = render()
    if args.check:
        same = target.is_file() and target.read_text(encoding="utf-8") == text
        print(f"benchmarks/README.md: {'up to date' if same else 'out of date'}")
        sys.exit(0 if same else 1)
    target.write_text(text, encoding="utf-8")
    print(f"wrote benchmarks/README.md ({len(text)} bytes)")


if __name__ == "__main__":
    main()
