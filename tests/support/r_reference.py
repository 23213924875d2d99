"""Shared plumbing of the R reference modules (lme4, lmerTest, multtest): is an R package loadable, and
skip (or, in CI with MODPREFS_REQUIRE_R set, fail) a test that needs one that is not."""

from __future__ import annotations

import os
import shutil
import subprocess


def r_packages_loadable(packages: tuple[str, ...], apt: str) -> tuple[bool, str]:
    """(True, "") when Rscript runs and loads every package in ``packages``; else (False, reason naming ``apt``)."""
    if shutil.which("Rscript") is None:
        return False, "Rscript is not on PATH"
    libraries = "; ".join(f"library({p})" for p in packages)
    proc = subprocess.run(
        ["Rscript", "-e", f"suppressPackageStartupMessages({{{libraries}}})"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        names = "/".join(packages)
        return False, f"R packages {names} not loadable (apt-get install {apt}): {proc.stderr.strip()[-300:]}"
    return True, ""


def require_r_reference(label: str, available: tuple[bool, str]) -> None:
    """Skip the calling test when ``available`` is (False, why), or fail when MODPREFS_REQUIRE_R is set (CI)."""
    import pytest

    ok, why = available
    if ok:
        return
    if os.environ.get("MODPREFS_REQUIRE_R"):
        pytest.fail(f"{label} reference required (MODPREFS_REQUIRE_R is set) but unavailable: {why}")
    pytest.skip(f"{label} reference unavailable: {why}")
