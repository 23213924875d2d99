"""The whole statistics suite at paper scale with the paper's resample counts, timed per analysis.

A simulated paper-size study (100 prompts x 2 clips, 53 recruited per condition, 20 trials; the
default simulator), then every analysis of ``modprefs.stats.tables.analyses.ANALYSES`` plus the ICC table
with n_boot = 2,000, n_perm = 2,000, n_boot_alpha = n_perm_alpha = 5,000, as the workflow runs them.
Writes benchmarks/out/stats_suite.json.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from modprefs.ratings.simulate import simulate_ratings  # noqa: E402
from modprefs.ratings.simulation.params import SimulationParams  # noqa: E402
from modprefs.stats.reliability.icc_ci import icc_by_condition  # noqa: E402
from modprefs.stats.tables.analyses import ANALYSES  # noqa: E402
from modprefs.study.design import make_assignments  # noqa: E402
from support.recovery_model import paper_stimuli  # noqa: E402


def main() -> None:
    stimuli = paper_stimuli(0)
    assignments = make_assignments(list(dict.fromkeys(stimuli.prompt_id)), 53, 20, seed=1)
    ratings, trials, participants, _ = simulate_ratings(stimuli, assignments, SimulationParams(), seed=1)
    params = {
        "seed": 1,
        "n_boot": 2000,
        "n_perm": 2000,
        "n_boot_alpha": 5000,
        "n_perm_alpha": 5000,
        "n_boot_threshold": 1000,
        "ci_level": 0.95,
        "modality_terms": str(ROOT / "resources/analysis/modality_terms.txt"),
    }
    tables = {
        "ratings": ratings,
        "trials": trials,
        "participants": participants,
        "stimuli": stimuli,
        "assignments": assignments,
    }
    seconds = {}
    t_all = time.perf_counter()
    t0 = time.perf_counter()
    tables["icc"] = icc_by_condition(ratings, participants, params["n_boot"], params["seed"], stimuli=stimuli)
    seconds["icc_table (2,000 bootstraps x 2 conditions)"] = time.perf_counter() - t0
    for name, analysis in ANALYSES.items():
        t0 = time.perf_counter()
        analysis(tables, params)
        seconds[name] = time.perf_counter() - t0
    total = time.perf_counter() - t_all
    rated = ratings[ratings.trial >= 1]
    out = {
        "design": "100 prompts x 2 clips, 53 recruited per condition, 20 trials (default simulator)",
        "n_ratings_rated_trials": int(len(rated)),
        "resamples": {k: params[k] for k in ("n_boot", "n_perm", "n_boot_alpha", "n_perm_alpha", "n_boot_threshold")},
        "seconds_by_analysis": {k: round(v, 2) for k, v in seconds.items()},
        "total_seconds": round(total, 1),
        "target_seconds": 60,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg_1min": os.getloadavg()[0]},
    }
    target = ROOT / "benchmarks/out/stats_suite.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
