"""The planner's fast interval against the analysis' own, per analysis CI method (``--method``).

The planner predicts the half-width of the ICC(2,k) interval that
:func:`modprefs.stats.reliability.icc_ci.icc_ci_for_design` will report (:mod:`modprefs.plan.intervals`).
Here a planner run (paper priors, central scenario) on an
18-design grid (prompts {40, 60, 100} x raters {20, 30, 46} x trials {10, 20}, ``--n-sims`` studies,
the grid-wide ratio model calibrated against ``--method``) predicts, at three designs, the mean audio
half-width and the share of studies at or below a threshold (the planner's median there); then
``--n-fresh`` fresh studies per design (streams the planner never used) get the analysis' interval
(``--n-boot`` resamples). Reported per design: predicted vs actual mean half-width and share, each
with its Monte-Carlo SE and z, for the default ``analysis`` interval and, for comparison, the
``sampling`` and raw ``wald`` choices.

    OPENBLAS_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/validity/plan_interval.py [--method two_way]

Writes benchmarks/out/plan_interval_{method}.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # _plan_common
from _plan_common import OUT, ROOT, Clock, fresh_study, mc_se, parallel_map

from modprefs.io import write_json
from modprefs.plan.engine import SimSettings, Task, cached_object, run_tasks
from modprefs.plan.grid import Design, design_grid
from modprefs.plan.intervals import ANALYSIS_CI_METHOD, analysis_half_widths, predicted_half_widths
from modprefs.plan.planner import analysis_ratios
from modprefs.plan.priors import paper_priors

CACHE = ROOT / "results" / "plan_benchmark_cache"
CHECK = [Design(40, 20, 10), Design(60, 30, 20), Design(100, 46, 20)]


def _fresh(args):
    params, design, i, method, n_boot = args
    study, rng = fresh_study(params, design, 17, i)
    return analysis_half_widths(study, method, n_boot, rng, 0.95)["audio"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--method", default=ANALYSIS_CI_METHOD)
    ap.add_argument("--n-sims", type=int, default=100)
    ap.add_argument("--n-fresh", type=int, default=60)
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    clock = Clock()
    pr = cached_object(
        CACHE, {"paper": True, "seed": 1, "boot": 60, "q": (0.1, 0.9)}, lambda: paper_priors(seed=1, n_boot=60)
    )
    grid = design_grid([40, 60, 100], [20, 30, 46], [10, 20], "both")
    settings = SimSettings(n_sims=args.n_sims, seed=1, ci_method=args.method, table2=False)
    results = run_tasks(
        [Task("central", "main", pr.central, d, settings) for d in grid], jobs=args.jobs, cache_dir=CACHE, progress=True
    )
    by = dict(zip(grid, results))
    ratios = analysis_ratios(by)
    points = []
    for d in CHECK:
        res = by[d]
        icck, sek = res["rec:icck_audio"], res["rec:sek_audio"]
        predicted = {
            name: predicted_half_widths(icck, sek, name, 0.95, ratios[d]["audio"] if name == "analysis" else None)[0]
            for name in ("analysis", "sampling", "wald")
        }
        threshold = float(np.nanmedian(predicted["analysis"]))
        actual = np.array(
            parallel_map(_fresh, [(pr.central, d, i, args.method, args.n_boot) for i in range(args.n_fresh)], args.jobs)
        )
        actual = actual[np.isfinite(actual)]
        a_mean, a_se = float(actual.mean()), float(actual.std(ddof=1) / math.sqrt(actual.size))
        a_share = float(np.mean(actual <= threshold))
        row = {
            "design": d.label(),
            "threshold": threshold,
            "ratio_model": ratios[d]["audio"],
            "actual": {
                "mean_half_width": a_mean,
                "mcse": a_se,
                "share_at_or_below": a_share,
                "share_mcse": mc_se(a_share, actual.size),
                "n": int(actual.size),
            },
        }
        for name, hw in predicted.items():
            hw = hw[np.isfinite(hw)]
            p_mean, p_se = float(hw.mean()), float(hw.std(ddof=1) / math.sqrt(hw.size))
            p_share = float(np.mean(hw <= threshold))
            row[name] = {
                "mean_half_width": p_mean,
                "mcse": p_se,
                "z_mean": (p_mean - a_mean) / math.sqrt(p_se**2 + a_se**2),
                "share_at_or_below": p_share,
                "z_share": (p_share - a_share)
                / math.sqrt(mc_se(p_share, hw.size) ** 2 + mc_se(a_share, actual.size) ** 2),
            }
        points.append(row)
        print(json.dumps(row), flush=True)
    out = {
        "method": args.method,
        "condition": "audio",
        "statistic": "ICC(2,k) 95% interval half-width",
        "grid": "prompts {40,60,100} x raters {20,30,46} x trials {10,20}",
        "n_sims": args.n_sims,
        "n_fresh": args.n_fresh,
        "n_boot": args.n_boot,
        "points": points,
        "analysis_interval_agrees_within_2_mcse": [abs(p["analysis"]["z_mean"]) <= 2 for p in points],
        "seconds": clock.seconds(),
    }
    write_json(out, OUT / f"plan_interval_{args.method}.json")


if __name__ == "__main__":
    main()
