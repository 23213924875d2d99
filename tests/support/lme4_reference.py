"""Reference fits from R's lme4 (via Rscript) for the crossed random-intercepts model.

``lme4_fit`` writes the data to a CSV in a temporary folder, runs ``lmer(y ~ <covariates> + (1|g1)
+ (1|g2))`` with tight optimiser tolerances (the REML surface is flat near its optimum: lme4 at
default tolerances is off by up to 1e-3 in the variance components), and reads the estimates
back as JSON written with 17 significant digits.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from support.r_reference import r_packages_loadable, require_r_reference

#: lme4 1.1-31's nloptwrap passes optCtrl through to nloptr (BOBYQA); these are its stopping rules.
#: xtol_abs/ftol_abs alone leave nloptr's default xtol_rel = 1e-4 in force, which stops
#: BOBYQA ~1e-6 (relative) short in the variance components; xtol_rel is tightened too.
TIGHT_CONTROL = (
    'lmerControl(optimizer="nloptwrap", optCtrl=list(xtol_abs=1e-14, ftol_abs=1e-14, xtol_rel=1e-14, maxeval=1e5))'
)

_FIT_SCRIPT = r"""
suppressPackageStartupMessages({library(lme4); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1])
d$g1 <- factor(d$g1); d$g2 <- factor(d$g2)
reml <- as.logical(args[3])
fit <- lmer(as.formula(args[2]), data = d, REML = reml, control = %(control)s)
vc <- as.data.frame(VarCorr(fit))
th <- getME(fit, "theta")
num <- function(x) sprintf("%%.17g", x)
out <- list(
  beta = num(unname(fixef(fit))), beta_names = names(fixef(fit)),
  beta_se = num(unname(sqrt(diag(as.matrix(vcov(fit)))))),
  var_g1 = num(vc$vcov[vc$grp == "g1"]), var_g2 = num(vc$vcov[vc$grp == "g2"]),
  var_resid = num(vc$vcov[vc$grp == "Residual"]),
  theta_g1 = num(th[["g1.(Intercept)"]]), theta_g2 = num(th[["g2.(Intercept)"]]),
  objective = num(if (reml) REMLcrit(fit) else deviance(fit)),
  loglik = num(as.numeric(logLik(fit))),
  singular = isSingular(fit),
  messages = c(fit@optinfo$message, unlist(fit@optinfo$conv$lme4$messages), unlist(fit@optinfo$warnings)),
  lme4_version = as.character(packageVersion("lme4"))
)
writeLines(toJSON(out, auto_unbox = TRUE), args[4])
"""


def require_lme4() -> None:
    """Skip the calling test when lme4 is unavailable, or fail when MODPREFS_REQUIRE_R is set (CI)."""
    require_r_reference("lme4", lme4_available())


def lme4_available() -> tuple[bool, str]:
    """(True, "") when Rscript runs and loads lme4 and jsonlite; else (False, reason)."""
    return r_packages_loadable(("lme4", "jsonlite"), "r-base-core r-cran-lme4 r-cran-jsonlite")


def lme4_fit(
    y: np.ndarray, X: np.ndarray, g1: np.ndarray, g2: np.ndarray, reml: bool = True, control: str = TIGHT_CONTROL
) -> dict:
    """Fit ``y ~ X + (1|g1) + (1|g2)`` with lme4; X's first column must be the intercept.

    Returns a dict with numpy arrays ``beta``/``beta_se`` (X's column order), floats ``var_g1``,
    ``var_g2``, ``var_resid``, ``theta`` (2,), ``objective`` (REMLcrit or deviance), ``loglik``,
    bool ``singular`` and the optimiser ``messages``.
    """
    X = np.asarray(X, dtype=float)
    if not np.allclose(X[:, 0], 1.0):
        raise ValueError("X[:, 0] must be the intercept column")
    covs = [f"x{j}" for j in range(1, X.shape[1])]
    frame = pd.DataFrame({"y": np.asarray(y, float), "g1": np.asarray(g1), "g2": np.asarray(g2)})
    for j, name in enumerate(covs, start=1):
        frame[name] = X[:, j]
    formula = "y ~ " + (" + ".join(covs) if covs else "1") + " + (1|g1) + (1|g2)"
    with tempfile.TemporaryDirectory(prefix="lme4ref_") as tmp:
        tmp_path = Path(tmp)
        frame.to_csv(tmp_path / "data.csv", index=False, float_format="%.17g")
        (tmp_path / "fit.R").write_text(_FIT_SCRIPT % {"control": control}, encoding="utf-8")
        proc = subprocess.run(
            [
                "Rscript",
                str(tmp_path / "fit.R"),
                str(tmp_path / "data.csv"),
                formula,
                "TRUE" if reml else "FALSE",
                str(tmp_path / "out.json"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"Rscript failed ({proc.returncode}): {proc.stderr[-2000:]}")
        raw = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))

    def num(v):
        return np.array([float(x) for x in v]) if isinstance(v, list) else float(v)

    return {
        "beta": np.atleast_1d(num(raw["beta"])),
        "beta_se": np.atleast_1d(num(raw["beta_se"])),
        "var_g1": num(raw["var_g1"]),
        "var_g2": num(raw["var_g2"]),
        "var_resid": num(raw["var_resid"]),
        "theta": np.array([num(raw["theta_g1"]), num(raw["theta_g2"])]),
        "objective": num(raw["objective"]),
        "loglik": num(raw["loglik"]),
        "singular": bool(raw["singular"]),
        "messages": raw.get("messages", []),
        "lme4_version": raw.get("lme4_version"),
    }
