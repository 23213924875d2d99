"""Efficiency of the ICC intervals: coverage AND width relative to the oracle, per generating model x design x method.

An interval can cover 95 % and still be useless (on pingouin's 8 x 4 example the crossed jackknife's ICC(2,1)
interval is about 1.5 times as wide as McGraw & Wong's F interval, [.21, .96] vs [.43, .93]). So beside coverage
(with its Monte-Carlo SE) every cell reports the **width ratio**: mean interval width / oracle width, the oracle
being 2 z_{.975} x the estimator's true sampling SD (its SD over the cell's simulated studies) -- the width of a
Wald interval that knew the SD.
A ratio near 1 with 95 % coverage is as good as an interval gets; the ratio's MC uncertainty (SD estimated from
n studies) is about 1/sqrt(2n) relative, 7 % at 100 studies.

Generating models (benchmarks/tools/generators.py and the project's simulator; as benchmarks/validity/icc_coverage.py):
``simulator`` (paper-calibrated; clipped, heavy-tailed, rater scale heterogeneity, ties), ``gaussian_crossed``,
``heavy_scale_clipped`` (t(4) effects, rater-specific scale use, rounding, clipping), ``rater_heterogeneous``
(heavy_scale_clipped plus rater-specific primacy and drift, coarse raters, ties at 50/100).

Designs (audio condition; "complete" = every rater rates every clip once and the ICC model has no covariates, as
for ratings without trial/order columns such as pingouin's example):

``single_4r``           16 items x 4 raters, complete, one clip per prompt (the response-0 clip of each prompt: a
                        single-stimulus design of independent items): ``auto`` = the F-based interval where the
                        crossed jackknife agrees with it, else the jackknife.
``single_10r``          30 items x 10 raters, likewise.
``complete_4r_pairs``   8 prompts x 2 clips x 4 raters, complete: the pairwise design, whose two clips share the
                        prompt's effect (correlation .9 in the simulator, ~.16 in the generators), so the clips are
                        not independent targets: ``auto`` = the F interval with the clips taken as items where the
                        crossed jackknife (it leaves prompts out) agrees with it, else the jackknife.
``complete_10r_pairs``  15 prompts x 2 clips x 10 raters, likewise.
``small``               40 prompts, 36 raters x 10 trials (~9 ratings per clip, varying), the ICC model with its
                        order covariates (presented_first, trial_z): ``auto`` = the crossed jackknife.

The simulator's complete designs have no attention failures and no dropouts (else they would not be complete).

Methods: ``f_based`` (the exact McGraw & Wong interval; complete designs only; on the pairwise ones with the clips
taken as items), ``f_robust`` (the same with its mean squares' df shrunk to the ratings' variability:
``icc_f_interval.robust_degrees``; ``auto``'s F candidate), ``jackknife`` (``--n-noise`` residual refits); ``auto``
(the ``default`` column) is, per study, ``f_robust`` or the jackknife, as ``icc_ci.auto_keeps_f`` picks. ICC(2,k)
intervals are the Spearman-Brown images of ICC(2,1)'s at the study's effective k.

Truth. ``gaussian_crossed`` on the pairwise designs: analytic (the length effect is clip variance; without the order
covariate its variance b_first^2/4 is residual variance). The others: the mean REML ICC(2,1) of ``--truth-reps`` studies
``--truth-scale`` times larger (prompts and raters scaled: complete designs stay complete; default 300 studies, MC SE
about .002-.003), with its MC SE in the table; an earlier output's truth is reused only where it had as many studies
(truths from 8-20 studies, used before, were off by up to .05 under the simulator, whose heavy tails make a
10x-larger study's estimate vary by ~.05); for ``small`` the truths of benchmarks/out/icc_coverage.json (same
designs, 40 studies 10x larger) are reused unless ``--no-reuse-truth``. ICC(2,k)'s truth is the Spearman-Brown
image at each study's effective k.

``--keep-other`` keeps the cells of an existing output that this run does not compute (runs add up).

The coverage rows of benchmarks/out/icc_coverage.json (500 studies per cell, the jackknife on the ``small`` and
the paper's designs) are added to the table as ``icc_coverage.json`` rows: their width ratio is computed from
the SD of the estimates and the mean width recorded there.

    OPENBLAS_NUM_THREADS=1 nice .venv/bin/python benchmarks/validity/icc_interval_width.py --n-studies 500 [--workers 2]
        [--models simulator,gaussian_crossed,heavy_scale_clipped,rater_heterogeneous]
        [--designs single_4r,single_10r,complete_4r_pairs,complete_10r_pairs,small] [--cells MODEL/DESIGN,...]
        [--n-noise 99] [--keep-other]

Writes benchmarks/out/icc_interval_width.json and .md (rewritten as studies finish).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import resource
import sys
import time
from multiprocessing import get_context
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks" / "tools"))

import numpy as np  # noqa: E402
from generators import GeneratorParams, generate, study_design  # noqa: E402
from scipy import stats  # noqa: E402

from modprefs.ratings.simulate import simulate_ratings  # noqa: E402
from modprefs.ratings.simulation.params import SimulationParams  # noqa: E402
from modprefs.stats.reliability.icc import (  # noqa: E402
    ConditionDesign,
    analysable_ratings,
    condition_design,
    fit_iccs,
    model_formula,
)
from modprefs.stats.reliability.icc_ci import (  # noqa: E402
    DEFAULT_CI_METHOD,
    auto_keeps_f,
    auto_method,
    icc_ci_for_design,
)
from modprefs.stats.reliability.icc_f_interval import f_interval, robust_f_interval  # noqa: E402
from modprefs.stats.reliability.rater_scaling import icc_k  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "icc_interval_width.json"
COVERAGE_JSON = ROOT / "benchmarks" / "out" / "icc_coverage.json"
CONDITION = "audio"
LEVEL = 0.95
Z = float(stats.norm.ppf(0.5 + LEVEL / 2))
#: name -> (prompts, raters per condition, trials, complete, single: one clip per prompt)
DESIGNS = {
    "single_4r": (16, 4, 16, True, True),
    "single_10r": (30, 10, 30, True, True),
    "complete_4r_pairs": (8, 4, 8, True, False),
    "complete_10r_pairs": (15, 10, 15, True, False),
    "small": (40, 36, 10, False, False),
}
MODELS = ("simulator", "gaussian_crossed", "heavy_scale_clipped", "rater_heterogeneous")
#: the simulator without attention failures and dropouts (complete designs stay complete)
COMPLETE_SIM = dataclasses.replace(
    SimulationParams(), p_fail_attention_audio=0.0, p_fail_attention_text=0.0, p_incomplete_audio=0.0,
    p_incomplete_text=0.0,
)  # fmt: skip


def without_covariates(d: ConditionDesign) -> ConditionDesign:
    """The design's ICC model with the intercept only (as for ratings without trial/order columns)."""
    return dataclasses.replace(d, X=d.X[:, :1], terms=(), formula=model_formula(()))


def simulate_design(model: str, design: str, seed: int, scale: int = 1) -> ConditionDesign:
    n_prompts, raters, trials, complete, single = DESIGNS[design]
    stimuli, assignments = study_design(n_prompts * scale, raters * scale, trials * (scale if complete else 1), seed)
    if model == "simulator":
        params = COMPLETE_SIM if complete else SimulationParams()
        ratings, _, participants, _ = simulate_ratings(stimuli, assignments, params, seed=seed)
    else:
        ratings, participants = generate(GeneratorParams(model=model), stimuli, assignments, seed)
    if single:  # one clip per prompt: the response-0 clips, independent items
        stimuli = stimuli[stimuli["response"] == 0]
    d = condition_design(analysable_ratings(ratings, participants, CONDITION, stimuli))
    return without_covariates(d) if complete else d


def analytic_truth(model: str, design: str) -> float:
    if model != "gaussian_crossed" or DESIGNS[design][4]:
        return math.nan
    g = GeneratorParams(model=model)
    if not DESIGNS[design][3]:
        return g.icc_truth_gaussian(CONDITION)
    v_clip = g.var_clip_shared + g.var_clip_modality + g.var_prompt + g.b_len_audio**2
    return v_clip / (v_clip + g.var_participant + g.var_resid + g.b_first**2 / 4)


def truth_task(args: tuple[str, str, int, int]) -> dict:
    model, design, rep, scale = args
    t0 = time.process_time()
    _, _, icc1, _ = fit_iccs(simulate_design(model, design, 10_000_000 + rep, scale))
    return {"key": f"{model}/{design}", "icc_2_1": icc1, "cpu_s": time.process_time() - t0}


def study_task(args: tuple[str, str, int, int]) -> dict:
    model, design, study, n_noise = args
    t0 = time.process_time()
    d = simulate_design(model, design, study)
    _, k, icc1, icck = fit_iccs(d)
    methods = ["f_based", "f_robust", "jackknife"] if DESIGNS[design][3] else ["jackknife"]
    out = {"key": f"{model}/{design}", "study": study, "icc_2_1": icc1, "icc_2_k": icck, "k": k}
    out["auto"] = auto_method(d)
    out["methods"] = {}
    for i, method in enumerate(methods):
        if method == "f_based":  # as auto computes it: a pairwise design's clips taken as items
            (lo1, hi1), (lok, hik), _ = f_interval(d, LEVEL, clips_as_items=True)
            out["methods"][method] = {"icc_2_1": [lo1, hi1], "icc_2_k": [lok, hik]}
            continue
        if method == "f_robust":  # auto's F candidate: df shrunk to the ratings' variability
            (lo1, hi1), (lok, hik), _, _ = robust_f_interval(d, LEVEL)
            out["methods"][method] = {"icc_2_1": [lo1, hi1], "icc_2_k": [lok, hik]}
            continue
        row = icc_ci_for_design(CONDITION, d, method, n_noise, np.random.default_rng([study, i, 0x1D7]), LEVEL)
        out["methods"][method] = {
            "icc_2_1": [row["icc_2_1_lo"], row["icc_2_1_hi"]],
            "icc_2_k": [row["icc_2_k_lo"], row["icc_2_k_hi"]],
        }
    # auto: the robust-df F interval where the design allows it and neither the checks of its assumptions nor the
    # jackknife contradict it (auto_keeps_f, as icc_ci_for_design does with one rng; here from the intervals
    # above), else the jackknife
    jk = out["methods"]["jackknife"]
    f_rob = out["methods"].get("f_robust")
    keep = out["auto"] == "f_based" and auto_keeps_f(d, f_rob["icc_2_1"], jk["icc_2_1"], k)[0]
    out["auto_used"] = "f_based" if keep else "jackknife"
    out["methods"]["auto"] = f_rob if keep else jk
    out["cpu_s"] = time.process_time() - t0
    return out


def cell(intervals: np.ndarray, truths: np.ndarray, estimates: np.ndarray) -> dict:
    """Coverage (with its binomial MC SE), mean width, oracle width and their ratio (with its approximate MC SE)."""
    ok = np.isfinite(intervals).all(axis=1) & np.isfinite(estimates)
    ci, t, est = intervals[ok], truths[ok], estimates[ok]
    n = int(ok.sum())
    if n < 3:
        return {"n": n}
    covered = (ci[:, 0] <= t) & (t <= ci[:, 1])
    cov = float(covered.mean())
    width = ci[:, 1] - ci[:, 0]
    sd = float(est.std(ddof=1))
    oracle = 2 * Z * sd
    ratio = float(width.mean() / oracle) if oracle > 0 else math.nan
    rel_se = math.sqrt(1 / (2 * (n - 1)) + float(width.var(ddof=1)) / (n * float(width.mean()) ** 2))
    return {
        "n": n,
        "undefined": int((~ok).sum()),
        "coverage": cov,
        "coverage_mc_se": math.sqrt(cov * (1 - cov) / n),
        "misses_below": int(np.sum(ci[:, 1] < t)),
        "misses_above": int(np.sum(ci[:, 0] > t)),
        "mean_width": float(width.mean()),
        "sd_estimate": sd,
        "oracle_width": oracle,
        "width_ratio": ratio,
        "width_ratio_mc_se": ratio * rel_se,
    }


def summarise(studies: list[dict], truths: dict[str, float]) -> dict:
    out: dict = {}
    for key in sorted({s["key"] for s in studies}):
        rows = [s for s in studies if s["key"] == key]
        truth = truths.get(key, math.nan)
        if not math.isfinite(truth):
            continue
        k = np.array([r["k"] for r in rows], float)
        truth_k = icc_k(truth, k)
        block: dict = {
            "n_studies": len(rows),
            "truth_icc_2_1": truth,
            "mean_estimate_icc_2_1": float(np.nanmean([r["icc_2_1"] for r in rows])),
            "mean_k_effective": float(k.mean()),
            "auto_chooses": sorted({r.get("auto_used", r["auto"]) for r in rows}),
            "auto_f_share": float(np.mean([r.get("auto_used", r["auto"]) == "f_based" for r in rows])),
            "cpu_s_per_study": float(np.median([r["cpu_s"] for r in rows])),
            "methods": {},
        }
        for method in rows[0]["methods"]:
            block["methods"][method] = {
                stat: cell(
                    np.array([r["methods"][method][stat] for r in rows], float),
                    np.full(len(rows), truth) if stat == "icc_2_1" else truth_k,
                    np.array([r[stat] for r in rows], float),
                )
                for stat in ("icc_2_1", "icc_2_k")
            }
        out[key] = block
    return out


def coverage_json_rows() -> list[dict]:
    """The jackknife cells of benchmarks/out/icc_coverage.json (500 studies) with their width ratio."""
    if not COVERAGE_JSON.is_file():
        return []
    doc = json.loads(COVERAGE_JSON.read_text(encoding="utf-8"))
    z = float(stats.norm.ppf(0.5 + doc["config"]["ci_level"] / 2))
    rows = []
    for key, block in doc["summary"].items():
        m = block["methods"].get("jackknife")
        sd = block.get("sd_estimate_icc_2_1")
        if not m or not sd:
            continue
        c = m["icc_2_1"]
        n = c["n"]
        rows.append(
            {
                "key": key,
                "n_studies": n,
                "truth_icc_2_1": block["truth_icc_2_1"],
                "coverage": c["coverage"],
                "coverage_mc_se": math.sqrt(c["coverage"] * (1 - c["coverage"]) / n),
                "width_ratio": c["mean_width"] / (2 * z * sd),
                "width_ratio_mc_se": c["mean_width"] / (2 * z * sd) / math.sqrt(2 * (n - 1)),
                "mean_width": c["mean_width"],
            }
        )
    return rows


def _fmt_cell(c: dict) -> str:
    if "coverage" not in c:
        return "n/a | n/a"
    return f"{c['coverage']:.3f} ± {c['coverage_mc_se']:.3f} | {c['width_ratio']:.2f} ± {c['width_ratio_mc_se']:.2f}"


def _fmt_undefined(c: dict) -> str:
    """Studies without an interval (e.g. the jackknife where an ICC estimate is 0), which the coverage column
    leaves out, and the coverage if they counted as misses."""
    undefined = int(c.get("undefined", 0))
    if not undefined or "coverage" not in c:
        return str(undefined) if "coverage" in c else ""
    return f"{undefined} ({c['coverage'] * c['n'] / (c['n'] + undefined):.3f})"


def _fmt_truth(doc: dict, key: str, value: float) -> str:
    """The truth with its MC SE and number of simulated studies, or ``(analytic)``."""
    rec = doc.get("truth", {}).get(key, {})
    if rec.get("mc_se") is None:
        return f"{value:.3f}" + (" (analytic)" if rec.get("simulated_reps") == 0 else "")
    return f"{value:.3f} ± {rec['mc_se']:.3f} ({rec['simulated_reps']})"


def runs_text(doc: dict) -> str:
    return "; ".join(
        f"{len(r['cells'])} cells x {r['n_studies']} studies asked for, {r['n_noise']} residual refits for the "
        f"jackknife's noise term, {r['cpu_s'] / 60:.1f} CPU min"
        for r in doc.get("runs", [])
    )


def markdown(doc: dict) -> str:
    lines = [
        "# ICC intervals: coverage and width relative to the oracle (nominal 95 %)",
        "",
        f"Audio condition. Coverage ± its MC SE; width ratio = mean width / (2 x 1.96 x SD of the estimator over the "
        f"cell's studies) ± its approximate MC SE. Studies per cell: column `studies` (few, to fit a CPU budget: "
        f"the MC SEs say how few; `--n-studies 500` for the full version). Runs: {runs_text(doc)}. Default method "
        f"`{DEFAULT_CI_METHOD}` (column `default`: the method it chose). CPU time {doc.get('cpu_s', 0) / 60:.1f} "
        "min in all. Goal: coverage 95 ± 2.5 %, width ratio <= 1.3.",
        "",
        "| model | design | studies | truth ICC(2,1) (± MC SE, studies) | method | default | ICC(2,1) coverage "
        "| width ratio | ICC(2,k) coverage | width ratio | mean width ICC(2,1) "
        "| no interval (coverage counting them as misses) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, block in doc["summary"].items():
        model, design = key.split("/")
        for method, m in block["methods"].items():
            if "auto" in block["methods"]:  # the auto row is the default; it says how often it kept the F interval
                share = block.get("auto_f_share", 0.0)
                default = f"yes (F in {share:.0%})" if method == "auto" and share > 0 else "yes" * (method == "auto")
            else:  # runs from before auto compared the F interval with the jackknife
                default = "yes" if method in block["auto_chooses"] else ""
            width = m["icc_2_1"].get("mean_width", math.nan)
            lines.append(
                f"| {model} | {design} | {block['n_studies']} | {_fmt_truth(doc, key, block['truth_icc_2_1'])} | "
                f"{method} | {default} | "
                f"{_fmt_cell(m['icc_2_1'])} | {_fmt_cell(m['icc_2_k'])} | {width:.3f} | "
                f"{_fmt_undefined(m['icc_2_1'])} |"
            )
    for r in doc.get("icc_coverage_rows", []):
        model, design = r["key"].split("/")
        cov = f"{r['coverage']:.3f} ± {r['coverage_mc_se']:.3f}"
        ratio = f"{r['width_ratio']:.2f} ± {r['width_ratio_mc_se']:.2f}"
        lines.append(
            f"| {model} | {design} (icc_coverage.json) | {r['n_studies']} | {r['truth_icc_2_1']:.3f} | jackknife "
            f"| yes | {cov} | {ratio} | | | {r['mean_width']:.3f} | |"
        )
    designs = [
        f"`{k}` = {p} prompts{' (1 clip each)' if one else ''} x {r} raters x {t} trials"
        f"{' (complete, no covariates)' if c else ''}"
        for k, (p, r, t, c, one) in DESIGNS.items()
    ]
    lines += ["", "Designs: " + "; ".join(designs) + "; `paper` (icc_coverage.json) = 100 x 53 x 20."]
    return "\n".join(lines) + "\n"


def load_truths(keys: list[str], reuse: bool, out: Path | None = None, min_reps: int = 1) -> dict[str, float]:
    """Each cell's truth: analytic where it can be, else (``reuse``) a simulated one already in ``out`` from at least
    ``min_reps`` studies or, for ``small``, icc_coverage.json's; NaN cells are simulated by :func:`main`."""
    truths = {key: analytic_truth(*key.split("/")) for key in keys}
    if reuse and out is not None and out.is_file():
        done = json.loads(out.read_text(encoding="utf-8")).get("truth", {})
        for key in keys:
            if not math.isfinite(truths[key]) and done.get(key, {}).get("simulated_reps", 0) >= min_reps:
                truths[key] = float(done[key]["truth_icc_2_1"])
    if reuse and COVERAGE_JSON.is_file():
        old = json.loads(COVERAGE_JSON.read_text(encoding="utf-8"))
        for key in keys:
            model, design = key.split("/")
            block = old.get("summary", {}).get(f"{model}/{design}")
            if design == "small" and block and not math.isfinite(truths[key]):
                truths[key] = float(block["truth_icc_2_1"])
    return truths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-studies", type=int, default=500, help="studies per model x design cell")
    ap.add_argument("--n-noise", type=int, default=99, help="residual-bootstrap refits of the jackknife's noise term")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--designs", default=",".join(DESIGNS))
    ap.add_argument(
        "--cells",
        default=None,
        help="model/design,... to run instead of --models x --designs (e.g. rater_heterogeneous/small)",
    )
    ap.add_argument("--truth-reps", type=int, default=300)
    ap.add_argument("--truth-scale", type=int, default=10)
    ap.add_argument("--no-reuse-truth", action="store_true", help="simulate every truth (not icc_coverage.json's)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep-other", action="store_true", help="keep an existing output's cells not run now")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    keys = (
        args.cells.split(",")
        if args.cells
        else [f"{m}/{d}" for m in args.models.split(",") for d in args.designs.split(",")]
    )
    t_start = time.perf_counter()
    truths = load_truths(keys, not args.no_reuse_truth, args.out, args.truth_reps)
    config = {k: getattr(args, k) for k in ("n_studies", "n_noise", "truth_reps", "truth_scale", "workers")}
    config.update(ci_level=LEVEL, cells=keys, designs={k: DESIGNS[k] for k in {key.split("/")[1] for key in keys}})
    studies: list[dict] = []
    truth_runs: list[dict] = []
    old = json.loads(args.out.read_text(encoding="utf-8")) if args.keep_other and args.out.is_file() else {}
    kept = {k: v for k, v in old.get("summary", {}).items() if k not in keys}
    kept_truth = {k: v for k, v in old.get("truth", {}).items() if k not in keys}
    prior_truth = json.loads(args.out.read_text(encoding="utf-8")).get("truth", {}) if args.out.is_file() else {}
    runs = old.get("runs", [])

    def write(final: bool) -> None:
        main_usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = main_usage.ru_utime + main_usage.ru_stime + sum(r["cpu_s"] for r in [*studies, *truth_runs])
        truth_doc = dict(kept_truth)
        for key in keys:
            vals = np.array([r["icc_2_1"] for r in truth_runs if r["key"] == key], float)
            if vals.size == 0 and key in prior_truth:  # reused (load_truths): keep its record
                truth_doc[key] = prior_truth[key]
                continue
            truth_doc[key] = {
                "truth_icc_2_1": truths[key],
                "simulated_reps": int(vals.size),
                "mc_se": float(vals.std(ddof=1) / math.sqrt(vals.size)) if vals.size > 1 else None,
            }
        doc = {
            "config": config,
            "runs": [*runs, {"cells": keys, "n_studies": args.n_studies, "n_noise": args.n_noise, "cpu_s": cpu}],
            "truth": truth_doc,
            "summary": {**kept, **summarise(studies, truths)},
            "icc_coverage_rows": coverage_json_rows(),
            "studies_done": len(studies),
            "complete": final,
            "wall_s": time.perf_counter() - t_start,
            "cpu_s": sum(r["cpu_s"] for r in runs) + cpu,
        }
        for path, text in (
            (args.out, json.dumps(doc, indent=2, allow_nan=True) + "\n"),
            (args.out.with_suffix(".md"), markdown(doc)),
        ):
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)

    with get_context("spawn").Pool(args.workers) as pool:
        todo = [
            (model, design, r, args.truth_scale)
            for key in keys
            if not math.isfinite(truths[key])
            for model, design in [key.split("/")]
            for r in range(args.truth_reps)
        ]
        for res in pool.imap_unordered(truth_task, todo):
            truth_runs.append(res)
        for key in keys:
            vals = [r["icc_2_1"] for r in truth_runs if r["key"] == key]
            if vals:
                truths[key] = float(np.mean(vals))
        print("truths", truths, flush=True)
        tasks = [(*key.split("/"), i, args.n_noise) for i in range(args.n_studies) for key in keys]
        for n_done, res in enumerate(pool.imap_unordered(study_task, tasks), 1):
            studies.append(res)
            if n_done % 16 == 0:
                write(False)
                print(f"{n_done}/{len(tasks)} studies, {time.perf_counter() - t_start:.0f} s", flush=True)
    write(True)
    print(args.out.with_suffix(".md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
