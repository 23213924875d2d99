"""The per-user cache for prepared models (outside ``results/``: one copy serves every run and checkout).

Its root is ``$MODPREFS_CACHE`` when set, else ``$XDG_CACHE_HOME/modprefs``, else ``~/.cache/modprefs``.
A prepared entry is written into a temporary sibling folder and renamed into place, so a reader never sees
half of one; :func:`exclusive_lock` keeps two jobs (parallel shards, two judges) from preparing it at once.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def user_cache_dir(*parts: str) -> Path:
    """``<cache root>/<parts...>``, created if missing."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = os.environ.get("MODPREFS_CACHE") or (Path(xdg) if xdg else Path.home() / ".cache") / "modprefs"
    path = Path(root).joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def exclusive_lock(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock (``flock``) on ``lock_file`` for the body; no-op where fcntl is missing
    (Windows: no parallel safety, but still works)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(lock_file, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
