"""Parameter recovery and the effect of the slider's 1..100 clipping, at the paper's calibration.

Over 20 seeds of a paper-size study (100 prompts, 53 recruited per condition, 20 trials), fit
``rating ~ presented_first + len_z + trial_z + (1|clip) + (1|participant)`` per condition and
report, next to the simulator's inputs: the mean estimates (SE) without clipping (pure latent
model, ties do not move sliders; within K_SE = 3 SE of the input as tests/ratings/test_recovery.py requires),
and with the default simulator (clipping to 1..100 and tie
snapping on) — the difference is what clipping does to the estimands. Also the share of ratings
that sit on a bound. Writes benchmarks/out/recovery.json.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from modprefs.ratings.simulate import simulate_ratings  # noqa: E402
from modprefs.ratings.simulation.params import SimulationParams  # noqa: E402
from modprefs.study.design import make_assignments  # noqa: E402
from support.recovery_model import (  # noqa: E402
    K_SE,
    N_SEEDS,
    RATERS,
    RECOVERY_TERMS,
    TRIALS,
    fit_generating_model,
    paper_stimuli,
    recovery_targets,
)


def run(params: SimulationParams) -> tuple[dict, float]:
    stimuli = paper_stimuli()
    prompts = list(dict.fromkeys(stimuli.prompt_id))
    est = {c: {t: [] for t in RECOVERY_TERMS} for c in ("audio", "text")}
    on_bound = []
    for seed in range(N_SEEDS):
        a = make_assignments(prompts, RATERS, TRIALS, seed=1000 + seed)
        ratings, _, participants, _ = simulate_ratings(stimuli, a, params, seed=seed)
        rated = ratings[ratings.trial >= 1]
        on_bound.append(float(((rated.rating <= 1) | (rated.rating >= 100)).mean()))
        for c in est:
            for t, v in fit_generating_model(ratings, participants, stimuli, c, TRIALS).items():
                est[c][t].append(v)
    summary = {
        c: {t: {"mean": float(np.mean(v)), "se": float(np.std(v, ddof=1) / np.sqrt(len(v)))} for t, v in terms.items()}
        for c, terms in est.items()
    }
    return summary, float(np.mean(on_bound))


def main() -> None:
    t0 = time.perf_counter()
    base = SimulationParams()
    unclipped, bound_off = run(dataclasses.replace(base, clip_ratings=False, tie_mode="threshold"))
    clipped, bound_on = run(base)
    out = {
        "design": "100 prompts x 2 clips, 53 recruited per condition, 20 trials, 20 seeds",
        "share_of_ratings_on_1_or_100": {"clipping_off": bound_off, "default_simulator": bound_on},
        "by_condition": {},
    }
    for c in ("audio", "text"):
        truth = recovery_targets(base, c)
        out["by_condition"][c] = {
            t: {
                "truth": truth[t],
                "unclipped_mean": unclipped[c][t]["mean"],
                "unclipped_se": unclipped[c][t]["se"],
                f"within_{K_SE:g}se_unclipped": abs(unclipped[c][t]["mean"] - truth[t]) <= K_SE * unclipped[c][t]["se"],
                "default_mean": clipped[c][t]["mean"],
                "default_se": clipped[c][t]["se"],
                "shift_from_clipping_and_ties": clipped[c][t]["mean"] - unclipped[c][t]["mean"],
            }
            for t in RECOVERY_TERMS
        }
    out["seconds"] = round(time.perf_counter() - t0, 1)
    target = ROOT / "benchmarks/out/recovery.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
