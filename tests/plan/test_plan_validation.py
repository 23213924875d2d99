"""Small versions of the planner's validation (benchmarks/validity/plan_validation.py has the full ones).

(a) the recommended design, simulated afresh, meets its precision target with the analysis' own interval
in at least the promised share of studies; (c) under a null with no modality difference the planned
ICC-difference test rejects at ~5 %, as do Table 4's tests (the crossed jackknife, the default, and the
participant permutation) on the same kind of data.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from modprefs.plan.engine import SimSettings, Task, run_tasks
from modprefs.plan.fastsim import simulate_study, study_tables
from modprefs.plan.grid import Costs, Design, Targets, design_grid
from modprefs.plan.intervals import ANALYSIS_CI_METHOD, analysis_half_widths
from modprefs.plan.layout import balanced_layout, prism_like_lengths
from modprefs.plan.planner import jackknife_test_calibration, make_plan
from modprefs.plan.priors import Priors, icc_curve
from modprefs.plan.summary import icc_diff_power
from modprefs.ratings.simulation.params import SimulationParams

pytestmark = pytest.mark.slow


def exchangeable_null(p: SimulationParams) -> SimulationParams:
    """No modality difference: text = audio for every per-condition parameter, (almost) the same clips."""
    same = {
        f.name: getattr(p, f.name.replace("_text", "_audio"))
        for f in dataclasses.fields(p)
        if f.name.endswith("_text") and hasattr(p, f.name.replace("_text", "_audio"))
    }
    same.update(b_text=0.0, b_len_text=0.0, b_trial_text=0.0, b_first_text=0.0, rho_clip_modality=0.999)
    return dataclasses.replace(p, **same)


def test_planned_permutation_test_has_its_size_under_the_null():
    params = exchangeable_null(SimulationParams())
    settings = SimSettings(n_sims=300, seed=9, interval="sampling", table2=False, icc_test="permutation", perm_draws=2)
    [res] = run_tasks([Task("null", "icc_diff", params, Design(20, 12, 8), settings)], jobs=2)
    size, se, crit = icc_diff_power(res, 0.05)
    assert abs(size - 0.05) <= 3 * math.sqrt(0.05 * 0.95 / 300), (size, crit)


def _null_studies(n: int, prompts: int, raters: int, trials: int):
    params = exchangeable_null(SimulationParams())
    for i in range(n):
        rng = np.random.default_rng([21, i])
        study = simulate_study(
            params,
            balanced_layout(prompts, raters, trials, ("audio", "text"), rng),
            prism_like_lengths(prompts, rng),
            rng,
        )
        yield i, study_tables(study)


def test_planned_jackknife_test_rejects_as_the_analysis_test_under_the_null():
    """The planner's mimic of Table 4's crossed-jackknife test rejects as often as that test does on fresh studies
    (within MC error), and neither exceeds 5 % (the jackknife test is conservative at designs this small:
    benchmarks/out/icc_difference_null_v2.json)."""
    from modprefs.stats.reliability.icc import analysable_ratings
    from modprefs.stats.reliability.icc_difference import icc_difference_test

    design = Design(20, 12, 8)
    settings = SimSettings(
        n_sims=300, seed=9, interval="sampling", table2=False, icc_test="jackknife", n_calibration=8, n_boot=30
    )
    [res] = run_tasks([Task("null", "icc_diff", exchangeable_null(SimulationParams()), design, settings)], jobs=2)
    planned, planned_se, crit = icc_diff_power(res, 0.05, jackknife_test_calibration({design: res})[design])
    p_values = []
    for i, (ratings, participants, stimuli) in _null_studies(80, 20, 12, 8):
        frames = {c: analysable_ratings(ratings, participants, c, stimuli) for c in ("audio", "text")}
        p_values.append(icc_difference_test(frames, n_noise=30, seed=i)["icc_2_1"].p_value)
    rate = float(np.mean(np.array(p_values) <= 0.05))
    rate_se = math.sqrt(max(rate * (1 - rate), 0.05 * 0.95) / 80)
    assert abs(planned - rate) <= 3 * math.hypot(planned_se, rate_se), (planned, rate, crit)
    assert max(planned, rate) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 80), (planned, rate)


def test_permutation_test_has_its_size_under_the_same_null():
    """The analysis' own test on the same data model (what the planned test mimics)."""
    from modprefs.stats.tables.reliability_table import icc_permutation_test

    p_values = [
        icc_permutation_test(ratings, participants, 39, seed=i)["icc_2_1"]["p_value"]
        for i, (ratings, participants, _) in _null_studies(60, 16, 10, 6)
    ]
    rate = float(np.mean(np.array(p_values) <= 0.05))
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 60)


def test_recommended_design_meets_its_precision_target_afresh(tmp_path):
    p = SimulationParams()
    curves = {c: icc_curve(p, c, seed=1, reps=2) for c in ("audio", "text")}
    priors = Priors(source="test", scenarios={"central": p}, curves=curves, table=_empty_table())
    targets = Targets(ci_half_width=0.2, target_conditions=("audio",), assurance=0.8)
    designs = design_grid([20], [12, 20, 28, 40, 56], [8], "both")  # the jackknife interval needs ~40 here
    result = make_plan(
        priors,
        designs,
        targets,
        Costs(),
        SimSettings(n_sims=60, seed=1, n_calibration=4, n_boot=60),
        ("central",),
        jobs=2,
        cache_dir=tmp_path,
    )
    rec = result.recommendations.iloc[0]
    assert rec["met"], rec["note"]
    d = Design(int(rec["prompts"]), int(rec["raters"]), int(rec["trials"]))
    widths = []
    for i in range(40):
        rng = np.random.default_rng([0xFE5, i])
        study = simulate_study(
            p,
            balanced_layout(d.prompts, d.raters, d.trials, d.conditions, rng),
            prism_like_lengths(d.prompts, rng),
            rng,
            attention=False,
        )
        widths.append(analysis_half_widths(study, ANALYSIS_CI_METHOD, 100, rng, 0.95)["audio"])
    share = float(np.mean(np.array(widths) <= 0.2))
    assert share >= 0.8 - 2 * math.sqrt(0.8 * 0.2 / 40), (d, share, rec["assurance_audio"])


def _empty_table():
    import pandas as pd

    return pd.DataFrame({"quantity": ["ICC(2,1)"], "condition": ["audio"], "central": [np.nan]})
