"""Is audio's ICC different from text's? A crossed-jackknife t test of the difference.

Table 4's test in the paper permutes participants between the two conditions. That tests the
hypothesis that the two conditions' ratings are exchangeable -- the same distribution -- not that
their ICCs are equal: when the conditions differ in scale, location, or in their clip effects (audio
and text ratings of a clip need not agree), a permutation mixes two different rating fields and the
test rejects with equal ICCs (benchmarks/icc_difference_null.py measures how often).

This test targets the ICC itself. With D = ICC_audio - ICC_text (on the ICC scale, not the logit
scale of the single-condition interval: an estimate of 0, a singular fit, is common in small studies and
has no logit):

* prompts are shared by the conditions (the same prompts are rated in both), so leaving prompt g out
  of BOTH conditions gives D_(g) (a prompt rated in one condition only leaves the other's estimate
  unchanged); the jackknife variance of the D_(g) is the prompt part, covariance included;
* participants are disjoint (each rates in one condition), so the participant part is the sum of the
  two conditions' leave-one-participant-out jackknife variances;
* each of those also carries the rating noise, which would then be counted twice: the noise part, from
  a residual bootstrap in each condition, is subtracted once (as in
  :func:`modprefs.stats.reliability.icc_ci.jackknife_interval`, whose coverage is measured in
  benchmarks/out/icc_coverage.json):

    V = V_prompt(D) + V_part,audio + V_part,text - V_noise,audio - V_noise,text
        (floored at max(V_prompt(D), V_part,audio + V_part,text))
    t = D / sqrt(V),   df = V^2 / (V_prompt^2/(G-1) + V_part,a^2/(J_a-1) + V_part,t^2/(J_t-1))

with a two-sided p from Student's t. The same is done for ICC(2,k) (its k differs between conditions
when their designs do). The test is invariant to any linear rescaling of one
condition's ratings (an ICC is), which the permutation test is not.

Measured size at alpha .05 (40 prompts x 20 raters per condition x 10 trials; 120 studies per null,
benchmarks/out/icc_difference_null.json): 1.7-3.3 % under four equal-ICC nulls (the project's simulator with
exchangeable conditions, Gaussian crossed effects on the same and on different scales, heavy-tailed clipped
ratings), where the participant permutation rejects 7.5-11.7 %; 3 % under the planner's two nulls
(benchmarks/out/plan_null.json). The test is conservative at this size, and the cause is measured
(benchmarks/out/icc_jackknife_components.json): the prompt jackknife and the residual bootstrap estimate their
parts without bias, but the participant jackknife overstates the rater-plus-noise part (raters each rate a
quarter of the prompts, so leaving one out is not a smooth perturbation), the more so the fewer the raters.

References:
    Efron, B. & Stein, C. (1981). The jackknife estimate of variance. Ann. Statist. 9(3), 586-596.
    McCullagh, P. (2000). Resampling and exchangeable arrays. Bernoulli 6(2), 285-301.
    Owen, A. B. (2007). The pigeonhole bootstrap. Ann. Appl. Stat. 1(2), 386-411.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.stats.reliability.icc import ConditionDesign, condition_design, fit_iccs
from modprefs.stats.reliability.icc_ci import jackknife_iccs, jackknife_variance, residual_bootstrap_iccs

STATISTICS = ("icc_2_1", "icc_2_k")
CONDITIONS = ("audio", "text")


@dataclass(frozen=True)
class IccDifference:
    """The test of one statistic (ICC(2,1) or ICC(2,k)): variances of the difference's estimate on the ICC
    scale, ``p_value`` two-sided.

    ``note`` says why the test is undefined (NaN ``t``/``p_value``) when it is.
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
    #: n_prompts_left_out
    parts: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ConditionParts:
    """One condition's jackknife and noise replicates of (ICC(2,1), ICC(2,k)).

    estimates: (2,); prompt_loo: prompt label -> (2,) leave-that-prompt-out estimates; participant_loo:
    (J, 2); noise: (n_noise, 2) residual-bootstrap refits.
    """

    estimates: np.ndarray
    prompt_loo: dict[str, np.ndarray]
    participant_loo: np.ndarray
    noise: np.ndarray


def condition_parts(
    design: ConditionDesign, prompt_labels: Sequence[str] | np.ndarray, n_noise: int, rng: np.random.Generator
) -> ConditionParts:
    """Fit one condition's ICC model and its replicates; ``prompt_labels[g]`` names prompt code g, so that the
    two conditions' prompts can be matched (a prompt is shared by the conditions)."""
    fit, _, icc1, icck = fit_iccs(design)
    by_prompt = jackknife_iccs(design, fit, "prompt")
    return ConditionParts(
        np.array([icc1, icck]),
        dict(zip(map(str, prompt_labels), by_prompt, strict=True)),
        jackknife_iccs(design, fit, "participant"),
        residual_bootstrap_iccs(design, fit, n_noise, rng),
    )


def _condition_parts(frame: pd.DataFrame, n_noise: int, rng: np.random.Generator) -> ConditionParts:
    prompt_ids = np.sort(frame["prompt_id"].astype(str).unique())  # condition_design's codes, in order
    return condition_parts(condition_design(frame), prompt_ids, n_noise, rng)


def _undefined(statistic: str, audio: float, text: float, n_prompts: int, note: str) -> IccDifference:
    nan = math.nan
    return IccDifference(statistic, audio, text, audio - text, nan, nan, nan, nan, nan, nan, nan, n_prompts, note)


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
    t = diff / math.sqrt(variance) if variance > 0 else math.copysign(math.inf, diff) if diff else 0.0
    p = float(2.0 * (stats.t.sf(abs(t), df) if math.isfinite(df) else stats.norm.sf(abs(t))))
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
        p,
        len(prompts),
        parts=detail,
    )


def icc_difference_test(frames: dict[str, pd.DataFrame], n_noise: int, seed: int) -> dict[str, IccDifference]:
    """Crossed-jackknife tests of audio - text for ICC(2,1) and ICC(2,k) (module docstring).

    Args:
        frames: ``{"audio": df, "text": df}``, each the analysable ratings of one condition
            (:func:`modprefs.stats.reliability.icc.analysable_ratings`: prompt_id, clip_id, participant_id, trial,
            presented_first, rating).
        n_noise: residual-bootstrap refits per condition for the noise term (the ICC table's ``n_boot``).
        seed: seeds the residual bootstraps (one stream per condition).

    Returns:
        ``{"icc_2_1": IccDifference, "icc_2_k": IccDifference}``.
    """
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
    return difference_tests(parts)


def difference_tests(parts: dict[str, ConditionParts]) -> dict[str, IccDifference]:
    """The tests of ICC(2,1) and ICC(2,k) from both conditions' replicates (:func:`condition_parts`)."""
    return {s: _test_one(j, parts) for j, s in enumerate(STATISTICS)}
