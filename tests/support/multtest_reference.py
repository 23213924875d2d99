"""Reference Westfall-Young step-down maxT adjusted p-values from Bioconductor's multtest (``mt.maxT``, via Rscript).

``multtest_maxt`` writes a terms x observations matrix and the 0/1 class labels to CSV, runs
``mt.maxT(X, classlabel, test = "t", side = "abs", B = 0)`` -- Welch t statistics, two-sided, and with
``B = 0`` the complete enumeration of the relabellings (identity included) -- and reads the adjusted
p-values back in the rows' order (multtest sorts its output by adjusted p; ``index`` maps it back).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import numpy as np

from support.r_reference import r_packages_loadable, require_r_reference

_MAXT_SCRIPT = r"""
suppressPackageStartupMessages(library(multtest))
args <- commandArgs(trailingOnly = TRUE)
X <- as.matrix(read.csv(args[1], header = FALSE))
cl <- scan(args[2], quiet = TRUE)
r <- mt.maxT(X, cl, test = "t", side = "abs", B = 0)
write.csv(data.frame(index = r$index, teststat = sprintf("%.17g", r$teststat), rawp = sprintf("%.17g", r$rawp),
                     adjp = sprintf("%.17g", r$adjp)), args[3], row.names = FALSE, quote = FALSE)
"""


def multtest_available() -> tuple[bool, str]:
    """(True, "") when Rscript runs and loads multtest (Debian: r-bioc-multtest); else (False, reason)."""
    return r_packages_loadable(("multtest",), "r-bioc-multtest")


def require_multtest() -> None:
    """Skip the calling test when multtest is unavailable, or fail when MODPREFS_REQUIRE_R is set (CI)."""
    require_r_reference("multtest", multtest_available())


def multtest_maxt(x: np.ndarray, classlabel: np.ndarray) -> dict[str, np.ndarray]:
    """multtest's complete-enumeration maxT for ``x`` (terms x observations): teststat, rawp, adjp per row."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        np.savetxt(d / "x.csv", np.asarray(x, dtype=float), delimiter=",", fmt="%.17g")
        np.savetxt(d / "cl.txt", np.asarray(classlabel, dtype=int), fmt="%d")
        (d / "maxt.R").write_text(_MAXT_SCRIPT, encoding="utf-8")
        proc = subprocess.run(
            ["Rscript", str(d / "maxt.R"), str(d / "x.csv"), str(d / "cl.txt"), str(d / "out.csv")],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"mt.maxT failed: {proc.stderr[-1000:]}")
        rows = np.genfromtxt(d / "out.csv", delimiter=",", skip_header=1, dtype=float)
    rows = np.atleast_2d(rows)
    order = rows[:, 0].astype(int) - 1
    out = {k: np.empty(len(order)) for k in ("teststat", "rawp", "adjp")}
    for col, key in enumerate(("teststat", "rawp", "adjp"), start=1):
        out[key][order] = rows[:, col]
    return out
