"""The ICC table of a ratings source as ``modprefs stats`` computes it, without the rest of the analysis.

``modprefs stats`` (:func:`modprefs.stats.cli.run_stats`) validates a ratings source
(:func:`modprefs.ratings.ingest.ingest_ratings`), writes the validated tables
(:func:`~modprefs.ratings.ingest.write_valid`), reads them back as the workflow does
(:func:`modprefs.ratings.read.read_study`) and computes the ICC table (:func:`modprefs.stats.tables.analyses.icc_table`)
and the raters needed from it (:func:`modprefs.stats.reliability.rater_scaling.raters_needed_table`).
:func:`icc_of_source` runs exactly these steps, in the same order and with the same params
(:data:`modprefs.stats.defaults.STATS_DEFAULTS` plus the study's ``scale``), so its table equals ``icc.csv`` of
``modprefs stats`` on the same source, value for value: the annotation app's live reliability
(:mod:`modprefs.app.live_stats`) is this function on the app's export at that moment."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from modprefs.stats.defaults import STATS_DEFAULTS


def stats_params(scale: Mapping[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    """``modprefs stats``' params with its defaults (:data:`STATS_DEFAULTS`): ``scale`` a ``study.scale`` mapping
    (None: the paper's 1..100), ``overrides`` any of the defaults' keys (e.g. ``ci_level``, ``seed``)."""
    unknown = sorted(set(overrides) - set(STATS_DEFAULTS))
    if unknown:
        raise ValueError(f"unknown stats params {unknown}; expected keys of STATS_DEFAULTS {sorted(STATS_DEFAULTS)}")
    params = {**STATS_DEFAULTS, **overrides}
    if scale is not None:
        params["scale"] = dict(scale)
    return params


def icc_of_source(source: str | Path, params: Mapping[str, Any]) -> pd.DataFrame:
    """``icc.csv`` of ``modprefs stats --ratings source`` (no ``--clips``, no ``--map``) with ``params``.

    ``params``: :func:`stats_params`. Raises :class:`modprefs.errors.UserInputError` (a source the ingest refuses,
    e.g. no ratings yet) as ``modprefs stats`` does. Columns: :data:`modprefs.stats.reliability.icc.ICC_COLUMNS`
    (ICC(2,1), ICC(2,k) and their intervals at ``params["ci_level"]``, per condition).
    """
    from modprefs.ratings.ingest import ingest_ratings, write_valid  # noqa: PLC0415
    from modprefs.ratings.read import read_study  # noqa: PLC0415
    from modprefs.stats.tables.analyses import icc_table, study_scale  # noqa: PLC0415

    valid = ingest_ratings(source, None, {}, scale=study_scale(params))
    with tempfile.TemporaryDirectory(prefix="modprefs-icc-") as tmp:
        paths = {t: Path(tmp) / f"{t}.csv" for t in ("ratings", "trials", "participants")}
        write_valid(valid, paths)
        study = read_study(paths, stimuli=valid.stimuli)
        return icc_table(study.tables, dict(params)).tables["icc"]


def raters_needed_for(icc: pd.DataFrame, target: float) -> pd.DataFrame:
    """Per condition: the raters per clip that reach ICC(2,k) = ``target`` at the ICC(2,1) estimate and at its
    interval's bounds (``modprefs stats``' raters_needed table,
    :func:`~modprefs.stats.reliability.rater_scaling.raters_needed_table`), plus ``raters_still_needed`` = raters
    needed at the estimate - mean raters per clip so far (>= 0; NaN where the estimate is <= 0, when no number of
    raters reaches the target)."""
    from modprefs.stats.reliability.rater_scaling import raters_needed_table  # noqa: PLC0415

    table = raters_needed_table(icc, targets=(float(target),))
    table["raters_still_needed"] = (table["raters_needed"] - table["observed_k"]).clip(lower=0)
    return table
