"""Size of the audio - text ICC tests when the ICCs are equal: the crossed jackknife vs Table 4's permutation.

Nulls (every one with equal population ICC(2,1) in the two conditions):

    simulator_exchangeable  the project's simulator with text's parameters set to audio's (a clip's audio and
                            text effects correlated .999, no modality fixed effects): exchangeable conditions
    gaussian_same           benchmarks/generators.py gaussian_crossed, the same parameters in both conditions
                            (clip x modality deviations independent: clips are rated differently by modality)
    gaussian_scaled         as gaussian_same with text's random parts x 1.6 and text's mean 10 lower: the same
                            ICC on another scale (not exchangeable)
    heavy_same              heavy_scale_clipped (t-distributed effects, rater scale use, rounding, clipping), the
                            same parameters in both conditions

For each null, ``--n-studies`` studies of ``--prompts`` prompts x ``--raters`` raters per condition x
``--trials`` trials: the jackknife test (modprefs.stats.reliability.icc_difference, ``--n-noise`` residual
refits) and the participant permutation test (modprefs.stats.tables.reliability_table.icc_permutation_test,
``--n-perm`` permutations, 79: an exact-size .05 grid), rejection rates at alpha .05 with Clopper-Pearson intervals.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/icc_difference_null.py [--n-studies 200] [--workers 2]

Writes benchmarks/out/icc_difference_null.json and .md.
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
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402
from generators import GeneratorParams, generate, study_design  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402

from modprefs.ratings.simulate import SimulationParams, simulate_ratings  # noqa: E402
from modprefs.stats.reliability.icc import analysable_ratings  # noqa: E402
from modprefs.stats.reliability.icc_difference import icc_difference_test  # noqa: E402
from modprefs.stats.tables.reliability_table import icc_permutation_test  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "icc_difference_null.json"
ALPHA = 0.05
NULLS = ("simulator_exchangeable", "gaussian_same", "gaussian_scaled", "heavy_same")


def exchangeable_params() -> SimulationParams:
    """The simulator's defaults with every ``_text`` parameter set to its ``_audio`` value, no modality effects."""
    p = SimulationParams()
    same = {
        f.name: getattr(p, f.name[: -len("_text")] + "_audio")
        for f in dataclasses.fields(p)
        if f.name.endswith("_text") and hasattr(p, f.name[: -len("_text")] + "_audio")
    }
    same.update(b_text=0.0, b_len_text=0.0, b_trial_text=0.0, b_first_text=0.0)
    if hasattr(p, "rho_clip_modality"):
        same["rho_clip_modality"] = 0.999
    return dataclasses.replace(p, **same)


def simulate(null: str, args: argparse.Namespace, seed: int):
    stimuli, assignments = study_design(args.prompts, args.raters, args.trials, seed)
    if null == "simulator_exchangeable":
        ratings, _, participants, _ = simulate_ratings(stimuli, assignments, exchangeable_params(), seed=seed)
    else:
        base = GeneratorParams(
            model="heavy_scale_clipped" if null == "heavy_same" else "gaussian_crossed", mu_text=70.0, b_len_text=3.5
        )
        if null == "gaussian_scaled":
            base = dataclasses.replace(base, scale_text=1.6, mu_text=60.0)
        ratings, participants = generate(base, stimuli, assignments, seed)
    return ratings, participants, stimuli


def one_study(task: tuple[str, int, argparse.Namespace]) -> dict:
    null, seed, args = task
    t0 = time.perf_counter()
    ratings, participants, stimuli = simulate(null, args, seed)
    frames = {c: analysable_ratings(ratings, participants, c, stimuli) for c in ("audio", "text")}
    jk = icc_difference_test(frames, n_noise=args.n_noise, seed=seed)
    t1 = time.perf_counter()
    perm = icc_permutation_test(ratings, participants, args.n_perm, seed, stimuli) if args.n_perm else {}
    t2 = time.perf_counter()
    return {
        "null": null,
        "seed": seed,
        "diff_icc_2_1": jk["icc_2_1"].difference,
        "jackknife_p": {s: jk[s].p_value for s in jk},
        "permutation_p": {s: perm[s]["p_value"] for s in perm},
        "jackknife": {s: dataclasses.asdict(jk[s]) for s in jk},
        "seconds_jackknife": t1 - t0,
        "seconds_permutation": t2 - t1,
    }


def rate(ps: list[float]) -> dict:
    p = np.array([x for x in ps if x == x])
    k = int(np.sum(p <= ALPHA))
    lo, hi = proportion_confint(k, len(p), alpha=0.05, method="beta") if len(p) else (np.nan, np.nan)
    return {
        "rejection_rate": k / len(p) if len(p) else None,
        "rejected": k,
        "n": int(len(p)),
        "ci95_clopper_pearson": [float(lo), float(hi)],
        "undefined": len(ps) - int(len(p)),
    }


def summarise(studies: list[dict]) -> dict:
    out = {}
    for null in NULLS:
        rows = [s for s in studies if s["null"] == null]
        if not rows:
            continue
        block = {"n_studies": len(rows), "mean_diff_icc_2_1": float(np.mean([r["diff_icc_2_1"] for r in rows]))}
        for test in ("jackknife", "permutation"):
            for stat in ("icc_2_1", "icc_2_k"):
                ps = [r[f"{test}_p"][stat] for r in rows if stat in r[f"{test}_p"]]
                if ps:
                    block[f"{test}/{stat}"] = rate(ps)
            secs = [r[f"seconds_{test}"] for r in rows]
            block[f"{test}/median_seconds"] = float(np.median(secs))
        out[null] = block
    return out


def markdown(doc: dict) -> str:
    c = doc["config"]
    lines = [
        "# Size of the ICC difference tests (alpha .05, equal ICCs)",
        "",
        f"{c['prompts']} prompts x {c['raters']} raters per condition x {c['trials']} trials; jackknife with "
        f"{c['n_noise']} residual refits, permutation test with {c['n_perm']} permutations.",
        "",
        "| null | studies | test | ICC(2,1) rejections [95 % CI] | ICC(2,k) rejections [95 % CI] |",
        "|---|---|---|---|---|",
    ]
    for null, b in doc["summary"].items():
        for test in ("jackknife", "permutation"):
            cells = []
            for stat in ("icc_2_1", "icc_2_k"):
                r = b.get(f"{test}/{stat}")
                cells.append(
                    f"{r['rejection_rate']:.3f} [{r['ci95_clopper_pearson'][0]:.3f}, "
                    f"{r['ci95_clopper_pearson'][1]:.3f}]"
                    if r
                    else "-"
                )
            lines.append(f"| {null} | {b['n_studies']} | {test} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-studies", type=int, default=200)
    ap.add_argument("--prompts", type=int, default=40)
    ap.add_argument("--raters", type=int, default=20)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--n-noise", type=int, default=99)
    ap.add_argument("--n-perm", type=int, default=79)
    ap.add_argument("--nulls", default=",".join(NULLS))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    nulls = args.nulls.split(",")
    tasks = [(null, seed, args) for seed in range(args.n_studies) for null in nulls]
    t0 = time.perf_counter()
    studies = []
    config = {k: v for k, v in vars(args).items() if k != "out"} | {"alpha": ALPHA}
    with get_context("spawn").Pool(args.workers) as pool:
        for i, res in enumerate(pool.imap_unordered(one_study, tasks), 1):
            studies.append(res)
            if i % 20 == 0 or i == len(tasks):
                doc = {
                    "config": config,
                    "summary": summarise(studies),
                    "studies_done": i,
                    "complete": i == len(tasks),
                    "runtime_s": round(time.perf_counter() - t0, 1),
                    "studies": studies,
                }
                args.out.parent.mkdir(parents=True, exist_ok=True)
                tmp = args.out.with_suffix(".json.tmp")
                tmp.write_text(json.dumps(doc, indent=2) + "\n")
                tmp.replace(args.out)
                args.out.with_suffix(".md").write_text(markdown(doc))
                print(f"{i}/{len(tasks)} studies, {doc['runtime_s']} s", file=sys.stderr)


if __name__ == "__main__":
    main()
