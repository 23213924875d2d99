"""Inter-rater reliability per condition: ICC(2,1) and ICC(2,k) from a crossed random-intercepts LMM.

The variance components come from ``rating ~ presented_first + trial_z + (1|clip_id) +
(1|participant_id)`` fitted by REML (:mod:`modprefs.stats.mixed.reml`, equal to lme4); a covariate that is
constant in the data is left out. The design is usually incomplete (each participant rates a subset of
clips), which is why the ANOVA-based ICC estimators (pingouin) do not apply in general; on complete,
balanced ratings without covariates the REML estimates equal them.

ICC(2,k) is the reliability of a clip's mean rating. With unequal numbers of ratings per clip it is
computed at the **effective k** (:func:`effective_k`, the harmonic mean of the ratings per clip), not the
arithmetic mean: the error variance of a clip mean is (s_rater + s_resid) / n_c, so the clip means taken
together have reliability s_clip / (s_clip + (s_rater + s_resid) mean_c(1 / n_c)), which is Spearman-Brown
at the harmonic mean. The arithmetic mean overstates it (Jensen); both are in the table (``k_mean_raters``,
``k_effective``); tests/stats/reliability/test_icc.py checks the choice against simulation.

Confidence intervals (``stats.icc_ci_method``) are computed by :mod:`modprefs.stats.reliability.icc_ci`:
by default (``auto``) the F-based interval of McGraw & Wong (1996) where a condition's ratings are complete
and balanced without covariates (:mod:`modprefs.stats.reliability.icc_f_interval`; df shrunk to the ratings'
variability) and the ratings do not contradict its assumptions, else the crossed jackknife over prompts and
participants. :func:`icc_for_design` here is the paper's stimulus bootstrap
(percentile intervals, clips resampled with replacement, raters fixed), kept as the method ``stimulus``.

References:
    Shrout, P. E. & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater
    reliability. Psychological Bulletin 86(2), 420-428.
    McGraw, K. O. & Wong, S. P. (1996). Forming inferences about some intraclass correlation
    coefficients. Psychological Methods 1(1), 30-46.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from modprefs.io_tables import as_bool_column
from modprefs.stats.mixed.reml import CrossedFit, fit_crossed_intercepts
from modprefs.study.terms import ATTENTION_PROMPT

log = logging.getLogger(__name__)

CI_METHOD = "percentile, stimulus bootstrap (clips resampled, raters fixed; the paper's)"
ICC_COLUMNS = [
    "condition",
    "n_ratings",
    "n_clips",
    "n_participants",
    "k_mean_raters",
    "k_effective",
    "var_clip",
    "var_participant",
    "var_resid",
    "icc_2_1",
    "icc_2_1_lo",
    "icc_2_1_hi",
    "icc_2_k",
    "icc_2_k_lo",
    "icc_2_k_hi",
    "n_boot",
    "n_boot_failed",
    "ci_level",
    "ci_method",
    "model",
    "note",
]


def icc_from_components(var_stimulus: float, var_rater: float, var_resid: float, k: float) -> tuple[float, float]:
    """ICC(2,1) and ICC(2,k) from variance components of a two-way random-effects model.

    ICC(2,1) = s_stim / (s_stim + s_rater + s_resid) is the reliability of one rater's rating;
    ICC(2,k) = s_stim / (s_stim + (s_rater + s_resid) / k) that of the mean of k raters
    (Shrout & Fleiss 1979, ICC(2,1) and ICC(2,k); McGraw & Wong 1996, ICC(A,1) and ICC(A,k):
    absolute agreement, so rater variance counts as error). Variances in squared rating units;
    ``k`` > 0 is the number of ratings per stimulus (:func:`effective_k` when it varies). Returns (nan, nan)
    when undefined.

    Examples
    --------
    >>> from modprefs.stats.reliability.icc import icc_from_components
    >>> icc_1, icc_k = icc_from_components(var_stimulus=4.0, var_rater=1.0, var_resid=4.0, k=5)
    >>> round(icc_1, 4), round(icc_k, 4)  # 4 / 9 and 4 / (4 + 5 / 5)
    (0.4444, 0.8)
    """
    total = var_stimulus + var_rater + var_resid
    if not (k > 0 and total > 0 and min(var_stimulus, var_rater, var_resid) >= 0):
        return math.nan, math.nan
    return var_stimulus / total, var_stimulus / (var_stimulus + (var_rater + var_resid) / k)


def effective_k(clip: np.ndarray) -> float:
    """The k at which ICC(2,k) is the reliability of the clip means: the harmonic mean of ratings per clip.

    ``clip``: (n,) clip codes of the ratings (clips without ratings are ignored). The mean of clip c's n_c
    ratings has error variance (s_rater + s_resid) / n_c; over the clips, the reliability of their means is
    s_clip / (s_clip + (s_rater + s_resid) mean_c(1 / n_c)) = ICC(2,k) at k = 1 / mean_c(1 / n_c). Equal to
    the arithmetic mean ratings per clip when every clip has the same number; smaller otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from modprefs.stats.reliability.icc import effective_k
    >>> effective_k(np.array([0, 0, 0, 1, 1, 1]))  # three ratings of each of two clips
    3.0
    >>> round(effective_k(np.array([0, 0, 0, 0, 1, 1])), 4)  # four and two: the harmonic mean, not 3
    2.6667
    """
    counts = np.bincount(np.asarray(clip, dtype=np.intp))
    counts = counts[counts > 0]
    return float(counts.size / np.sum(1.0 / counts)) if counts.size else math.nan


def analysable_ratings(
    ratings: pd.DataFrame, participants: pd.DataFrame, condition: str, stimuli: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Ratings of one condition entering the ICC model.

    Keeps rows of participants whose ``passed_attention`` is true, with ``trial >= 1`` (trial 0 is
    the attention check, prompt ``attn``), a non-missing rating and, when ``stimuli`` is given, a
    ``clip_id`` in the stimulus set. Returns the ratings' columns, index reset.
    """
    passed = participants.loc[as_bool_column(participants["passed_attention"]), "participant_id"].astype(str)
    df = ratings[ratings["condition"].astype(str) == condition]
    keep = (
        df["participant_id"].astype(str).isin(set(passed))
        & (pd.to_numeric(df["trial"], errors="coerce") >= 1)
        & (df["prompt_id"].astype(str) != ATTENTION_PROMPT)
        & pd.to_numeric(df["rating"], errors="coerce").notna()
    )
    if stimuli is not None:
        keep &= df["clip_id"].astype(str).isin(set(stimuli["clip_id"].astype(str)))
    return df[keep].reset_index(drop=True)


@dataclass(frozen=True)
class ConditionDesign:
    """Model arrays for one condition.

    y: (n,) ratings; X: (n, p) intercept + covariates; clip: (n,) codes 0..n_clips-1;
    participant: (n,) codes; terms: covariate names in X's columns 1..p-1; formula: the model;
    prompt: (n,) codes 0..n_prompts-1 of the clip's prompt (the unit a study samples: both of a
    prompt's responses enter together; without a ``prompt_id`` column each clip is its own prompt).
    """

    y: np.ndarray
    X: np.ndarray
    clip: np.ndarray
    participant: np.ndarray
    n_clips: int
    n_participants: int
    terms: tuple[str, ...]
    formula: str
    prompt: np.ndarray | None = None
    n_prompts: int = 0


def model_formula(terms: tuple[str, ...]) -> str:
    """lme4-style formula of the ICC model with the given fixed covariates."""
    rhs = " + ".join(terms) if terms else "1"
    return f"rating ~ {rhs} + (1|clip_id) + (1|participant_id)"


def condition_design(df: pd.DataFrame) -> ConditionDesign:
    """Arrays of ``rating ~ presented_first + trial_z + (1|clip_id) + (1|participant_id)``.

    ``presented_first`` enters as 0/1 and ``trial_z`` is ``trial`` standardised over these rows
    (mean 0, SD 1 with ddof=1, as R's ``scale``). A covariate that is constant over the rows is
    left out (it would make X rank deficient) and the formula says so by omitting it.

    Rows are put in a canonical order (participant, clip, trial) first, so that every resampling
    interval depends on the data and the seed, not on the order the ratings file lists them in.
    """
    keys = [c for c in ("participant_id", "clip_id", "trial") if c in df.columns]
    df = df.assign(**{f"_key_{c}": df[c].astype(str) for c in keys[:2]})
    df = df.sort_values([f"_key_{c}" for c in keys[:2]] + keys[2:], kind="mergesort")
    y = pd.to_numeric(df["rating"]).to_numpy(float)
    covariates: dict[str, np.ndarray] = {"presented_first": as_bool_column(df["presented_first"]).to_numpy(float)}
    trial = pd.to_numeric(df["trial"]).to_numpy(float)
    sd = trial.std(ddof=1) if trial.size > 1 else 0.0
    covariates["trial_z"] = (trial - trial.mean()) / sd if sd > 0 else np.zeros_like(trial)
    terms = tuple(name for name, col in covariates.items() if col.size and np.ptp(col) > 0)
    X = np.column_stack([np.ones(y.size)] + [covariates[t] for t in terms])
    clip_codes, clips = pd.factorize(df["clip_id"].astype(str), sort=True)
    part_codes, parts = pd.factorize(df["participant_id"].astype(str), sort=True)
    prompt_labels = df["prompt_id"].astype(str) if "prompt_id" in df.columns else df["clip_id"].astype(str)
    prompt_codes, prompts = pd.factorize(prompt_labels, sort=True)
    return ConditionDesign(
        y=y,
        X=X,
        clip=clip_codes.astype(np.intp),
        participant=part_codes.astype(np.intp),
        n_clips=len(clips),
        n_participants=len(parts),
        terms=terms,
        formula=model_formula(terms),
        prompt=prompt_codes.astype(np.intp),
        n_prompts=len(prompts),
    )


def resample_clips(clip: np.ndarray, n_clips: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One stimulus-bootstrap draw: ``n_clips`` clips with replacement, each drawn clip a new level.

    Args:
        clip: (n,) clip codes 0..n_clips-1 of the rows.
        n_clips: number of clips (every code present).
        rng: the bootstrap's generator (one ``integers`` call per draw).

    Returns:
        rows: (n*,) row indices into the original data, the drawn clips' rows in draw order.
        new_clip: (n*,) codes 0..n_clips-1 = the draw position, so a clip drawn twice is two levels.
    """
    order = np.argsort(clip, kind="stable")
    counts = np.bincount(clip, minlength=n_clips)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    drawn = rng.integers(0, n_clips, size=n_clips)
    lengths = counts[drawn]
    total = int(lengths.sum())
    offsets = np.repeat(starts[drawn] - (np.cumsum(lengths) - lengths), lengths) + np.arange(total)
    return order[offsets], np.repeat(np.arange(n_clips), lengths)


def fit_iccs(
    design: ConditionDesign,
    rows: np.ndarray | None = None,
    clip: np.ndarray | None = None,
    theta0: np.ndarray | None = None,
) -> tuple[CrossedFit, float, float, float]:
    """Fit the model (on ``rows`` with clip codes ``clip`` when given); return (fit, k, ICC(2,1), ICC(2,k)).

    ``k`` is the effective number of ratings per clip (:func:`effective_k`), at which ICC(2,k) is computed.

    Examples
    --------
    Shrout & Fleiss's (1979) six targets rated by four judges, whose ICC(2,1) is .29 and ICC(2,4) .62 (on complete
    balanced ratings the REML estimate equals their ANOVA estimate):

    >>> import numpy as np, pandas as pd
    >>> from modprefs.stats.reliability.icc import condition_design, fit_iccs
    >>> table = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]])
    >>> rows = [(f"t{i}", f"j{j}", float(table[i, j])) for i in range(6) for j in range(4)]
    >>> long = pd.DataFrame(rows, columns=["clip_id", "participant_id", "rating"]).assign(trial=1, presented_first=True)
    >>> fit, k, icc_1, icc_k = fit_iccs(condition_design(long))
    >>> k, round(icc_1, 2), round(icc_k, 2)
    (4.0, 0.29, 0.62)
    """
    if rows is None:
        y, X, g_clip, g_part = design.y, design.X, design.clip, design.participant
    else:
        assert clip is not None  # the callers pass rows and clip together
        y, X, g_clip, g_part = design.y[rows], design.X[rows], clip, design.participant[rows]
    fit = fit_crossed_intercepts(y, X, g_clip, g_part, reml=True, theta0=theta0, names=("clip_id", "participant_id"))
    k = effective_k(g_clip)
    icc1, icck = icc_from_components(fit.var_g1, fit.var_g2, fit.var_resid, k)
    return fit, k, icc1, icck


def empty_icc_row(
    condition: str,
    n_ratings: int,
    n_clips: int,
    n_participants: int,
    formula: str,
    note: str,
    ci_level: float = 0.95,
) -> dict:
    row: dict[str, Any] = {c: math.nan for c in ICC_COLUMNS}
    row.update(
        ci_level=ci_level,
        condition=condition,
        n_ratings=n_ratings,
        n_clips=n_clips,
        n_participants=n_participants,
        n_boot=0,
        n_boot_failed=0,
        ci_method=CI_METHOD,
        model=formula,
        note=note,
    )
    return row


def fit_notes(fit: CrossedFit) -> list[str]:
    """The ICC row's notes on a fit: convergence not verified, a variance component on its zero bound."""
    notes = []
    if not fit.converged:
        notes.append(f"optimiser convergence not verified: {fit.message}")
    if fit.singular:
        notes.append("singular fit (a variance component on its zero bound)")
    return notes


def icc_row(
    condition: str,
    design: ConditionDesign,
    fitted: tuple[CrossedFit, float, float, float],
    ci_2_1: tuple[float, float],
    ci_2_k: tuple[float, float],
    *,
    n_boot: int,
    n_boot_failed: int,
    ci_method: str,
    notes: list[str],
    ci_level: float = 0.95,
) -> dict:
    """One ICC table row (:data:`ICC_COLUMNS`) from a fit and its intervals.

    ``fitted`` is :func:`fit_iccs`' (fit, k, ICC(2,1), ICC(2,k)); ``ci_2_1``/``ci_2_k`` are (lo, hi) on the ICC
    scale at ``ci_level``; ``notes`` are joined with "; ". ``k_mean_raters`` is the arithmetic mean of ratings per
    clip, ``k_effective`` the k of ICC(2,k) (:func:`effective_k`).
    """
    fit, k, icc1, icck = fitted
    return {
        "condition": condition,
        "n_ratings": int(design.y.size),
        "n_clips": design.n_clips,
        "n_participants": design.n_participants,
        "k_mean_raters": design.y.size / design.n_clips,
        "k_effective": k,
        "var_clip": fit.var_g1,
        "var_participant": fit.var_g2,
        "var_resid": fit.var_resid,
        "icc_2_1": icc1,
        "icc_2_1_lo": ci_2_1[0],
        "icc_2_1_hi": ci_2_1[1],
        "icc_2_k": icck,
        "icc_2_k_lo": ci_2_k[0],
        "icc_2_k_hi": ci_2_k[1],
        "n_boot": n_boot,
        "n_boot_failed": n_boot_failed,
        "ci_level": ci_level,
        "ci_method": ci_method,
        "model": design.formula,
        "note": "; ".join(notes),
    }


def icc_for_design(
    condition: str, design: ConditionDesign, n_boot: int, rng: np.random.Generator, ci_level: float = 0.95
) -> dict:
    """One output row (:data:`ICC_COLUMNS`) for a prepared condition; see :func:`icc_by_condition`."""
    n = int(design.y.size)
    try:
        fit, k, icc1, icck = fit_iccs(design)
    except (ValueError, np.linalg.LinAlgError) as exc:
        return empty_icc_row(
            condition, n, design.n_clips, design.n_participants, design.formula, f"model not estimable: {exc}", ci_level
        )
    notes = fit_notes(fit)
    boot = np.full((n_boot, 2), np.nan)
    failed = 0
    for b in range(n_boot):
        rows, clip = resample_clips(design.clip, design.n_clips, rng)
        try:
            bfit, _, b1, bk = fit_iccs(design, rows, clip, theta0=fit.theta)
        except (ValueError, np.linalg.LinAlgError):
            failed += 1
            continue
        if not bfit.converged or not np.isfinite([b1, bk]).all():
            failed += 1
            continue
        boot[b] = b1, bk
    ok = boot[np.isfinite(boot).all(axis=1)]
    alpha = (1.0 - ci_level) / 2.0
    if len(ok):
        (lo1, hi1), (lok, hik) = np.quantile(ok, [alpha, 1.0 - alpha], axis=0).T
    else:
        lo1 = hi1 = lok = hik = math.nan
        if n_boot:
            notes.append("every bootstrap refit failed")
    if failed:
        log.warning("%s: %d of %d bootstrap refits failed", condition, failed, n_boot)
    return icc_row(
        condition,
        design,
        (fit, k, icc1, icck),
        (lo1, hi1),
        (lok, hik),
        n_boot=n_boot,
        n_boot_failed=failed,
        ci_method=CI_METHOD,
        notes=notes,
        ci_level=ci_level,
    )
