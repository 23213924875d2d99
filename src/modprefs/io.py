"""Atomic file output: write to a temporary file beside the target, then rename.

Nothing half-written is ever left at a target path: a crash or an exception while writing
leaves the previous file (or no file) in place.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

#: Mode asked for when creating a file; the process umask then removes bits, as for ``open(path, "w")``
#: (a lab's umask 002 gives group-writable outputs, the usual 022 gives 0644). ``tempfile.mkstemp`` would
#: create 0600 files regardless of the umask, and the rename would keep that mode.
FILE_MODE = 0o666


def _new_temp_file(target: Path) -> Path:
    """Create an empty, uniquely named file beside ``target`` (mode :data:`FILE_MODE` minus the umask)."""
    for _ in range(100):
        tmp = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp{target.suffix}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"no free temporary name beside {target}")


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; rename it onto ``target`` on success.

    The temporary file keeps the target's suffix so that libraries which pick a format from
    the extension (soundfile, pandas) behave as they would for the target. The file gets the
    permissions a plain ``open(target, "w")`` would (0666 minus the umask), so outputs on a shared
    file system are as readable to a lab's group as its umask says.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = _new_temp_file(target)
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


def write_markdown_table(
    df: pd.DataFrame, target: str | os.PathLike[str], title: str | None = None, floatfmt: str = ".4g"
) -> None:
    """Write ``df`` as a GitHub-flavoured Markdown table (optionally under a ``# title``) atomically."""
    body = df.to_markdown(index=False, floatfmt=floatfmt)
    text = (f"# {title}\n\n" if title else "") + body + "\n"
    write_text(text, target)
