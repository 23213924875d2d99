"""Speed of ``modprefs plan``: a 24-design grid x 200 simulated studies per design, every target, 2 workers.

Issue #17's target: <= 5 minutes on 2 cores. Grid: prompts {50, 100} x raters {20, 30, ..., 70} x
trials {10, 20}, both conditions; targets: ICC(2,k) CI half-width <= .08 (audio and text, assurance .8,
the analysis-calibrated interval), expected ICC(2,k) >= .75, power .8 for an ICC(2,1) difference of .15
(so every design is simulated twice: at the priors and at the alternative, where Table 4's test runs: by
default the crossed jackknife on the calibration studies, with ``--icc-test permutation`` 2 permutation draws
per study), Table 2 modality effect -6, agreement half-width .15; central priors only (each further
scenario costs the same again). Also the paper check: the paper's design (100 prompts, 46 analysed
raters, 20 trials) at the central priors, expected ICC(2,k) vs the paper's .821 / .788. A cold cache (a fresh
temporary folder) and the priors computed first (timed separately). Wall time on a shared machine depends on
the other load: the JSON records wall and CPU seconds and the 1-minute load average;
CPU seconds / 2 is the wall time on 2 idle cores.

    OPENBLAS_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/performance/plan_grid.py [--n-sims 200] [--jobs 2] \
        [--icc-test jackknife|permutation]

Writes benchmarks/out/plan_grid.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # _plan_common
from _plan_common import OUT, Clock

from modprefs.io import write_json
from modprefs.plan.engine import SimSettings
from modprefs.plan.grid import Costs, Targets, design_grid
from modprefs.plan.planner import make_plan
from modprefs.plan.priors import paper_priors
from modprefs.stats.defaults import STATS_DEFAULTS


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-sims", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--icc-test", choices=("jackknife", "permutation"), default=STATS_DEFAULTS["icc_test"])
    args = ap.parse_args()
    clock = Clock()
    priors = paper_priors(seed=1, n_boot=60)
    t_priors = clock.seconds()
    designs = design_grid([50, 100], [20, 30, 40, 50, 60, 70], [10, 20], "both")
    targets = Targets(ci_half_width=0.08, icc_k=0.75, icc_diff=0.15, table2_effect=-6.0, agreement_half_width=0.15)
    clock = Clock()
    with tempfile.TemporaryDirectory() as cache:
        result = make_plan(
            priors,
            designs,
            targets,
            Costs(),
            SimSettings(n_sims=args.n_sims, seed=1, icc_test=args.icc_test),
            ("central",),
            jobs=args.jobs,
            cache_dir=cache,
            progress=True,
        )
        t_grid = clock.seconds()
        clock = Clock()
        again = make_plan(
            priors,
            designs,
            targets,
            Costs(),
            SimSettings(n_sims=args.n_sims, seed=1, icc_test=args.icc_test),
            ("central",),
            jobs=args.jobs,
            cache_dir=cache,
        )
        t_cached = clock.seconds()
    same = bool(again.table.equals(result.table))
    # the paper check: its design (100 prompts, 46 analysed raters, 20 trials) at the central priors
    paper = make_plan(
        priors,
        design_grid([100], [46], [20], "both"),
        Targets(icc_k=0.75),
        Costs(),
        SimSettings(n_sims=args.n_sims, seed=1, interval="sampling", table2=False),
        ("central",),
        jobs=args.jobs,
    ).table.iloc[0]
    paper_check = {
        c: {
            "icc_k": float(paper[f"icc_k_{c}"]),
            "mcse": float(paper[f"icc_k_{c}_mcse"]),
            "k": float(paper[f"k_{c}"]),
            "paper_icc_k": ref,
            "paper_k": k_ref,
            "z": float((paper[f"icc_k_{c}"] - ref) / paper[f"icc_k_{c}_mcse"]),
        }
        for c, ref, k_ref in (("audio", 0.821, 9.2), ("text", 0.788, 8.9))
    }
    n_studies = len(designs) * args.n_sims
    out = {
        "grid": {
            "designs": len(designs),
            "n_sims": args.n_sims,
            "simulated_studies_main": n_studies,
            "simulated_studies_icc_diff_alternative": n_studies,
            "jobs": args.jobs,
            "icc_test": args.icc_test,
            "targets": {
                "ci_half_width": 0.08,
                "icc_k": 0.75,
                "icc_diff": 0.15,
                "table2_effect": -6.0,
                "agreement_half_width": 0.15,
            },
        },
        "priors_seconds": t_priors,
        "grid_seconds": t_grid,
        "cached_rerun_seconds": t_cached,
        "cached_rerun_identical": same,
        "grid_wall_minutes": round(t_grid["wall_s"] / 60, 2),
        "grid_cpu_minutes_per_core_at_2_cores": round(t_grid["cpu_s"] / 2 / 60, 2),
        "target_minutes": 5.0,
        "ms_cpu_per_simulated_study": round(1000 * t_grid["cpu_s"] / (2 * n_studies), 1),
        "paper_check_central_icc_k_at_paper_design": paper_check,
        "recommendation": json.loads(result.recommendations.to_json(orient="records")),
    }
    write_json(out, OUT / "plan_grid.json")
    print(json.dumps({k: v for k, v in out.items() if k != "recommendation"}, indent=1))


if __name__ == "__main__":
    main()
