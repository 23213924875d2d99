"""Table 2's modality x length test at the small size under the Gaussian crossed model, over many seeds (#27).

The one null cell of ``benchmarks/out/table2_null_slopes.md`` that rejects too often, Gaussian small modality x
length (6.8 % over seeds 1000-2249 with ``participant_slopes``), is a clip-level term: the participant slopes do
not touch it, and the default uses the intercept step, ``stimulus_modality``, in 87 % of those studies. This
fits ``stimulus_modality`` (0.1 s a study) on ``--n-studies`` Gaussian small studies of
``benchmarks/validity/table2_null.py`` (same generator, design and seeds) and reports, per block of 1,000 seeds and
pooled: the rejection rate at .05 of modality x length with its Monte-Carlo SE, the mean squared t
(1 for a test at its nominal size), and the rejection rate by the fitted clip x modality relative SD (the
variance a clip-level term's SE rests on: where its REML estimate is low, the SE is too small).

    OPENBLAS_NUM_THREADS=1 nice .venv/bin/python benchmarks/validity/table2_length_small.py --n-studies 3000

Writes benchmarks/out/table2_length_small.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks" / "tools"))

import numpy as np  # noqa: E402
from generators import GeneratorParams  # noqa: E402
from table2_null import ALPHA, TERMS, simulate  # noqa: E402

from modprefs.io import write_json  # noqa: E402
from modprefs.stats.tables import modality  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "table2_length_small.json"
TERM = TERMS["modality_x_length"]


def one_study(seed: int) -> dict:
    stimuli, ratings, participants = simulate("gaussian_crossed", "small", seed, GeneratorParams())
    fit = modality.table2_fit(modality.rating_frame(ratings, participants, stimuli), "stimulus_modality").fit
    row = fit.coef_table().set_index("term").loc[TERM]
    names = [re.group for re in fit.random_effects]
    sd = {g: math.sqrt(re.cov[0, 0] / fit.sigma2) for g, re in zip(names, fit.random_effects, strict=True)}
    return {"seed": seed, "p": float(row["p"]), "t": float(row["t"]), "df": float(row["df"]), "rel_sd": sd}


def block(rows: list[dict]) -> dict:
    p = np.array([r["p"] for r in rows])
    t = np.array([r["t"] for r in rows])
    rate = float(np.mean(p < ALPHA))
    return {
        "studies": len(rows),
        "rate": rate,
        "mc_se": math.sqrt(rate * (1 - rate) / len(rows)),
        "band": [
            ALPHA - 2 * math.sqrt(ALPHA * (1 - ALPHA) / len(rows)),
            ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / len(rows)),
        ],
        "mean_t2": float(np.mean(t**2)),
        "mean_t2_se": float(np.std(t**2, ddof=1) / math.sqrt(len(rows))),
        "median_df": float(np.median([r["df"] for r in rows])),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-studies", type=int, default=3000)
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    seeds = range(args.first_seed, args.first_seed + args.n_studies)
    t0, cpu0 = time.perf_counter(), time.process_time()
    with get_context("spawn").Pool(args.workers) as pool:
        rows = sorted(pool.map(one_study, seeds, chunksize=20), key=lambda r: r["seed"])
    true_sd = math.sqrt(GeneratorParams().var_clip_modality / GeneratorParams().var_resid)
    cm = np.array([r["rel_sd"]["clip_id:modality"] for r in rows])
    by_sd = {}
    for lo, hi in ((0.0, 0.3), (0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (0.6, math.inf)):
        sub = [r for r, x in zip(rows, cm, strict=True) if lo <= x < hi]
        if sub:
            by_sd[f"{lo}-{hi}"] = block(sub)
    doc = {
        "what": "Gaussian crossed small studies (40 prompts x 36 raters per condition x 10 trials), Table 2's "
        "stimulus_modality fit, modality x length at alpha .05",
        "seeds": [args.first_seed, args.first_seed + args.n_studies - 1],
        "pooled": block(rows),
        "by_1000_seeds": {
            f"{s}-{s + 999}": block([r for r in rows if s <= r["seed"] < s + 1000])
            for s in range(args.first_seed, args.first_seed + args.n_studies, 1000)
        },
        "clip_modality_rel_sd_true": true_sd,
        "by_fitted_clip_modality_rel_sd": by_sd,
        "seconds": {"wall": round(time.perf_counter() - t0, 1), "main_cpu": round(time.process_time() - cpu0, 1)},
        "workers": args.workers,
    }
    write_json(doc, args.out)
    print(json.dumps({k: doc[k] for k in ("pooled", "by_1000_seeds", "by_fitted_clip_modality_rel_sd")}, indent=1))


if __name__ == "__main__":
    main()
