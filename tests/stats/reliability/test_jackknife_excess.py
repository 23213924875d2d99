"""modprefs.stats.reliability.jackknife_excess: V_cal, the midpoint of the additive and the proportional correction
of the crossed jackknife's excess (floored at the proportional one), and its Satterthwaite df.

The df is checked against a numerical gradient of V_cal (not the module's own closed form) and, by simulation,
against the spread of V_cal when V, E* and Var* are drawn with the variances the df assumes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from modprefs.stats.reliability.jackknife_excess import calibrated_variance


def _value(v: float, e: float, n: float) -> float:
    return calibrated_variance(v, 30.0, e, n, 101)[0]


def _delta_df(v: float, df: float, e: float, n: float, m: int, ev: float) -> float:
    """2 V_cal^2 / var(V_cal) from a central-difference gradient of V_cal in (V, E*, Var*)."""
    grad = []
    for i in range(3):
        x = [v, e, n]
        h = 1e-6 * x[i]
        up, down = list(x), list(x)
        up[i] += h
        down[i] -= h
        grad.append((_value(*up) - _value(*down)) / (2 * h))
    variances = [2 * v**2 / df, ev, 2 * n**2 / (m - 1)]
    return 2 * _value(v, e, n) ** 2 / sum(g * g * s for g, s in zip(grad, variances, strict=True))


def test_the_midpoint_above_the_null_expectation():
    """V 2, E* 1.5, Var* 1: additive 1.5, proportional 4/3, V_cal their midpoint 17/12."""
    v_cal, df = calibrated_variance(2.0, 30.0, 1.5, 1.0, 101)
    assert v_cal == pytest.approx((1.5 + 2.0 / 1.5) / 2)
    assert df == pytest.approx(_delta_df(2.0, 30.0, 1.5, 1.0, 101, 0.0), rel=1e-6)
    with_e = calibrated_variance(2.0, 30.0, 1.5, 1.0, 101, expected_var=0.1)[1]
    assert with_e == pytest.approx(_delta_df(2.0, 30.0, 1.5, 1.0, 101, 0.1), rel=1e-6) and with_e < df


def test_the_proportional_floor_below_it():
    """V 2 under E* 4 (Var* 1): additive -1, midpoint .25, so the proportional .5; relative variances add."""
    v_cal, df = calibrated_variance(2.0, 30.0, 4.0, 1.0, 101)
    assert v_cal == pytest.approx(0.5) and df == pytest.approx(2 / (2 / 30 + 2 / 100))
    assert calibrated_variance(2.0, 30.0, 4.0, 1.0, 101, expected_var=0.8)[1] == pytest.approx(
        2 / (2 / 30 + 0.8 / 16 + 2 / 100)
    )


def test_branches_meet_where_v_equals_its_null_expectation():
    """At V = E* both corrections give Var*; V_cal is continuous and increasing in V through it."""
    e, n = 1.5, 1.0
    assert _value(e, e, n) == pytest.approx(n)
    grid = np.linspace(0.5, 3.0, 251)
    values = np.array([_value(v, e, n) for v in grid])
    assert np.all(np.diff(values) > 0) and np.max(np.abs(np.diff(values))) < 0.02


def test_a_negative_excess_inflates_v():
    """Where the null world's jackknife falls short of D's variance (E* 1 < Var* 1.5) the correction adds: above E*
    the proportional branch is the larger (V 2: 3 > midpoint 2.75), below it the midpoint (V .5: (1 + .75) / 2)."""
    assert _value(2.0, 1.0, 1.5) == pytest.approx(3.0)
    assert _value(0.5, 1.0, 1.5) == pytest.approx((1.0 + 0.75) / 2)


def test_no_excess_leaves_v_and_its_df():
    """E* = Var* (no excess) with Var* all but exact: V itself on V's df; V exact: Var*'s noise alone."""
    assert calibrated_variance(2.0, 30.0, 1.0, 1.0, 10**12) == pytest.approx((2.0, 30.0), rel=1e-6)
    v_cal, df = calibrated_variance(2.0, math.inf, 1.5, 1.0, 101)
    assert math.isfinite(df) and df == pytest.approx(_delta_df(2.0, 1e12, 1.5, 1.0, 101, 0.0), rel=1e-6)


@pytest.mark.parametrize("e_true", [1.2, 4.0])  # V mostly above E* (the midpoint), below it (the proportional)
def test_df_matches_the_spread_of_v_cal_by_simulation(e_true):
    """V ~ 2 chi2_30 / 30, Var* ~ 1 chi2_100 / 100, E* ~ N(e, .05^2): var(V_cal) over 40,000 draws is the
    df's 2 E[V_cal]^2 / df within 6 % (measured 2-3 %; near the branches' kink, V and E* a chi2_30's SD apart, the
    delta method is off by more)."""
    rng = np.random.default_rng(50)
    draws = 40_000
    v = 2.0 * rng.chisquare(30, draws) / 30
    null = rng.chisquare(100, draws) / 100
    e = e_true + 0.05 * rng.standard_normal(draws)
    v_cal = np.array([calibrated_variance(a, 30.0, b, c, 101)[0] for a, b, c in zip(v, e, null, strict=True)])
    df = calibrated_variance(2.0, 30.0, e_true, 1.0, 101, expected_var=0.05**2)[1]
    assert np.var(v_cal) == pytest.approx(2 * np.mean(v_cal) ** 2 / df, rel=0.06)
