"""Data-generating models for the statistical benchmarks, written independently of the project's simulator.

The project's simulator (:mod:`modprefs.ratings.simulate`) is calibrated to the paper; checking the
analyses only against it would be circular. These generators are small, explicit crossed
random-effects models on the SAME study design (stimuli + assignments from
:func:`modprefs.study.design.make_assignments`), returning ``ratings`` and ``participants`` tables in
the workflow's schemas (every participant passed the attention check; no dropouts), so every
analysis runs on them unchanged.

Models (rating units; ``c`` = condition, ``i`` = clip, ``p`` = participant)::

    gaussian_crossed     y = mu_c + b_first*first + b_len_c*len_z_i + a_i + d_ic + w_prompt(i) + v_p + e
                         every effect normal, no rounding, no clipping (the textbook LMM)
    heavy_scale_clipped  y = clip(round(mu_c + b_first*first + b_len_c*len_z_i
                                        + s_p * (a_i + d_ic + w_prompt(i) + e) + v_p), 1, 100)
                         a, d, w, e Student t (df 4, scaled to their variances); s_p a rater's own scale
                         use (lognormal, E[s_p^2] = 1, CV ``scale_cv``): some raters spread their ratings,
                         others compress them -- a rater x clip interaction the LMM does not model.

    rater_heterogeneous  heavy_scale_clipped, and each rater differs in everything real raters differ in:
                         their own primacy (order effect b_first + u_p, SD ``primacy_sd``), their own drift over
                         the session (slope per SD of trial, SD ``drift_sd``), scale use (s_p as above, plus a
                         per-rater resolution: a share ``coarse_share`` rate only in steps of 10, ties at 50 and
                         100 for a share ``anchor_share`` of their ratings), and, for the justification tests,
                         personal phrase habits (:func:`phrase_habits`: a Dirichlet(``habit_alpha``) per rater).
                         With primacy_sd = drift_sd = 0 it adds only the resolution effects.

    rater_types          Gaussian effects (no heavy tails: the raters alone differ), s_p as above, each rater's
                         own primacy and drift as in rater_heterogeneous, and each rater of one type:
                         ``compressed`` (50 + .5 (y - 50): uses the middle of the slider), ``stretched``
                         (50 + 1.5 (y - 50), then clipped), ``coarse`` (steps of 10) or typical, with shares
                         ``type_shares``; a share ``anchor_share`` of ratings at 50 (a tie-at-50 habit); and
                         each rater skips a share of their assigned trials drawn from U(``missing_share``):
                         raters cover the prompts unevenly. Rounded and clipped to 1..100; the same law in both
                         conditions (a null for the reliability differences).

``a_i`` is the clip's effect shared by both modalities, ``d_ic`` its modality-specific deviation (the
clip x modality variance Table 2's default model estimates), ``w`` a prompt effect shared by the
prompt's two clips (within-prompt correlation). ``len_z`` is the z-score of ``n_chars`` over the
stimulus set (sample SD), ``first`` = presented first, ``trial_z`` is not in the generating model.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

MODELS = ("gaussian_crossed", "heavy_scale_clipped", "rater_heterogeneous", "rater_types")
RATER_TYPES = ("typical", "compressed", "stretched", "coarse")


@dataclass(frozen=True)
class GeneratorParams:
    """Parameters of :func:`generate` (variances in squared rating units)."""

    model: str = "gaussian_crossed"
    mu_audio: float = 70.0
    mu_text: float = 66.0
    b_first: float = -2.5
    b_len_audio: float = 3.5
    b_len_text: float = 3.5  # = b_len_audio: no modality x length interaction (a null)
    b_first_text: float = 0.0  # order effect difference in text (0: a null)
    var_clip_shared: float = 300.0  # a_i
    var_clip_modality: float = 200.0  # d_ic, per condition
    var_prompt: float = 100.0  # w, shared by a prompt's two clips
    var_participant: float = 150.0
    var_resid: float = 900.0
    df: float = 4.0  # heavy_scale_clipped: Student t degrees of freedom
    scale_cv: float = 0.5  # heavy_scale_clipped: CV of the rater's scale s_p
    scale_text: float = 1.0  # text's random parts (a, d, w, v, e) times this: the same ICC, another scale
    primacy_sd: float = 5.0  # rater_heterogeneous: SD of each rater's own presented-first effect (points)
    drift_sd: float = 2.5  # rater_heterogeneous: SD of each rater's own slope per SD of trial (points)
    b_trial: float = 0.0  # the mean drift per SD of trial (both conditions: no modality x trial interaction)
    coarse_share: float = 0.3  # rater_heterogeneous: share of raters who rate in steps of 10
    anchor_share: float = 0.15  # rater_heterogeneous: share of a rater's ratings pulled to 50 or 100 (ties)
    habit_alpha: float = 0.3  # phrase_habits: Dirichlet concentration of each rater's phrase use
    type_shares: tuple[float, float, float] = (0.25, 0.15, 0.2)  # rater_types: compressed, stretched, coarse
    missing_share: tuple[float, float] = (0.0, 0.4)  # rater_types: each rater skips U(lo, hi) of their trials
    var_clip_audio_extra: float = 0.0  # an extra clip effect in audio only (an alternative: a higher audio ICC)

    def icc_truth_gaussian(self, condition: str) -> float:
        """Population ICC(2,1) of ``rating ~ first + trial_z + (1|clip) + (1|participant)`` for the Gaussian
        model: the length effect is clip variance (len_z has variance 1 over the stimulus set)."""
        b_len = self.b_len_text if condition == "text" else self.b_len_audio
        v_clip = self.var_clip_shared + self.var_clip_modality + self.var_prompt + b_len**2
        return v_clip / (v_clip + self.var_participant + self.var_resid)


def _t_scaled(rng: np.random.Generator, df: float, var: float, size) -> np.ndarray:
    """Student t draws scaled to variance ``var`` (normal when df is inf)."""
    if not math.isfinite(df):
        return math.sqrt(var) * rng.standard_normal(size)
    return math.sqrt(var * (df - 2) / df) * rng.standard_t(df, size)


def generate(
    params: GeneratorParams, stimuli: pd.DataFrame, assignments: pd.DataFrame, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ratings, participants) for the design; deterministic in ``seed``.

    ``stimuli``: prompt_id, clip_id, response (0/1), n_chars. ``assignments``: participant_id,
    condition, trial, prompt_id, first_clip (trial 0 = the attention check: skipped here).
    """
    if params.model not in MODELS:
        raise ValueError(f"unknown model {params.model!r}; expected one of {MODELS}")
    rng = np.random.default_rng([seed, 0x6E4])
    heavy = params.model in ("heavy_scale_clipped", "rater_heterogeneous")
    df = params.df if heavy else math.inf
    clips = stimuli[["prompt_id", "clip_id", "response", "n_chars"]].reset_index(drop=True)
    n_chars = clips["n_chars"].astype(float)
    len_z = ((n_chars - n_chars.mean()) / n_chars.std(ddof=1)).to_numpy()
    prompts = pd.Index(pd.unique(clips["prompt_id"]))
    prompt_of_clip = prompts.get_indexer(clips["prompt_id"])
    a = _t_scaled(rng, df, params.var_clip_shared, len(clips))
    d = {c: _t_scaled(rng, df, params.var_clip_modality, len(clips)) for c in ("audio", "text")}
    w = _t_scaled(rng, df, params.var_prompt, len(prompts))[prompt_of_clip]
    clip_index = pd.Series(np.arange(len(clips)), index=clips["clip_id"].astype(str))

    trials = assignments[assignments["trial"] >= 1].reset_index(drop=True)
    people = trials.drop_duplicates("participant_id")[["participant_id", "condition"]].reset_index(drop=True)
    v = math.sqrt(params.var_participant) * rng.standard_normal(len(people))
    cv = params.scale_cv if heavy or params.model == "rater_types" else 0.0
    sigma2 = math.log1p(cv**2)
    s = np.exp(math.sqrt(sigma2) * rng.standard_normal(len(people)) - sigma2) if cv > 0 else np.ones(len(people))
    who = pd.Series(np.arange(len(people)), index=people["participant_id"].astype(str))

    rows = []
    for response in (0, 1):
        part = trials.assign(
            clip_id=trials["prompt_id"].astype(str) + f"_{response}",
            presented_first=trials["first_clip"].astype(int) == response,
        )
        rows.append(part)
    long = pd.concat(rows, ignore_index=True).sort_values(["participant_id", "trial", "clip_id"]).reset_index(drop=True)
    i = clip_index.loc[long["clip_id"]].to_numpy()
    p = who.loc[long["participant_id"].astype(str)].to_numpy()
    is_text = (long["condition"] == "text").to_numpy()
    mu = np.where(is_text, params.mu_text, params.mu_audio)
    b_len = np.where(is_text, params.b_len_text, params.b_len_audio)
    first = long["presented_first"].to_numpy(float)
    d_ic = np.where(is_text, d["text"][i], d["audio"][i])
    if params.var_clip_audio_extra > 0:  # its own stream: the other draws stay those of the null
        extra_rng = np.random.default_rng([seed, 0xA17])
        extra = math.sqrt(params.var_clip_audio_extra) * extra_rng.standard_normal(len(clips))
        d_ic = d_ic + np.where(is_text, 0.0, extra[i])
    e = _t_scaled(rng, df, params.var_resid, len(long))
    fixed = mu + (params.b_first + params.b_first_text * is_text) * first + b_len * len_z[i]
    scale = np.where(is_text, params.scale_text, 1.0)
    y = fixed + scale * (s[p] * (a[i] + d_ic + w[i] + e) + v[p])
    if params.model == "rater_heterogeneous":
        y = _rater_habits(params, y, long, p, first, rng)
    keep = np.ones(len(long), dtype=bool)
    if params.model == "rater_types":
        y = _rater_types(params, y, long, p, first, rng)
        keep = _rated_trials(params, long, p, rng)
    if heavy or params.model == "rater_types":
        y = np.clip(np.round(y), 1, 100)
    ratings = pd.DataFrame(
        {
            "participant_id": long["participant_id"].astype(str),
            "condition": long["condition"],
            "prompt_id": long["prompt_id"].astype(str),
            "clip_id": long["clip_id"],
            "trial": long["trial"].astype(int),
            "presented_first": long["presented_first"],
            "rating": y,
            "source": "simulated",
        }
    )[keep].reset_index(drop=True)
    participants = people.assign(passed_attention=True, completed=True, source="simulated")
    return ratings, participants


def _primacy_and_drift(
    params: GeneratorParams,
    y: np.ndarray,
    long: pd.DataFrame,
    p: np.ndarray,
    first: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """``y`` plus each rater's own primacy (SD ``primacy_sd``, on presented-first) and drift (``b_trial`` + SD
    ``drift_sd`` per SD of trial)."""
    n_people = int(p.max()) + 1
    primacy = params.primacy_sd * rng.standard_normal(n_people)
    drift = params.b_trial + params.drift_sd * rng.standard_normal(n_people)
    trial = long["trial"].to_numpy(float)
    trial_z = (trial - trial.mean()) / (trial.std(ddof=1) or 1.0)
    return y + primacy[p] * first + drift[p] * trial_z


def _rater_habits(
    params: GeneratorParams,
    y: np.ndarray,
    long: pd.DataFrame,
    p: np.ndarray,
    first: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """rater_heterogeneous: each rater's own primacy and drift, coarse raters, and ties at the anchors 50/100."""
    n_people = int(p.max()) + 1
    y = _primacy_and_drift(params, y, long, p, first, rng)
    coarse = rng.random(n_people) < params.coarse_share
    y = np.where(coarse[p], np.round(y / 10.0) * 10.0, y)
    anchored = rng.random(len(y)) < params.anchor_share
    return np.where(anchored, np.where(y >= 75, 100.0, 50.0), y)


def _rater_types(
    params: GeneratorParams,
    y: np.ndarray,
    long: pd.DataFrame,
    p: np.ndarray,
    first: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """rater_types: primacy and drift per rater (as rater_heterogeneous), then each rater's type (RATER_TYPES, drawn
    with ``type_shares``) and the tie-at-50 habit; before rounding and clipping."""
    n_people = int(p.max()) + 1
    y = _primacy_and_drift(params, y, long, p, first, rng)
    shares = np.array(params.type_shares)
    kind = rng.choice(len(RATER_TYPES), n_people, p=np.concatenate([[1.0 - shares.sum()], shares]))[p]
    y = np.where(kind == 1, 50.0 + 0.5 * (y - 50.0), y)
    y = np.where(kind == 2, 50.0 + 1.5 * (y - 50.0), y)
    y = np.where(kind == 3, np.round(y / 10.0) * 10.0, y)
    return np.where(rng.random(len(y)) < params.anchor_share, 50.0, y)


def _rated_trials(params: GeneratorParams, long: pd.DataFrame, p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """rater_types: which rows are kept, each rater skipping a share U(``missing_share``) of their trials (both clips
    of a skipped trial), at least two trials kept."""
    n_people = int(p.max()) + 1
    skip_share = rng.uniform(*params.missing_share, n_people)
    trial = long["trial"].to_numpy()
    keep = np.ones(len(long), dtype=bool)
    for person in range(n_people):
        own = np.unique(trial[p == person])
        n_skip = min(int(round(skip_share[person] * own.size)), max(own.size - 2, 0))
        skipped = rng.choice(own, n_skip, replace=False)
        keep[(p == person) & np.isin(trial, skipped)] = False
    return keep


def phrase_habits(n_participants: int, n_phrases: int, alpha: float, seed: int) -> np.ndarray:
    """(n_participants, n_phrases) each rater's phrase-use probabilities: Dirichlet(alpha) per rater (alpha = inf:
    everyone uniform, i.e. independent documents). The same for both conditions: a null for wording tests."""
    rng = np.random.default_rng([seed, 0x7AB])
    if not math.isfinite(alpha):
        return np.full((n_participants, n_phrases), 1.0 / n_phrases)
    return rng.dirichlet(np.full(n_phrases, alpha), size=n_participants)


def replace(params: GeneratorParams, **changes) -> GeneratorParams:
    return dataclasses.replace(params, **changes)


def study_stimuli(n_prompts: int, seed: int, long_fraction: float = 0.25) -> pd.DataFrame:
    """``n_prompts`` prompts x 2 clips with PRISM-like character lengths (a quarter long-difference pairs)."""
    rng = np.random.default_rng([seed, 0x571])
    rows = []
    n_long = round(long_fraction * n_prompts)
    for k in range(n_prompts):
        first = int(rng.lognormal(5.6, 0.5))
        second = first + int(rng.integers(450, 1200)) if k < n_long else max(20, first + int(rng.normal(0, 120)))
        for response, n in enumerate((first, second)):
            rows.append(
                {
                    "prompt_id": f"p{k:03d}",
                    "clip_id": f"p{k:03d}_{response}",
                    "response": response,
                    "stratum": "long_diff" if k < n_long else "other",
                    "n_chars": n,
                    "n_chars_spoken": n,
                    "duration_s": n / 15.0,
                    "model_name": "m",
                    "prism_score": 50.0,
                    "history_chars": 0,
                    "history_turns": 0,
                }
            )
    return pd.DataFrame(rows)


def study_design(
    n_prompts: int, raters_per_condition: int, trials: int, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(stimuli, assignments) of one simulated study, as the workflow's design step makes them."""
    from modprefs.study.design import make_assignments

    stimuli = study_stimuli(n_prompts, seed)
    prompts = list(dict.fromkeys(stimuli["prompt_id"]))
    return stimuli, make_assignments(prompts, raters_per_condition, trials, seed=seed)
