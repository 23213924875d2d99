"""Checks of the F interval's assumptions, and the F interval with df shrunk to the ratings' variability.

* Mandel's rater-slopes test equals the F test of nested OLS models in statsmodels (independent reference); the
  shared-prompt test equals scipy's one-way ANOVA of the clip means by prompt.
* Under Gaussian additive tables every check rejects at about its level (Monte-Carlo p values are exact there);
  heavy-tailed noise, rater-specific noise spread, rater-specific slopes and a shared prompt effect are detected.
* :func:`robust_degrees` keeps the nominal df on pingouin's example (the interval stays the exact one), and shrinks
  MSE's df when raters' noise differs in spread and MSR's towards the prompts' when a prompt's clips are copies.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from modprefs.stats.reliability.f_assumptions import (
    failed_checks,
    noise_shape_test,
    rater_slopes_test,
    shared_prompt_test,
)
from modprefs.stats.reliability.icc_f_interval import FDegrees, robust_degrees, targets_df


def _gaussian(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    return rng.normal(0, 3, n)[:, None] + rng.normal(0, 2, k)[None, :] + rng.normal(0, 4, (n, k))


def test_rater_slopes_test_equals_nested_ols_f_test():
    smf = pytest.importorskip("statsmodels.formula.api")
    from statsmodels.stats.anova import anova_lm

    rng = np.random.default_rng(3)
    n, k = 14, 5
    slopes = rng.uniform(0.5, 1.5, k)
    table = 50 + np.outer(rng.normal(0, 8, n), slopes) + rng.normal(0, 3, k)[None, :] + rng.normal(0, 4, (n, k))
    frame = pd.DataFrame(
        {"y": table.ravel(), "item": np.repeat(np.arange(n), k).astype(str), "rater": np.tile(np.arange(k), n)}
    )
    frame["rater"] = frame["rater"].astype(str)
    a = np.repeat(table.mean(axis=1) - table.mean(), k)  # the centred item means, Mandel's regressor
    for j in range(1, k):  # rater j's own slope on them (rater 0's is implied: the slopes' sum is in the item space)
        frame[f"s{j}"] = a * (frame["rater"] == str(j))
    additive = smf.ols("y ~ C(item) + C(rater)", frame).fit()
    slopes_model = smf.ols("y ~ C(item) + C(rater) + " + " + ".join(f"s{j}" for j in range(1, k)), frame).fit()
    ref = anova_lm(additive, slopes_model)
    f, p = rater_slopes_test(table)
    assert ref["df_diff"].iloc[1] == k - 1
    assert f == pytest.approx(ref["F"].iloc[1], rel=1e-8) and p == pytest.approx(ref["Pr(>F)"].iloc[1], rel=1e-6)
    assert p < 0.01  # slopes 0.5-1.5 are visible


def test_shared_prompt_test_equals_one_way_anova():
    rng = np.random.default_rng(5)
    means = rng.normal(0, 1, 20)
    prompt = np.repeat(np.arange(10), 2)
    f, p = shared_prompt_test(means, prompt)
    ref = stats.f_oneway(*[means[prompt == g] for g in range(10)])
    assert f == pytest.approx(ref.statistic, rel=1e-10) and p == pytest.approx(ref.pvalue, rel=1e-8)


@pytest.mark.parametrize(("n", "k"), [(16, 4), (30, 10)])
def test_checks_reject_gaussian_tables_at_about_their_level(n, k):
    rng = np.random.default_rng([n, k])
    p = np.array([[rater_slopes_test(t)[1], *noise_shape_test(t)] for t in (_gaussian(n, k, rng) for _ in range(300))])
    rates = (p < 0.05).mean(axis=0)
    print(n, k, rates)
    assert ((rates > 0.018) & (rates < 0.082)).all()  # 5 % +- 2.5 MC SE of 300 draws


def test_checks_detect_what_the_f_interval_cannot_take():
    rng = np.random.default_rng(11)
    n, k = 30, 10
    hits = {"tails": 0, "spread": 0, "slopes": 0, "prompt": 0}
    for _ in range(40):
        base = rng.normal(0, 3, n)[:, None] + rng.normal(0, 2, k)[None, :]
        hits["tails"] += noise_shape_test(base + 4 * rng.standard_t(2.5, (n, k)))[0] < 0.05
        spread = rng.lognormal(0, 0.8, k)
        hits["spread"] += noise_shape_test(base + 3 * spread[None, :] * rng.normal(0, 1, (n, k)))[1] < 0.05
        slopes = rng.uniform(0.3, 1.7, k)
        table = np.outer(rng.normal(0, 6, n), slopes) + rng.normal(0, 2, k)[None, :] + rng.normal(0, 3, (n, k))
        hits["slopes"] += rater_slopes_test(table)[1] < 0.05
        prompt = np.arange(n) // 2
        shared = rng.normal(0, 6, n // 2)[prompt][:, None] + rng.normal(0, 1, n)[:, None]
        hits["prompt"] += shared_prompt_test((shared + rng.normal(0, 4, (n, k))).mean(axis=1), prompt)[1] < 0.05
    print(hits)
    assert min(hits.values()) >= 30  # of 40


def test_noise_shape_test_is_deterministic_and_failed_checks_name_the_reasons():
    rng = np.random.default_rng(2)
    table = _gaussian(12, 4, rng)
    assert noise_shape_test(table) == noise_shape_test(table.copy())
    spread = np.array([0.2, 0.2, 0.2, 6.0])
    bad = table + spread[None, :] * rng.standard_t(2, (12, 4)) * 5
    reasons = failed_checks(bad, None, 0.05)
    assert reasons and all("p = " in r for r in reasons)
    assert failed_checks(table, np.arange(12) // 2, 1e-9) == []


def test_robust_degrees_keep_the_nominal_df_on_pingouins_example():
    pg = pytest.importorskip("pingouin")
    df = pg.read_dataset("icc")
    table = df.pivot(index="Wine", columns="Judge", values="Scores").to_numpy(float)
    assert robust_degrees(table) == FDegrees.nominal(*table.shape)


def test_robust_degrees_shrink_to_what_the_ratings_show():
    rng = np.random.default_rng(7)
    n, k = 30, 10
    # raters whose noise differs 10-fold in SD: MSE's df fall far below (n - 1)(k - 1) = 261
    spread = np.geomspace(0.3, 3.0, k)
    table = rng.normal(0, 3, n)[:, None] + spread[None, :] * rng.normal(0, 4, (n, k))
    assert robust_degrees(table).resid < 0.5 * FDegrees.nominal(n, k).resid
    # a prompt's two clips nearly copies: MSR's df fall towards the prompts' P - 1 = 14
    prompt = np.arange(n) // 2
    copies = rng.normal(0, 5, n // 2)[prompt] + rng.normal(0, 0.2, n)
    table = copies[:, None] + rng.normal(0, 1, (n, k))
    assert targets_df(table, prompt) < 17
    assert robust_degrees(table, prompt).targets < 17
    # mean squares of prompts and of clips within them equal: MSR keeps its n - 1 df
    means = np.array([0.0, 2.0, 2**0.5, 2**0.5 + 2.0])  # MS_prompts = 2 = MS_clips within (1 and 2 df)
    assert targets_df(means[:, None] + np.zeros((4, 3)), np.array([0, 0, 1, 1])) == pytest.approx(3.0)
