"""Confidence intervals for ICC(2,1) / ICC(2,k) that also account for the sampling of raters.

The paper's intervals (Table 4, :mod:`modprefs.stats.icc`) come from a *stimulus* bootstrap:
clips are resampled, the raters are held fixed. But raters are sampled too, and ICC(2,1) =
s_clip / (s_clip + s_rater + s_resid) depends on the rater variance, which a stimulus bootstrap
treats as known. This module offers three resampling schemes on a prepared design
(:class:`modprefs.stats.icc.ConditionDesign`):

``stimulus``
    The paper's: clips with replacement (:func:`modprefs.stats.icc.resample_clips`), raters fixed.
``two_way``
    Clips AND participants resampled independently with replacement (the "pigeonhole" bootstrap
    of crossed designs; McCullagh 2000, Owen 2007): a row enters once for every (drawn copy of
    its clip, drawn copy of its participant) pair, and each drawn copy is a distinct level.
    Duplicated (clip, participant) cells make the copies agree perfectly, so the replicates
    are biased upward (mean replicate ICC(2,1) ~ .06 above the estimate); the percentile
    interval is wider and sits higher, and its misses are almost all on the high side. Do not
    use ``basic`` intervals with it (the upward bias is then reflected downward: 70-81 %).
``parametric``
    New responses from the fitted model on the same design: y* = X beta + u[clip] + v[participant]
    + e with Gaussian u, v, e at the fitted variances (REML) and fixed effects; refitted.

Each gives percentile intervals (default) or basic intervals (2 * estimate - quantiles,
truncated to [0, 1]). Everything is seeded and deterministic: condition i of
:func:`icc_with_ci` uses ``SeedSequence(seed).spawn(len(conditions))[i]``, as
:func:`modprefs.stats.icc.icc_by_condition`, so ``method="stimulus"`` reproduces its rows exactly.
Measured coverage of the nominal 95 % ICC(2,1) interval (benchmarks/icc_coverage.py: 500 simulated
audio studies per setting, 80 clips, ~33 raters, ~7.6 ratings per clip, 199 resamples; truth =
the population ICC(2,1); Clopper-Pearson 95 % intervals; percentile intervals):

=============  ===========================  ===========================================
method         Gaussian LMM (truth .424)    paper calibration, clipped (truth .330)
=============  ===========================  ===========================================
stimulus       .914 [.886, .937] width .175  .778 [.739, .814] width .224
two_way        .896 [.866, .921] width .229  .898 [.868, .923] width .296
parametric     .946 [.922, .964] width .189  .682 [.639, .723] width .178
=============  ===========================  ===========================================

The paper's stimulus bootstrap under-covers, badly so for the realistic (clipped, heavy-tailed,
within-prompt-correlated) ratings; the parametric bootstrap is right only when the Gaussian model
is; the two-way bootstrap is the most robust (~.90 in both), still somewhat below .95.

References:
    McCullagh, P. (2000). Resampling and exchangeable arrays. Bernoulli 6(2), 285-301.
    Owen, A. B. (2007). The pigeonhole bootstrap. Annals of Applied Statistics 1(2), 386-411.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from modprefs.stats.icc import (
    CI_METHOD as STIMULUS_PERCENTILE,
    CONDITIONS,
    ICC_COLUMNS,
    ConditionDesign,
    _empty_row,
    _fit_iccs,
    analysable_ratings,
    condition_design,
    icc_for_design,
    icc_from_components,
    model_formula,
    resample_clips,
)
from modprefs.stats.reml import CrossedFit, fit_crossed_intercepts

log = logging.getLogger(__name__)

CI_METHODS: tuple[str, ...] = ("stimulus", "two_way", "parametric")
INTERVALS: tuple[str, ...] = ("percentile", "basic")
METHOD_LABELS = {
    "stimulus": "stimulus bootstrap",
    "two_way": "two-way bootstrap (clips and participants)",
    "parametric": "parametric bootstrap (Gaussian LMM)",
}


def ci_method_label(method: str, interval: str = "percentile") -> str:
    """The ``ci_method`` text of a row, e.g. ``"percentile, two-way bootstrap (clips and participants)"``."""
    _check(method, interval)
    return f"{interval}, {METHOD_LABELS[method]}"


def _check(method: str, interval: str) -> None:
    if method not in CI_METHODS:
        raise ValueError(f"unknown CI method {method!r}; expected one of {CI_METHODS}")
    if interval not in INTERVALS:
        raise ValueError(f"unknown interval type {interval!r}; expected one of {INTERVALS}")


def resample_clips_and_participants(design: ConditionDesign, rng: np.random.Generator
                                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One two-way bootstrap draw: clips, then participants, each with replacement and independently.

    Returns ``(rows, clip, participant)``: row indices into the design and the new level codes.
    A row appears once per (drawn copy of its clip, drawn copy of its participant); each copy is
    its own level (codes = draw positions), so a participant drawn twice is two raters.
    """
    rows1, clip1 = resample_clips(design.clip, design.n_clips, rng)
    rows2, new_part = resample_clips(design.participant[rows1], design.n_participants, rng)
    return rows1[rows2], clip1[rows2], new_part


def simulate_from_fit(design: ConditionDesign, fit: CrossedFit, rng: np.random.Generator) -> np.ndarray:
    """Responses (n,) from the fitted Gaussian LMM on the design's X, clips and participants."""
    u = math.sqrt(max(fit.var_g1, 0.0)) * rng.standard_normal(design.n_clips)
    v = math.sqrt(max(fit.var_g2, 0.0)) * rng.standard_normal(design.n_participants)
    e = math.sqrt(max(fit.var_resid, 0.0)) * rng.standard_normal(design.y.size)
    return design.X @ fit.beta + u[design.clip] + v[design.participant] + e


def _refit(design: ConditionDesign, y: np.ndarray, rows: np.ndarray | None, clip: np.ndarray | None,
           participant: np.ndarray | None, theta0: np.ndarray) -> tuple[CrossedFit, float, float]:
    if rows is None:
        yy, X, g1, g2 = y, design.X, design.clip, design.participant
    else:
        yy, X, g1, g2 = design.y[rows], design.X[rows], clip, participant
    f = fit_crossed_intercepts(yy, X, g1, g2, reml=True, theta0=theta0, names=("clip_id", "participant_id"))
    icc1, icck = icc_from_components(f.var_g1, f.var_g2, f.var_resid, yy.size / f.n_levels[0])
    return f, icc1, icck


def bootstrap_iccs(design: ConditionDesign, fit: CrossedFit, method: str, n_boot: int,
                   rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """(n_boot, 2) bootstrap replicates of (ICC(2,1), ICC(2,k)); NaN rows = failed refits.

    ``fit`` is the full-data fit (its theta is the warm start; its estimates drive ``parametric``).
    ``stimulus`` draws exactly as :func:`modprefs.stats.icc.icc_for_design` does from the same rng.
    Returns the replicates and the number of failed refits.
    """
    _check(method, "percentile")
    boot = np.full((n_boot, 2), np.nan)
    failed = 0
    for b in range(n_boot):
        try:
            if method == "stimulus":
                rows, clip = resample_clips(design.clip, design.n_clips, rng)
                bfit, _, b1, bk = _fit_iccs(design, rows, clip, theta0=fit.theta)
            elif method == "two_way":
                rows, clip, part = resample_clips_and_participants(design, rng)
                bfit, b1, bk = _refit(design, design.y, rows, clip, part, fit.theta)
            else:
                bfit, b1, bk = _refit(design, simulate_from_fit(design, fit, rng), None, None, None, fit.theta)
        except (ValueError, np.linalg.LinAlgError):
            failed += 1
            continue
        if not bfit.converged or not np.isfinite([b1, bk]).all():
            failed += 1
            continue
        boot[b] = b1, bk
    return boot, failed


def interval_from_boot(estimate: np.ndarray, boot: np.ndarray, ci_level: float = 0.95,
                       interval: str = "percentile") -> np.ndarray:
    """(2, 2) array [[lo, hi] of ICC(2,1), [lo, hi] of ICC(2,k)] from replicates (NaN rows ignored).

    ``percentile``: the alpha/2 and 1-alpha/2 quantiles. ``basic``: 2*estimate minus them, truncated
    to [0, 1] (an ICC's range). All NaN when no replicate succeeded.
    """
    _check("stimulus", interval)
    ok = boot[np.isfinite(boot).all(axis=1)]
    if not len(ok):
        return np.full((2, 2), np.nan)
    alpha = (1.0 - ci_level) / 2.0
    q = np.quantile(ok, [alpha, 1.0 - alpha], axis=0).T  # (2 stats, lo/hi)
    if interval == "percentile":
        return q
    est = np.asarray(estimate, float).reshape(2, 1)
    return np.clip(2.0 * est - q[:, ::-1], 0.0, 1.0)


def icc_ci_for_design(condition: str, design: ConditionDesign, method: str, n_boot: int,
                      rng: np.random.Generator, ci_level: float = 0.95, interval: str = "percentile") -> dict:
    """One output row (:data:`modprefs.stats.icc.ICC_COLUMNS`) with the chosen CI method.

    ``method="stimulus", interval="percentile"`` is :func:`modprefs.stats.icc.icc_for_design` itself.
    """
    _check(method, interval)
    label = ci_method_label(method, interval)
    if method == "stimulus" and interval == "percentile":
        row = icc_for_design(condition, design, n_boot, rng, ci_level)
        assert row["ci_method"] == STIMULUS_PERCENTILE == label
        return row
    n = int(design.y.size)
    try:
        fit, k, icc1, icck = _fit_iccs(design)
    except (ValueError, np.linalg.LinAlgError) as exc:
        row = _empty_row(condition, n, design.n_clips, design.n_participants, design.formula,
                         f"model not estimable: {exc}")
        row["ci_method"] = label
        return row
    notes = []
    if not fit.converged:
        notes.append(f"optimiser convergence not verified: {fit.message}")
    if fit.singular:
        notes.append("singular fit (a variance component on its zero bound)")
    boot, failed = bootstrap_iccs(design, fit, method, n_boot, rng)
    (lo1, hi1), (lok, hik) = interval_from_boot(np.array([icc1, icck]), boot, ci_level, interval)
    if n_boot and failed == n_boot:
        notes.append("every bootstrap refit failed")
    if failed:
        log.warning("%s: %d of %d %s refits failed", condition, failed, n_boot, method)
    return {
        "condition": condition, "n_ratings": n, "n_clips": design.n_clips, "n_participants": design.n_participants,
        "k_mean_raters": k, "var_clip": fit.var_g1, "var_participant": fit.var_g2, "var_resid": fit.var_resid,
        "icc_2_1": icc1, "icc_2_1_lo": lo1, "icc_2_1_hi": hi1, "icc_2_k": icck, "icc_2_k_lo": lok,
        "icc_2_k_hi": hik, "n_boot": n_boot, "n_boot_failed": failed, "ci_method": label,
        "model": design.formula, "note": "; ".join(notes),
    }


def icc_with_ci(ratings: pd.DataFrame, participants: pd.DataFrame, method: str, n_boot: int, seed: int,
                ci_level: float = 0.95, stimuli: pd.DataFrame | None = None,
                conditions: tuple[str, ...] = CONDITIONS, interval: str = "percentile") -> pd.DataFrame:
    """ICC(2,1) and ICC(2,k) per condition with ``method``'s bootstrap intervals.

    As :func:`modprefs.stats.icc.icc_by_condition` (same inputs, seeding, rows and columns
    :data:`~modprefs.stats.icc.ICC_COLUMNS`), plus the choice of ``method`` (:data:`CI_METHODS`)
    and ``interval`` (:data:`INTERVALS`); ``ci_method`` names both.
    """
    _check(method, interval)
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")
    if not 0 < ci_level < 1:
        raise ValueError(f"ci_level must be in (0, 1), got {ci_level}")
    streams = np.random.SeedSequence(seed).spawn(len(conditions))
    out = []
    for condition, stream in zip(conditions, streams):
        df = analysable_ratings(ratings, participants, condition, stimuli)
        if df.empty:
            row = _empty_row(condition, 0, 0, 0, model_formula(("presented_first", "trial_z")),
                             "no analysable ratings (passed attention check, trial >= 1)")
            row["ci_method"] = ci_method_label(method, interval)
            out.append(row)
            continue
        design = condition_design(df)
        out.append(icc_ci_for_design(condition, design, method, n_boot, np.random.default_rng(stream),
                                     ci_level, interval))
    return pd.DataFrame(out, columns=ICC_COLUMNS)
