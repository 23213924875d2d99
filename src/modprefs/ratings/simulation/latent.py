"""Latent ratings: clip effects, the rater panel, the trials each rater did (:mod:`modprefs.ratings.simulate`).

Attention check (trial 0, prompt ``attn``)
------------------------------------------
A participant fails with probability ``p_fail_attention_c`` (§3.3: 7/53 audio, 5/53 text): they
rate the nonsensical ``attn_1`` above the coherent ``attn_0`` and prefer it (preference 1); their
data stop there (only trial-0 rows; passed_attention False, completed False, difficulty empty).
Passers rate attn_0 high and attn_1 low and prefer 0.

Dropout
-------
A participant who passed stops early after K ~ Poisson(``incomplete_trials_mean``) trials,
truncated to 0..T-1 (completed False, difficulty empty), with probability ``p_incomplete_c`` x
exp(beta a_p - beta^2/2) (a_p the participant's standard-normal slowness of the time model,
beta = ``incomplete_speed_effect``; the factor has mean one, so the expected dropout rate stays
``p_incomplete_c``): slow raters drop out more often. Defaults match Table 3's "Completed"
(92.5 % text = 49/53, 96.2 % audio = 51/53, i.e. 4 and 2 non-completers among those who
passed): p = 4/48 text, 2/46 audio. §3.3 mentions the 4 text dropouts only; we match Table 3,
which implies 2 in audio too. The paper's text condition has 8.9 raters per stimulus = 890
trials: the 4 dropouts did ~2.5 trials on average. Why slow dropouts: Table 3's session
duration (completers) is 27.0 (SD 13.3) min in text, while its trial duration over all analysed
participants is 78.8 (SD 41.6) s; 20 trials at 78.8 s are already 26.3 min and an SD of 41.6 s
gives 13.9 min, leaving no room for the attention check and the rest of the session unless the
completers were faster and less spread out than the 48 analysed participants, i.e. the dropouts
were slow. beta = 0.5 (with the overheads below) gives both rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from modprefs.ratings.simulation.params import SimulationParams
from modprefs.study.terms import (
    ATTENTION_PROMPT,
)


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------
def lognormal_draws(rng: np.random.Generator, mean: float, cv: float, size: int) -> np.ndarray:
    if cv <= 0:
        return np.full(size, float(mean))
    s2 = math.log1p(cv**2)
    return rng.lognormal(math.log(mean) - s2 / 2, math.sqrt(s2), size)


def gamma_unit(rng: np.random.Generator, shape: float, size: int) -> np.ndarray:
    return rng.gamma(shape, 1.0 / shape, size)


def unit_variance_t(rng: np.random.Generator, df: float, size: int) -> np.ndarray:
    if math.isinf(df):
        return rng.standard_normal(size)
    return rng.standard_t(df, size) * math.sqrt((df - 2) / df)


def draw_clip_effects(stim: pd.DataFrame, p: SimulationParams, rng: np.random.Generator) -> np.ndarray:
    """(n_clips, 2) clip effects [audio, text] on the latent 0..100 scale.

    A clip's effect in modality c is its prompt's shared effect plus its own deviation,
    ``u_ic = P_pc + D_ic``, with Var(P_c) = rho_w_c x var_clip_c and Var(D_c) = (1 - rho_w_c) x
    var_clip_c (rho_w_c = ``rho_clip_within_prompt_c``, the correlation of the two clips of a
    prompt within modality c). Across modalities the prompt effects correlate by
    ``rho_prompt_modality`` and each clip's deviations by ``rho_clip_modality``; the two clips'
    deviations are independent. Per prompt the six draws (P_a, P_t, D_0a, D_0t, D_1a, D_1t) are
    normal, or multivariate t with ``clip_df`` degrees of freedom (one chi-square scale per prompt,
    rescaled to the stated variances). The prompt part raises the ICC's clip variance but cancels in
    a trial's gap, in the per-trial preference score and in the cross-modality winner; the
    deviations carry the within-prompt preference, and their cross-modality correlation sets the
    by-prompt random modality slope of §4.3. Clips whose prompt lacks a partner get the marginal
    distribution.
    """
    va, vt = p.var_clip_audio, p.var_clip_text
    rwa, rwt = p.rho_clip_within_prompt_audio, p.rho_clip_within_prompt_text
    if rwa < 0 or rwt < 0:
        raise ValueError(
            "ratings.simulation: rho_clip_within_prompt_audio/_text must be >= 0 "
            "(a shared prompt effect has a non-negative variance)"
        )

    def pair(var_a: float, var_t: float, rho: float) -> np.ndarray:
        c = rho * math.sqrt(var_a * var_t)
        return np.linalg.cholesky(np.array([[var_a, c], [c, var_t]]) + 1e-12 * np.eye(2))

    chol_p = pair(rwa * va, rwt * vt, p.rho_prompt_modality)
    chol_d = pair((1 - rwa) * va, (1 - rwt) * vt, p.rho_clip_modality)
    prompts = list(dict.fromkeys(stim["prompt_id"]))
    z = rng.standard_normal((len(prompts), 6))
    shared = z[:, 0:2] @ chol_p.T
    dev = np.stack([z[:, 2:4] @ chol_d.T, z[:, 4:6] @ chol_d.T], axis=1)  # (prompts, response, modality)
    eff = shared[:, None, :] + dev
    if math.isfinite(p.clip_df):  # multivariate t per prompt (one chi-square scale for its effects)
        w = rng.chisquare(p.clip_df, len(prompts)) / p.clip_df
        eff *= (math.sqrt((p.clip_df - 2) / p.clip_df) / np.sqrt(w))[:, None, None]
    row = {pid: i for i, pid in enumerate(prompts)}
    u = np.zeros((len(stim), 2))
    for i, (pid, resp) in enumerate(zip(stim["prompt_id"], stim["response"].astype(int))):
        u[i] = eff[row[pid], resp]
    return u


@dataclass
class Clips:
    """The simulated clip properties, one entry per stimulus row (in the stimuli's order)."""

    stim: pd.DataFrame  # the stimuli, index reset, prompt_id and clip_id as strings
    len_z: np.ndarray  # (n_clip,) z-scored n_chars
    n_clip: int
    u: np.ndarray  # (n_clip, 2) clip effects [audio, text]
    aq_true: np.ndarray  # (n_clip,) true audio quality q_i
    aq_attn: np.ndarray  # (2,) true audio quality of attn_0 and attn_1
    duration: np.ndarray  # (n_clip,) seconds
    prompt_clips: dict[str, dict[int, int]]  # prompt -> {response: clip row}


def simulate_clips(stimuli: pd.DataFrame, p: SimulationParams, rng_clip: np.random.Generator) -> Clips:
    """The clips' length z-scores, effects, true audio quality and durations (draws from the clip stream)."""
    stim = stimuli.reset_index(drop=True).copy()
    stim["prompt_id"] = stim["prompt_id"].astype(str)
    stim["clip_id"] = stim["clip_id"].astype(str)
    n_chars = stim["n_chars"].to_numpy(float)
    sd_chars = n_chars.std(ddof=1) if len(n_chars) > 1 else 0.0
    len_z = (n_chars - n_chars.mean()) / sd_chars if sd_chars > 0 else np.zeros(len(n_chars))
    n_clip = len(stim)
    u = draw_clip_effects(stim, p, rng_clip)
    aq_true = p.aq_mean + math.sqrt(p.var_aq_clip) * rng_clip.standard_normal(n_clip)
    aq_attn = p.aq_mean + math.sqrt(p.var_aq_clip) * rng_clip.standard_normal(2)
    if "duration_s" in stim.columns:
        duration = pd.to_numeric(stim["duration_s"], errors="coerce").to_numpy(float)
        duration = np.where(np.isfinite(duration), duration, n_chars / p.chars_per_second)
    else:
        duration = n_chars / p.chars_per_second
    prompt_clips: dict[str, dict[int, int]] = {}
    for i, (pid, resp) in enumerate(zip(stim["prompt_id"], stim["response"].astype(int))):
        prompt_clips.setdefault(pid, {})[resp] = i
    for pid, d in prompt_clips.items():
        if set(d) != {0, 1}:
            raise ValueError(f"stimuli: prompt {pid} does not have exactly the responses 0 and 1")
    return Clips(stim, len_z, n_clip, u, aq_true, aq_attn, duration, prompt_clips)


@dataclass
class Panel:
    """The simulated participants, one entry per participant (in ``part``'s order)."""

    asg: pd.DataFrame  # the assignments, typed, sorted by participant and trial
    part: pd.DataFrame  # participant_id, condition
    n_part: int
    cond: np.ndarray
    is_text_p: np.ndarray
    max_trial: int
    v: np.ndarray  # participant effects v_p
    tau: np.ndarray  # tie thresholds tau_p
    failed: np.ndarray  # failed the attention check
    a_time: np.ndarray  # standard-normal slowness
    n_done: np.ndarray  # response trials done
    completed: np.ndarray
    resid_scale: np.ndarray  # rater noise scale s_p
    replay_prop: np.ndarray
    change_prop: np.ndarray
    aq_offset: np.ndarray
    overhead: np.ndarray  # session overhead (minutes)
    pidx: dict[str, int]  # participant_id -> index


def _per_condition(p: SimulationParams, cond: np.ndarray, name: str) -> np.ndarray:
    """Parameter ``name``'s text or audio value for each entry of ``cond``, as floats."""
    return np.where(cond == "text", getattr(p, f"{name}_text"), getattr(p, f"{name}_audio")).astype(float)


def simulate_panel(assignments: pd.DataFrame, p: SimulationParams, rng_part: np.random.Generator) -> Panel:
    """The participants' effects, thresholds, attention, dropout and propensities (from the participant stream)."""
    asg = assignments.copy()
    asg["participant_id"] = asg["participant_id"].astype(str)
    asg["prompt_id"] = asg["prompt_id"].astype(str)
    asg["trial"] = asg["trial"].astype(int)
    asg["first_clip"] = asg["first_clip"].astype(int)
    asg = asg.sort_values(["participant_id", "trial"], kind="stable").reset_index(drop=True)
    part = asg.groupby("participant_id", sort=False)["condition"].first().reset_index()
    n_part = len(part)
    cond = part["condition"].to_numpy()
    is_text_p = (cond == "text").astype(float)
    max_trial = int(asg["trial"].max()) if len(asg) else 0
    n_trials_assigned = asg[asg["trial"] > 0].groupby("participant_id").size().reindex(part["participant_id"]).fillna(0)
    n_trials_assigned = n_trials_assigned.to_numpy(int)

    v = np.sqrt(_per_condition(p, cond, "var_participant")) * rng_part.standard_normal(n_part)
    tau_mean = _per_condition(p, cond, "tie_threshold_mean")
    tau = (
        np.array([lognormal_draws(rng_part, m, p.tie_threshold_cv, 1)[0] for m in tau_mean]) if n_part else np.zeros(0)
    )
    failed = rng_part.random(n_part) < _per_condition(p, cond, "p_fail_attention")
    a_time = rng_part.standard_normal(n_part)  # participant slowness (standard normal; scaled per condition)
    # dropout: rate p_incomplete_c among passers, tilted towards slow raters (exp(beta a - beta^2/2)
    # has mean one over a standard normal a, so the expected rate stays p_incomplete_c)
    beta = p.incomplete_speed_effect
    p_drop = np.clip(_per_condition(p, cond, "p_incomplete") * np.exp(beta * a_time - beta**2 / 2), 0.0, 1.0)
    drop = (~failed) & (rng_part.random(n_part) < p_drop)
    k_drop = rng_part.poisson(p.incomplete_trials_mean, n_part)
    n_done = np.where(
        failed, 0, np.where(drop, np.minimum(k_drop, np.maximum(n_trials_assigned - 1, 0)), n_trials_assigned)
    )
    completed = (~failed) & (n_done == n_trials_assigned)
    # rater-specific residual scale: lognormal with E[scale^2] = 1, so var_resid_c is the mean variance
    s2 = math.log1p(p.resid_scale_cv**2)
    resid_scale = np.exp(math.sqrt(s2) * rng_part.standard_normal(n_part) - s2)
    replay_prop = gamma_unit(rng_part, p.replay_propensity_shape, n_part)
    change_prop = gamma_unit(rng_part, 2.0, n_part)
    aq_offset = math.sqrt(p.var_aq_participant) * rng_part.standard_normal(n_part)
    overhead = _per_condition(p, cond, "session_overhead_min") * lognormal_draws(
        rng_part, 1.0, p.session_overhead_cv, n_part
    )
    pidx = {pid: i for i, pid in enumerate(part["participant_id"])}
    return Panel(
        asg,
        part,
        n_part,
        cond,
        is_text_p,
        max_trial,
        v,
        tau,
        failed,
        a_time,
        n_done,
        completed,
        resid_scale,
        replay_prop,
        change_prop,
        aq_offset,
        overhead,
        pidx,
    )


@dataclass
class DoneTrials:
    """The trials that happen (a dropout's later trials removed), one entry per trial."""

    tr: pd.DataFrame  # their assignment rows, with ``_p`` the participant's index
    n_tr: int
    tp: np.ndarray  # participant index
    t_cond: np.ndarray
    t_text: np.ndarray
    trial: np.ndarray
    first_clip: np.ndarray
    attn: np.ndarray  # the attention check (trial 0)
    trial_z: np.ndarray  # standardised trial number (trial 1's for the attention check)


def done_trials(panel: Panel) -> DoneTrials:
    """The trials each participant gets to (attention check at trial 0 only, checked) and their trial_z.

    Adds ``_p`` (the participant's index) to ``panel.asg``.
    """
    asg = panel.asg
    asg["_p"] = asg["participant_id"].map(panel.pidx)
    done = asg["trial"].to_numpy() <= panel.n_done[asg["_p"].to_numpy()]
    tr = asg[done].reset_index(drop=True)
    n_tr = len(tr)
    tp = tr["_p"].to_numpy()
    t_cond = panel.cond[tp]
    t_text = panel.is_text_p[tp]
    trial = tr["trial"].to_numpy()
    first_clip = tr["first_clip"].to_numpy()
    attn = trial == 0
    if (tr.loc[attn, "prompt_id"] != ATTENTION_PROMPT).any() or (tr.loc[~attn, "prompt_id"] == ATTENTION_PROMPT).any():
        raise ValueError("assignments: trial 0 must be the attention check 'attn' and only trial 0")
    tvals = np.arange(1, max(panel.max_trial, 1) + 1, dtype=float)
    t_mean, t_sd = tvals.mean(), (tvals.std(ddof=1) if len(tvals) > 1 else 1.0)
    trial_z = (np.where(attn, 1, trial) - t_mean) / t_sd
    return DoneTrials(tr, n_tr, tp, t_cond, t_text, trial, first_clip, attn, trial_z)


def latent_ratings(
    clips: Clips, panel: Panel, d: DoneTrials, p: SimulationParams, rng_rate: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(ci, latent): each trial's clip rows (-1 at the attention check) and latent ratings, (n_tr, 2) each."""
    n_tr, tp, attn, t_cond, t_text = d.n_tr, d.tp, d.attn, d.t_cond, d.t_text
    n_clip, u, len_z = clips.n_clip, clips.u, clips.len_z
    # ---- latent ratings: columns = response 0, response 1 ---------------------------------------
    ci = np.full((n_tr, 2), -1)
    for r in (0, 1):
        ci[~attn, r] = [clips.prompt_clips[pid][r] for pid in d.tr.loc[~attn, "prompt_id"]]
    latent = np.zeros((n_tr, 2))
    sd_res = np.sqrt(np.where(t_cond == "text", p.var_resid_text, p.var_resid_audio)) * panel.resid_scale[tp]
    for r in (0, 1):
        first = (d.first_clip == r).astype(float)
        lz = np.where(attn, 0.0, len_z[ci[:, r]] if n_clip else 0.0)
        uc = np.where(attn, 0.0, np.where(t_text == 1, u[ci[:, r], 1], u[ci[:, r], 0]) if n_clip else 0.0)
        latent[:, r] = (
            p.intercept
            + p.b_first * first
            + p.b_text * t_text
            + (p.b_len + p.b_len_text * t_text) * lz
            + (p.b_trial + p.b_trial_text * t_text) * d.trial_z
            + p.b_first_text * first * t_text
            + uc
            + panel.v[tp]
            + sd_res * unit_variance_t(rng_rate, p.resid_df, n_tr)
        )
    # attention check: coherent high, nonsense low (reversed for failers)
    att_noise = p.attention_sd * rng_rate.standard_normal((n_tr, 2))
    hi = p.attention_coherent_mean + att_noise[:, 0]
    lo = p.attention_nonsense_mean + att_noise[:, 1]
    f_t = panel.failed[tp]
    a0 = np.where(f_t, np.minimum(hi, lo), np.maximum(hi, lo))
    a1 = np.where(f_t, np.maximum(hi, lo), np.minimum(hi, lo))
    latent[attn, 0] = a0[attn]
    latent[attn, 1] = a1[attn]
    return ci, latent
