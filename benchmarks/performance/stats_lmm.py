"""Speed and agreement of the general LMM engine (``modprefs.stats.mixed.lmm``) against lme4 / lmerTest.

At the paper's scale (100 prompts x 2 clips, 94 raters x 20 trials: 1,880 trials, 3,760 ratings;
``tests/support/lmm_simulate.py``) it fits

* the section 4.3 random-slope model ``score ~ modality + (1 + modality | prompt) + (1 | participant)``
  on per-trial preference scores, its no-slope null and their likelihood-ratio test (ML refits);
* the Table 2 omnibus model ``rating ~ presented_first*modality + len_z*modality + trial_z*modality
  + (1|participant) + (1|clip)`` on ratings;

and reports, per model, the median time per fit of this engine (arrays in hand; without and with
the Satterthwaite df; from a formula and a data frame) and of lme4 timed inside R (``lme4::lmer``
at default control and at tight control; ``lmerTest::lmer`` at tight control, which adds the
Hessian and Jacobian that ``summary()`` needs), plus the largest relative differences to
lme4/lmerTest (tight control) of variance components, fixed effects, SEs, Satterthwaite df and p.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/performance/stats_lmm.py [--reps 30] [--r-reps 20]

Writes benchmarks/out/stats_lmm.json and prints it.
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
from modprefs.stats.mixed.formula import build_design  # noqa: E402
from modprefs.stats.mixed.lmm import LmmFit, RandomTerm, anova_refit_ml, fit_formula, fit_lmm  # noqa: E402
from support.lme4_reference import TIGHT_CONTROL  # noqa: E402
from support.lmm_simulate import simulate_ratings, simulate_trials  # noqa: E402

SLOPE = "score ~ modality + (1 + modality | prompt) + (1 | participant)"
NO_SLOPE = "score ~ modality + (1 | prompt) + (1 | participant)"
OMNIBUS = "rating ~ presented_first*modality + len_z*modality + trial_z*modality + (1|participant) + (1|clip)"

R_TIMING = r"""
suppressPackageStartupMessages({library(lme4); library(lmerTest); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
spec <- fromJSON(args[2], simplifyVector = FALSE)
d <- read.csv(args[1])
for (f in unlist(spec$factors)) d[[f]] <- factor(d[[f]])
reps <- as.integer(spec$reps)
num <- function(x) sprintf("%%.17g", x)
tight <- %(tight)s
time_it <- function(expr_fun) {
  res <- expr_fun()                     # warm-up (byte compilation, caches)
  el <- numeric(reps)
  for (i in seq_len(reps)) { t0 <- proc.time()[["elapsed"]]; res <- expr_fun(); el[i] <- proc.time()[["elapsed"]] - t0 }
  list(res = res, ms = 1000 * median(el))
}
out <- list()
for (fo in unlist(spec$formulas)) {
  form <- as.formula(fo)
  dflt <- time_it(function() lme4::lmer(form, data = d, REML = TRUE))
  tgt <- time_it(function() lme4::lmer(form, data = d, REML = TRUE, control = tight))
  lt <- time_it(function() lmerTest::lmer(form, data = d, REML = TRUE, control = tight))
  fit <- lt$res
  co <- summary(fit)$coefficients
  vc <- as.data.frame(VarCorr(fit))
  out[[fo]] <- list(lme4_default_ms = dflt$ms, lme4_tight_ms = tgt$ms, lmertest_tight_ms = lt$ms,
    estimate = num(co[, "Estimate"]), se = num(co[, "Std. Error"]), df = num(co[, "df"]), p = num(co[, "Pr(>|t|)"]),
    vc_grp = vc$grp, vc_var1 = ifelse(is.na(vc$var1), "", vc$var1), vc_var2 = ifelse(is.na(vc$var2), "", vc$var2),
    vc_vcov = num(vc$vcov), objective = num(REMLcrit(fit)))
}
if (length(spec$lrt) == 2) {
  small <- lme4::lmer(as.formula(spec$lrt[[1]]), data = d, REML = TRUE, control = tight)
  big <- lme4::lmer(as.formula(spec$lrt[[2]]), data = d, REML = TRUE, control = tight)
  an <- time_it(function() suppressMessages(anova(small, big)))
  out[["lrt"]] <- list(chi2 = num(an$res$Chisq[2]), df = an$res$Df[2], p = num(an$res$`Pr(>Chisq)`[2]), ms = an$ms)
}
out[["versions"]] <- list(lme4 = as.character(packageVersion("lme4")),
                          lmerTest = as.character(packageVersion("lmerTest")), r = R.version.string)
writeLines(toJSON(out, auto_unbox = TRUE), args[3])
"""


def median_ms(fn, reps: int) -> float:
    """Median wall time of ``fn()`` in ms over ``reps`` calls after one warm-up."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * float(np.median(times))


def r_timing(
    df: pd.DataFrame, formulas: list[str], factors: list[str], reps: int, lrt_pair: tuple[str, str] | None
) -> dict | None:
    """lme4 / lmerTest fits timed inside R, with their estimates (tight control)."""
    if shutil.which("Rscript") is None:
        return None
    spec = {"formulas": formulas, "factors": factors, "reps": reps, "lrt": list(lrt_pair) if lrt_pair else []}
    with tempfile.TemporaryDirectory(prefix="bench_lmm_") as tmp:
        tmp_path = Path(tmp)
        df.to_csv(tmp_path / "d.csv", index=False, float_format="%.17g")
        (tmp_path / "t.R").write_text(R_TIMING % {"tight": TIGHT_CONTROL}, encoding="utf-8")
        proc = subprocess.run(
            ["Rscript", str(tmp_path / "t.R"), str(tmp_path / "d.csv"), json.dumps(spec), str(tmp_path / "o.json")],
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if proc.returncode != 0:
            return {"error": proc.stderr[-1500:]}
        return json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))


def _floats(v) -> np.ndarray:
    return np.atleast_1d(np.array([float(x) for x in (v if isinstance(v, list) else [v])]))


def max_rel(ours: np.ndarray, ref: np.ndarray) -> float:
    """Largest |ours - ref| / |ref| (absolute difference / 1e-2 where |ref| < 1e-2, the brief's rule)."""
    ours, ref = np.asarray(ours, float), np.asarray(ref, float)
    scale = np.where(np.abs(ref) < 1e-2, 1e-2, np.abs(ref))
    return float(np.max(np.abs(ours - ref) / scale))


def agreement(fit: LmmFit, ref: dict) -> dict:
    vt = fit.variance_table()
    ours = {
        (g, v1 or "", v2 or ""): v for g, v1, v2, v in zip(vt.group, vt.var1.fillna(""), vt.var2.fillna(""), vt.vcov)
    }
    keys = list(zip(ref["vc_grp"], ref["vc_var1"], ref["vc_var2"]))
    vc_ours = np.array([ours[k] for k in keys])
    return {
        "max_rel_diff_variance_components": max_rel(vc_ours, _floats(ref["vc_vcov"])),
        "max_rel_diff_fixed_effects": max_rel(fit.beta, _floats(ref["estimate"])),
        "max_rel_diff_se": max_rel(fit.beta_se, _floats(ref["se"])),
        "max_rel_diff_satterthwaite_df": max_rel(fit.df, _floats(ref["df"])),
        "max_rel_diff_p": float(np.max(np.abs(fit.p_value - _floats(ref["p"])) / _floats(ref["p"]))),
        "abs_diff_remlcrit": float(abs(fit.objective - float(ref["objective"]))),
    }


def engine_timing(df: pd.DataFrame, formula: str, reps: int) -> tuple[LmmFit, dict]:
    d = build_design(df, formula)
    terms = [RandomTerm(g, Z, n, tuple(c)) for g, Z, n, c in zip(d.groups, d.Zs, d.group_names, d.coef_names)]
    fit = fit_formula(df, formula)
    timing = {
        "ms_per_fit_no_df": median_ms(lambda: fit_lmm(d.y, d.X, terms, satterthwaite=False), reps),
        "ms_per_fit_with_satterthwaite": median_ms(lambda: fit_lmm(d.y, d.X, terms), reps),
        "ms_per_fit_from_formula_with_satterthwaite": median_ms(lambda: fit_formula(df, formula), reps),
        "ms_per_fit_warm_start_no_df": median_ms(
            lambda: fit_lmm(d.y, d.X, terms, satterthwaite=False, theta0=fit.theta * 1.05 + 0.01), reps
        ),
        "criterion_evaluations": fit.n_iter,
        "converged": fit.converged,
        "singular": fit.singular,
        "n_obs": fit.n_obs,
        "remlcrit": fit.objective,
        "fixed_effects": dict(zip(fit.x_names, map(float, fit.beta))),
        "satterthwaite_df": dict(zip(fit.x_names, map(float, fit.df))),
        "variance_components": fit.variance_table()
        .assign(var1=lambda t: t.var1.fillna(""), var2=lambda t: t.var2.fillna(""))
        .to_dict("records"),
    }
    return fit, timing


def run_dataset(
    label: str,
    df: pd.DataFrame,
    formulas: list[str],
    factors: list[str],
    reps: int,
    r_reps: int,
    lrt_pair: tuple[str, str] | None,
) -> dict:
    out: dict = {"n_rows": len(df), "models": {}}
    fits = {}
    for formula in formulas:
        fits[formula], timing = engine_timing(df, formula, reps)
        out["models"][formula] = {"engine": timing}
        print(
            f"[{label}] {formula}: {timing['ms_per_fit_no_df']:.1f} ms/fit "
            f"({timing['ms_per_fit_with_satterthwaite']:.1f} with df)",
            flush=True,
        )
    if lrt_pair:
        small, big = fits[lrt_pair[0]], fits[lrt_pair[1]]
        res = anova_refit_ml(small, big)
        out["lrt"] = {
            "engine": {
                "chi2": res.chi2,
                "df": res.df,
                "p": res.p,
                "ms_two_ml_refits": median_ms(lambda: anova_refit_ml(small, big), reps),
            }
        }
    ref = r_timing(df, formulas, factors, r_reps, lrt_pair)
    if ref is None or "error" in ref:
        out["r"] = ref or {"error": "Rscript not on PATH"}
        return out
    out["versions"] = ref["versions"]
    for formula in formulas:
        r = ref[formula]
        entry = out["models"][formula]
        entry["lme4"] = {
            "ms_per_fit_default_control": r["lme4_default_ms"],
            "ms_per_fit_tight_control": r["lme4_tight_ms"],
            "lmertest_ms_per_fit_tight_control": r["lmertest_tight_ms"],
        }
        entry["agreement_with_lme4_lmertest_tight"] = agreement(fits[formula], r)
        entry["speedup_vs_lme4_default"] = r["lme4_default_ms"] / entry["engine"]["ms_per_fit_no_df"]
        entry["speedup_vs_lmertest_tight_with_df"] = (
            r["lmertest_tight_ms"] / entry["engine"]["ms_per_fit_with_satterthwaite"]
        )
        print(
            f"[{label}] {formula}: lme4 {r['lme4_default_ms']:.1f} ms (default), {r['lme4_tight_ms']:.1f} (tight), "
            f"lmerTest {r['lmertest_tight_ms']:.1f}",
            flush=True,
        )
    if lrt_pair and "lrt" in ref:
        out["lrt"]["lme4_anova"] = {
            "chi2": float(ref["lrt"]["chi2"]),
            "df": int(ref["lrt"]["df"]),
            "p": float(ref["lrt"]["p"]),
            "ms_two_ml_refits": float(ref["lrt"]["ms"]),
        }
        out["lrt"]["abs_diff_chi2"] = abs(out["lrt"]["engine"]["chi2"] - float(ref["lrt"]["chi2"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30, help="timed fits per model for this engine")
    parser.add_argument("--r-reps", type=int, default=20, help="timed fits per model and variant inside R")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "stats_lmm.json")
    args = parser.parse_args()
    trials = simulate_trials(args.seed)
    ratings = simulate_ratings(args.seed + 1)
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_at_start": list(os.getloadavg()),
            "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "platform": platform.platform(),
        },
        "design": "paper scale: 100 prompts x 2 clips, 94 raters (47 audio, 47 text) x 20 trials = 1,880 trials / "
        "3,760 ratings (tests/support/lmm_simulate.py); REML; lme4 tight control = " + TIGHT_CONTROL,
        "slope_model_trials": run_dataset(
            "trials", trials, [SLOPE, NO_SLOPE], ["prompt", "participant"], args.reps, args.r_reps, (NO_SLOPE, SLOPE)
        ),
        "omnibus_model_ratings": run_dataset(
            "ratings", ratings, [OMNIBUS], ["clip", "participant"], args.reps, args.r_reps, None
        ),
    }
    result["machine"]["load_average_at_end"] = list(os.getloadavg())
    write_json(result, args.out)
    print(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
