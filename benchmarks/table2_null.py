"""False-positive rates of Table 2's modality interactions under null simulations (issue #12).

For each generating model, ``--n-studies`` paper-size studies (100 prompts x 2 clips, 53 raters per
condition x 20 trials) are simulated with NO modality x length and NO modality x order effect, and
Table 2's omnibus LMM (:func:`modprefs.stats.tables.modality.table2`) is fitted with both random-effects
structures (``stimulus_modality``, the default: + (1 | clip_id:modality); ``paper``: the paper's
(1 | participant_id) + (1 | clip_id)). Reported: the share of studies whose Satterthwaite p < .05 for
each interaction, with a Clopper-Pearson 95 % interval.

Generating models (three, only one of them the paper-calibrated simulator):
``simulator``            modprefs.ratings.simulate defaults (the paper calibration: clipped, heavy-tailed,
                         tie snapping), b_len_text = b_first_text = 0;
``gaussian_crossed``     benchmarks/generators.py: the textbook Gaussian crossed LMM with a clip x modality
                         variance, no rounding or clipping;
``heavy_scale_clipped``  benchmarks/generators.py: Student t(4) effects, rater-specific scale use, rounded
                         and clipped to 1..100.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/table2_null.py [--n-studies 500] [--workers 2]

Writes benchmarks/out/table2_null.json (rewritten as studies finish).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from multiprocessing import get_context
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from generators import GeneratorParams, generate, study_design  # noqa: E402

from modprefs.ratings.simulate import SimulationParams, simulate_ratings  # noqa: E402
from modprefs.stats.tables import modality  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "table2_null.json"
N_PROMPTS, RATERS, TRIALS = 100, 53, 20
MODELS = ("simulator", "gaussian_crossed", "heavy_scale_clipped")
TERMS = {
    "modality_x_length": "Modality x Char. length",
    "modality_x_order": "Presented first x Modality",
    "modality_x_trial": "Modality x Trial number",
}
ALPHA = 0.05


def simulate(model: str, seed: int):
    stimuli, assignments = study_design(N_PROMPTS, RATERS, TRIALS, seed)
    if model == "simulator":
        params = dataclasses.replace(SimulationParams(), b_len_text=0.0, b_first_text=0.0)
        ratings, _, participants, _ = simulate_ratings(stimuli, assignments, params, seed=seed)
    else:
        ratings, participants = generate(GeneratorParams(model=model), stimuli, assignments, seed)
    return stimuli, ratings, participants


def study_task(args: tuple[str, int]) -> dict:
    model, seed = args
    t0 = time.perf_counter()
    stimuli, ratings, participants = simulate(model, seed)
    frame = modality.rating_frame(ratings, participants, stimuli)
    out: dict = {"model": model, "seed": seed, "n_ratings": len(frame), "structures": {}}
    for structure in modality.TABLE2_RANDOM:
        t1 = time.perf_counter()
        table = modality.table2(frame, structure)
        omni = table[table["model"].str.startswith("omnibus")].set_index("term")
        out["structures"][structure] = {
            "p": {k: float(omni.loc[term, "p"]) for k, term in TERMS.items()},
            "se": {k: float(omni.loc[term, "se"]) for k, term in TERMS.items()},
            "b": {k: float(omni.loc[term, "b"]) for k, term in TERMS.items()},
            "converged": bool(omni["converged"].all()),
            "seconds": time.perf_counter() - t1,
        }
    out["seconds"] = time.perf_counter() - t0
    return out


def clopper_pearson(x: int, n: int, level: float = 0.95) -> list[float]:
    """Exact (Clopper-Pearson) interval of a binomial proportion x/n (statsmodels' "beta" method)."""
    lo, hi = proportion_confint(x, n, alpha=1 - level, method="beta")
    return [float(lo), float(hi)]


def summarise(results: list[dict]) -> dict:
    summary: dict = {}
    for model in MODELS:
        rows = [r for r in results if r["model"] == model]
        if not rows:
            continue
        block: dict = {"n_studies": len(rows), "mean_n_ratings": float(np.mean([r["n_ratings"] for r in rows]))}
        for structure in modality.TABLE2_RANDOM:
            s_block = {}
            for term in TERMS:
                p = np.array([r["structures"][structure]["p"][term] for r in rows])
                b = np.array([r["structures"][structure]["b"][term] for r in rows])
                se = np.array([r["structures"][structure]["se"][term] for r in rows])
                x = int(np.sum(p < ALPHA))
                s_block[term] = {
                    "rejections": x,
                    "rate": x / len(rows),
                    "rate_ci95": clopper_pearson(x, len(rows)),
                    "sd_estimate_across_studies": float(b.std(ddof=1)) if len(b) > 1 else None,
                    "mean_model_se": float(se.mean()),
                }
            s_block["nonconverged"] = int(sum(not r["structures"][structure]["converged"] for r in rows))
            s_block["seconds_per_fit"] = float(np.median([r["structures"][structure]["seconds"] for r in rows]))
            block[structure] = s_block
        summary[model] = block
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-studies", type=int, default=500)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--keep-other-models",
        action="store_true",
        help="keep the summaries of models not run now from an existing --out (runs of one model at a time)",
    )
    args = ap.parse_args()
    models = args.models.split(",")
    t_start = time.perf_counter()
    config = {
        "n_prompts": N_PROMPTS,
        "raters_per_condition": RATERS,
        "trials_per_participant": TRIALS,
        "n_studies_per_model": args.n_studies,
        "alpha": ALPHA,
        "models": models,
        "structures": dict(modality.TABLE2_RANDOM),
        "fixed": modality.TABLE2_FIXED,
        "generator_defaults": dataclasses.asdict(GeneratorParams()),
        "simulator_null": "SimulationParams() with b_len_text = b_first_text = 0",
        "workers": args.workers,
    }
    results: list[dict] = []
    kept: dict = {}
    if args.keep_other_models and args.out.exists():
        old = json.loads(args.out.read_text(encoding="utf-8"))
        kept = {
            m: {**block, "run": old.get("runs", {}).get(m)} for m, block in old["summary"].items() if m not in models
        }
    run_info = {
        m: {"n_studies": args.n_studies, "date": time.strftime("%Y-%m-%d"), "workers": args.workers} for m in models
    }

    def write(final: bool) -> None:
        summary = {**{m: {k: v for k, v in b.items() if k != "run"} for m, b in kept.items()}, **summarise(results)}
        runs = {**{m: b["run"] for m, b in kept.items() if b.get("run")}, **run_info}
        doc = {
            "config": config,
            "summary": {m: summary[m] for m in MODELS if m in summary},
            "runs": runs,
            "studies_done": len(results),
            "complete": final,
            "runtime_s": time.perf_counter() - t_start,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        tmp.replace(args.out)

    tasks = [(m, 1000 + i) for i in range(args.n_studies) for m in models]
    with get_context("spawn").Pool(args.workers) as pool:
        for k, res in enumerate(pool.imap_unordered(study_task, tasks, chunksize=2), 1):
            results.append(res)
            if k % 20 == 0:
                write(False)
                print(f"{k}/{len(tasks)} studies, {time.perf_counter() - t_start:.0f} s", flush=True)
    write(True)
    print(json.dumps(summarise(results), indent=1))


if __name__ == "__main__":
    main()
