"""Issue #16's "no behaviour change": the default run's outputs before and after the restructuring, file by file.

Compares two ``results/`` folders of the embedded default config (one run by the code before the restructuring
began, one by the code after) and records, for every table (CSV/TSV/Markdown/JSON/Parquet) under them, whether
the bytes are identical, or identical once the fields that record how the run went (times, memory, timestamps:
``RUN_RECORD_FIELDS``) are dropped; where neither, the differing cells of CSV tables (column, rows, largest absolute
difference) so that a reader can tell a changed p-value from a renamed column. Files that another issue changes
on purpose are listed with that issue in ``EXPECTED_CHANGES`` and reported separately, not hidden.

    .venv/bin/python benchmarks/tools/restructure_diff.py BEFORE/results AFTER/results \\
        --before-commit SHA --after-commit SHA

Writes benchmarks/out/restructure_diff.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd

from modprefs.io import write_json

OUT = Path(__file__).resolve().parents[1] / "out" / "restructure_diff.json"

TABLE_SUFFIXES = {".csv", ".tsv", ".md", ".json", ".parquet", ".jsonl"}
# Outputs that another issue changed between the two commits, on purpose: path prefix -> why.
EXPECTED_CHANGES = {
    "stats/tables/table4_reliability": "#17: Table 4's title names its ICC-difference test; default test jackknife",
}
# Run records that hold times, host names or absolute paths (not results).
VOLATILE = ("logs/", "benchmarks/", "report/")
# Fields that record how a run went, not what it computed: wall times, memory, timestamps, and the reward
# feature cache's hit count (the reward models train in parallel over one cache, so who fills it first varies).
RUN_RECORD_FIELDS = {"render_seconds", "created_at", "latency_s", "timing", "cache"}


def digest(path: Path) -> str:
    """SHA-256 of the file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def table_files(root: Path) -> set[str]:
    """Relative paths of the tables under ``root`` (run logs and the HTML report left out)."""
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and p.suffix in TABLE_SUFFIXES and not str(p.relative_to(root)).startswith(VOLATILE)
    }


def without_run_records(path: Path) -> object:
    """The file's content with :data:`RUN_RECORD_FIELDS` dropped (CSV columns, JSON keys at any depth)."""
    if path.suffix == ".csv":
        table = pd.read_csv(path)
        return table.drop(columns=[c for c in table.columns if c in RUN_RECORD_FIELDS]).to_csv(index=False)
    if path.suffix == ".json":

        def strip(node: object) -> object:
            if isinstance(node, dict):
                return {k: strip(v) for k, v in node.items() if k not in RUN_RECORD_FIELDS}
            if isinstance(node, list):
                return [strip(v) for v in node]
            return node

        return strip(json.loads(path.read_text()))
    return path.read_bytes()


def csv_differences(before: Path, after: Path) -> dict:
    """Where two CSV tables differ: shape, columns, and per numeric column the largest absolute difference."""
    a, b = pd.read_csv(before), pd.read_csv(after)
    out: dict = {"shape_before": list(a.shape), "shape_after": list(b.shape)}
    if list(a.columns) != list(b.columns):
        out["columns_only_before"] = sorted(set(a.columns) - set(b.columns))
        out["columns_only_after"] = sorted(set(b.columns) - set(a.columns))
    if a.shape[0] != b.shape[0]:
        return out
    cols = {}
    for c in a.columns.intersection(b.columns):
        x, y = a[c], b[c]
        if x.equals(y):
            continue
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
            diff = np.abs(x.to_numpy(float) - y.to_numpy(float))
            rows = np.flatnonzero(~((diff == 0) | (np.isnan(x.to_numpy(float)) & np.isnan(y.to_numpy(float)))))
            cols[c] = {"rows": rows.tolist()[:20], "max_abs_diff": float(np.nanmax(diff)) if rows.size else 0.0}
        else:
            rows = np.flatnonzero((x.astype(str) != y.astype(str)).to_numpy())
            cols[c] = {"rows": rows.tolist()[:20], "example": [str(x.iloc[rows[0]]), str(y.iloc[rows[0]])]}
    out["columns_differing"] = cols
    return out


def compare(before: Path, after: Path) -> dict:
    """Every table of both runs: identical, differing (with where, and whether expected), or in one run only."""
    fb, fa = table_files(before), table_files(after)
    identical, same_results, unexpected, expected = [], [], {}, {}
    for rel in sorted(fb & fa):
        if digest(before / rel) == digest(after / rel):
            identical.append(rel)
            continue
        if without_run_records(before / rel) == without_run_records(after / rel):
            same_results.append(rel)
            continue
        detail = csv_differences(before / rel, after / rel) if rel.endswith(".csv") else {}
        why = next((w for prefix, w in EXPECTED_CHANGES.items() if rel.startswith(prefix)), None)
        (expected if why else unexpected)[rel] = {**detail, **({"why": why} if why else {})}
    return {
        "identical": identical,
        "n_identical": len(identical),
        "identical_but_run_records": same_results,
        "n_identical_but_run_records": len(same_results),
        "run_record_fields": sorted(RUN_RECORD_FIELDS),
        "differ_expected": expected,
        "differ_unexpected": unexpected,
        "only_before": sorted(fb - fa),
        "only_after": sorted(fa - fb),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--before-commit", required=True)
    ap.add_argument("--after-commit", required=True)
    args = ap.parse_args()
    commits = {"before_commit": args.before_commit, "after_commit": args.after_commit}
    result = {**commits, **compare(args.before, args.after)}
    write_json(result, OUT)
    print({k: (v if not isinstance(v, list | dict) else len(v)) for k, v in result.items()})


if __name__ == "__main__":
    main()
