"""A ratings-only simulator for planning: :func:`modprefs.ratings.simulate.simulate_ratings`'s model, vectorised.

``simulate_ratings`` writes every table of a study (trials, timing, justifications, demographics)
through pandas; a planner needs thousands of studies but only the analysed ratings. This module
draws exactly the rating model of that function (see its module docstring) with numpy arrays:

* clip effects: :func:`modprefs.ratings.simulation.latent.draw_clip_effects` itself (multivariate t per prompt,
  within-prompt and cross-modality correlations);
* per participant: random intercept v_p, lognormal tie threshold tau_p, lognormal residual scale
  (E[s^2] = 1), attention-check failure and early dropout (K ~ Poisson, truncated to 0..T-1);
* per trial and response: the latent rating (fixed effects, u, v, Student-t residual), the slider's
  rounding and clipping to 1..100, and the tie behaviour (``snap``: below the trial's Weibull-
  scaled threshold the two sliders are set g ~ geometric apart around their midpoint;
  ``threshold``: untouched);
* the study's rating scale (``scale``, config ``study.scale``): as in ``simulate_ratings``, the parameters
  and all of the above stay in the paper's 1..100 units and the observed ratings are then mapped onto the
  scale (:meth:`modprefs.scale.RatingScale.from_paper_units`: linearly, rounded to its step); the tie flags
  are the raters' judgements before the mapping. On the paper's scale nothing changes.

Only the rows the ICC analysis keeps are returned: participants who passed the attention check,
trials >= 1 they completed. Random streams differ from ``simulate_ratings`` (same seed, different
numbers) but the distribution is the same: tests/plan/test_plan_fastsim.py and
benchmarks/validity/plan_fastsim.py compare the analysed quantities (ICC(2,1), ICC(2,k), raters per clip,
mean rating, ties) of both over many seeds.

With ``attention=False`` every participant passes (the planner's recruitment policy: a participant
who fails the check is replaced, so each condition ends with the planned number of raters; the
failures are paid for in the cost, :mod:`modprefs.plan.costs`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from modprefs.plan.layout import ConditionLayout, Layout
from modprefs.ratings.simulation.latent import draw_clip_effects, lognormal_draws, unit_variance_t
from modprefs.ratings.simulation.observed import snap_ties
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.scale import PAPER_SCALE, RatingScale


@dataclass(frozen=True)
class ConditionRatings:
    """Analysed ratings of one condition: 2 rows per completed trial (one per response).

    y: (m,) ratings on the study's scale (the paper's 1..100 by default); first: (m,) 1.0 if this clip was
    presented first; trial: (m,) trial number;
    clip: (m,) clip code = 2 * prompt + response; participant: (m,) participant code (of the layout);
    tie: (m/2,) whether each trial (rows 2i, 2i+1) is a tie (equal ratings or a snapped tie).
    """

    y: np.ndarray
    first: np.ndarray
    trial: np.ndarray
    clip: np.ndarray
    participant: np.ndarray
    tie: np.ndarray


@dataclass(frozen=True)
class SimulatedStudy:
    """One simulated study: analysed ratings per condition and what the truth says.

    len_z: (n_prompts, 2) standardised lengths of the two responses (over the 2 * n_prompts clips);
    true_gap: {condition: (n_prompts,)} population mean rating of response 0 minus response 1 (latent
    scale: fixed effects + clip effects, averaged over presentation order) -- its sign is the
    population winner.
    """

    ratings: dict[str, ConditionRatings]
    len_z: np.ndarray
    true_gap: dict[str, np.ndarray]


def standardised_lengths(lengths: np.ndarray) -> np.ndarray:
    """(P, 2) z-scores of the clips' character counts over all 2P clips (sample SD, as R's ``scale``)."""
    flat = np.asarray(lengths, float).ravel()
    sd = flat.std(ddof=1) if flat.size > 1 else 0.0
    return ((flat - flat.mean()) / sd if sd > 0 else np.zeros_like(flat)).reshape(-1, 2)


def clip_effects(p: SimulationParams, n_prompts: int, rng: np.random.Generator) -> np.ndarray:
    """(n_prompts, 2 responses, 2 conditions [audio, text]) clip effects, drawn by the simulator's own code."""
    stim = pd.DataFrame(
        {"prompt_id": np.repeat(np.arange(n_prompts), 2).astype(str), "response": np.tile([0, 1], n_prompts)}
    )
    return draw_clip_effects(stim, p, rng).reshape(n_prompts, 2, 2)


def _condition(
    p: SimulationParams,
    condition: str,
    lay: ConditionLayout,
    u: np.ndarray,
    len_z: np.ndarray,
    max_trial: int,
    attention: bool,
    rng: np.random.Generator,
    scale: RatingScale = PAPER_SCALE,
) -> ConditionRatings:
    is_text = 1.0 if condition == "text" else 0.0
    ci = 1 if condition == "text" else 0
    n_part = lay.n_participants
    v = math.sqrt(p.by_condition("var_participant", condition)) * rng.standard_normal(n_part)
    tau = lognormal_draws(rng, p.by_condition("tie_threshold_mean", condition), p.tie_threshold_cv, n_part)
    failed = (
        (rng.random(n_part) < p.by_condition("p_fail_attention", condition)) if attention else np.zeros(n_part, bool)
    )
    drop = (~failed) & (rng.random(n_part) < p.by_condition("p_incomplete", condition))
    k_drop = rng.poisson(p.incomplete_trials_mean, n_part)
    n_done = np.where(failed, 0, np.where(drop, np.minimum(k_drop, np.maximum(lay.n_assigned - 1, 0)), lay.n_assigned))
    s2 = math.log1p(p.resid_scale_cv**2)
    resid_scale = np.exp(math.sqrt(s2) * rng.standard_normal(n_part) - s2)

    # a participant's trials are done in trial order: keep the first n_done of them
    keep = lay.trial <= n_done[lay.participant]
    tp, prompt, trial, first_clip = (a[keep] for a in (lay.participant, lay.prompt, lay.trial, lay.first))
    n = tp.size
    tvals = np.arange(1, max(max_trial, 1) + 1, dtype=float)
    t_sd = tvals.std(ddof=1) if tvals.size > 1 else 1.0
    trial_z = (trial - tvals.mean()) / t_sd
    sd_res = math.sqrt(p.by_condition("var_resid", condition)) * resid_scale[tp]
    latent = np.empty((n, 2))
    for r in (0, 1):
        first = (first_clip == r).astype(float)
        latent[:, r] = (
            p.intercept
            + p.b_first * first
            + p.b_text * is_text
            + (p.b_len + p.b_len_text * is_text) * len_z[prompt, r]
            + (p.b_trial + p.b_trial_text * is_text) * trial_z
            + p.b_first_text * first * is_text
            + u[prompt, r, ci]
            + v[tp]
            + sd_res * unit_variance_t(rng, p.resid_df, n)
        )
    lo_b, hi_b = (1.0, 100.0) if p.clip_ratings else (-np.inf, np.inf)
    perceived = np.clip(latent, lo_b, hi_b)
    rating = np.rint(perceived)
    k_w = p.tie_threshold_shape
    thr = tau[tp] * (rng.weibull(k_w, n) / math.gamma(1 + 1 / k_w) if math.isfinite(k_w) else 1.0)
    if p.tie_mode == "snap":
        tie = np.abs(perceived[:, 0] - perceived[:, 1]) < thr
        gm = p.by_condition("tie_gap_mean", condition)
        g = np.minimum((rng.geometric(1.0 / (1.0 + gm), n) - 1).astype(float), 20.0)
        tie = snap_ties(rating, perceived, tie, g, p.clip_ratings)
    else:
        tie = (np.abs(rating[:, 0] - rating[:, 1]) < thr) | (rating[:, 0] == rating[:, 1])
    if not scale.is_paper:  # the observed ratings on the study's scale (the module docstring)
        rating = scale.from_paper_units(rating, snap=p.clip_ratings)
        rating = rating if p.clip_ratings else scale.min + np.round((rating - scale.min) / scale.step) * scale.step
    return ConditionRatings(
        y=rating.ravel(),
        first=np.column_stack([first_clip == 0, first_clip == 1]).astype(float).ravel(),
        trial=np.repeat(trial, 2),
        clip=(2 * prompt[:, None] + np.array([0, 1])[None, :]).ravel(),
        participant=np.repeat(tp, 2),
        tie=tie,
    )


def simulate_study(
    p: SimulationParams,
    layout: Layout,
    lengths: np.ndarray,
    rng: np.random.Generator,
    attention: bool = True,
    scale: RatingScale = PAPER_SCALE,
) -> SimulatedStudy:
    """Simulate the analysed ratings of one study.

    Args:
        p: the simulator's parameters (:class:`~modprefs.ratings.simulation.params.SimulationParams`).
        layout: who rates what (:mod:`modprefs.plan.layout`).
        lengths: (n_prompts, 2) character counts of the two responses of each prompt.
        rng: the study's generator (all of the study's randomness).
        attention: draw attention-check failures (their rows are dropped); False = everyone passes.
        scale: the study's rating scale, onto which the observed ratings are mapped (module docstring).

    Returns:
        :class:`SimulatedStudy`.
    """
    lengths = np.asarray(lengths, float)
    if lengths.shape != (layout.n_prompts, 2):
        raise ValueError(f"lengths must be ({layout.n_prompts}, 2), got {lengths.shape}")
    len_z = standardised_lengths(lengths)
    u = clip_effects(p, layout.n_prompts, rng)
    ratings, gaps = {}, {}
    for condition, lay in layout.conditions.items():
        ratings[condition] = _condition(p, condition, lay, u, len_z, layout.max_trial, attention, rng, scale)
        ci, is_text = (1, 1.0) if condition == "text" else (0, 0.0)
        gaps[condition] = (p.b_len + p.b_len_text * is_text) * (len_z[:, 0] - len_z[:, 1]) + u[:, 0, ci] - u[:, 1, ci]
    return SimulatedStudy(ratings=ratings, len_z=len_z, true_gap=gaps)


def study_tables(study: SimulatedStudy) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The study's analysed ratings as the analysis' tables: (ratings, participants, stimuli).

    For running the analysis' own functions (Table 4's permutation test, ``icc_with_ci``, Table 2)
    on fast-simulated data. Ids: participant ``{condition}{code:04d}``, prompt ``p{code:04d}``,
    clip ``p{code:04d}_{response}``; every participant passed the attention check.
    """
    frames, people = [], []
    for c, r in study.ratings.items():
        prompt = r.clip // 2
        pid = np.char.add(c[0], np.char.zfill(r.participant.astype(str), 4))
        pr = np.char.add("p", np.char.zfill(prompt.astype(str), 4))
        frames.append(
            pd.DataFrame(
                {
                    "participant_id": pid,
                    "condition": c,
                    "prompt_id": pr,
                    "clip_id": np.char.add(np.char.add(pr, "_"), (r.clip % 2).astype(str)),
                    "trial": r.trial,
                    "presented_first": r.first.astype(bool),
                    "rating": r.y.astype(int) if np.all(r.y == np.rint(r.y)) else r.y,
                }
            )
        )
        people.append(pd.DataFrame({"participant_id": np.unique(pid), "condition": c, "passed_attention": True}))
    n_prompts = study.len_z.shape[0]
    prompts = np.char.add("p", np.char.zfill(np.arange(n_prompts).astype(str), 4))
    # n_chars reproduce len_z exactly: z-scores are invariant to this affine map
    stimuli = pd.DataFrame(
        {
            "prompt_id": np.repeat(prompts, 2),
            "response": np.tile([0, 1], n_prompts),
            "n_chars": 1000.0 + 100.0 * study.len_z.ravel(),
        }
    )
    stimuli["clip_id"] = stimuli["prompt_id"] + "_" + stimuli["response"].astype(str)
    return pd.concat(frames, ignore_index=True), pd.concat(people, ignore_index=True), stimuli
