"""Atomic output files: nothing half-written, and the permissions the process umask asks for."""

from __future__ import annotations

import os
import stat

import pandas as pd
import pytest

from modprefs.io import atomic_path, write_csv, write_text


@pytest.mark.parametrize("umask,expected", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_outputs_follow_the_umask(tmp_path, umask, expected):
    old = os.umask(umask)
    try:
        write_csv(pd.DataFrame({"a": [1]}), tmp_path / "t.csv")
        write_text("x", tmp_path / "sub" / "t.txt")
    finally:
        os.umask(old)
    for path in (tmp_path / "t.csv", tmp_path / "sub" / "t.txt"):
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("crash")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.txt"]
