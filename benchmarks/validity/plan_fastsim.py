"""The planner's fast simulator against ``simulate_ratings``: same distribution of the analysed quantities, faster.

The paper's design (100 PRISM-like prompts, 53 recruited raters per condition, 20 trials, attention
failures and dropouts): ``--seeds`` studies from each -- the real simulator with
:func:`modprefs.study.design.make_assignments` and the real ICC analysis; the fast simulator
(:mod:`modprefs.plan.fastsim`, balanced array layout) with the fast analysis -- and per quantity
(ICC(2,1), ICC(2,k), ratings per clip, mean rating, per condition) the two means with their
Monte-Carlo SEs and z, the SD ratio and a two-sample Kolmogorov-Smirnov p-value; plus the median
time to simulate one study with each (side by side in this run).

    OPENBLAS_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/validity/plan_fastsim.py [--seeds 60]

Writes benchmarks/out/plan_fastsim.json.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # _plan_common
from _plan_common import OUT, Clock, parallel_map
from scipy import stats

from modprefs.io import write_json
from modprefs.plan.analysis import study_record
from modprefs.plan.fastsim import simulate_study
from modprefs.plan.layout import balanced_layout, prism_like_lengths
from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.stats.reliability.icc import analysable_ratings, condition_design, fit_iccs
from modprefs.study.design import make_assignments

P, R, T = 100, 53, 20


def _stimuli(lengths):
    return pd.DataFrame(
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


def slow(seed: int) -> dict:
    rng = np.random.default_rng([seed, 1])
    stim = _stimuli(prism_like_lengths(P, rng))
    prompts = list(dict.fromkeys(stim["prompt_id"]))
    t = time.perf_counter()
    asg = make_assignments(prompts, R, T, seed=seed)
    ratings, _, participants, _ = simulate_ratings(stim, asg, SimulationParams(), seed=seed)
    out = {"sim_seconds": time.perf_counter() - t}
    for c in ("audio", "text"):
        df = analysable_ratings(ratings, participants, c, stim)
        _, k, icc1, icck = fit_iccs(condition_design(df))
        out.update({f"icc1_{c}": icc1, f"icck_{c}": icck, f"k_{c}": k, f"mean_rating_{c}": df["rating"].mean()})
    return out


def fast(seed: int) -> dict:
    rng = np.random.default_rng([seed, 2])
    lengths = prism_like_lengths(P, rng)
    t = time.perf_counter()
    study = simulate_study(SimulationParams(), balanced_layout(P, R, T, ("audio", "text"), rng), lengths, rng)
    sim = time.perf_counter() - t
    return {"sim_seconds": sim, **study_record(study, table2=False)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    clock = Clock()
    s = pd.DataFrame(parallel_map(slow, range(args.seeds), args.jobs))
    f = pd.DataFrame(parallel_map(fast, range(10_000, 10_000 + args.seeds), args.jobs))
    rows = {}
    for c in ("audio", "text"):
        for key in ("icc1", "icck", "k", "mean_rating"):
            col = f"{key}_{c}"
            a, b = f[col].dropna(), s[col].dropna()
            z = (a.mean() - b.mean()) / math.sqrt(a.var() / len(a) + b.var() / len(b))
            rows[col] = {
                "fast_mean": a.mean(),
                "fast_mcse": a.std() / math.sqrt(len(a)),
                "slow_mean": b.mean(),
                "slow_mcse": b.std() / math.sqrt(len(b)),
                "z": z,
                "sd_ratio": a.std() / b.std(),
                "ks_p": float(stats.ks_2samp(a, b).pvalue),
            }
    out = {
        "design": {"prompts": P, "recruited": R, "trials": T},
        "seeds": args.seeds,
        "quantities": rows,
        "max_abs_z": max(abs(r["z"]) for r in rows.values()),
        "min_ks_p": min(r["ks_p"] for r in rows.values()),
        "median_ms_per_study": {
            "simulate_ratings_with_make_assignments": 1000 * s["sim_seconds"].median(),
            "fast": 1000 * f["sim_seconds"].median(),
        },
        "speedup": float(s["sim_seconds"].median() / f["sim_seconds"].median()),
        "seconds": clock.seconds(),
    }
    write_json(out, OUT / "plan_fastsim.json")
    print(out)


if __name__ == "__main__":
    main()
