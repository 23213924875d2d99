"""benchmarks/validity/icc_difference_null.py's rescore(): a stored study's calibrated test recomputed under today's
rule (modprefs.stats.reliability.jackknife_excess) and under Table 4's rule before issue #50 (``max_rule``), whichever
of the two it ran with; a stored test that is neither rule's is an error, not silently replaced."""

from __future__ import annotations

import copy

import pytest

from support.benchmarks import bench_module

# V 2 on 30 df above E* 1.5 with Var* 1 (101 null studies): max rule 1.5, today's midpoint 17/12
JACKKNIFE = {"p": 0.2, "D": 0.3, "V": 2.0, "df": 30.0}
CALIBRATION = {"null_expected_variance": 1.5, "null_variance": 1.0, "null_studies": 101.0}


def _study(v_cal: float) -> dict:
    stat = {"p": 0.1, "D": 0.3, "V": v_cal, "df": 20.0}
    icc = {"jackknife": {"icc_2_1": dict(JACKKNIFE)}, "calibration": {"icc_2_1": dict(CALIBRATION)}}
    icc["calibrated"] = {"icc_2_1": stat}
    return {"seed": 7, "icc": icc}


@pytest.mark.parametrize("ran_with", [1.5, 17 / 12])  # stored under the max rule / under today's
def test_either_rule_as_run_gives_both(ran_with):
    bench = bench_module("icc_difference_null")
    out = bench.rescore(_study(ran_with))["icc"]
    assert out["calibrated"]["icc_2_1"]["V"] == pytest.approx(17 / 12)
    assert out["calibrated_max"]["icc_2_1"]["V"] == pytest.approx(1.5)
    assert out["calibrated_max"]["icc_2_1"]["df"] == pytest.approx(2 * 1.5**2 / (2 * 4 / 30 + 2 / 100))
    assert out["calibrated_jkdf"]["icc_2_1"]["V"] == out["calibrated"]["icc_2_1"]["V"]
    assert out["calibrated_jkdf"]["icc_2_1"]["p"] < out["calibrated"]["icc_2_1"]["p"]  # 30 df against ~19
    again = bench.rescore(copy.deepcopy({"seed": 7, "icc": out}))["icc"]
    assert again == out  # idempotent


def test_a_stored_test_of_neither_rule_is_an_error():
    bench = bench_module("icc_difference_null")
    with pytest.raises(ValueError, match="seed 7 icc_2_1: stored V_cal 1.7 is neither rule's"):
        bench.rescore(_study(1.7))


def test_an_uncalibrated_study_keeps_the_jackknife_test():
    bench = bench_module("icc_difference_null")
    study = _study(2.0)
    study["icc"]["calibration"]["icc_2_1"]["null_variance"] = float("nan")
    out = bench.rescore(study)["icc"]
    assert out["calibrated"]["icc_2_1"] == out["calibrated_max"]["icc_2_1"] == JACKKNIFE
