"""The ICC intervals' resampling refits: bootstraps of a crossed design and the crossed jackknife's refits.

Bootstrap draws (:func:`bootstrap_iccs`: ``stimulus``, ``prompt``, ``two_way``, ``parametric``), the
leave-one-prompt-out and leave-one-participant-out refits (:func:`jackknife_iccs`) and the residual bootstrap that
estimates their shared noise (:func:`residual_bootstrap_iccs`); each refits the ICC model
(:mod:`modprefs.stats.reliability.icc`). The generic resampling machinery is
:mod:`modprefs.stats.reliability.resampling`; the methods and how they become intervals:
:mod:`modprefs.stats.reliability.icc_ci`.

References:
    McCullagh, P. (2000). Resampling and exchangeable arrays. Bernoulli 6(2), 285-301.
    Owen, A. B. (2007). The pigeonhole bootstrap. Annals of Applied Statistics 1(2), 386-411.
"""

from __future__ import annotations

import math

import numpy as np

from modprefs.stats.mixed.reml import CrossedFit, fit_crossed_intercepts
from modprefs.stats.reliability.icc import (
    ConditionDesign,
    effective_k,
    fit_iccs,
    icc_from_components,
    resample_clips,
)

BOOTSTRAP_METHODS: tuple[str, ...] = ("stimulus", "prompt", "two_way", "parametric")


def resample_clips_and_participants(
    design: ConditionDesign, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One two-way bootstrap draw: clips, then participants, each with replacement and independently.

    Returns ``(rows, clip, participant)``: row indices into the design and the new level codes.
    A row appears once per (drawn copy of its clip, drawn copy of its participant); each copy is
    its own level (codes = draw positions), so a participant drawn twice is two raters.
    """
    rows1, clip1 = resample_clips(design.clip, design.n_clips, rng)
    rows2, new_part = resample_clips(design.participant[rows1], design.n_participants, rng)
    return rows1[rows2], clip1[rows2], new_part


def resample_prompts(design: ConditionDesign, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One cluster-bootstrap draw of prompts: ``n_prompts`` prompts with replacement, raters fixed.

    A study samples prompts and rates both of a prompt's responses, so the two clips of a prompt
    (correlated: a shared prompt effect) travel together. Returns ``(rows, clip)``: row indices into
    the design (the drawn prompts' rows in draw order) and new clip codes in which each drawn copy's
    clips are distinct levels.
    """
    assert design.prompt is not None  # condition_design always sets the prompt codes
    rows, position = resample_clips(design.prompt, design.n_prompts, rng)
    key = position.astype(np.int64) * design.n_clips + design.clip[rows]
    _, clip = np.unique(key, return_inverse=True)
    return rows, clip.astype(np.intp)


def crossed_blups(
    design: ConditionDesign, fit: CrossedFit, tol: float = 1e-10, max_sweeps: int = 500
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BLUPs of the clip and participant intercepts at the fitted variances, and the residuals.

    Solves the mixed-model equations for (u, v) given the fitted fixed effects by block Gauss-Seidel
    (alternating conditional means; it converges because the system is symmetric positive definite):
    u_c = sum_{rows of c}(y - Xb - v) / (n_c + s2_e / s2_clip), v_p likewise. Returns
    ``(u (n_clips,), v (n_participants,), e (n,))`` with e = y - Xb - u[clip] - v[participant].
    A zero variance gives zero effects.
    """
    r = design.y - design.X @ fit.beta
    n_c = np.bincount(design.clip, minlength=design.n_clips).astype(float)
    n_p = np.bincount(design.participant, minlength=design.n_participants).astype(float)
    u = np.zeros(design.n_clips)
    v = np.zeros(design.n_participants)
    for _ in range(max_sweeps):
        u_new = (
            np.bincount(design.clip, r - v[design.participant], design.n_clips) / (n_c + fit.var_resid / fit.var_g1)
            if fit.var_g1 > 0
            else np.zeros_like(u)
        )
        v_new = (
            np.bincount(design.participant, r - u_new[design.clip], design.n_participants)
            / (n_p + fit.var_resid / fit.var_g2)
            if fit.var_g2 > 0
            else np.zeros_like(v)
        )
        step = max(np.abs(u_new - u).max(initial=0.0), np.abs(v_new - v).max(initial=0.0))
        u, v = u_new, v_new
        if step < tol * max(1.0, math.sqrt(fit.var_resid)):
            break
    return u, v, r - u[design.clip] - v[design.participant]


def reflate(x: np.ndarray, variance: float) -> np.ndarray:
    """``x`` centred and scaled so its mean square equals ``variance`` (Carpenter, Goldstein & Rasbash 2003).

    Predicted random effects and residuals are shrunk; rescaling them to the fitted variance before
    resampling keeps the bootstrap's variance components those of the fit while keeping the shape
    (skew, tails) of their empirical distribution."""
    x = np.asarray(x, float) - np.mean(x)
    ms = float(np.mean(x * x))
    return x * math.sqrt(max(variance, 0.0) / ms) if ms > 0 else x


def jackknife_iccs(design: ConditionDesign, fit: CrossedFit, unit: str) -> np.ndarray:
    """(n_units, 2) leave-one-out (ICC(2,1), ICC(2,k)), one ``unit`` (``"prompt"`` or ``"participant"``) left out.

    Each refit starts from the full fit's theta; a refit that fails or does not converge gives a NaN row.
    """
    codes, n_units = (
        (design.prompt, design.n_prompts)
        if unit == "prompt"
        else (design.participant, design.n_participants)
        if unit == "participant"
        else (None, 0)
    )
    if codes is None:
        raise ValueError(f"unknown jackknife unit {unit!r}; expected 'prompt' or 'participant'")
    out = np.full((n_units, 2), np.nan)
    for j in range(n_units):
        keep = codes != j
        try:
            f = fit_crossed_intercepts(
                design.y[keep],
                design.X[keep],
                design.clip[keep],
                design.participant[keep],
                reml=True,
                theta0=fit.theta,
                names=("clip_id", "participant_id"),
            )
        except (ValueError, np.linalg.LinAlgError):
            continue
        if f.converged:
            out[j] = icc_from_components(f.var_g1, f.var_g2, f.var_resid, effective_k(design.clip[keep]))
    return out


def residual_bootstrap_iccs(
    design: ConditionDesign, fit: CrossedFit, n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    """(n_boot, 2) ICCs refitted to y* = X b + u + v + e*: effects held at their reflated BLUPs, residuals
    resampled with replacement from the reflated residuals. The spread of these replicates is the part of
    the estimator's variance that comes from rating noise alone (clips and raters fixed)."""
    u, v, e = crossed_blups(design, fit)
    fixed = design.X @ fit.beta + reflate(u, fit.var_g1)[design.clip] + reflate(v, fit.var_g2)[design.participant]
    e = reflate(e, fit.var_resid)
    out = np.full((n_boot, 2), np.nan)
    for b in range(n_boot):
        y = fixed + e[rng.integers(0, e.size, e.size)]
        try:
            f, i1, ik = refit_iccs(design, y, None, None, None, fit.theta)
        except (ValueError, np.linalg.LinAlgError):
            continue
        if f.converged:
            out[b] = i1, ik
    return out


def simulate_from_fit(design: ConditionDesign, fit: CrossedFit, rng: np.random.Generator) -> np.ndarray:
    """Responses (n,) from the fitted Gaussian LMM on the design's X, clips and participants."""
    u = math.sqrt(max(fit.var_g1, 0.0)) * rng.standard_normal(design.n_clips)
    v = math.sqrt(max(fit.var_g2, 0.0)) * rng.standard_normal(design.n_participants)
    e = math.sqrt(max(fit.var_resid, 0.0)) * rng.standard_normal(design.y.size)
    return design.X @ fit.beta + u[design.clip] + v[design.participant] + e


def refit_iccs(
    design: ConditionDesign,
    y: np.ndarray,
    rows: np.ndarray | None,
    clip: np.ndarray | None,
    participant: np.ndarray | None,
    theta0: np.ndarray,
) -> tuple[CrossedFit, float, float]:
    if rows is None:
        yy, X, g1, g2 = y, design.X, design.clip, design.participant
    else:
        assert clip is not None and participant is not None  # the callers pass them with rows
        yy, X, g1, g2 = design.y[rows], design.X[rows], clip, participant
    f = fit_crossed_intercepts(yy, X, g1, g2, reml=True, theta0=theta0, names=("clip_id", "participant_id"))
    icc1, icck = icc_from_components(f.var_g1, f.var_g2, f.var_resid, effective_k(g1))
    return f, icc1, icck


def bootstrap_iccs(
    design: ConditionDesign, fit: CrossedFit, method: str, n_boot: int, rng: np.random.Generator
) -> tuple[np.ndarray, int]:
    """(n_boot, 2) bootstrap replicates of (ICC(2,1), ICC(2,k)); NaN rows = failed refits.

    ``fit`` is the full-data fit (its theta is the warm start; its estimates drive ``parametric``).
    ``stimulus`` draws exactly as :func:`modprefs.stats.reliability.icc.icc_for_design` does from the same rng.
    Returns the replicates and the number of failed refits.
    """
    if method not in BOOTSTRAP_METHODS:
        raise ValueError(f"{method!r} is not a bootstrap method; expected one of {BOOTSTRAP_METHODS}")
    boot = np.full((n_boot, 2), np.nan)
    failed = 0
    for b in range(n_boot):
        try:
            if method == "stimulus":
                rows, clip = resample_clips(design.clip, design.n_clips, rng)
                bfit, _, b1, bk = fit_iccs(design, rows, clip, theta0=fit.theta)
            elif method == "prompt":
                rows, clip = resample_prompts(design, rng)
                bfit, _, b1, bk = fit_iccs(design, rows, clip, theta0=fit.theta)
            elif method == "two_way":
                rows, clip, part = resample_clips_and_participants(design, rng)
                bfit, b1, bk = refit_iccs(design, design.y, rows, clip, part, fit.theta)
            else:
                bfit, b1, bk = refit_iccs(design, simulate_from_fit(design, fit, rng), None, None, None, fit.theta)
        except (ValueError, np.linalg.LinAlgError):
            failed += 1
            continue
        if not bfit.converged or not np.isfinite([b1, bk]).all():
            failed += 1
            continue
        boot[b] = b1, bk
    return boot, failed
