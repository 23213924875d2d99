"""benchmarks/validity/icc_difference_null.py: the SE of mean V / E[D^2], the ratio the acceptance band is on.

Both means are Monte Carlo estimates; the SE must carry E[D^2]'s error too (it was 6 % of E[D^2] over 600 studies,
as large as the band's upper margin), and the covariance of a study's V with its own D^2."""

from __future__ import annotations

import numpy as np
import pytest

from support.benchmarks import bench_module


def _studies(rng: np.random.Generator, n: int, coupled: bool) -> tuple[list[dict], np.ndarray]:
    d = rng.standard_normal(n)
    v = 1.0 + 0.5 * (d**2 - 1.0) + 0.3 * rng.standard_normal(n) if coupled else 1.0 + 0.5 * rng.standard_normal(n)
    return [{"D": float(a), "V": float(b)} for a, b in zip(d, v, strict=True)], d


def test_ratio_se_matches_the_spread_of_the_ratio_over_repeated_benchmarks():
    bench = bench_module("icc_difference_null")
    rng = np.random.default_rng(20261207)
    for coupled in (False, True):
        ratios, ses = [], []
        for _ in range(400):
            rows, d_tested = _studies(rng, 200, coupled)
            d_null = np.concatenate([d_tested, rng.standard_normal(600)])  # tested studies + fitted-only ones
            v_bar = np.mean([r["V"] for r in rows])
            ratios.append(v_bar / np.mean(d_null**2))
            ses.append(bench.ratio_se(rows, d_null))
        # the delta method's SE against the ratio's actual spread over 400 repetitions (its own SE is about 4 %)
        assert np.mean(ses) == pytest.approx(np.std(ratios, ddof=1), rel=0.12)


def test_ratio_se_is_larger_than_the_mean_variances_alone():
    bench = bench_module("icc_difference_null")
    rows, d = _studies(np.random.default_rng(3), 300, False)
    v = np.array([r["V"] for r in rows])
    se_v_only = np.std(v, ddof=1) / np.sqrt(len(v)) / np.mean(d**2)
    assert bench.ratio_se(rows, d) > 1.5 * se_v_only
    assert np.isnan(bench.ratio_se(rows[:2], d))
