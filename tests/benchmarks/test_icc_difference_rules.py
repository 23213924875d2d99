"""benchmarks/validity/icc_difference_rules.py: the rules for removing the jackknife's excess, rescored on the
ICC-difference benchmark's stored studies. Its `max` rule is Table 4's until issue #50 and `midpoint` Table 4's
since (each must give back every stored p-value the studies ran or were rescored with), and its outputs are rebuilt
from the records exactly."""

from __future__ import annotations

import math

import pytest

from support.benchmarks import BENCH, bench_module

OUT = BENCH / "out"


def test_the_rules_on_a_study_by_hand():
    rules = bench_module("icc_difference_rules")
    v, df, e, null, m = 2.0, 30.0, 1.5, 1.0, 101
    # max: subtract the excess (2 - .5 = 1.5 > 2 x 1 / 1.5 = 1.33); its df the three estimates' (Satterthwaite)
    assert rules.rule_max(v, df, e, null, m, 0.0) == pytest.approx((1.5, 2 * 1.5**2 / (2 * v**2 / df + 2 / (m - 1))))
    assert rules.rule_max(1.2, df, 3.0, null, m, 0.0)[0] == pytest.approx(1.2 / 3.0)  # the ratio below E*
    # midpoint: Table 4's calibrated_variance, halfway between the subtracted excess and the ratio
    assert rules.rule_midpoint(v, df, e, null, m, 0.0)[0] == pytest.approx((1.5 + 2.0 / 1.5) / 2)
    assert rules.rule_ratio(v, df, e, null, m, 0.0)[0] == pytest.approx(2.0 / 1.5)
    # subtract_half: the floor is half the ratio; below it (V far under E*) the floor applies
    assert rules.rule_subtract_half(v, df, e, null, m, 0.0)[0] == pytest.approx(1.5)
    low = rules.rule_subtract_half(0.4, df, 1.5, 0.5, m, 0.0)
    assert low[0] == pytest.approx(0.5 * 0.4 * 0.5 / 1.5) and math.isfinite(low[1])
    # subtract_share: V is .5 above E*, so a further SHARE x .5 goes; below E* it is Table 4's rule
    share = rules.rule_subtract_share(v, df, e, null, m, 0.0)
    assert share[0] == pytest.approx(1.5 - rules.SHARE * 0.5)
    below = rules.rule_subtract_share(1.2, df, e, null, m, 0.0)
    assert below == pytest.approx(rules.rule_max(1.2, df, e, null, m, 0.0))
    # its df: V and E* scaled by 1 - SHARE, Var* not
    spread = (1 - rules.SHARE) ** 2 * 2 / df * v**2 + 2 / (m - 1) * null**2
    assert share[1] == pytest.approx(2 * share[0] ** 2 / spread)


def test_outputs_are_rebuilt_from_the_records(tmp_path, monkeypatch):
    """The script on the stored records writes the stored JSON and Markdown byte for byte (and its max rule gives
    every stored calibrated p back, or it raises)."""
    rules = bench_module("icc_difference_rules")
    out = tmp_path / "icc_difference_rules.json"
    monkeypatch.setattr("sys.argv", ["icc_difference_rules.py", "--out", str(out)])
    rules.main()
    assert out.read_bytes() == (OUT / "icc_difference_rules.json").read_bytes()
    assert out.with_suffix(".md").read_bytes() == (OUT / "icc_difference_rules.md").read_bytes()
