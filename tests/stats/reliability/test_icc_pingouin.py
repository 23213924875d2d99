"""REML ICC(2,1)/ICC(2,k) equals the ANOVA ICC2/ICC2k (pingouin) on balanced complete data.

With one rating per (target, rater) cell, every target rated by all k raters, and no covariates,
the REML variance components of ``y ~ 1 + (1|target) + (1|rater)`` are the ANOVA (expected mean
squares) estimators s_t = (MSR - MSE)/k, s_r = (MSC - MSE)/n, s_e = MSE whenever both differences
are positive (no component on its zero bound), so icc_from_components(s_t, s_r, s_e, k) reproduces
Shrout & Fleiss' ICC(2,1) = (MSR - MSE) / (MSR + (k-1) MSE + k (MSC - MSE)/n) and
ICC(2,k) = (MSR - MSE) / (MSR + (MSC - MSE)/n).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from modprefs.stats.mixed.reml import fit_crossed_intercepts
from modprefs.stats.reliability.icc import icc_from_components


def balanced(
    n_targets: int, k_raters: int, seed: int, sd_t: float = 10.0, sd_r: float = 5.0, sd_e: float = 12.0
) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.repeat(np.arange(n_targets), k_raters)
    r = np.tile(np.arange(k_raters), n_targets)
    y = 50 + rng.normal(0, sd_t, n_targets)[t] + rng.normal(0, sd_r, k_raters)[r] + rng.normal(0, sd_e, t.size)
    return pd.DataFrame({"target": t, "rater": r, "rating": y})


def anova_components(df: pd.DataFrame) -> tuple[float, float, float, float, float]:
    """(MSR, MSC, MSE, n, k) of the two-way ANOVA without interaction."""
    Y = df.pivot(index="target", columns="rater", values="rating").to_numpy()
    n, k = Y.shape
    grand = Y.mean()
    ssr = k * ((Y.mean(axis=1) - grand) ** 2).sum()
    ssc = n * ((Y.mean(axis=0) - grand) ** 2).sum()
    sse = ((Y - grand) ** 2).sum() - ssr - ssc
    return ssr / (n - 1), ssc / (k - 1), sse / ((n - 1) * (k - 1)), n, k


def reml_iccs(df: pd.DataFrame) -> tuple[float, float, object]:
    y = df["rating"].to_numpy(float)
    fit = fit_crossed_intercepts(
        y, np.ones((y.size, 1)), df["target"].to_numpy(), df["rater"].to_numpy(), reml=True, names=("target", "rater")
    )
    k = y.size / fit.n_levels[0]
    icc1, icck = icc_from_components(fit.var_g1, fit.var_g2, fit.var_resid, k)
    return icc1, icck, fit


CASES = [(30, 6, 1), (40, 9, 2), (25, 4, 3), (60, 12, 4)]


@pytest.mark.parametrize(("n_targets", "k_raters", "seed"), CASES)
def test_reml_components_equal_anova_on_balanced_data(n_targets: int, k_raters: int, seed: int) -> None:
    df = balanced(n_targets, k_raters, seed)
    msr, msc, mse, n, k = anova_components(df)
    assert msr > mse and msc > mse  # precondition: no component on the zero bound
    icc1, icck, fit = reml_iccs(df)
    assert fit.converged and not fit.singular
    assert fit.var_g1 == pytest.approx((msr - mse) / k, rel=1e-9)
    assert fit.var_g2 == pytest.approx((msc - mse) / n, rel=1e-9)
    assert fit.var_resid == pytest.approx(mse, rel=1e-9)
    assert icc1 == pytest.approx((msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n), rel=1e-9)
    assert icck == pytest.approx((msr - mse) / (msr + (msc - mse) / n), rel=1e-9)


@pytest.mark.parametrize(("n_targets", "k_raters", "seed"), CASES)
def test_reml_icc_equals_pingouin_icc2(n_targets: int, k_raters: int, seed: int) -> None:
    pg = pytest.importorskip("pingouin")
    df = balanced(n_targets, k_raters, seed)
    table = pg.intraclass_corr(data=df, targets="target", raters="rater", ratings="rating").set_index("Type")
    # pingouin < 0.7 labels Shrout & Fleiss' ICC2 / ICC2k; >= 0.7 uses McGraw & Wong's ICC(A,1) / ICC(A,k)
    single = "ICC2" if "ICC2" in table.index else "ICC(A,1)"
    average = "ICC2k" if "ICC2k" in table.index else "ICC(A,k)"
    icc1, icck, _ = reml_iccs(df)
    assert icc1 == pytest.approx(float(table.loc[single, "ICC"]), rel=1e-9)
    assert icck == pytest.approx(float(table.loc[average, "ICC"]), rel=1e-9)
