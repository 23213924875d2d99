"""Coverage of the ICC(2,1) bootstrap CIs: the paper's stimulus bootstrap vs methods that resample raters.

Issue #4. Table 4's intervals resample stimuli only, but raters are sampled too. Over many
simulated studies this measures how often each method's 95 % interval covers the TRUE
population ICC(2,1) of the audio condition (the ICC model of Table 4,
``rating ~ presented_first + trial_z + (1|clip_id) + (1|participant_id)``, REML).

Study design (moderate, to fit the time budget): 40 prompts x 2 clips drawn at random from a
PRISM-like stimulus set (tests/test_recovery.py's ``paper_stimuli``, a fresh set per study),
36 raters per condition x 10 trials (``make_assignments``), attention failures and dropouts as
simulated -> ~8 ratings per clip, ~33 analysed raters, ~640 ratings. The paper: 200 clips, ~9
ratings per clip.

Settings and their truths:

``gaussian``
    A pure crossed Gaussian LMM: ``clip_ratings=False``, ``tie_mode="threshold"``, ``clip_df`` =
    ``resid_df`` = inf, ``resid_scale_cv`` = 0, within-prompt and cross-modality clip
    correlations 0, otherwise the paper calibration. The ICC model omits the length covariate,
    so the clip variance it estimates is var_clip + b_len^2 * var(len_z) = var_clip + b_len^2
    (len_z is standardised over each stimulus set, sample variance exactly 1); ratings are
    rounded to integers, which adds 1/12 to the residual variance. Truth (analytic):
    (var_clip + b_len^2) / (var_clip + b_len^2 + var_participant + var_resid + 1/12).
    A large simulation (below) checks it.
``default``
    The paper calibration (``SimulationParams()``): ratings clipped to 1..100, heavy-tailed
    clip effects and residuals, rater scale heterogeneity, tie snapping, within-prompt clip
    correlation. Clipping and the omitted covariate move the estimand away from any input
    parameter, so the population ICC(2,1) is DEFINED by a very large simulation: the mean of
    the REML ICC(2,1) over ``--truth-reps`` studies of ``--truth-prompts`` prompts with raters
    scaled to keep the same ratings per clip (same design density, so the same estimand), with
    its Monte Carlo SE.

Per study and method, ``--n-boot`` resamples (default 199, smaller than the paper's 2,000 to fit
the time) give percentile and basic 95 % intervals from the same replicates; coverage is
reported with a Clopper-Pearson 95 % interval, with mean width, misses below/above, and runtime.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/icc_coverage.py [--n-studies 500] [--n-boot 199]

Writes benchmarks/out/icc_coverage.json (rewritten as studies finish, so partial results survive).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from multiprocessing import get_context
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from modprefs.ratings.simulate import SimulationParams, simulate_ratings  # noqa: E402
from modprefs.stats.icc import _fit_iccs, analysable_ratings, condition_design  # noqa: E402
from modprefs.stats.icc_ci import CI_METHODS, INTERVALS, bootstrap_iccs, interval_from_boot  # noqa: E402
from modprefs.study.design import make_assignments  # noqa: E402
from test_recovery import paper_stimuli  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "icc_coverage.json"
CONDITION = "audio"
N_PROMPTS, RATERS, TRIALS = 40, 36, 10
LEVEL = 0.95


def setting_params(name: str) -> SimulationParams:
    if name == "default":
        return SimulationParams()
    if name == "gaussian":
        return dataclasses.replace(
            SimulationParams(), clip_ratings=False, tie_mode="threshold", clip_df=math.inf, resid_df=math.inf,
            resid_scale_cv=0.0, rho_clip_within_prompt_audio=0.0, rho_clip_within_prompt_text=0.0,
            rho_clip_modality=0.0)
    raise ValueError(name)


def analytic_truth_gaussian() -> float:
    p = setting_params("gaussian")
    v_clip = p.var_clip_audio + p.b_len ** 2
    return v_clip / (v_clip + p.var_participant_audio + p.var_resid_audio + 1.0 / 12.0)


def study_stimuli(n_prompts: int, seed: int) -> pd.DataFrame:
    """``n_prompts`` prompts drawn at random from fresh ``paper_stimuli`` sets (ids made unique)."""
    rng = np.random.default_rng([seed, 0x1CC])
    sets = []
    for j in range(math.ceil(n_prompts / 100)):
        s = paper_stimuli(int(rng.integers(2**31)))
        s["prompt_id"] = f"s{j}_" + s["prompt_id"]
        s["clip_id"] = f"s{j}_" + s["clip_id"]
        sets.append(s)
    stim = pd.concat(sets, ignore_index=True)
    prompts = list(dict.fromkeys(stim["prompt_id"]))
    keep = set(rng.choice(prompts, size=n_prompts, replace=False))
    return stim[stim["prompt_id"].isin(keep)].reset_index(drop=True)


def simulate_design(setting: str, n_prompts: int, raters: int, seed: int):
    stim = study_stimuli(n_prompts, seed)
    prompts = list(dict.fromkeys(stim["prompt_id"]))
    assignments = make_assignments(prompts, raters, TRIALS, seed=seed)
    ratings, _, participants, _ = simulate_ratings(stim, assignments, setting_params(setting), seed=seed)
    return condition_design(analysable_ratings(ratings, participants, CONDITION, stim))


def truth_task(args: tuple[str, int, int]) -> dict:
    setting, rep, n_prompts = args
    t0 = time.perf_counter()
    design = simulate_design(setting, n_prompts, round(n_prompts * RATERS / N_PROMPTS), seed=10_000_000 + rep)
    fit, k, icc1, _ = _fit_iccs(design)
    return {"kind": "truth", "setting": setting, "rep": rep, "icc_2_1": icc1, "k": k, "n_ratings": int(design.y.size),
            "var_clip": fit.var_g1, "var_participant": fit.var_g2, "var_resid": fit.var_resid,
            "seconds": time.perf_counter() - t0}


def study_task(args: tuple[str, int, int]) -> dict:
    setting, study, n_boot = args
    design = simulate_design(setting, N_PROMPTS, RATERS, seed=study)
    fit, k, icc1, icck = _fit_iccs(design)
    out = {"kind": "study", "setting": setting, "study": study, "icc_2_1": icc1, "k": k,
           "n_ratings": int(design.y.size), "n_participants": design.n_participants, "methods": {}}
    for m_i, method in enumerate(CI_METHODS):
        rng = np.random.default_rng([study, m_i, 0xB007])
        t0 = time.perf_counter()
        boot, failed = bootstrap_iccs(design, fit, method, n_boot, rng)
        sec = time.perf_counter() - t0
        res = {"seconds": sec, "failed": failed, "boot_mean": float(np.nanmean(boot[:, 0]))}
        for interval in INTERVALS:
            (lo, hi), _ = interval_from_boot(np.array([icc1, icck]), boot, LEVEL, interval)
            res[interval] = (float(lo), float(hi))
        out["methods"][method] = res
    return out


def clopper_pearson(x: int, n: int, level: float = 0.95) -> tuple[float, float]:
    a = 1 - level
    lo = 0.0 if x == 0 else float(stats.beta.ppf(a / 2, x, n - x + 1))
    hi = 1.0 if x == n else float(stats.beta.ppf(1 - a / 2, x + 1, n - x))
    return lo, hi


def summarise(studies: list[dict], truths: dict[str, float]) -> dict:
    out = {}
    for setting, truth in truths.items():
        rows = [s for s in studies if s["setting"] == setting]
        if not rows or not np.isfinite(truth):
            continue
        est = np.array([r["icc_2_1"] for r in rows])
        block = {"n_studies": len(rows), "truth_icc_2_1": truth, "mean_estimate": float(est.mean()),
                 "sd_estimate": float(est.std(ddof=1)) if len(rows) > 1 else None,
                 "mean_bias": float(est.mean() - truth), "mean_k": float(np.mean([r["k"] for r in rows])),
                 "mean_n_ratings": float(np.mean([r["n_ratings"] for r in rows])),
                 "mean_n_participants": float(np.mean([r["n_participants"] for r in rows])), "methods": {}}
        for method in CI_METHODS:
            m = {"seconds_per_study": float(np.mean([r["methods"][method]["seconds"] for r in rows])),
                 "failed_refits": int(sum(r["methods"][method]["failed"] for r in rows)),
                 "mean_boot_icc_2_1": float(np.mean([r["methods"][method]["boot_mean"] for r in rows]))}
            for interval in INTERVALS:
                ci = np.array([r["methods"][method][interval] for r in rows])
                ok = np.isfinite(ci).all(axis=1)
                below = int(np.sum(ci[ok, 1] < truth))  # interval entirely below the truth
                above = int(np.sum(ci[ok, 0] > truth))
                n = int(ok.sum())
                covered = n - below - above
                lo, hi = clopper_pearson(covered, n)
                m[interval] = {"coverage": covered / n if n else None, "covered": covered, "n": n,
                               "coverage_ci95_clopper_pearson": [lo, hi], "misses_below": below,
                               "misses_above": above, "mean_width": float(np.mean(ci[ok, 1] - ci[ok, 0])),
                               "median_width": float(np.median(ci[ok, 1] - ci[ok, 0]))}
            block["methods"][method] = m
        out[setting] = block
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-studies", type=int, default=500)
    ap.add_argument("--n-boot", type=int, default=199)
    ap.add_argument("--settings", default="gaussian,default")
    ap.add_argument("--truth-reps", type=int, default=20)
    ap.add_argument("--truth-prompts", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    settings = args.settings.split(",")
    t_start = time.perf_counter()
    config = {"condition": CONDITION, "n_prompts": N_PROMPTS, "n_clips": 2 * N_PROMPTS, "raters_per_condition": RATERS,
              "trials_per_participant": TRIALS, "n_studies_per_setting": args.n_studies, "n_boot": args.n_boot,
              "ci_level": LEVEL, "methods": list(CI_METHODS), "intervals": list(INTERVALS),
              "truth_reps": args.truth_reps, "truth_prompts": args.truth_prompts,
              "truth_raters_per_condition": round(args.truth_prompts * RATERS / N_PROMPTS),
              "model": "rating ~ presented_first + trial_z + (1|clip_id) + (1|participant_id), REML",
              "workers": args.workers, "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")}
    truth_def = {
        "gaussian": "analytic: (var_clip_audio + b_len^2) / (var_clip_audio + b_len^2 + var_participant_audio + "
                    "var_resid_audio + 1/12); the length effect counts as clip variance (len_z omitted from the "
                    "ICC model, sample variance 1), rounding adds 1/12 to the residual; checked by the large "
                    "simulation",
        "default": f"defined by simulation: mean REML ICC(2,1) over {args.truth_reps} studies of "
                   f"{args.truth_prompts} prompts ({2 * args.truth_prompts} clips) and "
                   f"{config['truth_raters_per_condition']} raters per condition x {TRIALS} trials (same ratings per "
                   "clip as the studies), clipped heavy-tailed paper calibration",
    }
    truths = {s: (analytic_truth_gaussian() if s == "gaussian" else math.nan) for s in settings}
    truth_runs: list[dict] = []
    studies: list[dict] = []

    def write(final: bool = False) -> None:
        tr = {}
        for s in settings:
            vals = np.array([r["icc_2_1"] for r in truth_runs if r["setting"] == s])
            tr[s] = {"definition": truth_def[s], "truth_icc_2_1": truths[s],
                     "large_sim_reps": int(vals.size),
                     "large_sim_mean": float(vals.mean()) if vals.size else None,
                     "large_sim_se": float(vals.std(ddof=1) / np.sqrt(vals.size)) if vals.size > 1 else None,
                     "large_sim_mean_k": float(np.mean([r["k"] for r in truth_runs if r["setting"] == s]))
                     if vals.size else None,
                     "large_sim_seconds_each": float(np.mean([r["seconds"] for r in truth_runs if r["setting"] == s]))
                     if vals.size else None}
        doc = {"config": config, "truth": tr, "summary": summarise(studies, truths),
               "studies_done": len(studies), "complete": final,
               "runtime_s": time.perf_counter() - t_start}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=2, allow_nan=True) + "\n", encoding="utf-8")
        tmp.replace(args.out)

    truth_tasks = [(s, rep, args.truth_prompts) for s in settings for rep in range(args.truth_reps)]
    study_tasks = [(s, i, args.n_boot) for i in range(args.n_studies) for s in settings]
    with get_context("fork").Pool(args.workers) as pool:
        for r in pool.imap_unordered(truth_task, truth_tasks):
            truth_runs.append(r)
        for s in settings:
            if s == "default":
                truths[s] = float(np.mean([r["icc_2_1"] for r in truth_runs if r["setting"] == s]))
        write()
        print("truths", truths, f"{time.perf_counter() - t_start:.0f}s", flush=True)
        for i, r in enumerate(pool.imap_unordered(study_task, study_tasks, chunksize=2)):
            studies.append(r)
            if (i + 1) % 20 == 0:
                write()
                print(f"{i + 1}/{len(study_tasks)} {time.perf_counter() - t_start:.0f}s", flush=True)
    write(final=True)
    print(json.dumps(summarise(studies, truths), indent=1))


if __name__ == "__main__":
    main()
