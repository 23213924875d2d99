"""Pilot-fitted priors recover the raters a study needs (issue #17, validation 4b).

Truth: non-paper parameters (audio clip variance 1800 and residual 800, text clip variance 700,
intercept 70; the rest the paper's). Each of ``--n-pilots`` pilots -- 20 recruited raters per condition,
20 prompts, 10 trials, simulated with the real :func:`modprefs.ratings.simulate.simulate_ratings` and
written as a ratings directory -- is read by :func:`modprefs.plan.pilot.read_pilot`, fitted
(:func:`modprefs.plan.pilot.pilot_priors`) and planned: 40 prompts x 10 trials, raters 8..40 (step 2),
target expected audio ICC(2,k) >= .80. The same plan at the TRUE parameters, with the uncertainty a
pilot of this size has about them (its own parametric bootstrap at the truth on the pilot's layout),
gives the range of raters the true parameters support: [optimistic, pessimistic] around the truth's
central recommendation. The check: each pilot's central recommendation lies in that range (expected
in ~80 % of pilots with the default 10 %-90 % scenarios), and the truth's central recommendation lies
in the pilot plan's own [optimistic, pessimistic] range.

    OPENBLAS_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/validity/plan_pilot.py [--n-pilots 5]

Writes benchmarks/out/plan_pilot.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # _plan_common
from _plan_common import OUT, ROOT, Clock

sys.path.insert(0, str(ROOT / "tests"))
from modprefs.io import write_json  # noqa: E402
from modprefs.plan.engine import SimSettings  # noqa: E402
from modprefs.plan.grid import Costs, Targets, design_grid  # noqa: E402
from modprefs.plan.layout import prism_like_lengths  # noqa: E402
from modprefs.plan.pilot import pilot_arrays, pilot_priors, read_pilot  # noqa: E402
from modprefs.plan.planner import make_plan  # noqa: E402
from modprefs.plan.priors import priors_for_source  # noqa: E402
from modprefs.ratings.simulate import simulate_ratings  # noqa: E402
from modprefs.ratings.simulation.params import SimulationParams  # noqa: E402
from modprefs.study.design import make_assignments  # noqa: E402
from support.ratings_helpers import write_tables  # noqa: E402

CACHE = ROOT / "results" / "plan_benchmark_cache"
TRUTH = dataclasses.replace(
    SimulationParams(), var_clip_audio=1800.0, var_resid_audio=800.0, var_clip_text=700.0, intercept=70.0
)
PILOT = {"prompts": 20, "recruited": 20, "trials": 10}
TARGET = Targets(icc_k=0.80, target_conditions=("audio",))


def pilot_dir(folder: Path, seed: int) -> Path:
    rng = np.random.default_rng([seed, 0x9117])
    lengths = prism_like_lengths(PILOT["prompts"], rng)
    stim = pd.DataFrame(
        [
            {
                "prompt_id": f"q{i:03d}",
                "clip_id": f"q{i:03d}_{r}",
                "response": r,
                "n_chars": int(n),
                "duration_s": n / 15,
            }
            for i, pair in enumerate(lengths)
            for r, n in enumerate(pair)
        ]
    )
    prompts = list(dict.fromkeys(stim["prompt_id"]))
    asg = make_assignments(prompts, PILOT["recruited"], PILOT["trials"], seed=seed)
    ratings, trials, participants, _ = simulate_ratings(stim, asg, TRUTH, seed=seed)
    write_tables(folder / "pilot", ratings, trials, participants)
    stim[["clip_id", "prompt_id", "n_chars"]].to_csv(folder / "clips.csv", index=False)
    return folder


def recommended(priors, designs, settings, jobs) -> dict[str, float]:
    result = make_plan(priors, designs, TARGET, Costs(), settings, jobs=jobs, cache_dir=CACHE)
    rec = result.recommendations.set_index("scenario")
    icc = result.table.pivot_table(index="raters", columns="scenario", values="icc_k_audio")
    return {s: (float(rec.loc[s, "raters"]) if rec.loc[s, "met"] else float("nan")) for s in rec.index} | {
        "icc_k_audio_central": json.loads(icc["central"].to_json())
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-pilots", type=int, default=5)
    ap.add_argument("--n-sims", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    clock = Clock()
    designs = design_grid([40], list(range(8, 41, 2)), [10], "both")
    settings = SimSettings(n_sims=args.n_sims, seed=1, interval="sampling", table2=False)
    pilots, truth = [], None
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.n_pilots):
            folder = pilot_dir(Path(tmp) / f"pilot{i}", seed=100 + i)
            pilot = read_pilot(folder / "pilot", folder / "clips.csv")
            priors = pilot_priors(pilot, seed=1, n_boot=60)
            if truth is None:  # the truth's range: its own uncertainty at a pilot of this size (same layout)
                layout = pilot_arrays(pilot).layout
                truth_priors = priors_for_source(TRUTH, layout, "truth", seed=1, n_boot=60)
                truth = recommended(truth_priors, designs, settings, args.jobs)
                truth["icc_1"] = json.loads(truth_priors.table.to_json(orient="records"))
            rec = recommended(priors, designs, settings, args.jobs)
            fitted = priors.table[priors.table["quantity"] == "ICC(2,1)"].set_index("condition")
            pilots.append(
                {
                    "pilot": i,
                    "recommended_raters": {s: rec[s] for s in ("pessimistic", "central", "optimistic")},
                    "fitted_icc_1": fitted[["central", "pessimistic", "optimistic"]].to_dict(orient="index"),
                    "central_in_truth_range": bool(truth["optimistic"] <= rec["central"] <= truth["pessimistic"]),
                    "truth_in_pilot_range": bool(rec["optimistic"] <= truth["central"] <= rec["pessimistic"]),
                }
            )
            print(pilots[-1], flush=True)
            out = summary(args, truth, pilots, clock)  # after every pilot: a partial run leaves its evidence
            write_json(out, OUT / "plan_pilot.json")
    print(
        json.dumps({k: v for k, v in out.items() if k not in ("truth_priors", "truth_icc_k_audio_by_raters")}, indent=1)
    )


def summary(args: argparse.Namespace, truth: dict, pilots: list[dict], clock: Clock) -> dict:
    return {
        "truth_params": {
            k: getattr(TRUTH, k) for k in ("var_clip_audio", "var_resid_audio", "var_clip_text", "intercept")
        },
        "pilot_design": PILOT,
        "plan_grid": {"prompts": 40, "trials": 10, "raters": "8:40:2"},
        "target": {"icc_k": 0.80, "condition": "audio"},
        "n_sims": args.n_sims,
        "truth_recommended_raters": {s: truth[s] for s in ("pessimistic", "central", "optimistic")},
        "truth_icc_k_audio_by_raters": truth["icc_k_audio_central"],
        "truth_priors": truth["icc_1"],
        "pilots": pilots,
        "pilots_done": len(pilots),
        "complete": len(pilots) == args.n_pilots,
        "share_central_in_truth_range": float(np.mean([p["central_in_truth_range"] for p in pilots])),
        "share_truth_in_pilot_range": float(np.mean([p["truth_in_pilot_range"] for p in pilots])),
        "nominal_share": 0.8,
        "seconds": clock.seconds(),
    }


if __name__ == "__main__":
    main()
