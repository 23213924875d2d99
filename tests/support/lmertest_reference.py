"""Reference fits from R's lme4 + lmerTest (via Rscript) for the general mixed-model engine.

``lmertest_run`` writes a data frame to a CSV in a temporary folder, fits each formula with
``lmerTest::lmer`` (lme4 underneath, tight optimiser tolerances: :data:`lme4_reference.TIGHT_CONTROL`),
and reads back, written with 17 significant digits:

* per fit: fixed effects with SE, Satterthwaite df, t and p (``summary(fit)$coefficients``), the
  t-based 95 % CIs (``contest(fit, diag(p), joint = FALSE, confint = TRUE)``), the normal-based
  Wald CIs (``confint(fit, method = "Wald")``), ``vcov``, ``as.data.frame(VarCorr(fit))``, sigma^2,
  theta (named), REMLcrit / deviance, logLik, ``isSingular`` and the optimiser messages;
* per requested pair (i, j): lme4's ``anova(fit_i, fit_j)`` (refits REML fits with ML unless ``refit=False``:
  then it compares the REML criteria): chi2, df, p and both deviances.

The R-side availability check is :func:`lme4_reference.require_lme4` (lme4 + jsonlite);
:func:`require_lmertest` additionally needs lmerTest (``r-cran-lmertest``).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from support.lme4_reference import TIGHT_CONTROL
from support.r_reference import r_packages_loadable, require_r_reference

_SCRIPT = r"""
suppressPackageStartupMessages({library(lme4); library(lmerTest); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
spec <- fromJSON(args[2], simplifyVector = FALSE)
d <- read.csv(args[1], stringsAsFactors = FALSE)
for (f in unlist(spec$factors)) d[[f]] <- factor(d[[f]])
num <- function(x) sprintf("%%.17g", x)
ctrl <- %(control)s
fits <- lapply(unlist(spec$formulas), function(fo)
  lmerTest::lmer(as.formula(fo), data = d, REML = spec$reml, control = ctrl))
describe <- function(fit) {
  co <- summary(fit)$coefficients
  p <- nrow(co)
  ct <- contest(fit, diag(p), joint = FALSE, confint = TRUE)
  cz <- confint(fit, method = "Wald", parm = "beta_")
  vc <- as.data.frame(VarCorr(fit))
  list(names = rownames(co), estimate = num(co[, "Estimate"]), se = num(co[, "Std. Error"]),
       df = num(co[, "df"]), t = num(co[, "t value"]), p = num(co[, "Pr(>|t|)"]),
       ci_t_lo = num(ct$lower), ci_t_hi = num(ct$upper), ci_z_lo = num(cz[, 1]), ci_z_hi = num(cz[, 2]),
       vcov = num(as.vector(as.matrix(vcov(fit)))),
       vc_grp = vc$grp, vc_var1 = ifelse(is.na(vc$var1), "", vc$var1), vc_var2 = ifelse(is.na(vc$var2), "", vc$var2),
       vc_vcov = num(vc$vcov), vc_sdcor = num(vc$sdcor),
       sigma2 = num(sigma(fit)^2), theta = num(unname(getME(fit, "theta"))), theta_names = names(getME(fit, "theta")),
       objective = num(if (isREML(fit)) REMLcrit(fit) else deviance(fit)),
       loglik = num(as.numeric(logLik(fit))), singular = isSingular(fit),
       messages = c(fit@optinfo$message, unlist(fit@optinfo$conv$lme4$messages), unlist(fit@optinfo$warnings)))
}
out <- list(fits = lapply(fits, describe), anova = list(),
            versions = list(lme4 = as.character(packageVersion("lme4")),
                            lmerTest = as.character(packageVersion("lmerTest")), r = R.version.string))
for (pr in spec$pairs) {
  a <- suppressMessages(anova(fits[[pr[[1]] + 1]], fits[[pr[[2]] + 1]], refit = spec$refit))
  out$anova[[length(out$anova) + 1]] <- list(chi2 = num(a$Chisq[2]), df = a$Df[2], p = num(a$`Pr(>Chisq)`[2]),
                                              deviance = num(a$deviance))
}
writeLines(toJSON(out, auto_unbox = TRUE, null = "null"), args[3])
"""


def lmertest_available() -> tuple[bool, str]:
    """(True, "") when Rscript loads lme4, jsonlite and lmerTest; else (False, reason)."""
    return r_packages_loadable(("lme4", "jsonlite", "lmerTest"), "r-cran-lme4 r-cran-jsonlite r-cran-lmertest")


def require_lmertest() -> None:
    """Skip the calling test without lme4/lmerTest, or fail when MODPREFS_REQUIRE_R is set (CI)."""
    require_r_reference("lmerTest", lmertest_available())


def _num(v):
    if isinstance(v, list):
        return np.array([float(x) for x in v])
    return float(v)


def _fit_dict(raw: dict) -> dict:
    names = raw["names"] if isinstance(raw["names"], list) else [raw["names"]]
    p = len(names)
    out = {"names": names, "singular": bool(raw["singular"]), "messages": raw.get("messages") or []}
    for key in ("estimate", "se", "df", "t", "p", "ci_t_lo", "ci_t_hi", "ci_z_lo", "ci_z_hi", "theta"):
        out[key] = np.atleast_1d(_num(raw[key]))
    out["vcov"] = np.atleast_1d(_num(raw["vcov"])).reshape(p, p, order="F")
    for key in ("sigma2", "objective", "loglik"):
        out[key] = _num(raw[key])
    out["theta_names"] = raw["theta_names"] if isinstance(raw["theta_names"], list) else [raw["theta_names"]]

    def listify(v):  # R's jsonlite writes a length-1 vector as a scalar
        return v if isinstance(v, list) else [v]

    out["varcorr"] = pd.DataFrame(
        {
            "grp": listify(raw["vc_grp"]),
            "var1": listify(raw["vc_var1"]),
            "var2": listify(raw["vc_var2"]),
            "vcov": np.atleast_1d(_num(raw["vc_vcov"])),
            "sdcor": np.atleast_1d(_num(raw["vc_sdcor"])),
        }
    )
    return out


def lmertest_run(
    df: pd.DataFrame,
    formulas: list[str],
    factors: list[str],
    reml: bool = True,
    pairs: list[tuple[int, int]] = (),
    control: str = TIGHT_CONTROL,
    refit: bool = True,
) -> dict:
    """Fit each formula with lmerTest (lme4 underneath) and run lme4's anova on each (i, j) pair.

    Args:
        df: the data (numeric columns; ``factors`` are converted with R's ``factor()``).
        formulas: lme4 formulas.
        factors: grouping (or other) columns to treat as factors.
        reml: REML (True) or ML for every fit.
        pairs: index pairs (small, big) for ``anova(fit_small, fit_big, refit = refit)``.
        control: the ``lmerControl(...)`` expression.

    Returns:
        {"fits": [dict per formula], "anova": [{"chi2", "df", "p", "deviance"} per pair], "versions": {...}};
        each fit dict has "names", "estimate", "se", "df", "t", "p", "ci_t_lo/hi", "ci_z_lo/hi" ((p,) arrays),
        "vcov" (p, p), "varcorr" (DataFrame grp/var1/var2/vcov/sdcor), "sigma2", "theta", "theta_names",
        "objective", "loglik", "singular", "messages".
    """
    spec = {
        "formulas": list(formulas),
        "factors": list(factors),
        "reml": bool(reml),
        "pairs": [list(map(int, pr)) for pr in pairs],
        "refit": bool(refit),
    }
    with tempfile.TemporaryDirectory(prefix="lmertestref_") as tmp:
        tmp_path = Path(tmp)
        df.to_csv(tmp_path / "data.csv", index=False, float_format="%.17g")
        (tmp_path / "fit.R").write_text(_SCRIPT % {"control": control}, encoding="utf-8")
        proc = subprocess.run(
            [
                "Rscript",
                str(tmp_path / "fit.R"),
                str(tmp_path / "data.csv"),
                json.dumps(spec),
                str(tmp_path / "out.json"),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"Rscript failed ({proc.returncode}): {proc.stderr[-2000:]}")
        raw = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    fits = raw["fits"] if isinstance(raw["fits"], list) else [raw["fits"]]
    anova = raw.get("anova") or []
    anova = anova if isinstance(anova, list) else [anova]
    return {
        "fits": [_fit_dict(f) for f in fits],
        "anova": [
            {
                "chi2": _num(a["chi2"]),
                "df": int(a["df"]),
                "p": _num(a["p"]),
                "deviance": np.atleast_1d(_num(a["deviance"])),
            }
            for a in anova
        ],
        "versions": raw.get("versions", {}),
    }
