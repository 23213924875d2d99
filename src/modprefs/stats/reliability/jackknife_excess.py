"""Removing the crossed jackknife's excess from its variance of the ICC difference: V_cal and its df.

The calibrated ICC-difference test (:mod:`modprefs.stats.reliability.icc_difference`) measures, in null studies
simulated from the study's own fit, the jackknife's mean variance E* and the variance of D, Var*. Their difference
E* - Var* is the jackknife's excess *in that null world*. How it carries over to the study depends on how the excess
scales with the variance the study has beyond its null world, which the null world cannot say:

* if the excess does not grow with it (the study's extra variance is all real): V - (E* - Var*), the *additive*
  correction;
* if it grows in proportion (the study is its null world scaled up): V Var* / E*, the *proportional* one.

The two bracket the truth, and V_cal is their midpoint, with the proportional correction as its floor (as in Table 4's
rule before: where V is below E* and the excess positive, subtracting it could leave nothing)::

    V_cal = max((V - (E* - Var*) + V Var* / E*) / 2, V Var* / E*)

the two branches meeting where V = E* (both give Var*). With a positive excess and V above E*, that takes a share
(E* - Var*) / (2 E*) of V - E* as excess too: half the null world's own relative excess, measured on the study, not
tuned. Measured (benchmarks/out/icc_difference_rules.md, every null cell of the ICC-difference benchmark rescored):
Table 4's rule until issue #50, max(V - (E* - Var*), V Var* / E*) (the additive correction wherever V is above E*),
leaves V_cal above E[D^2] by up to 1.21x where the study is far above its null world (the paper-calibrated
simulator), the proportional alone falls to 0.82-0.90x there and rejects 8.5-8.9 %; the midpoint keeps every
required cell within 0.9-1.15 and 5 % +/- 2 MC SE.

The df is Satterthwaite's for V_cal as a function of three independent estimates (delta method): V (variance
2 V^2 / df), E* (``expected_var``, the replicates' sample variance over their number) and Var* (variance
2 Var*^2 / (n_null - 1)).
"""

from __future__ import annotations

import math


def calibrated_variance(
    variance: float, df: float, expected: float, null: float, n_null: int, expected_var: float = 0.0
) -> tuple[float, float]:
    """(V_cal, its Satterthwaite df) from V (``variance``, with Satterthwaite ``df``), E* (``expected``, with
    sampling variance ``expected_var``) and Var* (``null``, the sample variance of ``n_null`` null differences);
    the rule in the module docstring. All in squared ICC units. An infinite ``df`` contributes no noise.

    Where the proportional branch applies, relative variances add: df = 2 / (2 / df + var(E*) / E*^2 +
    2 / (n_null - 1)). Where the midpoint does, V_cal = V (1 + Var*/E*) / 2 - (E* - Var*) / 2, with gradient
    (dV, dE*, dVar*) = ((1 + Var*/E*) / 2, -(1 + V Var* / E*^2) / 2, (1 + V / E*) / 2):
    df = 2 V_cal^2 / sum(gradient^2 x variances).
    """
    rel_v = 2.0 / df if math.isfinite(df) and df > 0 else 0.0
    rel_null = 2.0 / (n_null - 1) if n_null > 1 else math.inf
    expected_var = expected_var if math.isfinite(expected_var) and expected_var > 0 else 0.0
    proportional = variance * null / expected
    midpoint = 0.5 * (variance - (expected - null) + proportional)
    if midpoint <= proportional:
        relative = rel_v + expected_var / expected**2 + rel_null
        return proportional, (2.0 / relative if relative > 0 else math.inf)
    d_v = 0.5 * (1.0 + null / expected)  # dV_cal/dV; -dV_cal/dE*; dV_cal/dVar*
    d_e = 0.5 * (1.0 + proportional / expected)
    d_null = 0.5 * (1.0 + variance / expected)
    spread = d_v**2 * rel_v * variance**2 + d_e**2 * expected_var + d_null**2 * rel_null * null**2
    return midpoint, (2.0 * midpoint**2 / spread if spread > 0 else math.inf)
