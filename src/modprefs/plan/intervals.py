"""The planner's interval for ICC(2,k): fast, and validated against the analysis' own (pluggable).

The analysis (:func:`modprefs.stats.reliability.icc_ci.icc_with_ci`) refits the model hundreds of times per
interval: far too slow for thousands of simulated studies. Each simulated study instead gets a Wald
interval on the logit scale (:mod:`modprefs.plan.wald`: Gaussian SE from the REML fit), whose
half-width is then put on the scale of the interval the lab will actually see. Three choices
(``--interval``):

``analysis`` (default)
    On up to ``calibration_designs`` designs spread over the grid (:func:`calibration_designs`: the
    smallest and largest first, then greedily the design farthest from those chosen, in log size),
    the analysis' own interval (:data:`ANALYSIS_CI_METHOD`, ``n_boot`` resamples) is computed on the
    first ``n_calibration`` simulated studies. The ratio analysis / Wald half-width
    depends on the design (the paper's ratings are heavy-tailed and clipped, so how far the Gaussian
    SE is off depends on the numbers of clips and raters), so it is modelled across the grid:
    log ratio = a + b log(raters) + c log(trials) + d log(prompts), least squares over every
    calibration study of every design (:func:`fit_ratio_model`; terms without variation in the
    grid are dropped); the Wald half-widths of all of a design's studies are multiplied by the
    model's ratio for that design.
``sampling``
    Wald SEs rescaled so their root-mean-square equals the standard deviation of the estimates over
    the design's simulated studies: the half-width of an interval with correct coverage (what a
    well-calibrated default should give), at no extra cost.
``wald``
    The Gaussian-model Wald half-width as is (too narrow for the paper's heavy-tailed ratings).

benchmarks/validity/plan_interval.py compares each choice with ``icc_with_ci``'s half-widths, per analysis
method (``--method``), on fresh studies at three designs.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import stats

from modprefs.plan.analysis import icc_design
from modprefs.plan.fastsim import SimulatedStudy
from modprefs.plan.wald import logit_interval
from modprefs.stats.reliability import icc_ci

INTERVALS: tuple[str, ...] = ("analysis", "sampling", "wald")
#: The interval the analysis reports by default (``stats.icc_ci_method``, ``modprefs stats --ci-method``): ``auto``,
#: which :func:`modprefs.stats.reliability.icc_ci.icc_ci_for_design` resolves per simulated study -- the crossed
#: jackknife, since a simulated study's ratings are incomplete and its model has order covariates.
ANALYSIS_CI_METHOD: str = icc_ci.DEFAULT_CI_METHOD


def z_value(level: float) -> float:
    """Two-sided normal quantile of a ``level`` interval (1.96 for .95)."""
    return float(stats.norm.ppf(0.5 + level / 2.0))


def wald_half_width(icck: np.ndarray, sek: np.ndarray, level: float) -> np.ndarray:
    """Half-width of the logit-scale Wald interval of ICC(2,k) (NaN where undefined)."""
    lo, hi = logit_interval(icck, sek, z_value(level))
    return (hi - lo) / 2.0


def analysis_half_widths(
    study: SimulatedStudy, method: str, n_boot: int, rng: np.random.Generator, level: float
) -> dict[str, float]:
    """The analysis' own ICC(2,k) interval half-width per condition of one study (NaN if it failed)."""
    out = {}
    for c, r in study.ratings.items():
        row = icc_ci.icc_ci_for_design(c, icc_design(r), method, n_boot, rng, level)
        out[c] = (row["icc_2_k_hi"] - row["icc_2_k_lo"]) / 2.0
    return out


def _ratio_features(designs: np.ndarray) -> np.ndarray:
    """(n, 3) log(raters), log(trials), log(prompts) of (n, 3) [prompts, raters, trials] rows."""
    d = np.asarray(designs, float)
    return np.log(d[:, [1, 2, 0]])


def fit_ratio_model(designs: np.ndarray, log_ratio: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Least-squares model of log(analysis / Wald half-width) on log design sizes (see the module docstring).

    Args:
        designs: (n, 3) [prompts, raters, trials] of each calibration study.
        log_ratio: (n,) log of its analysis / Wald half-width (non-finite rows ignored).

    Returns:
        A function mapping (m, 3) designs to (m,) ratios. Raises ValueError without finite rows.
    """
    X = _ratio_features(designs)
    ok = np.isfinite(log_ratio) & np.isfinite(X).all(axis=1)
    if not ok.any():
        raise ValueError("no finite calibration ratio")
    keep = [j for j in range(3) if np.ptp(X[ok, j]) > 0]
    A = np.column_stack([np.ones(ok.sum())] + [X[ok, j] for j in keep])
    coef, *_ = np.linalg.lstsq(A, log_ratio[ok], rcond=None)

    def predict(new: np.ndarray) -> np.ndarray:
        Z = _ratio_features(np.atleast_2d(new))
        B = np.column_stack([np.ones(Z.shape[0])] + [Z[:, j] for j in keep])
        return np.exp(B @ coef)

    return predict


def predicted_half_widths(
    icck: np.ndarray, sek: np.ndarray, interval: str, level: float, analysis_ratio: float | None = None
) -> tuple[np.ndarray, float]:
    """Per-study predicted half-widths of the reported ICC(2,k) interval, and the scale factor used.

    Args:
        icck, sek: (n,) ICC(2,k) estimates and their Wald SEs over a design's simulated studies.
        interval: one of :data:`INTERVALS`.
        level: the interval's coverage (e.g. .95).
        analysis_ratio: for ``analysis``: the design's analysis / Wald half-width ratio
            (:func:`fit_ratio_model`).
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
    if analysis_ratio is None or not math.isfinite(analysis_ratio):
        raise ValueError("the 'analysis' interval needs the design's calibrated ratio")
    return wald * analysis_ratio, float(analysis_ratio)


def calibration_designs(sizes: np.ndarray, limit: int) -> list[int]:
    """Indices of at most ``limit`` designs that calibrate the ratio model, spread over the grid.

    Args:
        sizes: (n, 3) [prompts, raters, trials] of the grid's designs.
        limit: how many designs to calibrate (every design when the grid has no more).

    The calibration is what the planner spends most on (the analysis' interval refits the model
    hundreds of times per study), and the ratio model has four coefficients, so a few designs that
    span the grid suffice: the smallest and the largest, then, greedily, the design whose log sizes
    are farthest (Euclidean) from every design chosen so far (a maximin design; ties: grid order).
    """
    sizes = np.asarray(sizes, float)
    n = sizes.shape[0]
    if n <= limit:
        return list(range(n))
    x = np.log(sizes)
    total = x.sum(axis=1)
    chosen = [int(np.argmin(total)), int(np.argmax(total))]
    chosen = list(dict.fromkeys(chosen))
    while len(chosen) < limit:
        dist = np.min(np.linalg.norm(x[:, None, :] - x[None, chosen, :], axis=2), axis=1)
        dist[chosen] = -1.0
        chosen.append(int(np.argmax(dist)))
    return sorted(chosen)
