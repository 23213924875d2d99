"""Is audio's ICC different from text's? A crossed-jackknife t test of the difference, calibrated under H0.

Table 4's test in the paper permutes participants between the two conditions. That tests the
hypothesis that the two conditions' ratings are exchangeable -- the same distribution -- not that
their ICCs are equal: when the conditions differ in scale, location, or in their clip effects (audio
and text ratings of a clip need not agree), a permutation mixes two different rating fields and the
test rejects with equal ICCs (benchmarks/validity/icc_difference_null.py measures how often).

The crossed jackknife (``jackknife``) targets the ICC itself. With D = ICC_audio - ICC_text (on the ICC
scale, not the logit scale of the single-condition interval: an estimate of 0, a singular fit, is common in
small studies and has no logit):

* prompts are shared by the conditions (the same prompts are rated in both), so leaving prompt g out
  of BOTH conditions gives D_(g) (a prompt rated in one condition only leaves the other's estimate
  unchanged); the jackknife variance of the D_(g) is the prompt part, covariance included;
* participants are disjoint (each rates in one condition), so the participant part is the sum of the
  two conditions' leave-one-participant-out jackknife variances;
* each of those also carries the rating noise, which would then be counted twice: the noise part, from
  a residual bootstrap in each condition, is subtracted once (as in
  :func:`modprefs.stats.reliability.icc_jackknife.jackknife_interval`, whose coverage is measured in
  benchmarks/out/icc_coverage.json)::

    V = V_prompt(D) + V_part,audio + V_part,text - V_noise,audio - V_noise,text
        (floored at max(V_prompt(D), V_part,audio + V_part,text))
    t = D / sqrt(V),   df = V^2 / (V_prompt^2/(G-1) + V_part,a^2/(J_a-1) + V_part,t^2/(J_t-1))

with a two-sided p from Student's t. The same is done for ICC(2,k) (its k differs between conditions
when their designs do). The test is invariant to any linear rescaling of one
condition's ratings (an ICC is), which the permutation test is not.

Why it is conservative (measured: benchmarks/out/icc_difference_null_v2.json, icc_jackknife_components.json): on
average V overstates the variance of D by a factor 1.26-1.37 at 40 prompts x 20 raters x 10 trials (so it rejects
1.6-3.4 % at alpha .05), less at the paper's size. Two reasons, both second-order effects of a nonlinear
statistic in a crossed design: the participant jackknife overstates its own part when raters per clip are few
(a rater's ratings are a large share of each of their clips'; Efron & Stein 1981: the delete-one jackknife
counts each two-unit interaction twice), and the products of a prompt's and a rater's effects are counted by
both the prompt and the participant jackknife. Neither depends on the ratings' distribution beyond their
variances, but both depend on the design and the variance components.

The calibrated test (``calibrated``, Table 4's default) therefore measures the jackknife's excess on the study
itself, under H0, and removes it (:func:`calibration`, :func:`calibrated_tests`):

1. a null world: each condition's fitted model (fixed effects, participant and residual variances) with its
   clip variance set so that both conditions have the same ICC(2,1), the mean of the two estimates; clip
   effects are the fitted clip effects (BLUPs, reflated to that variance) resampled by prompt, jointly for
   both conditions so that a prompt's audio and text effects stay paired (their correlation disattenuated for
   the BLUPs' shrinkage), participant effects and residuals Gaussian; the design is the study's;
2. ``n_replicates`` studies from it, each analysed as the data are: fitted, and its jackknife variance
   estimated without bias from a random subset of leave-one-out refits (``n_prompts_left_out`` prompts,
   ``n_participants_left_out`` participants per condition, 2 residual refits per condition); with
   ``n_null`` further studies, fitted only, for the variance of D under H0;
3. E* = the mean jackknife variance there, Var* = the variance of D there; the study's V is corrected by
   the excess (:mod:`.jackknife_excess`): V_cal = max((V - (E* - Var*) + V Var* / E*) / 2, V Var* / E*), the
   midpoint of the additive correction (right if the excess does not grow with the study's variance beyond its null
   world's) and the proportional one (right if it grows in proportion), which bracket the truth, floored at the
   proportional one;
   t = D / sqrt(V_cal) on Satterthwaite's df for V_cal (:func:`.calibrated_variance`): removing the excess keeps V's
   noise and lowers its mean, and E* and Var* are estimates too (E* from only ``n_replicates`` sampled jackknifes:
   its relative variance is about .05 at 40 prompts x 20 raters x 10 trials, as large as V's own), so V_cal has
   fewer df than V. With V's own df the test rejected 5.6-7.9 % per model at that size (500-800 null studies each)
   although V_cal was at most 7 % above E[D^2] there: its spread, not its mean, made the excess.

The calibration adds n_replicates x (2 + 2 n_prompts_left_out + 2 n_participants_left_out + 4) + 2 n_null refits
(704 with the defaults, whatever the study's size) to the jackknife test's 2 G + J_a + J_t + 2 n_noise (G prompts,
J_a + J_t participants). Measured on the same studies (benchmarks/out/icc_difference_null_v2.md; seven generating
models with equal ICCs, 500-800 studies each at 40 x 20 x 10 and at the paper's size; E[D^2] over 4,400-4,800 null
studies per cell): mean V / E[D^2] 1.27-1.66 jackknife, 1.03-1.07 calibrated at the small size (ICC(2,1)); rejections
at .05 pooled 2.8 % (jackknife) and 5.7 % (calibrated; 6.7 % on the jackknife's df), per model 5.0-6.5 %; at the
paper's size 4.4 %, 4.8 %, 3.6-6.6 %.

Raters who use the scale differently (issue #50; that benchmark's table "against the bands"): raters who differ in
variance, rater types (compressed, stretched, coarse, a tie-at-50 habit), heavy tails, raters with their own primacy
and drift, and the paper-calibrated simulator (raters far apart in noise, many ratings at the scale's ends) are all in
the bands at both sizes (the two small cells at the rate band's upper edge after 500 studies, 6.9 %, were run on to
800 on new seeds: 5.5 % and 6.5 %; the heavy-tailed one's ICC(2,k) V_cal is at the ratio band's edge, 1.15 x
E[D^2]: one of its studies has V_cal 35 x E[D^2], without it 1.10). The rule decided it (icc_difference_rules.md):
with the additive correction alone (Table 4's until #50) the simulator's V_cal was 1.17-1.21 x E[D^2] and its paper
cell rejected 3.2 %, because its null world has about a third of the study's variance of D and the excess it
measures is too small to subtract; the proportional alone removed too much there (0.82-0.90 x, 8.5-8.9 %). Where
every rater rates 16-28 of 40 prompts, ICC(2,k) still rejects below the band (2.5 %). Neither a null world with the
raters' own slopes and residual scales (``null_model="raters"``, :mod:`.rater_profiles`) changed a cell; a
kurtosis-adjusted df (each jackknife part's df from its leave-one-out values' kurtosis) moved the heavy-tailed small
cells toward 5 % but the paper simulator's toward the band's lower edge, and is not used (issue #50's notes).

References:
    Efron, B. & Stein, C. (1981). The jackknife estimate of variance. Ann. Statist. 9(3), 586-596.
    McCullagh, P. (2000). Resampling and exchangeable arrays. Bernoulli 6(2), 285-301.
    Owen, A. B. (2007). The pigeonhole bootstrap. Ann. Appl. Stat. 1(2), 386-411.
    Carpenter, J. R., Goldstein, H. & Rasbash, J. (2003). A novel bootstrap procedure for assessing the
    relationship between class size and achievement. JRSS C 52(4), 431-443 (reflated BLUPs).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.stats.mixed.reml import CrossedFit, fit_crossed_intercepts
from modprefs.stats.reliability.icc import (
    ConditionDesign,
    condition_design,
    effective_k,
    fit_iccs,
    icc_from_components,
)
from modprefs.stats.reliability.icc_resampling import crossed_blups, jackknife_iccs, reflate, residual_bootstrap_iccs
from modprefs.stats.reliability.jackknife_excess import calibrated_variance
from modprefs.stats.reliability.rater_profiles import RaterProfiles, rater_profiles
from modprefs.stats.reliability.resampling import jackknife_variance
from modprefs.study.terms import CONDITIONS

STATISTICS = ("icc_2_1", "icc_2_k")
#: the tests of :func:`icc_difference_test` (``stats.icc_test`` adds the participant permutation of Table 4)
METHODS = ("calibrated", "jackknife")
#: the calibration's defaults (module docstring): null studies with jackknife estimates, null studies fitted only,
#: leave-one-out refits per null study (prompts; participants per condition)
N_REPLICATES = 12
N_NULL = 100
N_PROMPTS_LEFT_OUT = 10
N_PARTICIPANTS_LEFT_OUT = 8


@dataclass(frozen=True)
class IccDifference:
    """The test of one statistic (ICC(2,1) or ICC(2,k)): variances of the difference's estimate on the ICC
    scale, ``p_value`` two-sided.

    ``note`` says why the test is undefined (NaN ``t``/``p_value``) when it is. ``variance`` is the one the test
    used (the calibrated one for ``calibrated``; ``parts["variance_jackknife"]`` then holds the uncorrected V).
    """

    statistic: str
    audio: float
    text: float
    difference: float
    var_prompt: float
    var_participant: float
    var_noise: float
    variance: float
    df: float
    t: float
    p_value: float
    n_prompts: int
    note: str = ""
    #: the variance's inputs: v_participant_{audio,text} and n_participants_{audio,text} (participants left out),
    #: n_prompts_left_out; with the calibration: variance_jackknife, null_expected_variance, null_variance
    parts: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ConditionParts:
    """One condition's jackknife and noise replicates of (ICC(2,1), ICC(2,k)).

    estimates: (2,); prompt_loo: prompt label -> (2,) leave-that-prompt-out estimates; participant_loo:
    (J, 2); noise: (n_noise, 2) residual-bootstrap refits. ``design`` and ``fit`` (the condition's model and its
    fit, with ``prompt_labels`` naming the design's prompt codes) are what :func:`calibration` simulates from.
    """

    estimates: np.ndarray
    prompt_loo: dict[str, np.ndarray]
    participant_loo: np.ndarray
    noise: np.ndarray
    design: ConditionDesign | None = None
    fit: CrossedFit | None = None
    prompt_labels: tuple[str, ...] = ()


def condition_parts(
    design: ConditionDesign, prompt_labels: Sequence[str] | np.ndarray, n_noise: int, rng: np.random.Generator
) -> ConditionParts:
    """Fit one condition's ICC model and its replicates; ``prompt_labels[g]`` names prompt code g, so that the
    two conditions' prompts can be matched (a prompt is shared by the conditions)."""
    fit, _, icc1, icck = fit_iccs(design)
    labels = tuple(map(str, prompt_labels))
    by_prompt = jackknife_iccs(design, fit, "prompt")
    return ConditionParts(
        np.array([icc1, icck]),
        dict(zip(labels, by_prompt, strict=True)),
        jackknife_iccs(design, fit, "participant"),
        residual_bootstrap_iccs(design, fit, n_noise, rng),
        design,
        fit,
        labels,
    )


def _condition_parts(frame: pd.DataFrame, n_noise: int, rng: np.random.Generator) -> ConditionParts:
    prompt_ids = np.sort(frame["prompt_id"].astype(str).unique())  # condition_design's codes, in order
    return condition_parts(condition_design(frame), prompt_ids, n_noise, rng)


def _undefined(statistic: str, audio: float, text: float, n_prompts: int, note: str) -> IccDifference:
    nan = math.nan
    return IccDifference(statistic, audio, text, audio - text, nan, nan, nan, nan, nan, nan, nan, n_prompts, note)


def _p_value(t: float, df: float) -> float:
    return float(2.0 * (stats.t.sf(abs(t), df) if math.isfinite(df) else stats.norm.sf(abs(t))))


def _t(diff: float, variance: float) -> float:
    return diff / math.sqrt(variance) if variance > 0 else math.copysign(math.inf, diff) if diff else 0.0


def _test_one(j: int, parts: dict[str, ConditionParts]) -> IccDifference:
    statistic = STATISTICS[j]
    est = {c: float(parts[c].estimates[j]) for c in CONDITIONS}
    prompts = sorted(set(parts["audio"].prompt_loo) | set(parts["text"].prompt_loo))
    if not all(np.isfinite(list(est.values()))):
        return _undefined(statistic, est["audio"], est["text"], len(prompts), "an ICC is not estimable")

    def leave_out(c: str, prompt: str) -> float:
        loo = parts[c].prompt_loo.get(prompt)
        return est[c] if loo is None else float(loo[j])

    d_prompt = np.array([leave_out("audio", g) - leave_out("text", g) for g in prompts])
    v_prompt, n_prompt = jackknife_variance(d_prompt)
    v_part, n_part = zip(*(jackknife_variance(parts[c].participant_loo[:, j]) for c in CONDITIONS))
    noise = [parts[c].noise[:, j] for c in CONDITIONS]
    v_noise = sum(float(np.var(x[np.isfinite(x)], ddof=1)) if np.isfinite(x).sum() > 1 else 0.0 for x in noise)
    if not (np.isfinite(v_prompt) and all(np.isfinite(v_part))):
        return _undefined(
            statistic,
            est["audio"],
            est["text"],
            len(prompts),
            "needs >= 2 prompts and >= 2 participants per condition that can be left out",
        )
    participant = float(sum(v_part))
    variance = max(v_prompt + participant - v_noise, v_prompt, participant)
    denom = v_prompt**2 / (n_prompt - 1) + sum(v**2 / (n - 1) for v, n in zip(v_part, n_part, strict=True))
    df = variance**2 / denom if denom > 0 else math.inf
    diff = est["audio"] - est["text"]
    t = _t(diff, variance)
    detail = {f"v_participant_{c}": v for c, v in zip(CONDITIONS, v_part, strict=True)}
    detail |= {f"n_participants_{c}": float(n) for c, n in zip(CONDITIONS, n_part, strict=True)}
    detail["n_prompts_left_out"] = float(n_prompt)
    return IccDifference(
        statistic,
        est["audio"],
        est["text"],
        diff,
        v_prompt,
        participant,
        v_noise,
        variance,
        df,
        t,
        _p_value(t, df),
        len(prompts),
        parts=detail,
    )


def icc_difference_test(
    frames: dict[str, pd.DataFrame],
    n_noise: int,
    seed: int,
    method: str = "jackknife",
    **calibration_options: int,
) -> dict[str, IccDifference]:
    """Tests of audio - text for ICC(2,1) and ICC(2,k) (module docstring).

    Args:
        frames: ``{"audio": df, "text": df}``, each the analysable ratings of one condition
            (:func:`modprefs.stats.reliability.icc.analysable_ratings`: prompt_id, clip_id, participant_id, trial,
            presented_first, rating).
        n_noise: residual-bootstrap refits per condition for the noise term (the ICC table's ``n_boot``).
        seed: seeds the residual bootstraps (one stream per condition) and the calibration.
        method: ``jackknife`` (the crossed-jackknife t test) or ``calibrated`` (the same t, its variance
            calibrated under H0 by :func:`calibration`).
        calibration_options: :func:`calibration`'s ``n_replicates``, ``n_null``, ``n_prompts_left_out``,
            ``n_participants_left_out`` (``calibrated`` only).

    Returns:
        ``{"icc_2_1": IccDifference, "icc_2_k": IccDifference}``.
    """
    if method not in METHODS:
        raise ValueError(f"unknown ICC difference test {method!r}; expected one of {METHODS}")
    missing = [c for c in CONDITIONS if c not in frames or frames[c].empty]
    if missing:
        raise ValueError(f"the ICC difference test needs analysable ratings in both conditions; none in {missing}")
    thin = [c for c in CONDITIONS if min(frames[c]["participant_id"].nunique(), frames[c]["prompt_id"].nunique()) < 2]
    if thin:  # the crossed model has no ICC to leave out of: the test is undefined, and says why
        note = f"needs >= 2 prompts and >= 2 participants per condition; {' and '.join(thin)} has fewer"
        return {s: _undefined(s, math.nan, math.nan, 0, note) for s in STATISTICS}
    streams = np.random.SeedSequence([seed, 0xD1FF]).spawn(len(CONDITIONS))
    parts = {
        c: _condition_parts(frames[c], n_noise, np.random.default_rng(s))
        for c, s in zip(CONDITIONS, streams, strict=True)
    }
    if method == "jackknife":
        return difference_tests(parts)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xCA1B]))
    return difference_tests(parts, calibration(parts, rng, **cast(dict[str, Any], calibration_options)))


def difference_tests(
    parts: dict[str, ConditionParts], calibrated: Calibration | None = None
) -> dict[str, IccDifference]:
    """The tests of ICC(2,1) and ICC(2,k) from both conditions' replicates (:func:`condition_parts`); with a
    :func:`calibration`, the calibrated tests (:func:`calibrated_tests`)."""
    tests = {s: _test_one(j, parts) for j, s in enumerate(STATISTICS)}
    return tests if calibrated is None else calibrated_tests(tests, calibrated)


# ---------------------------------------------------------------------------------------------
# calibration under H0
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Calibration:
    """The jackknife's behaviour in null studies like this one (:func:`calibration`).

    expected_variance: (2,) mean jackknife variance of D (ICC(2,1), ICC(2,k)) over the null studies with a
    jackknife (``n_replicates`` of them estimable); null_variance: (2,) variance of D over every estimable null
    study (``n_null`` of them, those with a jackknife included); expected_variance_var: (2,) the sampling variance
    of expected_variance (the replicates' sample variance / n_replicates; None: unknown, taken as 0); note: why the
    calibration is undefined (NaN arrays) when it is.
    """

    expected_variance: np.ndarray
    null_variance: np.ndarray
    n_replicates: int
    n_null: int
    note: str = ""
    expected_variance_var: np.ndarray | None = None


@dataclass(frozen=True)
class NullWorld:
    """A condition pair to simulate null studies from: per condition the design, the fit, the clip effects under
    H0 by prompt label (each an array over that prompt's clips, in clip-code order) and the clip codes of each
    prompt label; ``prompts`` is the union of both conditions' prompt labels."""

    designs: dict[str, ConditionDesign]
    fits: dict[str, CrossedFit]
    effects: dict[str, dict[str, np.ndarray]]
    clips: dict[str, dict[str, np.ndarray]]
    prompts: tuple[str, ...]
    #: ``raters`` null model only: per condition, the raters' profiles each simulated rater draws one of
    raters: dict[str, RaterProfiles] | None = None


def _prompt_clips(design: ConditionDesign, labels: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Prompt label -> the clip codes of that prompt (ascending)."""
    prompt = design.prompt if design.prompt is not None else design.clip
    of_clip = np.zeros(design.n_clips, dtype=np.intp)
    of_clip[design.clip] = prompt
    return {labels[g]: np.flatnonzero(of_clip == g) for g in range(len(labels))}


def _shrinkage(design: ConditionDesign, fit: CrossedFit) -> float:
    """Mean reliability of a clip's BLUP, var_clip / (var_clip + (var_participant + var_resid) / raters)."""
    k = np.bincount(design.clip, minlength=design.n_clips).astype(float)
    if fit.var_g1 <= 0:
        return 1.0
    return float(np.mean(fit.var_g1 / (fit.var_g1 + (fit.var_g2 + fit.var_resid) / np.maximum(k, 1.0))))


def _disattenuate(effects: dict[str, dict[str, np.ndarray]], shrink: dict[str, float], var_text: float) -> None:
    """Text's effects mixed with audio's so that, over the clips both conditions rated, their correlation is the
    BLUPs' divided by sqrt(shrink_audio x shrink_text) (capped at .95): the true clip effects' correlation, which
    the BLUPs' independent estimation errors attenuate. In place; text's mean square stays ``var_text``."""
    shared = [
        g for g in effects["audio"] if g in effects["text"] and effects["audio"][g].size == effects["text"][g].size
    ]
    if not shared or var_text <= 0:
        return
    a = np.concatenate([effects["audio"][g] for g in shared])
    t = np.concatenate([effects["text"][g] for g in shared])
    if a.size < 3 or not (np.std(a) > 0 and np.std(t) > 0):
        return
    r = float(np.corrcoef(a, t)[0, 1])
    target = float(np.clip(r / math.sqrt(shrink["audio"] * shrink["text"]), -0.95, 0.95))
    za, zt = a / math.sqrt(np.mean(a * a)), t / math.sqrt(np.mean(t * t))
    perp = zt - r * za
    perp = perp / math.sqrt(np.mean(perp * perp)) if np.mean(perp * perp) > 0 else perp
    mixed = (target * za + math.sqrt(1.0 - target * target) * perp) * math.sqrt(var_text)
    bounds = np.cumsum([0] + [effects["text"][g].size for g in shared])
    for g, lo, hi in zip(shared, bounds[:-1], bounds[1:], strict=True):
        effects["text"][g] = mixed[lo:hi]


#: the null worlds :func:`calibration` can simulate from (:func:`null_world`)
NULL_MODELS = ("gaussian", "raters")


def null_world(parts: dict[str, ConditionParts], null_model: str = "gaussian") -> NullWorld:
    """The H0 world of :func:`calibration` from both conditions' fitted parts (module docstring, step 1).

    ``null_model``: ``gaussian`` (raters alike, homoscedastic Gaussian residuals) or ``raters`` (each simulated
    rater takes a study's rater's slope on the clip effects and residual scale: :func:`rater_profiles`)."""
    if null_model not in NULL_MODELS:
        raise ValueError(f"unknown null model {null_model!r}; expected one of {NULL_MODELS}")
    designs: dict[str, ConditionDesign] = {}
    fits: dict[str, CrossedFit] = {}
    for c in CONDITIONS:
        design, fit = parts[c].design, parts[c].fit
        if design is None or fit is None:
            raise ValueError("the calibration needs each condition's design and fit (condition_parts keeps them)")
        designs[c], fits[c] = design, fit
    iccs = [icc_from_components(fits[c].var_g1, fits[c].var_g2, fits[c].var_resid, 1.0)[0] for c in CONDITIONS]
    rho = float(np.clip(np.mean(iccs), 0.0, 0.99))
    effects: dict[str, dict[str, np.ndarray]] = {}
    clips: dict[str, dict[str, np.ndarray]] = {}
    var0: dict[str, float] = {}
    for c in CONDITIONS:
        fit = fits[c]
        var0[c] = rho / (1.0 - rho) * (fit.var_g2 + fit.var_resid)
        u = reflate(crossed_blups(designs[c], fit)[0], var0[c]) if fit.var_g1 > 0 else np.zeros(designs[c].n_clips)
        clips[c] = _prompt_clips(designs[c], parts[c].prompt_labels)
        effects[c] = {g: u[codes] for g, codes in clips[c].items()}
    _disattenuate(effects, {c: _shrinkage(designs[c], fits[c]) for c in CONDITIONS}, var0["text"])
    prompts = tuple(sorted(set(clips["audio"]) | set(clips["text"])))
    raters = None
    if null_model == "raters":
        raters = {}
        for c in CONDITIONS:
            profile = rater_profiles(designs[c], fits[c])
            interaction = float(np.var(profile.slopes)) * var0[c]  # the slopes' rater x clip variance
            room = max(fits[c].var_resid - interaction, 0.1 * fits[c].var_resid) / fits[c].var_resid
            raters[c] = dataclasses.replace(profile, noise_factor=math.sqrt(room) if fits[c].var_resid > 0 else 1.0)
    return NullWorld(designs, fits, effects, clips, prompts, raters)


def draw_null(world: NullWorld, rng: np.random.Generator, resample_prompts: bool = True) -> dict[str, np.ndarray]:
    """One null study's ratings per condition (module docstring, step 1): prompts resampled with replacement
    (``resample_prompts=False``: each keeps its own), a drawn prompt's clip effects taken in both conditions (by
    position; a random clip's where the drawn prompt lacks the condition or the position), Gaussian participant
    effects and residuals, the fitted fixed effects; in the ``raters`` world each simulated rater also takes a
    drawn rater's slope on the clip effects and residual scale (:class:`RaterProfiles`)."""
    n = len(world.prompts)
    drawn = dict(zip(world.prompts, rng.choice(n, n) if resample_prompts else range(n), strict=True))
    out = {}
    for c in CONDITIONS:
        d, fit = world.designs[c], world.fits[c]
        pool = np.concatenate(list(world.effects[c].values()))
        u = np.empty(d.n_clips)
        for g, codes in world.clips[c].items():
            source = world.effects[c].get(world.prompts[drawn[g]])
            for i, code in enumerate(codes):
                u[code] = source[i] if source is not None and i < source.size else pool[rng.integers(pool.size)]
        v = math.sqrt(max(fit.var_g2, 0.0)) * rng.standard_normal(d.n_participants)
        e = math.sqrt(max(fit.var_resid, 0.0)) * rng.standard_normal(d.y.size)
        clip_part = u[d.clip]
        if world.raters is not None:  # each simulated rater is one of the study's raters: slope and scale
            profile = world.raters[c]
            source = rng.integers(profile.slopes.size, size=d.n_participants)[d.participant]
            clip_part = clip_part * profile.slopes[source]
            e = e * profile.noise_factor * profile.scales[source]
        out[c] = d.X @ fit.beta + clip_part + v[d.participant] + e
    return out


def _refit(design: ConditionDesign, y: np.ndarray, theta: np.ndarray, keep: np.ndarray | None = None):
    """(fit, (ICC(2,1), ICC(2,k))) of ``y`` on the design's rows ``keep`` (all by default); warm start ``theta``."""
    rows = slice(None) if keep is None else keep
    fit = fit_crossed_intercepts(
        y[rows],
        design.X[rows],
        design.clip[rows],
        design.participant[rows],
        reml=True,
        theta0=theta,
        names=("clip_id", "participant_id"),
    )
    k = effective_k(design.clip[rows])  # as the analysis' own fits (modprefs.stats.reliability.icc.fit_iccs)
    return fit, np.array(icc_from_components(fit.var_g1, fit.var_g2, fit.var_resid, k))


def _null_replicate(
    world: NullWorld, y: dict[str, np.ndarray], rng: np.random.Generator, n_prompts: int, n_participants: int
) -> tuple[np.ndarray, np.ndarray]:
    """One null study with a jackknife: (D (2,), unbiased estimate of its jackknife variance (2,))."""
    fits, est = {}, {}
    for c in CONDITIONS:
        fits[c], est[c] = _refit(world.designs[c], y[c], world.fits[c].theta)
    diff = est["audio"] - est["text"]
    loo_d = []
    for g in rng.choice(len(world.prompts), min(max(n_prompts, 2), len(world.prompts)), replace=False):
        loo = {}
        for c in CONDITIONS:
            d = world.designs[c]
            codes = world.clips[c].get(world.prompts[g])
            loo[c] = est[c] if codes is None else _refit(d, y[c], fits[c].theta, ~np.isin(d.clip, codes))[1]
        loo_d.append(loo["audio"] - loo["text"])
    variance = _sampled_jackknife_variance(np.array(loo_d), len(world.prompts))
    for c in CONDITIONS:
        d = world.designs[c]
        loo_c = [
            _refit(d, y[c], fits[c].theta, d.participant != j)[1]
            for j in rng.choice(d.n_participants, min(max(n_participants, 2), d.n_participants), replace=False)
        ]
        noise = residual_bootstrap_iccs(dataclasses.replace(d, y=y[c]), fits[c], 2, rng)
        variance = variance + _sampled_jackknife_variance(np.array(loo_c), d.n_participants)
        variance = variance - np.var(noise, axis=0, ddof=1)
    return diff, variance


def _sampled_jackknife_variance(loo: np.ndarray, n_units: int) -> np.ndarray:
    """Unbiased estimate of the delete-one jackknife variance (n-1)/n sum_i (x_i - mean)^2 over ``n_units``
    units from the leave-one-out values ``loo`` (m, 2) of m >= 2 of them drawn without replacement:
    (n-1)^2/n s_m^2, s_m^2 the sample variance (finite-population S^2 is its expectation). Centring on the sample
    mean, not on the full estimate, matters: every leave-one-participant-out ICC(2,k) is shifted by the smaller
    k alike, which is no part of the jackknife variance."""
    return (n_units - 1) ** 2 / n_units * np.var(loo, axis=0, ddof=1)


def calibration(
    parts: dict[str, ConditionParts],
    rng: np.random.Generator,
    n_replicates: int = N_REPLICATES,
    n_null: int = N_NULL,
    n_prompts_left_out: int = N_PROMPTS_LEFT_OUT,
    n_participants_left_out: int = N_PARTICIPANTS_LEFT_OUT,
    null_model: str = "gaussian",
) -> Calibration:
    """The jackknife's expected variance and D's variance in null studies like this one (module docstring), drawn
    from :func:`null_world`'s ``null_model``.

    A null study whose fit or leave-one-out refits fail is skipped (it counts in neither average).
    """
    if null_model not in NULL_MODELS:
        raise ValueError(f"unknown null model {null_model!r}; expected one of {NULL_MODELS}")
    try:
        world = null_world(parts, null_model)
    except (ValueError, np.linalg.LinAlgError) as exc:
        return Calibration(np.full(2, np.nan), np.full(2, np.nan), 0, 0, f"no null world: {exc}")
    diffs, variances = [], []
    for r in range(n_replicates + n_null):
        y = draw_null(world, rng)
        try:
            if r < n_replicates:
                diff, variance = _null_replicate(world, y, rng, n_prompts_left_out, n_participants_left_out)
                variances.append(variance)
            else:
                diff = _refit(world.designs["audio"], y["audio"], world.fits["audio"].theta)[1]
                diff = diff - _refit(world.designs["text"], y["text"], world.fits["text"].theta)[1]
        except (ValueError, np.linalg.LinAlgError):
            continue
        diffs.append(diff)
    v = np.array(variances).reshape(-1, 2)
    d = np.array(diffs).reshape(-1, 2)
    ok_v, ok_d = np.isfinite(v).all(axis=1), np.isfinite(d).all(axis=1)
    if ok_v.sum() < 2 or ok_d.sum() < 3:
        note = "too few estimable null studies"
        return Calibration(np.full(2, np.nan), np.full(2, np.nan), int(ok_v.sum()), int(ok_d.sum()), note)
    n_v = int(ok_v.sum())
    spread = v[ok_v].var(axis=0, ddof=1) / n_v
    return Calibration(v[ok_v].mean(axis=0), d[ok_d].var(axis=0, ddof=1), n_v, int(ok_d.sum()), "", spread)


def calibrated_tests(tests: dict[str, IccDifference], cal: Calibration) -> dict[str, IccDifference]:
    """The jackknife tests with V replaced by V_cal and the df by V_cal's (:func:`.calibrated_variance`;
    ``parts["df_jackknife"]`` keeps V's); where the calibration is undefined, the jackknife test with a note saying
    so."""
    out = {}
    for j, s in enumerate(STATISTICS):
        test = tests[s]
        expected, null = float(cal.expected_variance[j]), float(cal.null_variance[j])
        if not math.isfinite(test.variance):
            out[s] = test
            continue
        if not (math.isfinite(expected) and math.isfinite(null) and expected > 0 and null > 0):
            why = cal.note or "the jackknife's expected variance under H0 is not positive"
            out[s] = dataclasses.replace(test, note="; ".join(n for n in (test.note, f"not calibrated: {why}") if n))
            continue
        spread = float(cal.expected_variance_var[j]) if cal.expected_variance_var is not None else 0.0
        variance, df = calibrated_variance(test.variance, test.df, expected, null, cal.n_null, spread)
        t = _t(test.difference, variance)
        detail = {"variance_jackknife": test.variance, "null_expected_variance": expected, "null_variance": null}
        detail |= {"null_replicates": float(cal.n_replicates), "null_studies": float(cal.n_null)}
        detail["df_jackknife"] = test.df
        detail["null_expected_variance_var"] = spread
        out[s] = dataclasses.replace(
            test, variance=variance, df=df, t=t, p_value=_p_value(t, df), parts={**test.parts, **detail}
        )
    return out
