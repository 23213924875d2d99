"""Stimulus bootstrap, permutation test and percentile intervals (modprefs.stats.reliability.resampling)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from modprefs.stats.reliability.alpha import alpha_features, group_alpha_difference
from modprefs.stats.reliability.resampling import (
    draw_counts,
    draw_units,
    make_rng,
    percentile_ci,
    permutation_masks,
    permutation_p_value,
    permutation_test_between_groups,
    stimulus_bootstrap,
)


def mean_difference(values: np.ndarray):
    """Vectorised statistic: mean(first group) - mean(second group) for (P, C) masks."""

    def diff(mask: np.ndarray) -> np.ndarray:
        m = np.atleast_2d(mask).astype(float)
        return (m @ values) / m.sum(axis=1) - ((1 - m) @ values) / (1 - m).sum(axis=1)

    return diff


# ---- bootstrap -----------------------------------------------------------------------------


def test_draw_counts_are_multiplicities() -> None:
    draws = draw_units(7, 50, make_rng(1))
    counts = draw_counts(draws, 7)
    assert counts.shape == (50, 7) and (counts.sum(axis=1) == 7).all()
    for row, c in zip(draws, counts):
        np.testing.assert_array_equal(np.bincount(row, minlength=7), c)


def test_bootstrap_counts_and_indices_modes_agree() -> None:
    x = np.random.default_rng(0).normal(size=30)
    by_counts = stimulus_bootstrap(30, lambda w: (w @ x) / w.sum(axis=1), 300, make_rng(5), chunk_size=64)
    by_index = stimulus_bootstrap(list(range(30)), lambda idx: x[idx].mean(), 300, make_rng(5), mode="indices")
    np.testing.assert_allclose(by_counts.estimates, by_index.estimates, atol=1e-12)
    assert by_counts.n_boot == 300 and by_counts.n_failed == 0 and by_counts.n_units == 30


def test_bootstrap_is_deterministic_and_chunk_independent() -> None:
    x = np.arange(20.0)
    stat = lambda w: (w @ x) / w.sum(axis=1)  # noqa: E731
    a = stimulus_bootstrap(20, stat, 500, make_rng(42), chunk_size=1000).estimates
    b = stimulus_bootstrap(20, stat, 500, make_rng(42), chunk_size=7).estimates
    c = stimulus_bootstrap(20, stat, 500, make_rng(43)).estimates
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_bootstrap_counts_failures_and_multi_output() -> None:
    def stat(idx: np.ndarray) -> np.ndarray:
        if idx[0] == 0:
            raise ValueError("not estimable")
        return np.array([idx.mean(), idx.std()])

    res = stimulus_bootstrap(5, stat, 200, make_rng(3), mode="indices")
    assert res.estimates.shape == (200, 2)
    assert res.n_failed == int(np.isnan(res.estimates[:, 0]).sum()) > 0
    lo, hi = res.ci()
    assert lo.shape == (2,) and (lo <= hi).all()


def test_bootstrap_ci_covers_the_mean() -> None:
    """Percentile CI of a mean from a normal sample covers the truth about 95% of the time."""
    rng = make_rng(9)
    hits = 0
    for _ in range(200):
        x = rng.normal(1.0, 1.0, 40)
        lo, hi = stimulus_bootstrap(40, lambda w, x=x: (w @ x) / 40, 400, rng).ci(0.95)
        hits += lo <= 1.0 <= hi
    assert 0.88 <= hits / 200 <= 0.99


# ---- percentile CI -------------------------------------------------------------------------


def test_percentile_ci_matches_numpy_and_ignores_nan() -> None:
    x = np.random.default_rng(1).normal(size=1001)
    lo, hi = percentile_ci(x, 0.9)
    assert (lo, hi) == pytest.approx(tuple(np.quantile(x, [0.05, 0.95])))
    assert percentile_ci(np.append(x, [np.nan, np.inf]), 0.9) == pytest.approx((lo, hi))
    assert all(np.isnan(percentile_ci(np.full(5, np.nan))))
    two = percentile_ci(np.column_stack([x, 2 * x]), 0.9)
    np.testing.assert_allclose(two[0], [lo, 2 * lo])
    with pytest.raises(ValueError):
        percentile_ci(x, 1.5)


# ---- permutation test ----------------------------------------------------------------------


def test_permutation_masks_preserve_sizes() -> None:
    base = np.arange(23) < 10
    masks = permutation_masks(base, 400, make_rng(2))
    assert masks.shape == (400, 23) and (masks.sum(axis=1) == 10).all()
    assert len({m.tobytes() for m in masks}) > 390  # genuinely shuffled
    assert abs(masks.mean(axis=0) - 10 / 23).max() < 0.1  # every participant moves


def test_p_value_formula() -> None:
    null = np.array([0.5, -0.5, 0.1, -0.2, np.nan, 2.0])
    assert permutation_p_value(0.5, null) == pytest.approx((1 + 3) / (1 + 5))
    assert permutation_p_value(5.0, null) == pytest.approx(1 / 6)
    assert np.isnan(permutation_p_value(np.nan, null))


def test_permutation_result_fields_and_determinism() -> None:
    rng = np.random.default_rng(0)
    labels = np.array(["audio"] * 12 + ["text"] * 15)
    values = rng.normal(size=27)
    stat = mean_difference(values)
    a = permutation_test_between_groups(labels, stat, 500, make_rng(7), groups=("audio", "text"))
    b = permutation_test_between_groups(labels, stat, 500, make_rng(7), groups=("audio", "text"), chunk_size=33)
    c = permutation_test_between_groups(
        labels, lambda m: float(stat(m)[0]), 500, make_rng(7), groups=("audio", "text"), vectorised=False
    )
    np.testing.assert_array_equal(a.null, b.null)
    np.testing.assert_allclose(a.null, c.null, atol=1e-12)
    assert a.observed == pytest.approx(values[:12].mean() - values[12:].mean())
    assert a.sizes == (12, 15) and a.groups == ("audio", "text") and a.n_valid == 500
    assert a.p_value == permutation_p_value(a.observed, a.null)
    assert 1 / 501 <= a.p_value <= 1
    flipped = permutation_test_between_groups(labels, stat, 500, make_rng(7), groups=("text", "audio"))
    assert flipped.observed == pytest.approx(-a.observed)
    assert set(a.summary()) >= {"observed", "p_value", "n_perm", "null_quantiles"}
    with pytest.raises(ValueError):
        permutation_test_between_groups(np.array(["a", "b", "c"]), stat, 10, make_rng(0))


def test_p_values_are_uniform_under_the_null() -> None:
    rng = make_rng(2024)
    labels = np.array(["a"] * 15 + ["b"] * 20)
    pvals = np.array(
        [
            permutation_test_between_groups(labels, mean_difference(rng.normal(size=35)), 99, rng).p_value
            for _ in range(300)
        ]
    )
    assert stats.kstest(pvals, "uniform").pvalue > 0.01
    assert 0.02 <= np.mean(pvals <= 0.05) <= 0.09


def test_alpha_permutation_p_values_are_uniform_under_the_null() -> None:
    """Same raters' distribution in both groups: the alpha-difference test keeps its size."""
    rng = make_rng(77)
    labels = np.array(["audio"] * 10 + ["text"] * 10)
    pvals = []
    for _ in range(150):
        truth = rng.normal(0, 1, 25)
        x = truth + rng.normal(0, 1, (20, 25))
        x[rng.random(x.shape) < 0.5] = np.nan
        feats = alpha_features(x, "interval")
        res = permutation_test_between_groups(
            labels, lambda m, f=feats: group_alpha_difference(f, m), 99, rng, groups=("audio", "text")
        )
        pvals.append(res.p_value)
    pvals = np.array(pvals)
    assert stats.kstest(pvals, "uniform").pvalue > 0.01
    assert np.mean(pvals <= 0.05) <= 0.12


def test_power_against_a_clear_difference() -> None:
    rng = make_rng(5)
    labels = np.array(["audio"] * 20 + ["text"] * 20)
    values = np.concatenate([rng.normal(1.5, 1, 20), rng.normal(0, 1, 20)])
    res = permutation_test_between_groups(labels, mean_difference(values), 999, rng, groups=("audio", "text"))
    assert res.p_value == pytest.approx(1 / 1000)
    # alpha: reliable raters in one group, noise in the other
    truth = rng.normal(0, 1, 40)
    x = np.vstack([truth + rng.normal(0, 0.3, (15, 40)), rng.normal(0, 1, (15, 40))])
    x[rng.random(x.shape) < 0.5] = np.nan
    feats = alpha_features(x, "interval")
    res = permutation_test_between_groups(
        np.array(["audio"] * 15 + ["text"] * 15),
        lambda m: group_alpha_difference(feats, m),
        999,
        rng,
        groups=("audio", "text"),
    )
    assert res.observed > 0.5 and res.p_value < 0.01
