"""Atomic file output: write to a temporary file beside the target, then rename.

Nothing half-written is ever left at a target path: a crash or an exception while writing
leaves the previous file (or no file) in place.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; rename it onto ``target`` on success.

    The temporary file keeps the target's suffix so that libraries which pick a format from
    the extension (soundfile, pandas) behave as they would for the target.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


def write_csv(df: pd.DataFrame, target: str | os.PathLike[str]) -> None:
    """Write ``df`` as CSV (no index) atomically."""
    with atomic_path(target) as tmp:
        df.to_csv(tmp, index=False)


def write_parquet(df: pd.DataFrame, target: str | os.PathLike[str]) -> None:
    """Write ``df`` as Parquet (no index) atomically."""
    with atomic_path(target) as tmp:
        df.to_parquet(tmp, index=False)


def write_text(text: str, target: str | os.PathLike[str]) -> None:
    """Write a UTF-8 text file atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(obj: Any, target: str | os.PathLike[str]) -> None:
    """Write ``obj`` as indented JSON atomically."""
    write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n", target)


def write_markdown_table(df: pd.DataFrame, target: str | os.PathLike[str], title: str | None = None,
                         floatfmt: str = ".4g") -> None:
    """Write ``df`` as a GitHub-flavoured Markdown table (optionally under a ``# title``) atomically."""
    body = df.to_markdown(index=False, floatfmt=floatfmt)
    text = (f"# {title}\n\n" if title else "") + body + "\n"
    write_text(text, target)
