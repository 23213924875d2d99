"""Coverage of the ICC(2,1) and ICC(2,k) confidence intervals: 3 generating models x 2 design sizes x methods.

For each generating model and design size, ``--n-studies`` studies are simulated; the audio
condition's ICC model (Table 4: ``rating ~ presented_first + trial_z + (1|clip_id) +
(1|participant_id)``, REML) is fitted and each CI method of :mod:`modprefs.stats.reliability.icc_ci` gives a
nominal 95 % interval. Coverage = share of studies whose interval contains the TRUE value, with a
Clopper-Pearson 95 % interval; misses below/above and mean width are reported.

Generating models (only the first is the paper-calibrated simulator; the other two are written
independently in benchmarks/tools/generators.py):

``simulator``            modprefs.ratings.simulate defaults: clipped to 1..100, heavy-tailed clip effects and
                         residuals, rater scale heterogeneity, tie snapping, within-prompt correlation;
``gaussian_crossed``     the textbook Gaussian crossed LMM (clip, clip x modality, prompt, participant, noise);
``heavy_scale_clipped``  Student t(4) effects, rater-specific scale use (a rater x clip interaction the LMM
                         does not model), rounded and clipped to 1..100.

Sizes: ``small`` = 40 prompts, 36 raters per condition x 10 trials (~9 ratings per clip); ``paper`` =
100 prompts, 53 raters x 20 trials (the paper's design).

Truth. ``gaussian_crossed``: analytic (the length effect counts as clip variance; the ICC model omits
len_z). The others: the population ICC(2,1) is defined by simulation -- the mean REML ICC(2,1) over
``--truth-reps`` studies ``--truth-scale`` times larger (prompts and raters scaled, same trials, so the
same design density), with its Monte-Carlo SE. ICC(2,k)'s truth is the Spearman-Brown image of ICC(2,1)'s
at the study's own k (ratings per clip), so both intervals of a method that maps ICC(2,1)'s bounds
(the jackknife) cover together; bootstrap methods' ICC(2,k) intervals are their own percentiles.

Methods: ``jackknife`` (the default; logit-t interval from leave-one-prompt-out and
leave-one-participant-out refits with the noise term from ``--n-boot`` residual-bootstrap refits),
``stimulus`` (the paper's), ``prompt``, ``two_way``, ``parametric`` (percentile intervals of
``--n-boot`` resamples; the workflow's default n_boot is 2,000).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/validity/icc_coverage.py [--n-studies 500] [--n-boot 99]
        [--models simulator,gaussian_crossed,heavy_scale_clipped] [--sizes small,paper] [--keep-other]

Writes benchmarks/out/icc_coverage.json (rewritten as studies finish; ``--keep-other`` keeps the
cells of models/sizes not run now from an existing file) and icc_coverage.md (the table).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from multiprocessing import get_context
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks" / "tools"))

from generators import GeneratorParams, generate, study_design  # noqa: E402

from modprefs.ratings.simulate import simulate_ratings  # noqa: E402
from modprefs.ratings.simulation.params import SimulationParams  # noqa: E402
from modprefs.stats.reliability.icc import analysable_ratings, condition_design, fit_iccs  # noqa: E402
from modprefs.stats.reliability.icc_ci import CI_METHODS, DEFAULT_CI_METHOD, interval_from_boot
from modprefs.stats.reliability.icc_jackknife import jackknife_interval
from modprefs.stats.reliability.icc_resampling import BOOTSTRAP_METHODS, bootstrap_iccs
from modprefs.stats.reliability.rater_scaling import icc_k  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "icc_coverage.json"
CONDITION = "audio"
SIZES = {"small": (40, 36, 10), "paper": (100, 53, 20)}
MODELS = ("simulator", "gaussian_crossed", "heavy_scale_clipped")
LEVEL = 0.95


def simulate_design(model: str, size: str, seed: int, scale: int = 1):
    n_prompts, raters, trials = SIZES[size]
    stimuli, assignments = study_design(n_prompts * scale, raters * scale, trials, seed)
    if model == "simulator":
        ratings, _, participants, _ = simulate_ratings(stimuli, assignments, SimulationParams(), seed=seed)
    else:
        ratings, participants = generate(GeneratorParams(model=model), stimuli, assignments, seed)
    return condition_design(analysable_ratings(ratings, participants, CONDITION, stimuli))


def analytic_truth(model: str) -> float:
    return GeneratorParams(model=model).icc_truth_gaussian(CONDITION) if model == "gaussian_crossed" else math.nan


def truth_task(args: tuple[str, str, int, int]) -> dict:
    model, size, rep, scale = args
    t0 = time.perf_counter()
    design = simulate_design(model, size, 10_000_000 + rep, scale)
    _, k, icc1, _ = fit_iccs(design)
    return {"model": model, "size": size, "rep": rep, "icc_2_1": icc1, "k": k, "seconds": time.perf_counter() - t0}


def study_task(args: tuple[str, str, int, int, list[str]]) -> dict:
    model, size, study, n_boot, methods = args
    design = simulate_design(model, size, study)
    fit, k, icc1, icck = fit_iccs(design)
    out = {
        "model": model,
        "size": size,
        "study": study,
        "icc_2_1": icc1,
        "icc_2_k": icck,
        "k": k,
        "n_ratings": int(design.y.size),
        "n_participants": design.n_participants,
        "methods": {},
    }
    for m_i, method in enumerate(methods):
        rng = np.random.default_rng([study, m_i, 0xB007])
        t0 = time.perf_counter()
        if method == "jackknife":
            jk = jackknife_interval(design, fit, icc1, n_boot, rng, LEVEL)
            ci1 = (jk.lo, jk.hi)
            cik = tuple(float(v) for v in icc_k(np.array(ci1), k))
            extra = {
                "var_prompt": jk.var_prompt,
                "var_participant": jk.var_participant,
                "var_noise": jk.var_noise,
                "df": jk.df,
                "failed": jk.failed,
            }
        else:
            boot, failed = bootstrap_iccs(design, fit, method, n_boot, rng)
            (lo1, hi1), (lok, hik) = interval_from_boot(np.array([icc1, icck]), boot, LEVEL)
            ci1, cik = (float(lo1), float(hi1)), (float(lok), float(hik))
            extra = {"failed": failed}
        out["methods"][method] = {"icc_2_1": ci1, "icc_2_k": cik, "seconds": time.perf_counter() - t0, **extra}
    return out


def clopper_pearson(x: int, n: int, level: float = 0.95) -> list[float]:
    """Exact (Clopper-Pearson) interval of a binomial proportion x/n (statsmodels' "beta" method)."""
    lo, hi = proportion_confint(x, n, alpha=1 - level, method="beta")
    return [float(lo), float(hi)]


def coverage_block(intervals: np.ndarray, truths: np.ndarray) -> dict:
    ok = np.isfinite(intervals).all(axis=1)
    ci, t = intervals[ok], truths[ok]
    below = int(np.sum(ci[:, 1] < t))  # the whole interval below the truth
    above = int(np.sum(ci[:, 0] > t))
    n = int(ok.sum())
    covered = n - below - above
    return {
        "coverage": covered / n if n else None,
        "covered": covered,
        "n": n,
        "coverage_ci95_clopper_pearson": clopper_pearson(covered, n) if n else None,
        "misses_below": below,
        "misses_above": above,
        "undefined": int((~ok).sum()),
        "mean_width": float(np.mean(ci[:, 1] - ci[:, 0])) if n else None,
    }


def summarise(studies: list[dict], truths: dict[str, float], methods: list[str]) -> dict:
    out: dict = {}
    for key, truth in truths.items():
        model, size = key.split("/")
        rows = [s for s in studies if s["model"] == model and s["size"] == size]
        if not rows or not np.isfinite(truth):
            continue
        est = np.array([r["icc_2_1"] for r in rows])
        k = np.array([r["k"] for r in rows])
        truth_k = icc_k(truth, k)
        block = {
            "n_studies": len(rows),
            "truth_icc_2_1": truth,
            "mean_estimate_icc_2_1": float(est.mean()),
            "sd_estimate_icc_2_1": float(est.std(ddof=1)) if len(rows) > 1 else None,
            "mean_k": float(k.mean()),
            "mean_n_ratings": float(np.mean([r["n_ratings"] for r in rows])),
            "mean_n_participants": float(np.mean([r["n_participants"] for r in rows])),
            "methods": {},
        }
        for method in methods:
            have = [r for r in rows if method in r["methods"]]
            if not have:
                continue
            idx = [rows.index(r) for r in have]
            m = {
                "seconds_per_study": float(np.median([r["methods"][method]["seconds"] for r in have])),
                "failed_refits": int(sum(r["methods"][method]["failed"] for r in have)),
                "icc_2_1": coverage_block(
                    np.array([r["methods"][method]["icc_2_1"] for r in have], float), np.full(len(have), truth)
                ),
                "icc_2_k": coverage_block(
                    np.array([r["methods"][method]["icc_2_k"] for r in have], float), truth_k[idx]
                ),
            }
            block["methods"][method] = m
        out[key] = block
    return out


def markdown(doc: dict) -> str:
    lines = [
        "# ICC interval coverage (nominal 95 %)",
        "",
        f"Audio condition; {doc['config']['n_boot']} resamples per bootstrap (and residual refits for the "
        "jackknife's noise term). Coverage [Clopper-Pearson 95 %], mean width; default method "
        f"`{DEFAULT_CI_METHOD}`.",
        "",
        "| model | size | studies | truth ICC(2,1) | method | ICC(2,1) coverage | width | ICC(2,k) coverage | width |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, block in doc["summary"].items():
        model, size = key.split("/")
        for method, m in block["methods"].items():
            c1, ck = m["icc_2_1"], m["icc_2_k"]

            def cell(c: dict) -> str:
                lo, hi = c["coverage_ci95_clopper_pearson"]
                return f"{c['coverage']:.3f} [{lo:.3f}, {hi:.3f}]"

            lines.append(
                f"| {model} | {size} | {block['n_studies']} | {block['truth_icc_2_1']:.3f} | {method} | "
                f"{cell(c1)} | {c1['mean_width']:.3f} | {cell(ck)} | {ck['mean_width']:.3f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-studies", type=int, default=500)
    ap.add_argument("--n-boot", type=int, default=99)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--sizes", default=",".join(SIZES))
    ap.add_argument("--methods", default=",".join(CI_METHODS))
    ap.add_argument("--truth-reps", type=int, default=40)
    ap.add_argument("--truth-scale", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep-other", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    models, sizes, methods = args.models.split(","), args.sizes.split(","), args.methods.split(",")
    unknown = set(methods) - set(CI_METHODS)
    if unknown:
        ap.error(f"unknown methods {sorted(unknown)}")
    t_start = time.perf_counter()
    config = {
        "condition": CONDITION,
        "sizes": {s: dict(zip(("n_prompts", "raters_per_condition", "trials"), SIZES[s])) for s in SIZES},
        "n_studies": args.n_studies,
        "n_boot": args.n_boot,
        "ci_level": LEVEL,
        "methods": methods,
        "bootstrap_methods": list(BOOTSTRAP_METHODS),
        "default_method": DEFAULT_CI_METHOD,
        "truth_reps": args.truth_reps,
        "truth_scale": args.truth_scale,
        "model": "rating ~ presented_first + trial_z + (1|clip_id) + (1|participant_id), REML",
        "workers": args.workers,
    }
    keys = [f"{m}/{s}" for m in models for s in sizes]
    truths = {key: analytic_truth(key.split("/")[0]) for key in keys}
    kept: dict = {}
    if args.keep_other and args.out.exists():
        old = json.loads(args.out.read_text(encoding="utf-8"))
        kept = {k: v for k, v in old.get("summary", {}).items() if k not in keys}
        kept_truth = {k: v for k, v in old.get("truth", {}).items() if k not in keys}
    else:
        kept_truth = {}
    truth_runs: list[dict] = []
    studies: list[dict] = []

    def write(final: bool) -> None:
        truth_doc = dict(kept_truth)
        for key in keys:
            vals = np.array([r["icc_2_1"] for r in truth_runs if f"{r['model']}/{r['size']}" == key])
            truth_doc[key] = {
                "truth_icc_2_1": truths[key],
                "definition": "analytic"
                if key.startswith("gaussian")
                else f"mean REML ICC(2,1) of {vals.size} studies {args.truth_scale}x larger",
                "large_sim_mean": float(vals.mean()) if vals.size else None,
                "large_sim_se": float(vals.std(ddof=1) / np.sqrt(vals.size)) if vals.size > 1 else None,
            }
        doc = {
            "config": config,
            "truth": truth_doc,
            "summary": {**kept, **summarise(studies, truths, methods)},
            "studies_done": len(studies),
            "complete": final,
            "runtime_s": time.perf_counter() - t_start,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        for path, text in (
            (args.out, json.dumps(doc, indent=2, allow_nan=True) + "\n"),
            (args.out.with_suffix(".md"), markdown(doc)),
        ):
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)

    with get_context("spawn").Pool(args.workers) as pool:
        truth_tasks = [
            (m, s, r, args.truth_scale)
            for m in models
            if m != "gaussian_crossed"
            for s in sizes
            for r in range(args.truth_reps)
        ]
        for res in pool.imap_unordered(truth_task, truth_tasks):
            truth_runs.append(res)
        for key in keys:
            vals = [r["icc_2_1"] for r in truth_runs if f"{r['model']}/{r['size']}" == key]
            if vals:
                truths[key] = float(np.mean(vals))
        write(False)
        print("truths", truths, flush=True)
        tasks = [(m, s, i, args.n_boot, methods) for i in range(args.n_studies) for m in models for s in sizes]
        for n_done, res in enumerate(pool.imap_unordered(study_task, tasks), 1):
            studies.append(res)
            if n_done % 20 == 0:
                write(False)
                print(f"{n_done}/{len(tasks)} studies, {time.perf_counter() - t_start:.0f} s", flush=True)
    write(True)
    print(markdown(json.loads(args.out.read_text())))


if __name__ == "__main__":
    main()
