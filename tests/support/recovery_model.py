"""Parameter recovery for the rater simulator: fit the generating model back, per condition.

The simulator (:mod:`modprefs.ratings.simulate`) generates, within condition c,
``rating = a_c + f_c*first + l_c*len_z + t_c*trial_z + u_clip + v_participant + e`` with
``a_c = intercept + b_text*[text]``, ``f_c = b_first + b_first_text*[text]``,
``l_c = b_len + b_len_text*[text]``, ``t_c = b_trial + b_trial_text*[text]``. Fitting
``rating ~ presented_first + len_z + trial_z + (1|clip) + (1|participant)`` by REML on that
condition's rated trials (attention-check failures out) should return these values and the
variance components ``var_clip_c``, ``var_participant_c``, ``var_resid_c`` (+1/12 from rounding to
integers) — unless clipping to the slider's 1..100 bites, which is what
:func:`recovery_targets`'s caller measures by comparing clipped and unclipped runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from modprefs.ratings.simulation.params import SimulationParams
from modprefs.stats.mixed.reml import fit_crossed_intercepts

RECOVERY_TERMS = ("intercept", "presented_first", "len_z", "trial_z", "var_clip", "var_participant", "var_resid")


def recovery_targets(params: SimulationParams, condition: str) -> dict[str, float]:
    """The values a correct fit should recover for ``condition`` (see the module docstring)."""
    text = 1.0 if condition == "text" else 0.0
    return {
        "intercept": params.intercept + params.b_text * text,
        "presented_first": params.b_first + params.b_first_text * text,
        "len_z": params.b_len + params.b_len_text * text,
        "trial_z": params.b_trial + params.b_trial_text * text,
        "var_clip": getattr(params, f"var_clip_{condition}"),
        "var_participant": getattr(params, f"var_participant_{condition}"),
        "var_resid": getattr(params, f"var_resid_{condition}") + 1.0 / 12.0,
    }


def fit_generating_model(
    ratings: pd.DataFrame, participants: pd.DataFrame, stimuli: pd.DataFrame, condition: str, n_trials: int
) -> dict[str, float]:
    """REML estimates of :data:`RECOVERY_TERMS` for one condition of a simulated study.

    ``len_z`` and ``trial_z`` are standardised exactly as the simulator does (sample SD over the
    stimulus set's ``n_chars``, and over trial positions 1..``n_trials``).
    """
    passed = set(participants.loc[participants["passed_attention"].astype(str).str.lower() == "true", "participant_id"])
    d = ratings[(ratings["condition"] == condition) & (ratings["trial"] >= 1) & ratings["participant_id"].isin(passed)]
    n_chars = stimuli.set_index("clip_id")["n_chars"].astype(float)
    len_z = ((n_chars - n_chars.mean()) / n_chars.std(ddof=1)).reindex(d["clip_id"]).to_numpy()
    positions = np.arange(1, n_trials + 1, dtype=float)
    trial_z = (d["trial"].to_numpy(float) - positions.mean()) / positions.std(ddof=1)
    first = d["presented_first"].astype(str).str.lower().eq("true").to_numpy(float)
    X = np.column_stack([np.ones(len(d)), first, len_z, trial_z])
    fit = fit_crossed_intercepts(
        d["rating"].to_numpy(float), X, d["clip_id"].to_numpy(), d["participant_id"].to_numpy()
    )
    est = dict(zip(RECOVERY_TERMS[:4], map(float, fit.beta)))
    est.update(var_clip=fit.var_g1, var_participant=fit.var_g2, var_resid=fit.var_resid)
    return est


N_SEEDS = 20


N_PROMPTS, RATERS, TRIALS = 100, 53, 20


def paper_stimuli(seed: int = 0) -> pd.DataFrame:
    """100 prompts x 2 clips with PRISM-like lengths (25 long-difference prompts)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(N_PROMPTS):
        a = int(rng.lognormal(5.6, 0.5))
        b = a + int(rng.integers(450, 1200)) if i < 25 else max(20, a + int(rng.normal(0, 120)))
        for r, n in enumerate((a, b)):
            rows.append(
                {
                    "prompt_id": f"p{i:03d}",
                    "clip_id": f"p{i:03d}_{r}",
                    "response": r,
                    "stratum": "long_diff" if i < 25 else "other",
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


K_SE = 3.0
