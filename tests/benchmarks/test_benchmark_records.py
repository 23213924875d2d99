"""Benchmark outputs stay small and reproducible (issue #53 item 6).

No tracked file is over 1 MB: the benchmarks that keep every simulated study write a summary JSON
(``benchmarks/out/<name>.json``) and gzip'd per-study records, one file per cell
(``benchmarks/out/records/<name>/<cell>.jsonl.gz``, benchmarks/tools/_records.py). Each summary (and its Markdown) is
rebuilt from its records byte for byte by the script's own ``--summarise-only`` code, run here on the stored files.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support.benchmarks import bench_module

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
OUT = BENCH / "out"
MAX_BYTES = 1_000_000

#: summary JSON -> (script module, how the script rebuilds and serialises it)
SUMMARIES = {
    "table2_null_slopes.json": "table2_null",
    "table2_null_main.json": "table2_null",
    "icc_difference_null_v2.json": "icc_difference_null",
    "alpha_difference_null.json": "icc_difference_null",
    "live_allocation.json": "live_allocation",
}


def _tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / p for p in out.decode().split("\0") if p]


def test_no_tracked_file_is_over_1_mb():
    files = set(_tracked_files()) | set(OUT.rglob("*"))  # the benchmark outputs, tracked yet or not
    big = {str(p.relative_to(ROOT)): p.stat().st_size for p in files if p.is_file() and p.stat().st_size > MAX_BYTES}
    assert not big, f"files over 1 MB (store their records compactly, benchmarks/tools/_records.py): {big}"


def test_summaries_hold_no_studies_and_have_records():
    for name in SUMMARIES:
        doc = json.loads((OUT / name).read_text(encoding="utf-8"))
        assert "studies" not in doc and doc["summary"], name
        shards = sorted((OUT / "records" / Path(name).stem).glob("*.jsonl.gz"))
        assert shards, name


@pytest.mark.parametrize("name", sorted(SUMMARIES))
def test_summary_is_rebuilt_from_the_records_byte_for_byte(name, tmp_path):
    module = bench_module(SUMMARIES[name])
    records = bench_module("_records")
    src = OUT / name
    doc = records.load(src)
    n_cells = len(doc["summary"])
    assert doc["studies"], "no records"
    # the script's --summarise-only path, written to a copy: summary JSON, Markdown and records all identical
    out = tmp_path / name
    if module.__name__ == "table2_null":
        experiment = doc["config"]["experiment"]
        module.write_doc(module.resummarise(doc, experiment), out, experiment)
    else:
        module.write({**doc, "summary": module.summarise(doc["studies"])}, out)
    assert out.read_bytes() == src.read_bytes()
    assert out.with_suffix(".md").read_bytes() == src.with_suffix(".md").read_bytes()
    assert len(json.loads(out.read_text())["summary"]) == n_cells
    stored = sorted((OUT / "records" / src.stem).glob("*.jsonl.gz"))
    rebuilt = sorted((tmp_path / "records" / src.stem).glob("*.jsonl.gz"))
    assert [p.name for p in rebuilt] == [p.name for p in stored]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(rebuilt, stored))


def test_records_round_trip(tmp_path):
    records = bench_module("_records")
    studies = [
        {"model": "m", "size": "s", "seed": 1, "p": 0.1 + 0.2, "x": None},
        {"model": "n", "size": "s", "seed": 0, "p": float("nan")},
        {"model": "m", "size": "s", "seed": 0, "p": 1e-300},
    ]
    out = tmp_path / "bench.json"
    out.write_text(json.dumps({"summary": {}}))
    records.write_records(out, studies, lambda r: f"{r['model']}/{r['size']}")
    back = records.read_records(out)
    assert [r["seed"] for r in back] == [1, 0, 0]  # cell m__s first, in its order, then n__s
    assert back[0] == studies[0] and back[1] == studies[2] and back[2]["p"] != back[2]["p"]
    records.write_records(out, studies[:1], lambda r: f"{r['model']}/{r['size']}")  # a cell gone: its file too
    assert [p.name for p in (tmp_path / "records" / "bench").iterdir()] == ["m__s.jsonl.gz"]
