"""Output folders of the command-line tools: checked before any work, built beside, moved into place whole.

``modprefs stats --out`` and ``modprefs plan --out`` write many files. A reader must never see half of
them, and a run must not compute for minutes and then fail on a folder it could have checked first:

- :func:`output_folder_problem` says what is wrong with a target before any work starts: it exists as a
  file, a parent is a file (``/dev/null/out``), it lies in a kernel filesystem (``/proc``, ``/sys``,
  ``/dev``), or the nearest existing parent cannot be written.
- :func:`staged_folder` yields a temporary folder beside the target (same filesystem, so the final step is
  a rename); on success the target is replaced by it as a whole, on any exception (``KeyboardInterrupt``
  and :class:`Terminated` included) the temporary folder is removed and the target is left as it was.
- :func:`terminate_raises` turns SIGTERM into :class:`Terminated`, so the cleanup above runs when a job
  scheduler or ``kill`` stops a command, as it does for Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from modprefs.errors import UserInputError

#: kernel filesystems: files there are not ordinary files, and a folder cannot be created in them
SPECIAL_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM


class Terminated(BaseException):  # noqa: N818 (named for the signal, like KeyboardInterrupt)
    """SIGTERM arrived (see :func:`terminate_raises`); a BaseException so that ``except Exception`` passes it on."""


def output_folder_problem(out: Path, option: str = "--out") -> str | None:
    """What prevents writing a folder at ``out`` (None if nothing does); the message names ``option``."""
    absolute = Path(os.path.abspath(out))
    for root in SPECIAL_ROOTS:
        if absolute == root or root in absolute.parents:
            return f"{option} {out}: lies in {root}, a kernel filesystem; choose a folder on disk"
    if out.exists() and not out.is_dir():
        return f"{option} {out}: exists and is not a folder"
    parent = absolute.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"{option} {out}: {parent} is a file, not a folder"
    target_exists = absolute.exists()
    writable_at = absolute.parent if target_exists else parent
    if not os.access(writable_at, os.W_OK | os.X_OK):
        return f"{option} {out}: cannot write in {writable_at} (permission denied)"
    return None


@contextlib.contextmanager
def staged_folder(out: Path, keep: Sequence[str] = (), option: str = "--out") -> Iterator[Path]:
    """A temporary folder beside ``out`` that replaces ``out`` as a whole when the block succeeds.

    ``keep``: names inside an existing ``out`` carried over into the new folder unless the block wrote them
    (e.g. a cache). Any exception removes the temporary folder and leaves ``out`` unchanged. A folder that
    cannot be created raises :class:`~modprefs.errors.UserInputError` naming ``option``.
    """
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    except OSError as err:
        raise UserInputError(f"{option} {out}: cannot create a folder there ({err.strerror or err})") from None
    try:
        yield tmp
        for name in keep:
            if (out / name).exists() and not (tmp / name).exists():
                (out / name).rename(tmp / name)
        replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def replace_folder(new: Path, out: Path) -> None:
    """``new`` becomes ``out``; an existing ``out`` is moved aside first and restored if the rename fails."""
    if not out.exists():
        new.rename(out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
    old.rmdir()
    out.rename(old)
    try:
        new.rename(out)
    except BaseException:
        old.rename(out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def report_stopped(command: str, exc: BaseException, out: Path) -> int:
    """Print a one-line message for a command stopped by Ctrl-C or SIGTERM; its exit status (130 or 143)."""
    interrupted = isinstance(exc, KeyboardInterrupt)
    how = "interrupted (Ctrl-C)" if interrupted else "terminated (SIGTERM)"
    print(f"{command}: {how}; {out} is as it was before the command", file=sys.stderr)
    return EXIT_INTERRUPTED if interrupted else EXIT_TERMINATED


@contextlib.contextmanager
def terminate_raises() -> Iterator[None]:
    """Within the block SIGTERM raises :class:`Terminated` (in the main thread); the old handler comes back after."""

    def _raise(signum: int, frame: object) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, _raise)
    except ValueError:  # not the main thread: signals cannot be handled here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
