"""benchmarks/validity/stopping_coverage.py's logic on a few hundred studies (its full run:
benchmarks/out/stopping_coverage.md).

Looking repeatedly at 95 % intervals and stopping when they look good must cover less often than the Bonferroni
levels the app uses, which must keep at least the nominal coverage under the interval's own (Gaussian) model.
"""

from __future__ import annotations

import numpy as np
import pytest

from support.benchmarks import bench_module

bench = bench_module("stopping_coverage")


def test_bonferroni_keeps_coverage_where_naive_looks_lose_it():
    out = bench.cell("gaussian", "half_width_0.1", n_studies=400, seed=7)
    naive, bonf = out["naive"], out["bonferroni"]
    assert out["n_looks"] == 8 and out["look_level"] == pytest.approx(1 - 0.05 / 8)
    assert bonf["coverage"] >= 0.95 and bonf["coverage"] > naive["coverage"], (naive, bonf)
    # the stricter looks stop later, but still well before the fixed design's 40 raters
    assert naive["mean_raters_at_stop"] <= bonf["mean_raters_at_stop"] < 40
    assert bonf["raters_saved_vs_fixed"] == pytest.approx(40 - bonf["mean_raters_at_stop"])


def test_the_generators_have_the_declared_icc():
    rng = np.random.default_rng(3)
    for model in bench.MODELS:
        tables = [bench.ratings(model, 40, rng) for _ in range(200)]
        est = np.mean([bench.mean_squares(t).icc_a1 for t in tables])
        assert est == pytest.approx(0.30, abs=0.03), model
