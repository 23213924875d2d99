"""Confidence intervals for ICC(2,1) / ICC(2,k) in a crossed (stimuli x raters) design.

ICC(2,1) = s_clip / (s_clip + s_rater + s_resid) is estimated from a study that sampled prompts
(stimuli), raters, and noisy ratings; an honest interval must reflect all three. The methods
(``stats.icc_ci_method``; :data:`DEFAULT_CI_METHOD` is ``auto`` in the workflow, in ``modprefs stats``
and in ``modprefs plan``), on a prepared design (:class:`modprefs.stats.reliability.icc.ConditionDesign`):

``auto`` (default)
    Per condition: the F-based interval where every rater rated every clip exactly once and the ICC model has no
    covariates (:func:`modprefs.stats.reliability.icc_f_interval.complete_table`; a prompt's pair of clips taken
    as two items), with its mean squares' df shrunk to the ratings' own variability
    (:func:`~modprefs.stats.reliability.icc_f_interval.robust_degrees`: exact McGraw & Wong where the ratings look
    Gaussian, as on pingouin's example), unless the ratings contradict its assumptions (:func:`auto_keeps_f`:
    tests of rater slopes, tails, rater noise spread and a shared prompt effect, and the crossed jackknife's
    width); else ``jackknife``. The row's ``ci_method`` names the method used (``auto: ...``) and ``note`` says
    why the F interval was or was not used.
``f_based``
    The F-based interval of McGraw & Wong (1996) for ICC(A,1) (:mod:`modprefs.stats.reliability.icc_f_interval`,
    what pingouin reports for ICC2/ICC(A,1)); no resampling. NaN bounds, with the reason in ``note``, on
    any other design.
``jackknife``
    :func:`jackknife_interval`: a t interval for logit ICC(2,1) whose variance is the sum of a
    leave-one-prompt-out and a leave-one-participant-out jackknife variance minus the noise variance
    both of them contain (estimated by a residual bootstrap with ``n_boot`` refits); ICC(2,k)'s bounds
    are the Spearman-Brown images of ICC(2,1)'s. No duplicated (clip, rater) cells, prompts left out
    with both clips, rater sampling included.
``stimulus``
    The paper's: clips with replacement (:func:`modprefs.stats.reliability.icc.resample_clips`), raters fixed.
``prompt``
    Prompts with replacement, both clips of a drawn prompt together (:func:`resample_prompts`), raters
    fixed: the stimulus bootstrap at the level the study samples.
``two_way``
    Clips AND participants resampled independently with replacement (the "pigeonhole" bootstrap
    of crossed designs; McCullagh 2000, Owen 2007): a row enters once for every (drawn copy of
    its clip, drawn copy of its participant) pair, and each drawn copy is a distinct level.
    Duplicated (clip, participant) cells make the copies agree perfectly, so the replicates
    are biased upward; the percentile interval is wider and sits higher.
``parametric``
    New responses from the fitted model on the same design: y* = X beta + u[clip] + v[participant]
    + e with Gaussian u, v, e at the fitted variances (REML) and fixed effects; refitted.

Bootstrap methods give percentile intervals (default) or basic intervals (2 * estimate - quantiles,
truncated to [0, 1]). Everything is seeded and deterministic: condition i of :func:`icc_with_ci`
uses ``SeedSequence(seed).spawn(len(conditions))[i]``.

Coverage and width relative to the oracle (2 z SD of the estimator over simulated studies) of the jackknife, the
F-based interval and ``auto``, on complete designs: benchmarks/validity/icc_interval_width.py,
benchmarks/out/icc_interval_width.md (the F interval alone under-covers the paper-calibrated simulator's
heavy-tailed, rater-specific noise: .81 on single items, .69-.76 on pairs; the jackknife alone is wide with 4
raters of light-tailed data; ``auto`` keeps coverage in band at a width ratio nearer 1).

Measured coverage of the nominal 95 % intervals (benchmarks/validity/icc_coverage.py,
benchmarks/out/icc_coverage.md): 500 studies per cell, 3 generating models (the paper-calibrated
simulator and two written independently: a Gaussian crossed LMM, and a heavy-tailed, clipped model with
rater-specific scale use) x 2 design sizes (40 prompts x 36 raters x 10 trials; the paper's 100 x 53 x
20). Only ``jackknife`` stays within 92.5-97.5 % in every cell; the bootstraps that hold raters fixed
(``stimulus``, ``prompt``) under-cover wherever raters differ in how they use the scale, ``two_way``
is biased upward, and ``parametric`` is right only when the Gaussian model is.

Where the parts live: the resampling refits (bootstraps, the jackknife's leave-one-out and residual refits) in
:mod:`modprefs.stats.reliability.icc_resampling`, beside :mod:`~modprefs.stats.reliability.resampling`; the
crossed-jackknife interval and its scales (logit, Fisher z) in :mod:`modprefs.stats.reliability.icc_jackknife`;
here the methods' names and labels, the ``auto`` rule and the orchestration (:func:`icc_with_ci`).

References:
    McCullagh, P. (2000). Resampling and exchangeable arrays. Bernoulli 6(2), 285-301.
    Owen, A. B. (2007). The pigeonhole bootstrap. Annals of Applied Statistics 1(2), 386-411.
    Efron, B. & Stein, C. (1981). The jackknife estimate of variance. Ann. Statist. 9(3), 586-596.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from modprefs.stats.mixed.reml import CrossedFit
from modprefs.stats.reliability.f_assumptions import failed_checks
from modprefs.stats.reliability.icc import (
    CI_METHOD as STIMULUS_PERCENTILE,
)
from modprefs.stats.reliability.icc import (
    ICC_COLUMNS,
    ConditionDesign,
    analysable_ratings,
    condition_design,
    empty_icc_row,
    fit_iccs,
    fit_notes,
    icc_for_design,
    icc_row,
    model_formula,
)
from modprefs.stats.reliability.icc_f_interval import (
    F_LABEL,
    FDegrees,
    clip_prompt_codes,
    clips_nested_in_prompts,
    complete_table,
    f_interval,
    robust_f_interval,
)
from modprefs.stats.reliability.icc_jackknife import jackknife_interval
from modprefs.stats.reliability.icc_resampling import bootstrap_iccs
from modprefs.stats.reliability.rater_scaling import icc_k
from modprefs.study.terms import CONDITIONS

log = logging.getLogger(__name__)
CI_METHODS: tuple[str, ...] = ("auto", "f_based", "jackknife", "stimulus", "prompt", "two_way", "parametric")
#: the default everywhere (workflow config, ``modprefs stats``, ``modprefs plan``): the F-based interval where it
#: is exact, else the crossed jackknife -- the only resampling method whose measured coverage stays within
#: 92.5-97.5 % under every generating model and design size of benchmarks/validity/icc_coverage.py
DEFAULT_CI_METHOD = "auto"
#: the methods that resample (``n_boot`` resamples or, for the jackknife, residual refits)
RESAMPLING_METHODS: tuple[str, ...] = ("jackknife", "stimulus", "prompt", "two_way", "parametric")
INTERVALS: tuple[str, ...] = ("percentile", "basic")
JACKKNIFE_INTERVAL = "logit-t"
#: the interval type each non-bootstrap method gives (and the only one it accepts)
OWN_INTERVALS = {"jackknife": JACKKNIFE_INTERVAL, "f_based": "F", "auto": "auto"}
METHOD_LABELS = {
    "jackknife": "crossed jackknife (prompts and participants, noise-corrected)",
    "stimulus": "stimulus bootstrap (clips resampled, raters fixed; the paper's)",
    "prompt": "prompt bootstrap (prompts resampled with both clips, raters fixed)",
    "two_way": "two-way bootstrap (clips and participants)",
    "parametric": "parametric bootstrap (Gaussian LMM)",
}
#: the level at which ``auto``'s checks of the F interval's assumptions (:mod:`.f_assumptions`) reject it
AUTO_CHECK_ALPHA = 0.05
JK_FISHER_Z_NOTE = (
    "jackknife interval on Fisher's z scale for the ICC (the logit is undefined: the ICC(2,1) estimate or its "
    "leave-one-out estimates at 0)"
)
#: ``auto``'s label where it kept the F interval with df shrunk to the ratings' variability (or a pairwise design's)
ROBUST_F_LABEL = (
    "F-based, McGraw & Wong (1996) ICC(A,1) interval with its mean squares' df shrunk to the ratings' own "
    "variability (MSR's from prompts and the clips within them, MSE's from the raters' own residual mean squares; "
    "Satterthwaite); complete balanced ratings, no covariates"
)
F_PAIRS_NOTE = (
    "F-based interval with a prompt's clips taken as items; MSR's df are those of the prompts and the clips within "
    "them (Satterthwaite), so a prompt effect the two clips share widens it"
)
AUTO_LABEL = (
    "auto: F-based (McGraw & Wong 1996) where a condition's ratings are complete and balanced, without covariates, "
    "with its df shrunk where the ratings vary more than the Gaussian model says, unless checks of its assumptions "
    f"reject (p < {AUTO_CHECK_ALPHA}) or the crossed jackknife's interval is more than 1 + 4/k times as wide; "
    f"else {JACKKNIFE_INTERVAL}, {METHOD_LABELS['jackknife']}"
)


def default_interval(method: str) -> str:
    """The interval a method gives unless told otherwise: its own (:data:`OWN_INTERVALS`), else ``percentile``."""
    return OWN_INTERVALS.get(method, "percentile")


def ci_method_label(method: str, interval: str | None = None) -> str:
    """The ``ci_method`` text of a row, e.g. ``"percentile, two-way bootstrap (clips and participants)"``.

    ``auto``'s is :data:`AUTO_LABEL` (what it chooses); its rows say ``auto:`` and a space before the chosen
    method's label.
    """
    interval = interval or default_interval(method)
    _check(method, interval)
    if method == "auto":
        return AUTO_LABEL
    if method == "f_based":
        return F_LABEL
    return f"{interval}, {METHOD_LABELS[method]}"


def auto_method(design: ConditionDesign) -> str:
    """``auto``'s first choice for a design: ``f_based`` where ratings are complete and balanced without covariates
    (a prompt's pair of clips taken as items), else ``jackknife``. Where it is ``f_based`` the analysis still checks
    the data against the F interval's assumptions (:func:`auto_keeps_f`)."""
    table, _ = complete_table(design, clips_as_items=True)
    return "f_based" if table is not None else "jackknife"


def f_width_limit(k: float) -> float:
    """The largest crossed-jackknife / F-based width ratio (ICC(2,1)) at which ``auto`` keeps the F interval.

    1 + 4 / k with k raters: under Gaussian data the jackknife is wider than the exact F interval by itself
    (about 1.2x at 4 raters, 1.05x at 10: its rater jackknife has few units), so the limit falls with k. Chosen
    with :data:`AUTO_CHECK_ALPHA` and the robust-df F interval among a grid of such rules in a one-off comparison on
    300 complete studies per cell (the benchmark's 4 generating models x 16 x 4, 30 x 10, 8 x 2 x 4 and 15 x 2 x 10
    designs; seeds 5000-5299, not the benchmark's), then measured on the benchmark's own seeds
    (benchmarks/out/icc_interval_width.md, rows ``auto``).
    """
    return 1.0 + 4.0 / k


def f_interval_holds(f_ci: tuple[float, float], jk_ci: tuple[float, float], k: float) -> tuple[bool, str]:
    """(keep the F interval?, why not): the F interval against the crossed jackknife's.

    The F interval's variance is model-based; the jackknife's does not lean on the model, so a jackknife interval
    much wider than the F interval (ratio > :func:`f_width_limit`) is the data saying that the F interval is too
    short, in the spirit of White's (1982) information-matrix test. Undefined widths keep the F interval (the
    jackknife has nothing to say).
    """
    f_width, jk_width = f_ci[1] - f_ci[0], jk_ci[1] - jk_ci[0]
    if not (np.isfinite(f_width) and np.isfinite(jk_width)) or f_width <= 0:
        return True, ""
    ratio, limit = jk_width / f_width, f_width_limit(k)
    if ratio > limit:
        return False, (
            f"F-based interval not used: the crossed jackknife's is {ratio:.2f}x as wide (> 1 + 4/k = {limit:.2f}), "
            "so the F interval's assumptions (Gaussian effects, one noise variance, independent items) do not hold here"
        )
    return True, ""


def auto_keeps_f(
    design: ConditionDesign, f_ci: tuple[float, float], jk_ci: tuple[float, float], k: float
) -> tuple[bool, str]:
    """(keep the F interval?, why not): ``auto``'s decision on an F-eligible design (:func:`auto_method`).

    ``f_ci`` is the robust-df F interval (:func:`~modprefs.stats.reliability.icc_f_interval.robust_f_interval`).
    It is kept unless (1) a check of its assumptions on the ratings rejects at :data:`AUTO_CHECK_ALPHA`
    (:func:`~modprefs.stats.reliability.f_assumptions.failed_checks`: rater-specific slopes, heavy tails, rater-
    specific noise spread, a prompt effect shared by its clips) or (2) the crossed jackknife's interval is much
    wider (:func:`f_interval_holds`); where the jackknife is undefined on both its scales (logit and Fisher's z:
    every leave-one-out estimate at 0, or an estimate of 1) the F interval is kept whatever the checks say, as the
    only interval there is. Measured: benchmarks/out/
    icc_interval_width.md, rows ``auto`` (coverage and width relative to the oracle under 4 generating models).
    """
    if not np.isfinite(np.asarray(jk_ci, float)).all():
        return True, ""
    table, _ = complete_table(design, clips_as_items=True)
    if table is None:
        return False, "F-based interval not applicable"
    prompt = clip_prompt_codes(design) if clips_nested_in_prompts(design) else None
    failed = failed_checks(table, prompt, AUTO_CHECK_ALPHA)
    if failed:
        return False, "F-based interval not used: " + "; ".join(failed) + f" (p < {AUTO_CHECK_ALPHA})"
    return f_interval_holds(f_ci, jk_ci, k)


def _check(method: str, interval: str) -> None:
    if method not in CI_METHODS:
        raise ValueError(f"unknown CI method {method!r}; expected one of {CI_METHODS}")
    allowed = (OWN_INTERVALS[method],) if method in OWN_INTERVALS else INTERVALS
    if interval not in allowed:
        raise ValueError(f"CI method {method!r} gives {' or '.join(allowed)} intervals, not {interval!r}")


def interval_from_boot(
    estimate: np.ndarray, boot: np.ndarray, ci_level: float = 0.95, interval: str = "percentile"
) -> np.ndarray:
    """(2, 2) array [[lo, hi] of ICC(2,1), [lo, hi] of ICC(2,k)] from replicates (NaN rows ignored).

    ``percentile``: the alpha/2 and 1-alpha/2 quantiles. ``basic``: 2*estimate minus them, truncated
    to [0, 1] (an ICC's range). All NaN when no replicate succeeded.
    """
    _check("stimulus", interval)  # a bootstrap interval type
    ok = boot[np.isfinite(boot).all(axis=1)]
    if not len(ok):
        return np.full((2, 2), np.nan)
    alpha = (1.0 - ci_level) / 2.0
    q = np.quantile(ok, [alpha, 1.0 - alpha], axis=0).T  # (2 stats, lo/hi)
    if interval == "percentile":
        return q
    est = np.asarray(estimate, float).reshape(2, 1)
    return np.clip(2.0 * est - q[:, ::-1], 0.0, 1.0)


def _method_interval(
    design: ConditionDesign,
    fitted: tuple[CrossedFit, float, float, float],
    method: str,
    n_boot: int,
    rng: np.random.Generator,
    ci_level: float,
    interval: str,
    clips_as_items: bool = False,
) -> tuple[tuple[float, float], tuple[float, float], int, list[str]]:
    """((lo, hi) of ICC(2,1), (lo, hi) of ICC(2,k), failed refits, notes) of a resolved method (not ``auto``);
    ``clips_as_items``: ``auto``'s robust-df F interval, a prompt's clips taken as items."""
    fit, k, icc1, icck = fitted
    notes: list[str] = []
    if method == "f_based":
        if clips_as_items:  # auto: the robust-df F interval
            ci1, cik, reason, _ = robust_f_interval(design, ci_level)
        else:
            ci1, cik, reason = f_interval(design, ci_level)
        if reason:
            notes.append(reason)
        elif fit.singular:
            notes.append("F-based interval from the ANOVA mean squares; the REML estimate is on a zero bound")
        return ci1, cik, 0, notes
    if method == "jackknife":
        jk = jackknife_interval(design, fit, icc1, n_boot, rng, ci_level)
        lok, hik = (float(v) for v in icc_k(np.array([jk.lo, jk.hi]), k))
        if not np.isfinite(jk.variance):
            notes.append(
                "jackknife interval undefined (needs >= 2 prompts and >= 2 participants that can be left "
                "out, ICC(2,1) < 1, and leave-one-out estimates that differ)"
            )
        elif jk.scale == "fisher_z":
            notes.append(JK_FISHER_Z_NOTE)
        return (jk.lo, jk.hi), (lok, hik), jk.failed, notes
    boot, failed = bootstrap_iccs(design, fit, method, n_boot, rng)
    (lo1, hi1), (lok, hik) = interval_from_boot(np.array([icc1, icck]), boot, ci_level, interval)
    if n_boot and failed == n_boot:
        notes.append("every bootstrap refit failed")
    return (float(lo1), float(hi1)), (float(lok), float(hik)), failed, notes


def _auto_f_label(design: ConditionDesign) -> tuple[str, list[str]]:
    """(label, notes) of a row where ``auto`` kept the F interval: :data:`F_LABEL` where it is the exact one (the
    robust df are the nominal ones, each clip its own prompt), else :data:`ROBUST_F_LABEL` with what was shrunk."""
    _, _, _, df = robust_f_interval(design)
    table, _ = complete_table(design, clips_as_items=True)
    assert df is not None and table is not None
    nominal = FDegrees.nominal(*table.shape)
    notes = [F_PAIRS_NOTE] if clips_nested_in_prompts(design) else []
    shrunk = [
        f"{name} {got:.2f} of {full:.0f}"
        for name, got, full in (("MSR", df.targets, nominal.targets), ("MSE", df.resid, nominal.resid))
        if got < full * (1 - 1e-9)  # below the nominal df by more than rounding error
    ]
    if not shrunk and not notes:
        return F_LABEL, []
    if shrunk:
        notes.append("F interval df shrunk to the ratings' variability: " + ", ".join(shrunk))
    return ROBUST_F_LABEL, notes


def icc_ci_for_design(
    condition: str,
    design: ConditionDesign,
    method: str,
    n_boot: int,
    rng: np.random.Generator,
    ci_level: float = 0.95,
    interval: str | None = None,
) -> dict:
    """One output row (:data:`modprefs.stats.reliability.icc.ICC_COLUMNS`) with the chosen CI method.

    ``method="auto"`` resolves per design (:func:`auto_method`) and the row's ``ci_method`` is ``"auto: "`` + the
    chosen method's label. ``method="stimulus", interval="percentile"`` is
    :func:`modprefs.stats.reliability.icc.icc_for_design` itself. ``method="jackknife"``: :func:`jackknife_interval`
    with ``n_boot`` residual-bootstrap refits for the noise term (``n_boot_failed`` counts every failed
    leave-one-out or residual refit). ``method="f_based"``: the McGraw & Wong interval (no resampling; ``n_boot``
    0), NaN bounds with the reason in ``note`` on a design where it does not apply.
    """
    interval = interval or default_interval(method)
    _check(method, interval)
    prefix = ""
    if method == "auto":
        method, prefix = auto_method(design), "auto: "
        interval = default_interval(method)
    label = prefix + ci_method_label(method, interval)
    if method == "stimulus" and interval == "percentile":
        row = icc_for_design(condition, design, n_boot, rng, ci_level)
        assert row["ci_method"] == STIMULUS_PERCENTILE == label
        return row
    try:
        fitted = fit_iccs(design)
    except (ValueError, np.linalg.LinAlgError) as exc:
        row = empty_icc_row(
            condition,
            int(design.y.size),
            design.n_clips,
            design.n_participants,
            design.formula,
            f"model not estimable: {exc}",
            ci_level,
        )
        row["ci_method"] = label
        return row
    ci1, cik, failed, notes = _method_interval(
        design, fitted, method, n_boot, rng, ci_level, interval, clips_as_items=bool(prefix)
    )
    if prefix and method == "f_based" and np.isfinite(ci1).all():
        jk1, jkk, jk_failed, jk_notes = _method_interval(
            design, fitted, "jackknife", n_boot, rng, ci_level, JACKKNIFE_INTERVAL
        )
        keep, why = auto_keeps_f(design, ci1, jk1, fitted[1])
        if not keep:
            method, label = "jackknife", prefix + ci_method_label("jackknife")
            ci1, cik, failed, notes = jk1, jkk, jk_failed, [why, *jk_notes]
        else:
            label, more = _auto_f_label(design)
            label = prefix + label
            notes = [*notes, *more]
            if not np.isfinite(np.asarray(jk1, float)).all():
                notes.append("the crossed jackknife, which would check the F interval, is undefined here")
    if failed:
        log.warning("%s: %d of %d %s refits failed", condition, failed, n_boot, method)
    return icc_row(
        condition,
        design,
        fitted,
        ci1,
        cik,
        n_boot=0 if method == "f_based" else n_boot,
        n_boot_failed=failed,
        ci_method=label,
        notes=fit_notes(fitted[0]) + notes,
        ci_level=ci_level,
    )


def icc_with_ci(
    ratings: pd.DataFrame,
    participants: pd.DataFrame,
    method: str,
    n_boot: int,
    seed: int,
    ci_level: float = 0.95,
    stimuli: pd.DataFrame | None = None,
    conditions: tuple[str, ...] = CONDITIONS,
    interval: str | None = None,
) -> pd.DataFrame:
    """ICC(2,1) and ICC(2,k) per condition with ``method``'s intervals.

    As :func:`icc_by_condition` (same inputs, seeding, rows and columns
    :data:`~modprefs.stats.reliability.icc.ICC_COLUMNS`), plus the choice of ``method`` (:data:`CI_METHODS`;
    ``auto`` chooses per condition) and ``interval`` (:data:`INTERVALS` for the bootstraps; the jackknife's own
    ``logit-t``, the F-based method's ``F``); ``ci_method`` names both, ``ci_level`` is the intervals' level.
    """
    interval = interval or default_interval(method)
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
            row = empty_icc_row(
                condition,
                0,
                0,
                0,
                model_formula(("presented_first", "trial_z")),
                "no analysable ratings (passed attention check, trial >= 1)",
                ci_level,
            )
            row["ci_method"] = ci_method_label(method, interval)
            out.append(row)
            continue
        design = condition_design(df)
        out.append(
            icc_ci_for_design(condition, design, method, n_boot, np.random.default_rng(stream), ci_level, interval)
        )
    return pd.DataFrame(out, columns=ICC_COLUMNS)


def icc_by_condition(
    ratings: pd.DataFrame,
    participants: pd.DataFrame,
    n_boot: int,
    seed: int,
    ci_level: float = 0.95,
    stimuli: pd.DataFrame | None = None,
    conditions: tuple[str, ...] = CONDITIONS,
) -> pd.DataFrame:
    """ICC(2,1) and ICC(2,k) per condition with stimulus-bootstrap percentile CIs.

    Args:
        ratings: ratings.csv (participant_id, condition, prompt_id, clip_id, trial, presented_first, rating).
        participants: participants.csv (participant_id, passed_attention).
        n_boot: bootstrap resamples per condition (0 = no CIs).
        seed: the bootstrap seed; condition i uses ``SeedSequence(seed).spawn(len(conditions))[i]``,
            so each condition's intervals are reproducible and independent of the others.
        ci_level: two-sided coverage of the percentile intervals.
        stimuli: stimuli.csv; when given, only clips in it are analysed.
        conditions: the conditions, one output row each, in this order.

    Returns:
        One row per condition, columns :data:`ICC_COLUMNS`. Variances are in squared rating units,
        ``k_mean_raters`` = ratings per clip, ``k_effective`` = the k of ICC(2,k)
        (:func:`modprefs.stats.reliability.icc.effective_k`). A condition whose model cannot be estimated (no
        ratings, one participant, constant ratings, ...) gets NaN estimates and a ``note``.
    """
    return icc_with_ci(
        ratings,
        participants,
        method="stimulus",
        n_boot=n_boot,
        seed=seed,
        ci_level=ci_level,
        stimuli=stimuli,
        conditions=conditions,
    )
