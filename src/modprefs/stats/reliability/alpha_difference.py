"""Testing a difference in Krippendorff's alpha between two conditions (Table 4).

Testing a difference (Table 4)
------------------------------
:func:`alpha_difference_jackknife` is a crossed-jackknife t test of alpha(audio) - alpha(text) (units shared by
the conditions, coders not; the value-level jackknife removes the noise both one-way jackknifes count). Its
variance is close to unbiased under equal alphas (mean V / E[D^2] 0.90-1.26 at 40 prompts x 20 raters x 10 trials,
benchmarks/out/alpha_difference_null.md), but its t is heavier-tailed than Student's t for the continuous alpha
and lighter for the nominal one (whose first-order variance vanishes near alpha = 0), so
:func:`~modprefs.stats.tables.reliability_alpha.alpha_table`
refers the t to the t of random reassignments of the participants (a studentized permutation test, Janssen 1997;
Chung & Romano 2013); the permutation of the difference itself (the paper's) tests exchangeable conditions
instead and over-rejects when only the alphas are equal (8.4 / 8.4 % for the continuous / ordinal alpha there).
Measured sizes: benchmarks/out/alpha_difference_null.md.

:func:`alpha_difference_test` runs either test on the pooled matrix. The alpha itself:
:mod:`modprefs.stats.reliability.alpha`.

References:
    Janssen, A. (1997). Studentized permutation tests for non-i.i.d. hypotheses and the generalized
    Behrens-Fisher problem. Statistics & Probability Letters 36(1), 9-21.
    Chung, E. & Romano, J. P. (2013). Exact and asymptotically robust permutation tests. Ann. Statist.
    41(2), 484-507.
    McCullagh, P. (2000). Resampling and exchangeable arrays. Bernoulli 6(2), 285-301.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.stats.reliability.alpha import (
    AlphaFeatures,
    Level,
    alpha_features,
    alpha_from_unit_features,
    finish_alpha,
    group_alpha_difference,
    pairable,
)
from modprefs.stats.reliability.resampling import jackknife_variance

#: the alpha-difference tests of :func:`alpha_table`: the studentized permutation (default) and the paper's
ALPHA_TESTS = {
    "studentized": "studentized participant permutation of the crossed-jackknife t (Janssen 1997; Chung & Romano 2013)",
    "permutation": "participant permutation of the difference (the paper's)",
}


def alpha_difference_test(
    mat: pd.DataFrame,
    cond: np.ndarray,
    level: Level,
    domain: Sequence[float] | None,
    n_perm: int,
    rng: np.random.Generator,
    conditions: tuple[str, str],
    test: str,
) -> dict[str, Any]:
    """One alpha row's difference and test (:func:`alpha_table`): diff, t, df, p_value, n_perm_valid, null_sd."""
    from modprefs.stats.reliability.resampling import permutation_test_between_groups  # noqa: PLC0415

    out: dict[str, Any] = {"test": ALPHA_TESTS[test], "diff": np.nan, "t": np.nan, "df": np.nan, "p_value": np.nan}
    out |= {"n_perm_valid": 0, "null_sd": np.nan}
    if not (mat.shape[0] and (mat.notna().sum(axis=0) >= 2).any()):
        return out
    pooled = alpha_features(mat, level, domain)
    statistic: Callable[[np.ndarray], Any]
    if test == "permutation":
        statistic, vectorised = functools.partial(group_alpha_difference, pooled), True
    else:
        jk = alpha_difference_jackknife(*split_features(pooled, cond == conditions[0]))
        out.update(diff=jk["diff"], t=jk["t"], df=jk["df"])
        statistic, vectorised = functools.partial(split_t, pooled), False
    perm = permutation_test_between_groups(cond, statistic, n_perm, rng, groups=conditions, vectorised=vectorised)
    if test == "permutation":
        out["diff"] = perm.observed
    return out | {"p_value": perm.p_value, "n_perm_valid": perm.n_valid, "null_sd": perm.null_sd}


@dataclass(frozen=True)
class AlphaJackknife:
    """One condition's alpha and its leave-one-out values: ``units`` (U,) leaving each unit (column) out,
    ``coders`` (C,) each coder with a value, ``cells`` (n,) each value (coder, unit) alone; NaN where undefined."""

    estimate: float
    units: np.ndarray
    coders: np.ndarray
    cells: np.ndarray


def alpha_jackknife(features: AlphaFeatures) -> AlphaJackknife:
    """Leave-one-unit-, -coder- and -value-out alphas of one coders x units matrix's features, without refitting
    anything: each is alpha of the per-unit sums less the left-out part (:func:`alpha_from_unit_features`; the
    values in closed form, :func:`_value_loo`)."""
    level, feats = features.level, features.features
    uf = features.unit_features()
    U = uf.shape[0]
    estimate = float(alpha_from_unit_features(uf, level))
    units = alpha_from_unit_features(uf, level, weights=1.0 - np.eye(U)) if U else np.empty(0)
    present = _present(features)
    active = present.any(axis=1)
    coders = alpha_from_unit_features(uf[None] - feats[active], level) if active.any() else np.empty(0)
    return AlphaJackknife(estimate, units, coders, _value_loo(features, present))


def _present(features: AlphaFeatures) -> np.ndarray:
    """(C, U) bool: coder c gave unit u a value."""
    f = features.features
    return f[..., 0] > 0 if features.level == "interval" else f.sum(axis=-1) > 0


def _value_loo(features: AlphaFeatures, present: np.ndarray) -> np.ndarray:
    """Alpha without each single value (coder, unit), in closed form: only that unit's terms and the totals change
    (a unit left with one value leaves the pairable set, and its other value with it). Equal to
    :func:`alpha_from_unit_features` of the reduced sums (tests: 1e-12)."""
    cc, uu = np.nonzero(present)
    uf = features.unit_features()
    if features.level == "interval":
        return _value_loo_interval(uf, features.features[cc, uu], uu)
    return _value_loo_counts(uf, features.features[cc, uu].argmax(axis=1), uu, features.level)


def _value_loo_interval(uf: np.ndarray, x: np.ndarray, uu: np.ndarray) -> np.ndarray:
    m, s1, s2 = uf[:, 0], uf[:, 1], uf[:, 2]
    pair, inv = pairable(m)
    term = (m * s2 - s1 * s1) * inv
    n, t1, t2, do = m @ pair, s1 @ pair, s2 @ pair, term.sum()
    mu, was = m[uu], pair[uu]
    still = mu - 1 >= 2
    s1n, s2n = s1[uu] - x[:, 1], s2[uu] - x[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        new = np.where(still, ((mu - 1) * s2n - s1n * s1n) / (mu - 2), 0.0)
    do_ = np.where(was, do - term[uu] + new, do)
    n_ = np.where(was, np.where(still, n - 1, n - mu), n)
    t1_ = np.where(was, np.where(still, t1 - x[:, 1], t1 - s1[uu]), t1)
    t2_ = np.where(was, np.where(still, t2 - x[:, 2], t2 - s2[uu]), t2)
    return finish_alpha(n_, do_, n_ * t2_ - t1_ * t1_)


def _value_loo_counts(counts: np.ndarray, v: np.ndarray, uu: np.ndarray, level: str) -> np.ndarray:
    m = counts.sum(axis=1)
    pair, inv = pairable(m)
    V = counts.shape[1]
    one = np.eye(V)[v]
    cu = counts[uu]
    was, still = pair[uu], m[uu] - 1 >= 2
    cn = cu - one  # the unit's counts without the value
    n_c = pair @ counts
    n_c_ = n_c - np.where(was[:, None], np.where(still[:, None], one, cu), 0.0)
    n_ = n_c_.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_new = np.where(still, 1.0 / (m[uu] - 2), 0.0)
    if level == "nominal":
        term = (m * m - (counts * counts).sum(axis=1)) * inv
        new = ((m[uu] - 1) ** 2 - (cn * cn).sum(axis=1)) * inv_new
        do_ = np.where(was, term.sum() - term[uu] + new, term.sum())
        return finish_alpha(n_, do_, n_ * n_ - (n_c_ * n_c_).sum(axis=1))
    # ordinal: Do = r'A r with A = sum over pairable units of (m diag(c) - c c') / (m - 1), ranks r from n_c
    A_units = (m[:, None, None] * (counts[:, :, None] * np.eye(V)) - counts[:, :, None] * counts[:, None, :]) * inv[
        :, None, None
    ]
    A = A_units.sum(axis=0)
    A_new = ((m[uu] - 1)[:, None, None] * (cn[:, :, None] * np.eye(V)) - cn[:, :, None] * cn[:, None, :]) * inv_new[
        :, None, None
    ]
    A_ = np.where(was[:, None, None], A - A_units[uu] + A_new, A)
    r = np.cumsum(n_c_, axis=1) - 0.5 * n_c_ - 0.5 * n_[:, None]
    do_ = np.einsum("ni,nij,nj->n", r, A_, r)
    t1, t2 = (n_c_ * r).sum(axis=1), (n_c_ * r * r).sum(axis=1)
    return finish_alpha(n_, do_, n_ * t2 - t1 * t1)


def _values_per_unit(features: AlphaFeatures) -> np.ndarray:
    """(U,) number of values of each unit."""
    uf = features.unit_features()
    return uf[:, 0] if features.level == "interval" else uf.sum(axis=1)


def alpha_difference_jackknife(first: AlphaFeatures, second: AlphaFeatures) -> dict[str, float]:
    """Crossed-jackknife t test of alpha(first) - alpha(second); the two coder sets are disjoint and their units
    (columns, in the same order) shared, as Table 4's conditions.

    V = V_unit(D) + V_coder,1 + V_coder,2 - V_value,1 - V_value,2: leaving a unit out of both conditions gives the
    unit part of D's variance (covariance included), each condition's leave-one-coder-out jackknife its coder part;
    both carry each value's own noise, which the leave-one-value-out jackknife estimates and which is subtracted
    once (the crossed-array argument of McCullagh 2000 and Owen 2007). Only where that sum is not positive (3-6 %
    of studies for the nominal alpha, whose first-order variance vanishes near 0; none for the others in
    benchmarks/out/alpha_difference_null.md) is V the larger of V_unit(D) and V_coder,1 + V_coder,2, a conservative
    bound (``variance_floored`` is then True). An earlier version used that bound always: it applied in 76-100 % of
    equal-alpha studies and inflated V 1.1-3x (mean V / E[D^2]), where the unbounded V is 0.82-1.33x.
    t = D / sqrt(V) with Satterthwaite df over the unit and coder parts; two-sided p from Student's t.
    Returns diff, variance, variance_floored, var_unit, var_coder (and per condition), var_value, df, t, p_value,
    n_unit, n_coder_first, n_coder_second (NaN where undefined).
    """
    a, b = alpha_jackknife(first), alpha_jackknife(second)
    diff = a.estimate - b.estimate
    out = {"diff": diff, "variance": np.nan, "var_unit": np.nan, "var_coder": np.nan, "var_value": np.nan}
    out |= {"df": np.nan, "t": np.nan, "p_value": np.nan}
    if not (np.isfinite(diff) and a.units.size == b.units.size):
        return out
    loo_a = np.where(np.isfinite(a.units), a.units, a.estimate)
    loo_b = np.where(np.isfinite(b.units), b.units, b.estimate)
    rated = (_values_per_unit(first) >= 2) | (_values_per_unit(second) >= 2)  # the units alpha counts
    v_unit, n_unit = jackknife_variance((loo_a - loo_b)[rated])
    (v_a, n_a), (v_b, n_b) = jackknife_variance(a.coders), jackknife_variance(b.coders)
    v_value = sum(jackknife_variance(x.cells)[0] for x in (a, b))
    if not all(np.isfinite([v_unit, v_a, v_b, v_value])):
        return out
    coder = v_a + v_b
    floored = not v_unit + coder - v_value > 0
    variance = max(v_unit, coder) if floored else v_unit + coder - v_value
    denom = v_unit**2 / (n_unit - 1) + v_a**2 / (n_a - 1) + v_b**2 / (n_b - 1)
    df = variance**2 / denom if denom > 0 else float("inf")
    t = diff / np.sqrt(variance) if variance > 0 else (np.sign(diff) * np.inf if diff else 0.0)
    p = float(2.0 * (stats.t.sf(abs(t), df) if np.isfinite(df) else stats.norm.sf(abs(t))))
    out.update(variance=variance, var_unit=v_unit, var_coder=coder, var_value=v_value, df=df, t=float(t), p_value=p)
    out.update(var_coder_first=v_a, var_coder_second=v_b, n_unit=n_unit, n_coder_first=n_a, n_coder_second=n_b)
    out["variance_floored"] = floored
    return out


def split_features(features: AlphaFeatures, in_first: np.ndarray) -> tuple[AlphaFeatures, AlphaFeatures]:
    """The coders ``in_first`` (C,) bool and the others, as two feature sets over the same units."""
    mask = np.asarray(in_first, dtype=bool)
    f = features.features
    return (
        AlphaFeatures(features.level, f[mask], features.values, features.center),
        AlphaFeatures(features.level, f[~mask], features.values, features.center),
    )


def split_t(features: AlphaFeatures, in_first: np.ndarray) -> float:
    """The crossed-jackknife t of alpha(first) - alpha(second) for one split of the coders (NaN if undefined)."""
    return float(alpha_difference_jackknife(*split_features(features, in_first))["t"])
