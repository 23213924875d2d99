"""benchmarks/validity/icc_null_world_fidelity.py: the calibration's null world against the truth, per condition.

A tiny run goes end to end (a simulator variant through the null worlds Table 4's calibration draws from); the
moments are checked against their definitions; the stored outputs are rebuilt from the stored studies exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from support.benchmarks import BENCH, bench_module

OUT = BENCH / "out"


def test_moments_are_the_variances_and_covariance_of_the_two_conditions():
    fid = bench_module("icc_null_world_fidelity")
    rng = np.random.default_rng(3)
    audio = rng.normal(size=(200, 2))
    text = 0.5 * audio + rng.normal(size=(200, 2))
    text[5, 1] = np.nan  # a study whose ICC(2,k) is not estimable is left out of that statistic only
    m = fid.moments(audio, text)
    var_a, var_t, cov, var_d = m["icc_2_1"]
    assert var_a == pytest.approx(np.var(audio[:, 0], ddof=1))
    assert cov == pytest.approx(np.cov(audio[:, 0], text[:, 0])[0, 1])
    assert var_d == pytest.approx(var_a + var_t - 2 * cov)
    ok = np.isfinite(text[:, 1])
    assert m["icc_2_k"][3] == pytest.approx(np.var(audio[ok, 1] - text[ok, 1], ddof=1))


def test_a_tiny_run_writes_each_null_world_against_the_truth(tmp_path, monkeypatch):
    fid = bench_module("icc_null_world_fidelity")
    out = tmp_path / "fidelity.json"
    argv = ["x", "--size", "small", "--models", "sim_equal_rater_noise", "--n-truth", "4", "--n-studies", "1"]
    argv += ["--n-null", "5", "--n-given-clips", "1", "--n-reps", "3", "--workers", "1", "--out", str(out)]
    monkeypatch.setattr("sys.argv", argv)
    fid.main()
    doc = json.loads(out.read_text())
    block = doc["summary"]["sim_equal_rater_noise"]
    assert (block["n_truth"], block["n_studies"]) == (4, 1)
    for stat in ("icc_2_1", "icc_2_k"):
        lo, hi = block[stat]["truth"]["var_d_ci95"]
        assert 0 <= lo <= hi
        for null_model in ("gaussian", "raters"):
            w = block[stat][null_model]
            assert w["var_d_over_truth"] == pytest.approx(w["var_d"] / block[stat]["truth"]["var_d"])
        held = block[stat]["given_clips"]  # the rater part: the study's clips held, 3 rater replicates
        assert held["n_studies"] == 1 and all(x >= 0 for x in held["truth"] + held["gaussian"] + held["raters"])
    md = out.with_suffix(".md").read_text()
    assert md.count("| sim_equal_rater_noise |") == 4  # two statistics, in both tables


def test_unknown_models_are_named(monkeypatch):
    fid = bench_module("icc_null_world_fidelity")
    monkeypatch.setattr("sys.argv", ["x", "--models", "simulator_exchangeable,sim_typo"])
    with pytest.raises(SystemExit, match="sim_typo"):
        fid.main()


def test_stored_outputs_are_rebuilt_from_the_stored_studies(tmp_path, monkeypatch):
    fid = bench_module("icc_null_world_fidelity")
    out = tmp_path / "icc_null_world_fidelity.json"
    out.write_bytes((OUT / "icc_null_world_fidelity.json").read_bytes())
    monkeypatch.setattr("sys.argv", ["x", "--summarise-only", "--out", str(out)])
    fid.main()
    assert out.read_bytes() == (OUT / "icc_null_world_fidelity.json").read_bytes()
    assert out.with_suffix(".md").read_bytes() == (OUT / "icc_null_world_fidelity.md").read_bytes()
