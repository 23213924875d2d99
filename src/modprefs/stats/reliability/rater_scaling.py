"""How many raters: ICC(2,k) as a function of k (the paper's Figure 4) and the k each target needs.

With ICC(2,1) = rho, averaging k raters gives ICC(2,k) = k rho / (1 + (k - 1) rho) (Spearman–Brown;
identical to s_stim / (s_stim + (s_rater + s_resid)/k)). The raters needed for a target ICC t is
k = t (1 - rho) / (rho (1 - t)), rounded up. Interpretation bands follow Koo & Li (2016):
< .50 poor, .50–.75 moderate, .75–.90 good, > .90 excellent.

Reference: Koo, T. K. & Li, M. Y. (2016). A guideline of selecting and reporting intraclass
correlation coefficients for reliability research. Journal of Chiropractic Medicine 15(2), 155–163.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd

KOO_LI_BANDS: tuple[tuple[str, float, float], ...] = (
    ("poor", 0.0, 0.5),
    ("moderate", 0.5, 0.75),
    ("good", 0.75, 0.9),
    ("excellent", 0.9, 1.0),
)
TARGETS: tuple[float, ...] = (0.5, 0.75, 0.9)


def icc_k(icc1: float | np.ndarray, k: float | np.ndarray) -> np.ndarray:
    """ICC of the mean of k raters from the single-rater ICC (Spearman–Brown).

    Examples
    --------
    >>> from modprefs.stats.reliability.rater_scaling import icc_k
    >>> round(float(icc_k(0.3, 5)), 4)  # 5 x .3 / (1 + 4 x .3)
    0.6818
    """
    icc1 = np.asarray(icc1, dtype=float)
    k = np.asarray(k, dtype=float)
    return k * icc1 / (1.0 + (k - 1.0) * icc1)


def raters_needed(icc1: float, target: float) -> float:
    """Smallest whole number of raters whose mean reaches ``target``; NaN if icc1 <= 0 (never).

    Examples
    --------
    >>> from modprefs.stats.reliability.rater_scaling import raters_needed
    >>> raters_needed(0.3, 0.75)  # ICC(2,7) = .75 exactly: .75 x .7 / (.3 x .25) = 7
    7.0
    """
    if not 0 < target < 1:
        raise ValueError(f"target must be in (0, 1), got {target}")
    if not np.isfinite(icc1) or icc1 <= 0:
        return float("nan")
    if icc1 >= target:
        return 1.0
    return float(math.ceil(target * (1 - icc1) / (icc1 * (1 - target)) - 1e-12))


def raters_needed_table(icc: pd.DataFrame, targets: tuple[float, ...] = TARGETS) -> pd.DataFrame:
    """Per condition and target: raters needed at the ICC(2,1) estimate and at its CI bounds.

    ``icc`` is the ICC table (:func:`modprefs.stats.reliability.icc_ci.icc_with_ci`). The upper CI bound of
    ICC(2,1) gives the optimistic (fewest raters) count and the lower bound the pessimistic one (at the ICC
    table's ``ci_level``). ``observed_k`` is the mean ratings per clip, ``observed_k_effective`` the k of the
    table's ICC(2,k) (:func:`modprefs.stats.reliability.icc.effective_k`; NaN for a table without it).
    """
    rows = []
    for r in icc.itertuples(index=False):
        for t in targets:
            rows.append(
                {
                    "condition": r.condition,
                    "target_icc_2_k": t,
                    "raters_needed": raters_needed(r.icc_2_1, t),
                    "raters_needed_optimistic": raters_needed(r.icc_2_1_hi, t),
                    "raters_needed_pessimistic": raters_needed(r.icc_2_1_lo, t),
                    "icc_2_1": r.icc_2_1,
                    "observed_k": r.k_mean_raters,
                    "observed_k_effective": getattr(r, "k_effective", float("nan")),
                }
            )
    return pd.DataFrame(rows)


def figure4_icc_by_k(icc: pd.DataFrame, target: str | os.PathLike[str], k_max: int = 20):
    """ICC(2,k) against k per condition with Koo & Li bands and the observed k marked (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from modprefs.stats.figures import save_png

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    shades = {"poor": "#f4cccc", "moderate": "#fce5cd", "good": "#d9ead3", "excellent": "#c9daf8"}
    for name, lo, hi in KOO_LI_BANDS:
        ax.axhspan(lo, hi, color=shades[name], alpha=0.6, lw=0)
        ax.text(k_max - 0.2, (lo + hi) / 2, name, ha="right", va="center", fontsize=8, color="#555555")
    ks = np.arange(1, k_max + 1)
    colours = {"audio": "#1f77b4", "text": "#d62728"}
    for r in icc.itertuples(index=False):
        if not np.isfinite(r.icc_2_1):
            continue
        colour = colours.get(r.condition, None)
        ax.plot(
            ks,
            icc_k(r.icc_2_1, ks),
            marker="o",
            ms=3,
            color=colour,
            label=f"{r.condition} (ICC(2,1) = {r.icc_2_1:.3f})",
        )
        if np.isfinite(r.icc_2_1_lo) and np.isfinite(r.icc_2_1_hi):
            ax.fill_between(ks, icc_k(r.icc_2_1_lo, ks), icc_k(r.icc_2_1_hi, ks), color=colour, alpha=0.15, lw=0)
        ax.axvline(r.k_mean_raters, color=colour, ls=":", lw=1)
    ax.set(
        xlabel="number of raters k",
        ylabel="ICC(2,k)",
        ylim=(0, 1),
        xlim=(1, k_max),
        title="Reliability of the mean of k raters (bands: Koo & Li 2016)",
    )
    ax.legend(loc="lower right", fontsize=8)
    save_png(fig, target)
    plt.close(fig)
