"""Observed ratings: ties, rounding, clipping, audio quality, the study's scale (:mod:`modprefs.ratings.simulate`).

Preferences and ties (``tie_mode``)
-----------------------------------
Each rater has a tie threshold tau_p (lognormal, mean ``tie_threshold_mean_c``, CV
``tie_threshold_cv``); on each trial the threshold is tau_p x a mean-one Weibull draw (shape
``tie_threshold_shape``; ``inf`` = always tau_p), which keeps some small gaps decisive. With
``tie_mode="snap"`` (default) the rater compares the perceived (clipped, unrounded) gap
``|latent_0 - latent_1|``; below the trial's threshold they call a tie and set the two sliders
close together: the ratings become the pair's midpoint -/+ g/2 with g ~ geometric (mean
``tie_gap_mean_c``), the better clip keeping the higher slider. This is what gives the paper's
small tie gaps (3.3 text / 3.9 audio) at a tie rate of ~28 % (the rate the paper's Mann–Whitney
U statistics imply: n_ties(audio) x n_ties(text) ~ 61,000 of ~920 / ~890 trials). With
``tie_mode="threshold"`` ratings are never modified and a tie is called when the observed gap is
below tau_p (a pure LMM, for parameter-recovery tests). In both modes equal ratings are a tie;
otherwise the preference is the higher-rated response index. Note that snapping pulls tie trials'
ratings together, which slightly attenuates within-trial effects (order, length) relative to the
parameters.

The study's rating scale (``study.scale``, :mod:`modprefs.scale`)
-----------------------------------------------------------------
Every parameter above (intercept, effects, variances, tie thresholds and gaps, audio quality) is in the
paper's 1..100 slider units, and all of the logic above runs there: rounding, clipping to 1..100, tie
snapping and the preference. Only then are the observed response-quality and audio-quality ratings
mapped onto the study's scale with :meth:`RatingScale.from_paper_units` (1 -> min, 100 -> max,
linearly, rounded to the scale's step): a 1..5 scale gives ratings in {1, ..., 5}, 0..10 in steps of
0.5 values on that grid, and the paper's effect sizes keep their size relative to the scale's range.
The preference is the rater's judgement made before the mapping, so on a coarse scale a decisive
trial may carry two equal ratings (a rater who gives both responses 4 of 5 may still prefer one);
on the paper's scale nothing changes (the mapping is the identity and is skipped). The truth table
stays in 1..100 units. With ``clip_ratings=False`` the mapped ratings are rounded to the step but
not clipped to the scale.
"""

from __future__ import annotations

import math

import numpy as np

from modprefs.ratings.simulation.latent import Clips, DoneTrials, Panel
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.scale import RatingScale


# --------------------------------------------------------------------------------------------------
# the simulator
# --------------------------------------------------------------------------------------------------
def snap_ties(
    rating: np.ndarray, perceived: np.ndarray, tie: np.ndarray, gap: np.ndarray, clip_ratings: bool
) -> np.ndarray:
    """Put each tied trial's two sliders ``gap`` points apart around its perceived mean (in place).

    ``rating``, ``perceived``: (n, 2) rounded and perceived ratings; ``tie``: (n,) the trials judged
    ties; ``gap``: (n,) whole-point gaps. The pair is shifted back inside 1..100 when ratings are
    clipped; the better-perceived clip gets the higher slider. Returns the tie flags, now also
    counting trials whose two ratings came out equal.
    """
    low = np.rint(perceived.mean(axis=1) - gap / 2)
    high = low + gap
    if clip_ratings:
        shift_down = np.maximum(high - 100, 0)
        low, high = low - shift_down, high - shift_down
        shift_up = np.maximum(1 - low, 0)
        low, high = low + shift_up, high + shift_up
    better0 = perceived[:, 0] >= perceived[:, 1]
    rating[tie, 0] = np.where(better0, high, low)[tie]
    rating[tie, 1] = np.where(better0, low, high)[tie]
    return tie | (rating[:, 0] == rating[:, 1])


def observed_ratings(
    latent: np.ndarray, panel: Panel, d: DoneTrials, p: SimulationParams, rng_rate: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(rating, pref): the rounded (clipped) slider ratings after tie handling and each trial's preference."""
    n_tr, tp, attn, t_cond = d.n_tr, d.tp, d.attn, d.t_cond
    f_t = panel.failed[tp]
    lo_b, hi_b = (1.0, 100.0) if p.clip_ratings else (-np.inf, np.inf)
    perceived = np.clip(latent, lo_b, hi_b)
    rating = np.rint(perceived)
    gap_perceived = np.abs(perceived[:, 0] - perceived[:, 1])
    # per-trial threshold: the rater's tau_p times a unit-scale Weibull(shape) draw
    k_w = p.tie_threshold_shape
    thr = panel.tau[tp] * (rng_rate.weibull(k_w, n_tr) / math.gamma(1 + 1 / k_w) if math.isfinite(k_w) else 1.0)
    if p.tie_mode == "snap":
        tie = (~attn) & (gap_perceived < thr)
        gm = np.where(t_cond == "text", p.tie_gap_mean_text, p.tie_gap_mean_audio)
        g = (rng_rate.geometric(1.0 / (1.0 + gm)) - 1).astype(float)
        tie = snap_ties(rating, perceived, tie, np.minimum(g, 20.0), p.clip_ratings)
    else:
        tie = (~attn) & ((np.abs(rating[:, 0] - rating[:, 1]) < thr) | (rating[:, 0] == rating[:, 1]))
    tie = tie & ~attn
    pref = np.where(tie, "tie", np.where(rating[:, 0] > rating[:, 1], "0", "1"))
    pref = np.where(attn, np.where(f_t, "1", "0"), pref)
    rating = rating.astype(int) if p.clip_ratings else rating.astype(np.int64)
    return rating, pref


def audio_quality(
    clips: Clips,
    panel: Panel,
    d: DoneTrials,
    ci: np.ndarray,
    latent: np.ndarray,
    p: SimulationParams,
    rng_rate: np.random.Generator,
) -> np.ndarray:
    """(n_tr, 2) audio-quality ratings: true quality + rater offset + rating tilt + noise, rounded, 1..100."""
    n_tr, tp, attn = d.n_tr, d.tp, d.attn
    cond_mean = p.intercept + p.b_text * d.t_text
    aq = np.zeros((n_tr, 2))
    for r in (0, 1):
        q = np.where(attn, clips.aq_attn[r], clips.aq_true[ci[:, r]] if clips.n_clip else clips.aq_attn[r])
        aq[:, r] = np.clip(
            np.rint(
                q
                + panel.aq_offset[tp]
                + p.b_aq_rating * (latent[:, r] - cond_mean)
                + math.sqrt(p.var_aq_resid) * rng_rate.standard_normal(n_tr)
            ),
            1,
            100,
        )
    return aq


def on_study_scale(rating: np.ndarray, aq: np.ndarray, scale: RatingScale, clip: bool) -> tuple[np.ndarray, np.ndarray]:
    """The observed 1..100 ratings and audio-quality ratings on the study's scale (module docstring).

    The paper's scale is returned as is; integer scales keep integer arrays. Without ``clip`` the ratings are
    rounded to the step but may leave [min, max] (as they leave 1..100 unmapped).
    """
    if scale.is_paper:
        return rating, aq
    if clip:
        mapped = scale.from_paper_units(rating)
    else:
        raw = scale.from_paper_units(rating, snap=False)
        mapped = scale.min + np.round((raw - scale.min) / scale.step) * scale.step
    mapped_aq = scale.from_paper_units(aq)
    if scale.is_integer:
        return np.rint(mapped).astype(np.int64), np.rint(mapped_aq)
    return mapped, mapped_aq
