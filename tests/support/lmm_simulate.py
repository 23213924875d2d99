"""Synthetic data at the study's scale for checking the mixed-model engine (:mod:`modprefs.stats.mixed.lmm`).

The design follows the paper (seeds/study-paper.txt, sections 3-4): ``n_prompts`` prompts with two
responses (clips) each; ``n_raters`` raters, half audio and half text, each rate both clips of
``trials`` randomly drawn prompts in random presentation order. At the paper's scale (100 prompts,
94 raters, 20 trials) that is 1,880 trials and 3,760 ratings.

* :func:`simulate_trials`: one row per trial with the preference score (clip 0 rating minus clip 1
  rating) generated from ``score ~ modality + (1 + modality | prompt) + (1 | participant)`` with a
  true correlated random modality slope by prompt (section 4.3, "Prompt-Specific Modality Effects").
* :func:`simulate_ratings`: one row per rating generated from the Table 2 omnibus model
  ``rating ~ presented_first*modality + len_z*modality + trial_z*modality + (1|participant) + (1|clip)``
  with the paper's fixed effects; clip effects also differ by modality, so the per-trial
  differences derived from it (:func:`trials_from_ratings`) carry a prompt-specific modality slope.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Table 2's fixed effects (audio = reference, modality = 1 for text).
TABLE2_BETA = {
    "(Intercept)": 74.80,
    "presented_first": -2.61,
    "modality": -6.21,
    "len_z": 3.35,
    "trial_z": 0.03,
    "presented_first:modality": -0.51,
    "modality:len_z": 1.53,
    "modality:trial_z": 0.90,
}


def _assignments(
    rng: np.random.Generator, n_prompts: int, n_raters: int, trials: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(prompt, participant, trial 1..T, modality 0/1, first_clip 0/1), each (n_raters * trials,)."""
    prompt = np.concatenate([rng.choice(n_prompts, trials, replace=False) for _ in range(n_raters)])
    participant = np.repeat(np.arange(n_raters), trials)
    trial = np.tile(np.arange(1, trials + 1), n_raters)
    modality = (participant >= n_raters // 2).astype(float)  # first half audio (0), second half text (1)
    first_clip = rng.integers(0, 2, prompt.size)
    return prompt, participant, trial, modality, first_clip


def simulate_trials(
    seed: int,
    n_prompts: int = 100,
    n_raters: int = 94,
    trials: int = 20,
    beta_modality: float = 1.7,
    sd_prompt: float = 25.0,
    sd_slope: float = 13.0,
    corr: float = -0.4,
    sd_participant: float = 6.0,
    sd_resid: float = 35.0,
) -> pd.DataFrame:
    """Per-trial preference scores with a correlated random modality slope by prompt.

    Returns a frame with columns score, modality (0 audio / 1 text), prompt, participant, trial.
    """
    rng = np.random.default_rng(seed)
    prompt, participant, trial, modality, _ = _assignments(rng, n_prompts, n_raters, trials)
    cov = np.array([[sd_prompt**2, corr * sd_prompt * sd_slope], [corr * sd_prompt * sd_slope, sd_slope**2]])
    b = rng.multivariate_normal([0.0, 0.0], cov, n_prompts)
    score = (
        2.0
        + beta_modality * modality
        + b[prompt, 0]
        + b[prompt, 1] * modality
        + rng.normal(0.0, sd_participant, n_raters)[participant]
        + rng.normal(0.0, sd_resid, prompt.size)
    )
    return pd.DataFrame(
        {"score": score, "modality": modality, "prompt": prompt, "participant": participant, "trial": trial}
    )


def simulate_ratings(
    seed: int,
    n_prompts: int = 100,
    n_raters: int = 94,
    trials: int = 20,
    sd_clip: float = 10.0,
    sd_clip_text: float = 7.0,
    sd_participant: float = 12.0,
    sd_resid: float = 17.0,
    sd_primacy: float = 0.0,
    sd_drift: float = 0.0,
) -> pd.DataFrame:
    """Ratings from the Table 2 omnibus model (plus a clip-by-modality effect), 1-100 scale.

    ``sd_primacy`` / ``sd_drift`` > 0: each rater also has their own order effect and their own slope per SD of
    trial (independent normal, drawn after everything else, so the defaults reproduce the same ratings).
    Returns a frame with columns rating, presented_first (0/1), modality (0/1), len_z, trial_z,
    clip (= 2 prompt + response), prompt, response (0/1), participant, trial.
    """
    rng = np.random.default_rng(seed)
    prompt, participant, trial, modality, first_clip = _assignments(rng, n_prompts, n_raters, trials)
    n_trials = prompt.size
    response = np.concatenate([np.zeros(n_trials, int), np.ones(n_trials, int)])
    prompt2, participant2 = np.tile(prompt, 2), np.tile(participant, 2)
    trial2, modality2 = np.tile(trial, 2), np.tile(modality, 2)
    presented_first = (response == np.tile(first_clip, 2)).astype(float)
    clip = 2 * prompt2 + response
    chars = rng.lognormal(6.0, 0.6, 2 * n_prompts)
    len_z = ((chars - chars.mean()) / chars.std(ddof=1))[clip]
    trial_z = (trial2 - trial2.mean()) / trial2.std(ddof=1)
    b = TABLE2_BETA
    mu = (
        b["(Intercept)"]
        + b["presented_first"] * presented_first
        + b["modality"] * modality2
        + b["len_z"] * len_z
        + b["trial_z"] * trial_z
        + b["presented_first:modality"] * presented_first * modality2
        + b["modality:len_z"] * modality2 * len_z
        + b["modality:trial_z"] * modality2 * trial_z
    )
    rating = (
        mu
        + rng.normal(0, sd_clip, 2 * n_prompts)[clip]
        + rng.normal(0, sd_clip_text, 2 * n_prompts)[clip] * modality2
        + rng.normal(0, sd_participant, n_raters)[participant2]
        + rng.normal(0, sd_resid, clip.size)
    )
    if sd_primacy > 0 or sd_drift > 0:
        rating = rating + (
            rng.normal(0, sd_primacy, n_raters)[participant2] * presented_first
            + rng.normal(0, sd_drift, n_raters)[participant2] * trial_z
        )
    return pd.DataFrame(
        {
            "rating": np.clip(np.round(rating), 1, 100),
            "presented_first": presented_first,
            "modality": modality2,
            "len_z": len_z,
            "trial_z": trial_z,
            "clip": clip,
            "prompt": prompt2,
            "response": response,
            "participant": participant2,
            "trial": trial2,
        }
    )


def trials_from_ratings(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per-trial preference score = rating of response 0 minus rating of response 1 (section 4.3)."""
    keys = ["participant", "prompt", "trial", "modality"]
    wide = ratings.pivot_table(index=keys, columns="response", values="rating").reset_index()
    wide["score"] = wide[0] - wide[1]
    return wide[["score"] + keys].rename_axis(None, axis=1)
