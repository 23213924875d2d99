"""Why a path a lab gave cannot be read as a file, said as what it is.

``Path.is_file()`` is False for a missing file, a folder, a broken symbolic link and a symbolic-link loop alike, and
libsndfile reports a file it may not open as "System error". :func:`file_problem` tells them apart, so a message
says "is a folder", "is a symbolic link loop" or "permission denied" rather than "not found".
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

__all__ = ["file_problem", "printable"]


def file_problem(path: str | os.PathLike[str]) -> str | None:
    """What keeps ``path`` from being read as a regular file (None: it can be opened for reading).

    Returns one of: ``"file not found"``, ``"is a symbolic link to <target>, which does not exist"``, ``"is a
    symbolic link loop"``, ``"is a folder, not a file"``, ``"is not a regular file (<kind>)"``, ``"cannot be read:
    permission denied"`` or ``"cannot be read: <reason>"``.
    """
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        return _open_error(p, err)
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    import stat

    if stat.S_ISDIR(st.st_mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(st.st_mode):
        kind = "a named pipe" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) else "special"
        return f"is not a regular file ({kind})"
    return None


def _open_error(p: Path, err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "is a symbolic link loop"
    if err.errno == errno.ENOENT:
        if p.is_symlink():
            return f"is a symbolic link to {os.readlink(p)}, which does not exist"
        return "file not found"
    if err.errno == errno.EISDIR:
        return "is a folder, not a file"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "cannot be read: permission denied"
    if err.errno == errno.ENOTDIR:
        return "file not found (a part of its path is a file, not a folder)"
    return f"cannot be read: {err.strerror or err}"


def printable(text: object, limit: int = 200) -> str:
    """``text``'s first line with unprintable characters as ``?``, at most ``limit`` characters (for a library's
    error message that quotes raw bytes)."""
    line = str(text).strip().splitlines()[0] if str(text).strip() else ""
    shown = "".join(c if c.isprintable() else "?" for c in line)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."
