"""Asymptotic (Wald) standard errors of ICC(2,1) and ICC(2,k) from a crossed REML fit.

ICC(2,1) = t1^2 / (t1^2 + t2^2 + 1) and ICC(2,k) = t1^2 / (t1^2 + (t2^2 + 1) / k) depend on the
variance components only through lme4's relative SDs theta = (t1, t2) = (s_clip, s_rater) / s_resid.
:func:`modprefs.stats.mixed.reml.fit_crossed_intercepts` profiles beta and sigma out of the criterion,
so the covariance of theta-hat is 2 H^-1, H the Hessian of the profiled REML criterion
(-2 log L_R) at the optimum (observed information of the profile likelihood). H comes from
central differences of the engine's analytic gradient; the delta method gives the ICCs' SEs.

These SEs assume the Gaussian LMM. The study's ratings are clipped and heavy-tailed, so on their
own they are too small; the planner rescales them (:mod:`modprefs.plan.intervals`).
"""

from __future__ import annotations

import math

import numpy as np

from modprefs.stats.mixed.factors import encode_factor
from modprefs.stats.mixed.reml import CrossedFit, evaluate_criterion, sufficient_statistics
from modprefs.stats.reliability.icc import ConditionDesign


def theta_hessian(design: ConditionDesign, fit: CrossedFit, rel_step: float = 1e-4) -> np.ndarray:
    """(2, 2) Hessian of the REML criterion in theta = (clip, participant) at ``fit.theta``.

    ``design`` and ``fit`` as :func:`modprefs.stats.reliability.icc.fit_iccs` makes them (g1 = clip, g2 =
    participant). Raises ``np.linalg.LinAlgError`` when the criterion cannot be evaluated there.
    """
    y, X = design.y, design.X
    b0, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ b0
    ys = resid / math.sqrt(resid @ resid / (y.size - X.shape[1]))  # the criterion's theta-shape is scale-free
    (c1, levels1), (c2, levels2) = encode_factor(design.clip, "clip"), encode_factor(design.participant, "participant")
    q1, q2 = levels1.size, levels2.size
    theta = np.asarray(fit.theta, float).copy()
    swap = q2 > q1  # the engine eliminates the factor with more levels
    if swap:
        c1, q1, c2, q2 = c2, q2, c1, q1
        theta = theta[::-1].copy()
    s = sufficient_statistics(ys, X, c1, q1, c2, q2)
    hess = np.empty((2, 2))
    for j in range(2):
        h = rel_step * max(theta[j], 1e-2)
        up, down = theta.copy(), theta.copy()
        up[j] += h
        down[j] = max(down[j] - h, 0.0)
        g_up, g_down = evaluate_criterion(up, s, True).grad, evaluate_criterion(down, s, True).grad
        assert g_up is not None and g_down is not None  # requested (grad=True is the default)
        hess[:, j] = (g_up - g_down) / (up[j] - down[j])
    hess = 0.5 * (hess + hess.T)
    return hess[::-1, ::-1].copy() if swap else hess


def icc_standard_errors(theta: np.ndarray, hessian: np.ndarray, k: float) -> tuple[float, float]:
    """Delta-method SEs of (ICC(2,1), ICC(2,k)) from theta-hat and the criterion's Hessian.

    Cov(theta-hat) = 2 H^-1. Returns (nan, nan) when H is not positive definite or theta is on a
    bound (a singular fit: the Wald approximation does not hold there).
    """
    t1, t2 = float(theta[0]), float(theta[1])
    if not (t1 > 0 and t2 > 0 and np.isfinite(hessian).all()):
        return math.nan, math.nan
    eig = np.linalg.eigvalsh(hessian)
    if not eig.min() > 0:
        return math.nan, math.nan
    cov = 2.0 * np.linalg.inv(hessian)
    a, b = t1 * t1, t2 * t2
    d1 = a + b + 1.0
    dk = a + (b + 1.0) / k
    g1 = np.array([2 * t1 * (b + 1.0) / d1**2, -2 * t2 * a / d1**2])
    gk = np.array([2 * t1 * (b + 1.0) / k / dk**2, -2 * t2 * a / k / dk**2])
    return float(math.sqrt(max(g1 @ cov @ g1, 0.0))), float(math.sqrt(max(gk @ cov @ gk, 0.0)))


def logit_interval(estimate: np.ndarray, se: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Wald interval on the logit scale, back-transformed: an ICC interval inside (0, 1).

    ``se`` is the SE of the ICC itself; on the logit scale it is se / (icc (1 - icc)).
    Arrays of equal shape; NaN where the estimate is not in (0, 1) or se is NaN.
    """
    est = np.asarray(estimate, float)
    se = np.asarray(se, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = (est > 0) & (est < 1) & np.isfinite(se)
        logit = np.where(ok, np.log(est / (1 - est)), np.nan)
        s = np.where(ok, se / (est * (1 - est)), np.nan)
    lo = 1.0 / (1.0 + np.exp(-(logit - z * s)))
    hi = 1.0 / (1.0 + np.exp(-(logit + z * s)))
    return lo, hi
