"""The simulated trials, ratings and truth tables (:mod:`modprefs.ratings.simulate`).

Behaviour per trial
-------------------
* decision_time_s = listening time (audio: each clip's duration x (1 + replays); 0 in text) +
  a lognormal "other" time, log other = mu + a_p + slope * trial_z + eps. Its parameters are
  solved so the total matches Table 3's trial duration M (SD) — the SD is over participants'
  mean trial times (the table's U = 255 compares 46 x 48 people) — and §4.1's practice slopes
  (-0.17 text, -0.09 audio) for this design's clip durations (``_other_time_params``); eps has SD
  ``log_time_resid_sd``. The attention check uses trial 1's trial_z.
* replays (audio only): Poisson with a gamma-distributed rater propensity; the first-presented
  clip's rate is set so that P(replays >= 1) = ``p_relisten_first`` (23.3 % = 214/920, §4.2);
  relistened_first = that clip was replayed. Text: empty.
* deliberation_time_s (audio only): time from the end of the last listen to submission, lognormal
  (median ``deliberation_median_s``), at most the trial's time left after listening. Text: empty.
* rating_changes: Poisson, gamma rater propensity, mean ``rating_changes_mean_c``.
* justification: written with probability ``p_justification_c`` (347/920 audio, 311/890 text,
  §4.3); an opener and one to three reasons (:mod:`modprefs.ratings.justification_text`). Reasons
  carry a modality tilt: "user"/"help" lean audio, "response"/"detail"/"give" lean text (tuned so
  the §4.3 chi-square values average the paper's 12.8, 9.8, 14.5, 14.5, 17.0), listening/reading
  reasons are modality-specific, and neutral reasons draw content words so the TF-IDF vocabulary
  is ~223 terms; ``justification_modality_strength`` scales every tilt (0 = identical word
  distributions in both conditions, a null).
* audio_quality (audio only): per-clip true quality q_i ~ N(aq_mean, var_aq_clip) + rater offset
  + b_aq_rating * (latent - condition mean) + noise, rounded and clipped to 1..100.

Truth table (one long frame, written as ``simulation_truth.csv``)
-----------------------------------------------------------------
``kind="clip"``: one row per clip and condition: clip_id, prompt_id, condition, effect (u_i[c]),
len_z, expected_rating (intercept + b_text*is_text + (b_len + b_len_text*is_text)*len_z + u_i[c]
+ (b_first + b_first_text*is_text)/2, i.e. the latent mean over the two presentation orders at
trial_z 0 for an average rater, before rounding/clipping) and audio_quality_true (q_i).
``kind="participant"``: one row per participant: participant_id, condition, effect (v_p),
tie_threshold (tau_p), time_effect (the participant's standard-normal speed, scaled per condition
in the time model). Unused columns are empty.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from modprefs.ratings.justification_text import justification_texts
from modprefs.ratings.simulation.latent import Clips, DoneTrials, Panel, lognormal_draws
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.study.terms import (
    ATTENTION_CLIPS,
    CONDITIONS,
)

TRUTH_COLUMNS = [
    "kind",
    "condition",
    "clip_id",
    "prompt_id",
    "participant_id",
    "effect",
    "len_z",
    "expected_rating",
    "audio_quality_true",
    "tie_threshold",
    "time_effect",
]


def other_time_params(
    p: SimulationParams, condition: str, listen: np.ndarray, who: np.ndarray, trial_z: np.ndarray
) -> tuple[float, float, float, float]:
    """(mu, participant log-variance, residual log-variance, practice slope) of the non-listening time.

    ``listen``, ``who``, ``trial_z``: the condition's response trials (listening seconds, participant
    index, standardised position). Table 3's trial-duration M (SD) are over participants (its
    Mann–Whitney U = 255 compares 46 x 48 participant means): M is the mean of participants' mean
    trial times and SD their between-participant SD, dropouts (few, early, slower trials) included.
    The non-listening time is ``exp(mu + a_p + slope * trial_z + eps)``, a_p ~ N(0, var_a), eps ~
    N(0, log_time_resid_sd^2). With X_p = participant p's mean of exp(slope z + eps) (its practice
    profile and trial noise), mu and var_a solve, exactly for this design,

        exp(mu + var_a/2) E_p[E X_p] = M,
        exp(var_a) = (1 + (SD/M)^2) (E_p[E X_p])^2 / E_p[E X_p^2]          (var_a >= 0),

    so the trial noise and the practice profile of short (dropout) sessions count towards SD.
    Text: no listening. Audio: the listening part is subtracted first: other mean = M - mean of
    participants' mean listening (at least M/4), other SD = sqrt(SD^2 - their variance) (at least
    10 % of the mean), slope scaled by M / other mean (d log total ~ (other/total) d log other).
    """
    m = p.by_condition("trial_time_mean", condition)
    sd = p.by_condition("trial_time_sd", condition)
    slope = p.by_condition("log_time_trial_slope", condition)
    var_e = p.log_time_resid_sd**2
    if not len(trial_z):
        return math.log(m) - math.log1p((sd / m) ** 2) / 2 - var_e / 2, math.log1p((sd / m) ** 2), var_e, slope
    if condition == "audio":
        pm = pd.Series(listen).groupby(who).mean()
        lm, lv = float(pm.mean()), (float(pm.var(ddof=0)) if len(pm) > 1 else 0.0)
        om = max(m - lm, m / 4)
        osd = math.sqrt(max(sd**2 - lv, (0.1 * om) ** 2))
        slope = slope * m / om
        m, sd = om, osd
    g = np.exp(slope * np.asarray(trial_z, float))
    by = pd.DataFrame({"who": who, "g": g, "g2": g**2}).groupby("who")
    n_p = by.size().to_numpy(float)
    ex = by["g"].mean().to_numpy() * math.exp(var_e / 2)  # E X_p
    var_x = by["g2"].sum().to_numpy() / n_p**2 * math.exp(var_e) * math.expm1(var_e)
    ex2 = var_x + ex**2  # E X_p^2
    var_a = max(math.log1p((sd / m) ** 2) + 2 * math.log(ex.mean()) - math.log(ex2.mean()), 0.0)
    mu = math.log(m) - var_a / 2 - math.log(ex.mean())
    return mu, var_a, var_e, slope


def bool_or_empty(values: np.ndarray, mask: np.ndarray) -> pd.Series:
    s = pd.Series(values, dtype="boolean")
    s[~mask] = pd.NA
    return s


def trial_table(
    clips: Clips,
    panel: Panel,
    d: DoneTrials,
    ci: np.ndarray,
    pref: np.ndarray,
    p: SimulationParams,
    rng_trial: np.random.Generator,
    rng_just: np.random.Generator,
) -> tuple[pd.DataFrame, np.ndarray]:
    """(trials, dtime): the trials table (timing, replays, changes, justifications) and each decision time."""
    n_tr, tp, attn, t_cond, trial_z, first_clip = d.n_tr, d.tp, d.attn, d.t_cond, d.trial_z, d.first_clip
    is_audio_t = t_cond == "audio"
    dur = np.zeros((n_tr, 2))
    for r in (0, 1):
        dur[:, r] = np.where(attn, p.attention_clip_duration_s, clips.duration[ci[:, r]] if clips.n_clip else 0.0)
    k = p.replay_propensity_shape
    lam_first = k * ((1 - p.p_relisten_first) ** (-1 / k) - 1) if p.p_relisten_first < 1 else 50.0
    rep_first = rng_trial.poisson(lam_first * panel.replay_prop[tp])
    rep_second = rng_trial.poisson(p.replays_second_mean * panel.replay_prop[tp])
    rep = np.zeros((n_tr, 2), dtype=int)
    rep[:, 0] = np.where(first_clip == 0, rep_first, rep_second)
    rep[:, 1] = np.where(first_clip == 0, rep_second, rep_first)
    listen = np.where(is_audio_t, dur[:, 0] * (1 + rep[:, 0]) + dur[:, 1] * (1 + rep[:, 1]), 0.0)
    # decision time = listening (audio) + a lognormal "other" time (reading, rating, deliberating)
    # whose mean/SD/practice slope are set so the *total* matches the paper's M/SD/slope for
    # this design's clip durations (see other_time_params).
    z_eps = rng_trial.standard_normal(n_tr)
    other = np.zeros(n_tr)
    for c in CONDITIONS:
        m = t_cond == c
        if not m.any():
            continue
        ref = m & ~attn
        mu, var_a, var_e, s_other = other_time_params(p, c, listen[ref], tp[ref], trial_z[ref])
        # a_time is a standard normal per participant; scale it by this condition's SD
        other[m] = np.exp(
            mu + math.sqrt(var_a) * panel.a_time[tp[m]] + s_other * trial_z[m] + math.sqrt(var_e) * z_eps[m]
        )
    other[attn] *= p.attention_time_factor  # the attention check is a quick, obvious judgement
    dtime = listen + other
    delib = lognormal_draws(rng_trial, p.deliberation_median_s * math.exp(0.65**2 / 2), 0.65, n_tr)
    delib = np.where(is_audio_t, np.minimum(delib, 0.8 * other), np.nan)
    changes = rng_trial.poisson(
        np.where(t_cond == "text", p.rating_changes_mean_text, p.rating_changes_mean_audio) * panel.change_prop[tp]
    )
    write = rng_just.random(n_tr) < np.where(t_cond == "text", p.p_justification_text, p.p_justification_audio)
    write &= ~attn
    texts = justification_texts(
        t_cond[write], pref[write], first_clip[write], p.justification_modality_strength, rng_just
    )
    justification = np.full(n_tr, None, dtype=object)
    justification[write] = texts

    trials = pd.DataFrame(
        {
            "participant_id": d.tr["participant_id"].to_numpy(),
            "prompt_id": d.tr["prompt_id"].to_numpy(),
            "trial": d.trial.astype(int),
            "preference": pref,
            "justification": justification,
            "decision_time_s": np.round(dtime, 2),
            "deliberation_time_s": pd.array(np.round(delib, 2), dtype="Float64"),
            "rating_changes": changes.astype(int),
            "replays_0": pd.array(np.where(is_audio_t, rep[:, 0], 0), dtype="Int64"),
            "replays_1": pd.array(np.where(is_audio_t, rep[:, 1], 0), dtype="Int64"),
            "relistened_first": bool_or_empty(rep_first > 0, is_audio_t),
            "source": "simulated",
        }
    )
    for c in ("replays_0", "replays_1"):
        trials.loc[~is_audio_t, c] = pd.NA
    trials.loc[~is_audio_t, "deliberation_time_s"] = pd.NA
    return trials, dtime


def ratings_table(
    clips: Clips, d: DoneTrials, ci: np.ndarray, rating: np.ndarray, aq: np.ndarray, integer: bool = True
) -> pd.DataFrame:
    """The ratings table: two rows per trial (response 0, then 1), in trial order."""
    n_tr, attn, t_cond = d.n_tr, d.attn, d.t_cond
    is_audio_t = t_cond == "audio"
    stim = clips.stim
    rows = []
    for r in (0, 1):
        clip_ids = np.where(attn, ATTENTION_CLIPS[r], stim["clip_id"].to_numpy()[ci[:, r]] if clips.n_clip else "")
        if integer:
            aq_col = pd.array(np.where(is_audio_t, aq[:, r], 0).astype(int), dtype="Int64")
        else:  # a scale with a fractional step (e.g. 0..10 in steps of 0.5)
            aq_col = pd.array(np.where(is_audio_t, aq[:, r], 0).astype(float), dtype="Float64")
        aq_col[~is_audio_t] = pd.NA
        rows.append(
            pd.DataFrame(
                {
                    "participant_id": d.tr["participant_id"].to_numpy(),
                    "condition": t_cond,
                    "prompt_id": d.tr["prompt_id"].to_numpy(),
                    "clip_id": clip_ids,
                    "trial": d.trial.astype(int),
                    "presented_first": d.first_clip == r,
                    "rating": rating[:, r],
                    "audio_quality": aq_col,
                    "source": "simulated",
                    "_order": np.arange(n_tr) * 2 + r,
                }
            )
        )
    return pd.concat(rows).sort_values("_order").drop(columns="_order").reset_index(drop=True)


def truth_table(clips: Clips, panel: Panel, p: SimulationParams) -> pd.DataFrame:
    """The truth table: one row per clip and condition, one per participant (module docstring)."""
    stim, u, len_z = clips.stim, clips.u, clips.len_z
    truth_rows = []
    for ci_c, c in enumerate(CONDITIONS):
        it = 1.0 if c == "text" else 0.0
        exp = (
            p.intercept
            + p.b_text * it
            + (p.b_len + p.b_len_text * it) * len_z
            + u[:, ci_c]
            + (p.b_first + p.b_first_text * it) / 2
        )
        truth_rows.append(
            pd.DataFrame(
                {
                    "kind": "clip",
                    "condition": c,
                    "clip_id": stim["clip_id"],
                    "prompt_id": stim["prompt_id"],
                    "participant_id": pd.NA,
                    "effect": u[:, ci_c],
                    "len_z": len_z,
                    "expected_rating": exp,
                    "audio_quality_true": clips.aq_true,
                    "tie_threshold": np.nan,
                    "time_effect": np.nan,
                }
            )
        )
    truth_rows.append(
        pd.DataFrame(
            {
                "kind": "participant",
                "condition": panel.cond,
                "clip_id": pd.NA,
                "prompt_id": pd.NA,
                "participant_id": panel.part["participant_id"],
                "effect": panel.v,
                "len_z": np.nan,
                "expected_rating": np.nan,
                "audio_quality_true": np.nan,
                "tie_threshold": panel.tau,
                "time_effect": panel.a_time,
            }
        )
    )
    return pd.concat(truth_rows, ignore_index=True)[TRUTH_COLUMNS]
