"""From simulated studies to a design's expected precision and power, and the cheapest design meeting every target.

Per design and scenario (every value with its Monte-Carlo SE, ``_mcse``):

* ``icc_k_{c}`` / ``icc_1_{c}``: mean ICC(2,k) / ICC(2,1) estimate; ``k_{c}``: mean effective k (ICC(2,k)'s k, the
  harmonic mean ratings per clip);
* ``ci_half_width_{c}``: mean predicted half-width of the ICC(2,k) interval the analysis reports
  (:mod:`modprefs.plan.intervals`); ``assurance_{c}``: share of studies where it is <= the target;
* ``power_icc_diff``: share of studies (simulated at the alternative) where the planned test rejects.
  The planned test is a Wald z-test of the ICC(2,1) difference whose critical value mimics Table 4's
  test (:func:`icc_diff_power`): for the crossed jackknife (``stats.icc_test: jackknife``), its SE and df
  calibrated against the Wald SE on the alternative's first studies; for the participant permutation,
  the permutation null's spread relative to the Wald SE, pooled over the design's studies;
* ``power_table2``: Table 2's Wald test of ``table2_term`` at effect size b by a location shift of the
  design's estimates (b_i - mean(b) + b; the fit's SEs do not depend on the fixed effects) over their SEs against
  t(Satterthwaite df), as Table 2 tests them;
* ``agreement`` / ``agreement_half_width``: cross-modality winner agreement at threshold 0 and the
  95 % Wilson half-width at its number of decisive prompts; ``accuracy_{c}``: winners matching the
  population's;
* costs (:mod:`modprefs.plan.costs`).

A design meets a target when its point estimate does (``meets_*``); the recommendation is the
cheapest design meeting all (ties: fewer ratings, then fewer raters).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.plan.costs import design_cost
from modprefs.plan.grid import TABLE2_TERMS, Costs, Design, Targets
from modprefs.plan.intervals import predicted_half_widths, z_value
from modprefs.ratings.simulation.params import SimulationParams


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    if not x.size:
        return math.nan, math.nan
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan


def _share(hits: np.ndarray) -> tuple[float, float]:
    n = hits.size
    p = float(hits.mean()) if n else math.nan
    return p, math.sqrt(p * (1 - p) / n) if n else math.nan


def wilson_half_width(p: np.ndarray, n: np.ndarray, level: float = 0.95) -> np.ndarray:
    """Half-width of the Wilson score interval of a proportion p from n trials (NaN where n = 0)."""
    z = z_value(level)
    p = np.asarray(p, float)
    n = np.asarray(n, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n), np.nan)


def icc_diff_power(
    alt: dict[str, np.ndarray], alpha: float, jackknife: tuple[float, float] | None = None
) -> tuple[float, float, float]:
    """(power, MC SE, critical |z|) of the planned ICC(2,1)-difference test on the alternative's studies.

    z = d / sqrt(se_a^2 + se_t^2) (the Wald SE of the difference) against a critical value that mimics Table
    4's test: with ``jackknife`` = (SE ratio r, df) of the crossed-jackknife test at this design
    (:func:`modprefs.plan.planner.jackknife_test_calibration`), t_{1-alpha/2, df} x r; otherwise (the
    permutation test) z_{1-alpha/2} x RMS(d* / sqrt(se_a^2 + se_t^2)) over the permutation draws d*.
    """
    d = alt["rec:diff1"]
    se = np.sqrt(alt["rec:se1_audio"] ** 2 + alt["rec:se1_text"] ** 2)
    se = np.where(np.isfinite(se), se, np.nanmedian(se))
    if jackknife is not None:
        ratio, df = jackknife
        crit = float(stats.t.ppf(1 - alpha / 2, df)) * ratio
    elif "perm" in alt:
        perm = alt["perm"].reshape(d.size, -1)
        zstar = (perm / se[:, None]).ravel()
        zstar = zstar[np.isfinite(zstar)]
        crit = z_value(1 - alpha) * math.sqrt(float(np.mean(zstar**2)))
    else:
        raise ValueError("the ICC-difference power needs the jackknife test's calibration or permutation draws")
    power, mcse = _share(np.abs(d / se) > crit)
    return power, mcse, crit


def table2_power(rec: dict[str, np.ndarray], term: str, effect: float, alpha: float) -> tuple[float, float]:
    """(power, MC SE) of Table 2's Wald test of ``term`` at observed effect ``effect`` (location shift): each study's
    estimate shifted to mean ``effect`` over its SE against t(its Satterthwaite df), as Table 2 tests it (the normal
    quantile where the records hold no df)."""
    key = TABLE2_TERMS[term]
    b, se = rec[f"rec:{key}_b"], rec[f"rec:{key}_se"]
    df = rec.get(f"rec:{key}_df")
    ok = np.isfinite(b) & np.isfinite(se) & (np.isfinite(df) if df is not None else True)
    shifted = b[ok] - b[ok].mean() + effect
    crit = stats.t.ppf(1 - alpha / 2, df[ok]) if df is not None else z_value(1 - alpha)
    return _share(np.abs(shifted / se[ok]) > crit)


def summarise(
    design: Design,
    main: dict[str, np.ndarray],
    params: SimulationParams,
    targets: Targets,
    costs: Costs,
    interval: str,
    alt: dict[str, np.ndarray] | None = None,
    analysis_ratio: dict[str, float] | None = None,
    jackknife: tuple[float, float] | None = None,
) -> dict[str, object]:
    """One row of the design table (see the module docstring); ``analysis_ratio``: per condition, the
    design's analysis / Wald half-width ratio (``interval="analysis"``); ``jackknife``: the jackknife ICC-difference
    test's calibration at this design (:func:`icc_diff_power`; None for the permutation test)."""
    row: dict[str, Any] = {
        "prompts": design.prompts,
        "raters": design.raters,
        "trials": design.trials,
        "conditions": "+".join(design.conditions),
        "n_sims": int(main[next(k for k in main if k.startswith("rec:"))].size),
    }
    meets = {}
    for c in design.conditions:
        icck, sek = main[f"rec:icck_{c}"], main[f"rec:sek_{c}"]
        row[f"k_{c}"], _ = _mean_se(main[f"rec:k_{c}"])
        row[f"icc_1_{c}"], row[f"icc_1_{c}_mcse"] = _mean_se(main[f"rec:icc1_{c}"])
        row[f"icc_k_{c}"], row[f"icc_k_{c}_mcse"] = _mean_se(icck)
        ratio = (analysis_ratio or {}).get(c) if interval == "analysis" else None
        hw, factor = predicted_half_widths(icck, sek, interval, targets.ci_level, ratio)
        row[f"ci_half_width_{c}"], row[f"ci_half_width_{c}_mcse"] = _mean_se(hw)
        row[f"interval_factor_{c}"] = factor
        if targets.ci_half_width is not None:
            row[f"assurance_{c}"], row[f"assurance_{c}_mcse"] = _share(
                np.nan_to_num(hw, nan=np.inf) <= targets.ci_half_width
            )
        if c in targets.target_conditions:
            if targets.ci_half_width is not None:
                meets[f"ci_half_width_{c}"] = row[f"assurance_{c}"] >= targets.assurance
            if targets.icc_k is not None:
                meets[f"icc_k_{c}"] = row[f"icc_k_{c}"] >= targets.icc_k
        if f"rec:accuracy_{c}" in main:
            row[f"accuracy_{c}"], row[f"accuracy_{c}_mcse"] = _mean_se(main[f"rec:accuracy_{c}"])
    if "rec:agreement" in main:
        row["agreement"], row["agreement_mcse"] = _mean_se(main["rec:agreement"])
        hw = wilson_half_width(main["rec:agreement"], main["rec:agreement_n"])
        row["agreement_half_width"], row["agreement_half_width_mcse"] = _mean_se(hw)
        if targets.agreement_half_width is not None:
            meets["agreement_half_width"] = row["agreement_half_width"] <= targets.agreement_half_width
    if targets.table2_effect is not None:
        row["power_table2"], row["power_table2_mcse"] = table2_power(
            main, targets.table2_term, targets.table2_effect, targets.alpha
        )
        meets["power_table2"] = row["power_table2"] >= targets.power
    if targets.icc_diff is not None and alt is not None:
        row["power_icc_diff"], row["power_icc_diff_mcse"], row["icc_diff_critical_z"] = icc_diff_power(
            alt, targets.alpha, jackknife
        )
        row["icc_diff_alt_mean"], _ = _mean_se(alt["rec:diff1"])
        meets["power_icc_diff"] = row["power_icc_diff"] >= targets.power
    row.update(design_cost(design, params, costs))
    row["ratings"] = design.raters * design.trials * 2 * len(design.conditions)
    for name, ok in meets.items():
        row[f"meets_{name}"] = bool(ok)
    row["meets_all"] = bool(all(meets.values())) if meets else False
    return row


def recommend(table: pd.DataFrame) -> pd.Series | None:
    """The cheapest design meeting every target (ties: fewer ratings, then fewer raters); None if none does."""
    ok = table[table["meets_all"]]
    if ok.empty:
        return None
    return ok.sort_values(["cost", "ratings", "raters", "prompts"]).iloc[0]


def shortfalls(table: pd.DataFrame) -> list[str]:
    """For each target no design meets: its name and the best value reached (for the error message)."""
    out = []
    for col in [c for c in table.columns if c.startswith("meets_") and c != "meets_all"]:
        if not table[col].any():
            name = col[len("meets_") :]
            if name.startswith("ci_half_width_"):
                c = name.rsplit("_", 1)[1]
                out.append(f"--target-ci-half-width ({c}): best assurance {table[f'assurance_{c}'].max():.2f}")
            elif name.startswith("icc_k_"):
                c = name.rsplit("_", 1)[1]
                out.append(f"--target-icc-k ({c}): best expected ICC(2,k) {table[f'icc_k_{c}'].max():.3f}")
            elif name == "power_icc_diff":
                out.append(f"--target-power-icc-diff: best power {table['power_icc_diff'].max():.2f}")
            elif name == "power_table2":
                out.append(f"--target-power-table2: best power {table['power_table2'].max():.2f}")
            elif name == "agreement_half_width":
                out.append(f"--target-agreement-half-width: best half-width {table['agreement_half_width'].min():.3f}")
    return out


def power_curve_table2(rec: dict[str, np.ndarray], term: str, effects: np.ndarray, alpha: float) -> pd.DataFrame:
    """Planned power of Table 2's test over a range of effect sizes (for the validation benchmark)."""
    return pd.DataFrame([{"effect": float(b), "power": table2_power(rec, term, float(b), alpha)[0]} for b in effects])
