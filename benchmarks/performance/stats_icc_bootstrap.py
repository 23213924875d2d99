"""Speed and agreement of the crossed random-intercepts REML engine behind the ICC table.

Simulates the paper's scale: one condition = 100 prompts x 2 clips = 200 clips, 47 analysed raters
each rating both clips of 20 prompts (1,880 ratings); pooled = both conditions' 94 raters on the
same 200 clips (3,760 ratings). For each size it times

* this engine (``modprefs.stats.mixed.reml``): median of 50 fits from lme4's start, and from a warm start;
* lme4 ``lmer(..., REML=TRUE)`` timed inside R (median of 50 ``proc.time`` differences), at lme4's
  default control and at tight tolerances;
* statsmodels MixedLM with variance components (median of 3 fits);

reports the largest relative difference of the variance components, fixed effects and SEs to lme4
(tight tolerances) and times a 2,000-refit stimulus bootstrap of the ICCs on the one-condition size.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/performance/stats_icc_bootstrap.py [--reps 50] [--n-boot 2000]

Writes benchmarks/out/stats_icc_bootstrap.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from modprefs.io import write_json  # noqa: E402
from modprefs.stats.mixed.reml import fit_crossed_intercepts  # noqa: E402
from modprefs.stats.reliability.icc import ConditionDesign, icc_for_design  # noqa: E402
from support.statsmodels_reference import fit_crossed_intercepts_statsmodels  # noqa: E402

TIGHT = 'lmerControl(optimizer="nloptwrap", optCtrl=list(xtol_abs=1e-14, ftol_abs=1e-14, xtol_rel=1e-14, maxeval=1e5))'

R_TIMING = r"""
suppressPackageStartupMessages({library(lme4); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1]); d$clip <- factor(d$clip); d$rater <- factor(d$rater)
reps <- as.integer(args[2])
form <- rating ~ presented_first + trial_z + (1|clip) + (1|rater)
time_fits <- function(ctrl) {
  fit <- lmer(form, data = d, REML = TRUE, control = ctrl)   # warm-up (byte compilation, caches)
  el <- numeric(reps)
  for (i in seq_len(reps)) {
    t0 <- proc.time()[["elapsed"]]
    fit <- lmer(form, data = d, REML = TRUE, control = ctrl)
    el[i] <- proc.time()[["elapsed"]] - t0
  }
  list(fit = fit, median_ms = 1000 * median(el))
}
def <- time_fits(lmerControl())
tight <- time_fits(%(tight)s)
vc <- as.data.frame(VarCorr(tight$fit))
num <- function(x) sprintf("%%.17g", x)
out <- list(default_median_ms = def$median_ms, tight_median_ms = tight$median_ms,
  beta = num(unname(fixef(tight$fit))), beta_se = num(unname(sqrt(diag(as.matrix(vcov(tight$fit)))))),
  var_clip = num(vc$vcov[vc$grp == "clip"]), var_rater = num(vc$vcov[vc$grp == "rater"]),
  var_resid = num(vc$vcov[vc$grp == "Residual"]), remlcrit = num(REMLcrit(tight$fit)),
  lme4 = as.character(packageVersion("lme4")), r = R.version.string)
writeLines(toJSON(out, auto_unbox = TRUE), args[3])
"""


def simulate(seed: int, n_prompts: int = 100, n_raters: int = 47, per_rater: int = 20) -> pd.DataFrame:
    """Ratings of a study-like incomplete crossed design (each rater: both clips of ``per_rater`` prompts)."""
    rng = np.random.default_rng(seed)
    prompt = np.concatenate([rng.choice(n_prompts, per_rater, replace=False) for _ in range(n_raters)])
    rater = np.repeat(np.arange(n_raters), per_rater)
    trial = np.tile(np.arange(1, per_rater + 1), n_raters)
    first = rng.integers(0, 2, prompt.size)
    clip = np.concatenate([2 * prompt + first, 2 * prompt + 1 - first])
    rater, trial = np.tile(rater, 2), np.tile(trial, 2)
    presented_first = np.repeat([1.0, 0.0], prompt.size)
    rating = (
        60
        + 2 * presented_first
        - 0.3 * trial
        + rng.normal(0, 8, 2 * n_prompts)[clip]
        + rng.normal(0, 6, n_raters)[rater]
        + rng.normal(0, 15, clip.size)
    )
    return pd.DataFrame(
        {
            "rating": np.clip(np.round(rating), 1, 100),
            "presented_first": presented_first,
            "trial_z": (trial - trial.mean()) / trial.std(ddof=1),
            "clip": clip,
            "rater": rater,
        }
    )


def arrays(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    X = np.column_stack([np.ones(len(df)), df["presented_first"], df["trial_z"]])
    return df["rating"].to_numpy(float), X, df["clip"].to_numpy(), df["rater"].to_numpy()


def median_ms(fn, reps: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * float(np.median(times))


def lme4_timing(df: pd.DataFrame, reps: int) -> dict | None:
    if shutil.which("Rscript") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="bench_lme4_") as tmp:
        tmp_path = Path(tmp)
        df.to_csv(tmp_path / "d.csv", index=False, float_format="%.17g")
        (tmp_path / "t.R").write_text(R_TIMING % {"tight": TIGHT}, encoding="utf-8")
        proc = subprocess.run(
            ["Rscript", str(tmp_path / "t.R"), str(tmp_path / "d.csv"), str(reps), str(tmp_path / "o.json")],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if proc.returncode != 0:
            return {"error": proc.stderr[-1000:]}
        raw = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    for key in ("beta", "beta_se"):
        raw[key] = [float(v) for v in raw[key]]
    for key in ("var_clip", "var_rater", "var_resid", "remlcrit"):
        raw[key] = float(raw[key])
    return raw


def benchmark_size(label: str, df: pd.DataFrame, reps: int, sm_reps: int) -> dict:
    y, X, clip, rater = arrays(df)
    fit = fit_crossed_intercepts(y, X, clip, rater)
    out: dict = {
        "n_ratings": int(y.size),
        "n_clips": int(np.unique(clip).size),
        "n_raters": int(np.unique(rater).size),
        "engine": {
            "median_ms_per_fit": median_ms(lambda: fit_crossed_intercepts(y, X, clip, rater), reps),
            "median_ms_per_fit_warm_start": median_ms(
                lambda: fit_crossed_intercepts(y, X, clip, rater, theta0=fit.theta * 1.05), reps
            ),
            "criterion_evaluations": fit.n_iter,
            "converged": fit.converged,
            "var_clip": fit.var_g1,
            "var_rater": fit.var_g2,
            "var_resid": fit.var_resid,
            "remlcrit": fit.objective,
        },
    }
    print(f"[{label}] engine {out['engine']['median_ms_per_fit']:.2f} ms/fit", flush=True)
    ref = lme4_timing(df, reps)
    if ref and "error" not in ref:
        ours = np.array([fit.var_g1, fit.var_g2, fit.var_resid])
        theirs = np.array([ref["var_clip"], ref["var_rater"], ref["var_resid"]])
        out["lme4"] = {
            "median_ms_per_fit_default_control": ref["default_median_ms"],
            "median_ms_per_fit_tight_control": ref["tight_median_ms"],
            "version": ref["lme4"],
            "r": ref["r"],
        }
        out["agreement_with_lme4_tight"] = {
            "max_rel_diff_variance_components": float(np.max(np.abs(ours - theirs) / np.abs(theirs))),
            "max_rel_diff_fixed_effects": float(np.max(np.abs(fit.beta - ref["beta"]) / np.abs(ref["beta"]))),
            "max_rel_diff_fixed_effect_se": float(
                np.max(np.abs(fit.beta_se - ref["beta_se"]) / np.array(ref["beta_se"]))
            ),
            "abs_diff_remlcrit": float(abs(fit.objective - ref["remlcrit"])),
        }
        print(
            f"[{label}] lme4 {ref['default_median_ms']:.1f} ms/fit (default), {ref['tight_median_ms']:.1f} (tight)",
            flush=True,
        )
    else:
        out["lme4"] = ref or {"error": "Rscript not on PATH"}
    sm_times, sm_fit = [], None
    for _ in range(sm_reps):
        t0 = time.perf_counter()
        sm_fit = fit_crossed_intercepts_statsmodels(y, X, clip, rater)
        sm_times.append(time.perf_counter() - t0)
    if sm_fit is not None:
        ours = np.array([fit.var_g1, fit.var_g2, fit.var_resid])
        theirs = np.array([sm_fit["var_g1"], sm_fit["var_g2"], sm_fit["var_resid"]])
        out["statsmodels"] = {
            "median_ms_per_fit": 1000 * float(np.median(sm_times)),
            "fits": sm_reps,
            "max_rel_diff_variance_components_to_engine": float(np.max(np.abs(ours - theirs) / ours)),
        }
        print(f"[{label}] statsmodels {out['statsmodels']['median_ms_per_fit']:.0f} ms/fit", flush=True)
    return out


def bootstrap_timing(df: pd.DataFrame, n_boot: int, seed: int) -> dict:
    y, X, clip, rater = arrays(df)
    design = ConditionDesign(
        y=y,
        X=X,
        clip=clip.astype(np.intp),
        participant=rater.astype(np.intp),
        n_clips=int(clip.max()) + 1,
        n_participants=int(rater.max()) + 1,
        terms=("presented_first", "trial_z"),
        formula="benchmark",
    )
    t0 = time.perf_counter()
    row = icc_for_design("benchmark", design, n_boot, np.random.default_rng(seed))
    seconds = time.perf_counter() - t0
    print(f"[bootstrap] {n_boot} refits in {seconds:.1f} s", flush=True)
    return {
        "n_boot": n_boot,
        "n_ratings": int(y.size),
        "seconds_total": seconds,
        "ms_per_refit": 1000 * seconds / max(n_boot, 1),
        "n_boot_failed": int(row["n_boot_failed"]),
        "icc_2_1": row["icc_2_1"],
        "icc_2_1_ci": [row["icc_2_1_lo"], row["icc_2_1_hi"]],
        "icc_2_k": row["icc_2_k"],
        "icc_2_k_ci": [row["icc_2_k_lo"], row["icc_2_k_hi"]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50, help="timed fits per engine and size (lme4 and this engine)")
    parser.add_argument("--sm-reps", type=int, default=3, help="timed statsmodels fits per size")
    parser.add_argument("--n-boot", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "stats_icc_bootstrap.json")
    args = parser.parse_args()
    condition = simulate(args.seed, n_raters=47)
    pooled = simulate(args.seed + 1, n_raters=94)
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "platform": platform.platform(),
        },
        "design": "100 prompts x 2 clips; raters rate both clips of 20 random prompts; "
        "rating ~ presented_first + trial_z + (1|clip) + (1|rater), REML",
        "one_condition": benchmark_size("1,880", condition, args.reps, args.sm_reps),
        "pooled": benchmark_size("3,760", pooled, args.reps, args.sm_reps),
        "bootstrap": bootstrap_timing(condition, args.n_boot, args.seed),
    }
    write_json(result, args.out)
    print(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
