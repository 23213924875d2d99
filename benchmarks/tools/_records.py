"""Per-study records of a benchmark, stored compactly beside its summary JSON.

A benchmark that keeps every simulated study (``table2_null.py --experiment slopes``, ``icc_difference_null.py``)
writes two things: ``benchmarks/out/<name>.json``, the summary the report and the docs read (config, runs, per-cell
rates; no studies), and ``benchmarks/out/records/<name>/<cell>.jsonl.gz``, one gzip'd JSON line per study, one
file per cell (model x size) so that no file is over 1 MB. The summary is rebuilt from the records exactly
(``--summarise-only`` of each script; tests/benchmarks/test_benchmark_records.py checks it byte for byte).

Floats round-trip exactly through JSON, the gzip header carries no time stamp (the files are reproducible), and the
studies of a cell keep their order (each script's summary depends only on the order within a cell).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path

SUFFIX = ".jsonl.gz"


def records_dir(out: Path) -> Path:
    """Where the records of the summary ``out`` (``benchmarks/out/<name>.json``) lie."""
    return out.parent / "records" / out.stem


def _shard_name(cell: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "__", cell) + SUFFIX


def write_records(out: Path, studies: Iterable[dict], cell: Callable[[dict], str]) -> list[Path]:
    """Write ``studies`` as one ``<cell>.jsonl.gz`` per cell (in their order within each cell), remove the shards of
    cells no longer there; return the files written."""
    shards: dict[str, list[str]] = {}
    for rec in studies:
        shards.setdefault(_shard_name(cell(rec)), []).append(json.dumps(rec, separators=(",", ":")))
    folder = records_dir(out)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, lines in sorted(shards.items()):
        path = folder / name
        data = gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), compresslevel=9, mtime=0)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
        written.append(path)
    for stale in folder.glob("*" + SUFFIX):
        if stale.name not in shards:
            stale.unlink()
    return written


def read_records(out: Path) -> list[dict]:
    """Every stored study of the summary ``out``, cell by cell (shards in name order), each cell in its order."""
    studies: list[dict] = []
    for path in sorted(records_dir(out).glob("*" + SUFFIX)):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            studies += [json.loads(line) for line in fh if line.strip()]
    return studies


def load(out: Path) -> dict:
    """The summary document ``out`` with its studies put back (``doc["studies"]``); ``{}`` when there is none."""
    if not out.exists():
        return {}
    doc = json.loads(out.read_text(encoding="utf-8"))
    doc["studies"] = read_records(out)
    return doc


def without_studies(doc: dict) -> dict:
    """The summary document as written: everything but the studies."""
    return {k: v for k, v in doc.items() if k != "studies"}
