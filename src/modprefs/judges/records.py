"""Per-call judge records (one JSON file per request hash) and the tidy ratings table.

Layout: ``<out_dir>/raw/<modality>/<kind>/<request_hash>.json``. Each file is written atomically
(temporary file + ``os.replace`` through :func:`modprefs.io.atomic_path`), so a file that exists is
complete; temporary files left by a killed writer start with ``.`` and are ignored.

A record whose status is ``ok``, or ``failed`` for a reply that never parsed (``error_kind`` parse,
range, refusal, request), is *finished*: a rerun does not call the API for it again. A record that
failed on transport (retries exhausted on 429/5xx/timeouts, ``error_kind == "transport"``) is retried
on the next run unless ``retry_transport_failures`` is off.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from modprefs.io import write_text

RECORD_SCHEMA = "modprefs.judge_call/1"

#: docs/CONTRACTS.md, results/judges/ratings.csv
TABLE_COLUMNS = [
    "judge",
    "backend",
    "model",
    "prompt_version",
    "modality",
    "kind",
    "prompt_id",
    "clip_id",
    "sample",
    "rating",
    "status",
    "reason",
]

FINAL_ERROR_KINDS = {"parse", "range", "refusal", "request"}


def canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_hash(canonical_request: dict) -> str:
    """sha256 of the canonical request (model, prompt version, messages with audio replaced by its
    sha256, sample index, params)."""
    return hashlib.sha256(canonical_json(canonical_request).encode("utf-8")).hexdigest()


def record_path(out_dir: str | Path, modality: str, kind: str, req_hash: str) -> Path:
    return Path(out_dir) / "raw" / modality / kind / f"{req_hash}.json"


def write_record(path: str | Path, record: dict) -> None:
    write_text(json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False, default=str) + "\n", path)


def read_record(path: str | Path) -> dict | None:
    """The record at ``path``, or None if absent or unreadable (a torn file cannot exist, but a
    hand-edited one might)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def is_finished(record: dict | None, retry_transport_failures: bool = True) -> bool:
    if not record:
        return False
    if record.get("status") == "ok":
        return True
    if record.get("status") == "failed":
        return not (retry_transport_failures and record.get("error_kind") == "transport")
    return False


def iter_records(out_dir: str | Path) -> Iterable[dict]:
    """Every record under ``<out_dir>/raw`` (temporary files ignored)."""
    raw = Path(out_dir) / "raw"
    for path in sorted(raw.rglob("*.json")):
        if path.name.startswith("."):
            continue
        rec = read_record(path)
        if rec is not None:
            yield rec


def ratings_table(records: Iterable[dict]) -> pd.DataFrame:
    """The tidy table (DESIGN's columns), one row per record, sorted."""
    rows = [{c: rec.get(c) for c in TABLE_COLUMNS} for rec in records]
    df = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    df["rating"] = pd.array(df["rating"], dtype="Int64")
    df["sample"] = df["sample"].astype(int)
    return df.sort_values(["modality", "kind", "prompt_id", "clip_id", "sample"], kind="stable").reset_index(drop=True)
