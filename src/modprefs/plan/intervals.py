"""The planner's interval for ICC(2,k): fast, and validated against the analysis' own (pluggable).

The analysis (:func:`modprefs.stats.icc_ci.icc_with_ci`) refits the model hundreds of times per
interval: far too slow for thousands of simulated studies. Each simulated study instead gets a Wald
interval on the logit scale (:mod:`modprefs.plan.wald`: Gaussian SE from the REML fit), whose
half-width is then put on the scale of the interval the lab will actually see. Three choices
(``--interval``):

``analysis`` (default)
    Per design, the analysis' own interval (:data:`ANALYSIS_CI_METHOD`, ``n_boot`` resamples) is
    computed on the first ``n_calibration`` simulated studies; the Wald half-widths of all studies are
    multiplied by mean(analysis half-width) / mean(Wald half-width) over those studies. The ratio is
    design-specific (the paper's ratings are heavy-tailed and clipped, so how far the Gaussian SE is
    off depends on the numbers of clips and raters), which is why it is measured per design.
``sampling``
    Wald SEs rescaled so their root-mean-square equals the standard deviation of the estimates over
    the design's simulated studies: the half-width of an interval with correct coverage (what a
    well-calibrated default should give), at no extra cost.
``wald``
    The Gaussian-model Wald half-width as is (too narrow for the paper's heavy-tailed ratings).

benchmarks/plan_interval.py compares each choice with ``icc_with_ci``'s half-widths, per analysis
method (``--method``), on fresh studies at three designs.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from modprefs.plan.analysis import icc_design
from modprefs.plan.fastsim import SimulatedStudy
from modprefs.plan.wald import logit_interval
from modprefs.stats import icc_ci

INTERVALS: tuple[str, ...] = ("analysis", "sampling", "wald")
#: The workflow's default ``stats.icc_ci_method`` (workflow/schemas/config.schema.yaml) until
#: :mod:`modprefs.stats.icc_ci` names its default itself (``DEFAULT_CI_METHOD``), which then wins.
WORKFLOW_DEFAULT_CI_METHOD = "two_way"
ANALYSIS_CI_METHOD: str = getattr(icc_ci, "DEFAULT_CI_METHOD", WORKFLOW_DEFAULT_CI_METHOD)


def z_value(level: float) -> float:
    """Two-sided normal quantile of a ``level`` interval (1.96 for .95)."""
    return float(stats.norm.ppf(0.5 + level / 2.0))


def wald_half_width(icck: np.ndarray, sek: np.ndarray, level: float) -> np.ndarray:
    """Half-width of the logit-scale Wald interval of ICC(2,k) (NaN where undefined)."""
    lo, hi = logit_interval(icck, sek, z_value(level))
    return (hi - lo) / 2.0


def analysis_half_widths(study: SimulatedStudy, method: str, n_boot: int, rng: np.random.Generator,
                         level: float) -> dict[str, float]:
    """The analysis' own ICC(2,k) interval half-width per condition of one study (NaN if it failed)."""
    out = {}
    for c, r in study.ratings.items():
        row = icc_ci.icc_ci_for_design(c, icc_design(r), method, n_boot, rng, level)
        out[c] = (row["icc_2_k_hi"] - row["icc_2_k_lo"]) / 2.0
    return out


def predicted_half_widths(icck: np.ndarray, sek: np.ndarray, interval: str, level: float,
                          calibration: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, float]:
    """Per-study predicted half-widths of the reported ICC(2,k) interval, and the scale factor used.

    Args:
        icck, sek: (n,) ICC(2,k) estimates and their Wald SEs over a design's simulated studies.
        interval: one of :data:`INTERVALS`.
        level: the interval's coverage (e.g. .95).
        calibration: for ``analysis``: (analysis half-widths, Wald half-widths) of the calibration
            studies (NaN entries ignored).
    """
    if interval not in INTERVALS:
        raise ValueError(f"unknown planning interval {interval!r}; expected one of {INTERVALS}")
    wald = wald_half_width(icck, sek, level)
    if interval == "wald":
        return wald, 1.0
    if interval == "sampling":
        ok = np.isfinite(icck) & np.isfinite(sek)
        if ok.sum() < 3:
            return np.full_like(wald, np.nan), math.nan
        factor = float(np.std(icck[ok], ddof=1) / math.sqrt(np.mean(sek[ok] ** 2)))
        return wald_half_width(icck, sek * factor, level), factor
    if calibration is None:
        raise ValueError("the 'analysis' interval needs calibration half-widths")
    hw_m, hw_w = (np.asarray(a, float) for a in calibration)
    ok = np.isfinite(hw_m) & np.isfinite(hw_w)
    if not ok.any():
        return np.full_like(wald, np.nan), math.nan
    factor = float(hw_m[ok].mean() / hw_w[ok].mean())
    return wald * factor, factor
