"""The planner's engine, interval and summary: determinism, caching, workers, Wald SEs, power and recommendation."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from modprefs.plan.analysis import condition_record, icc_design
from modprefs.plan.engine import SimSettings, Task, run_tasks, task_key
from modprefs.plan.fastsim import simulate_study
from modprefs.plan.grid import Design
from modprefs.plan.intervals import fit_ratio_model, predicted_half_widths, wald_half_width
from modprefs.plan.layout import balanced_layout, prism_like_lengths
from modprefs.plan.summary import icc_diff_power, recommend, table2_power, wilson_half_width
from modprefs.plan.wald import logit_interval
from modprefs.ratings.simulation.params import SimulationParams

SETTINGS = SimSettings(
    n_sims=6, seed=3, interval="analysis", n_calibration=2, n_boot=20, perm_draws=1, icc_test="permutation"
)
DESIGN = Design(12, 8, 6, ("audio", "text"))


def _tasks():
    p = SimulationParams()
    return [Task("central", "main", p, DESIGN, SETTINGS), Task("central", "icc_diff", p, DESIGN, SETTINGS)]


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)


def test_results_do_not_depend_on_workers_or_cache(tmp_path):
    one = run_tasks(_tasks(), jobs=1)
    two = run_tasks(_tasks(), jobs=2, cache_dir=tmp_path)
    cached = run_tasks(_tasks(), jobs=1, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 2
    for a, b, c in zip(one, two, cached):
        assert _same(a, b) and _same(a, c)
    assert "perm" in one[1] and one[1]["perm"].size == SETTINGS.n_sims
    assert "cal_analysis:audio" in one[0] and one[0]["cal_analysis:audio"].size == 2


def test_first_studies_do_not_depend_on_n_sims():
    small = run_tasks([Task("central", "main", SimulationParams(), DESIGN, dataclasses.replace(SETTINGS, n_sims=3))])[0]
    full = run_tasks([_tasks()[0]])[0]
    assert np.array_equal(small["rec:icc1_audio"], full["rec:icc1_audio"][:3])


def test_cache_key_changes_with_params_design_and_settings():
    base = _tasks()[0]
    keys = {
        task_key(base),
        task_key(dataclasses.replace(base, params=dataclasses.replace(base.params, var_clip_audio=900.0))),
        task_key(dataclasses.replace(base, design=Design(12, 9, 6))),
        task_key(dataclasses.replace(base, settings=dataclasses.replace(SETTINGS, seed=4))),
    }
    assert len(keys) == 4
    assert task_key(base) == task_key(_tasks()[0])


def _gaussian() -> SimulationParams:
    return dataclasses.replace(
        SimulationParams(),
        clip_ratings=False,
        tie_mode="threshold",
        clip_df=math.inf,
        resid_df=math.inf,
        resid_scale_cv=0.0,
        rho_clip_within_prompt_audio=0.0,
        rho_clip_within_prompt_text=0.0,
    )


def test_wald_se_matches_the_sampling_sd_under_a_gaussian_lmm():
    """Under the model the Wald SEs assume, RMS(SE) ~ the SD of the estimates over studies (within 20 %)."""
    p = _gaussian()
    icc1, se1, icck, sek = [], [], [], []
    for s in range(80):
        rng = np.random.default_rng([5, s])
        study = simulate_study(p, balanced_layout(40, 20, 10, ("audio",), rng), prism_like_lengths(40, rng), rng)
        rec, _ = condition_record(study.ratings["audio"])
        icc1.append(rec["icc1"]), se1.append(rec["se1"]), icck.append(rec["icck"]), sek.append(rec["sek"])
    for est, se in ((icc1, se1), (icck, sek)):
        ratio = np.std(est, ddof=1) / math.sqrt(np.nanmean(np.square(se)))
        assert 0.8 < ratio < 1.25, ratio


def test_wald_se_is_too_small_for_the_paper_calibration():
    """The reason the planner rescales it: heavy tails and clipping make the Gaussian SE too small."""
    icck, sek = [], []
    for s in range(60):
        rng = np.random.default_rng([6, s])
        study = simulate_study(
            SimulationParams(), balanced_layout(60, 30, 20, ("audio",), rng), prism_like_lengths(60, rng), rng
        )
        rec, _ = condition_record(study.ratings["audio"])
        icck.append(rec["icck"]), sek.append(rec["sek"])
    assert np.std(icck, ddof=1) / math.sqrt(np.nanmean(np.square(sek))) > 1.3


def test_logit_interval_and_half_widths():
    lo, hi = logit_interval(np.array([0.5, 0.9, 1.0]), np.array([0.05, 0.05, 0.05]), 1.96)
    assert lo[0] == pytest.approx(0.5 - (hi[0] - 0.5)) and 0 < lo[1] < 0.9 < hi[1] < 1
    assert np.isnan(lo[2])
    icck = np.array([0.7, 0.8, 0.75, 0.72])
    sek = np.array([0.03, 0.02, 0.025, 0.03])
    wald = wald_half_width(icck, sek, 0.95)
    hw, f = predicted_half_widths(icck, sek, "analysis", 0.95, 1.5)
    assert f == 1.5 and np.allclose(hw, 1.5 * wald)
    hw, f = predicted_half_widths(icck, sek, "sampling", 0.95)
    assert f == pytest.approx(np.std(icck, ddof=1) / math.sqrt(np.mean(sek**2)))
    with pytest.raises(ValueError, match="calibrated ratio"):
        predicted_half_widths(icck, sek, "analysis", 0.95, None)


def test_ratio_model_recovers_a_power_law():
    rng = np.random.default_rng(0)
    designs = np.array([[p, r, t] for p in (40, 100) for r in (10, 20, 40) for t in (10, 20)] * 6, float)
    truth = 0.9 * designs[:, 1] ** 0.2 * designs[:, 0] ** -0.1
    model = fit_ratio_model(designs, np.log(truth) + 0.01 * rng.standard_normal(len(designs)))
    assert model(np.array([[60, 30, 15]]))[0] == pytest.approx(0.9 * 30**0.2 * 60**-0.1, rel=0.02)


def test_wilson_half_width():
    assert wilson_half_width(np.array([0.5]), np.array([100]))[0] == pytest.approx(0.0960, abs=5e-4)
    assert np.isnan(wilson_half_width(np.array([0.5]), np.array([0]))[0])


def test_table2_power_location_shift():
    rng = np.random.default_rng(1)
    rec = {"rec:t2_modality_b": rng.normal(-6, 2, 4000), "rec:t2_modality_se": np.full(4000, 2.0)}
    # |b|/se > 1.96 with b ~ N(effect, 2): power = Phi(effect/2 - 1.96) + Phi(-effect/2 - 1.96)
    from scipy import stats

    for effect in (0.0, 4.0, -8.0):
        want = stats.norm.cdf(abs(effect) / 2 - 1.96) + stats.norm.cdf(-abs(effect) / 2 - 1.96)
        assert table2_power(rec, "modality", effect, 0.05)[0] == pytest.approx(want, abs=0.025)
    rec["rec:t2_modality_df"] = np.full(4000, 5.0)  # Satterthwaite df recorded: the t(5) quantile, 2.571
    for effect in (0.0, 8.0):
        crit = stats.t.ppf(0.975, 5)
        want = stats.norm.cdf(abs(effect) / 2 - crit) + stats.norm.cdf(-abs(effect) / 2 - crit)
        assert table2_power(rec, "modality", effect, 0.05)[0] == pytest.approx(want, abs=0.025)


def test_table2_record_is_the_fit_table2_reports():
    """The planner's Table 2 record is Table 2's own fit of the intercept structure (its default's step in studies
    whose ratings do not support rater slopes) on the study's tables: the same estimates, SEs and df."""
    from modprefs.plan.analysis import table2_record
    from modprefs.plan.fastsim import simulate_study, study_tables
    from modprefs.plan.layout import balanced_layout, prism_like_lengths
    from modprefs.stats.tables.modality import rating_frame, table2_fit

    rng = np.random.default_rng(8)
    study = simulate_study(
        SimulationParams(), balanced_layout(12, 8, 6, ("audio", "text"), rng), prism_like_lengths(12, rng), rng
    )
    fast, theta = table2_record(study)
    ratings, participants, stimuli = study_tables(study)
    fit = table2_fit(rating_frame(ratings, participants, stimuli), "stimulus_modality").fit
    ct = fit.coef_table().set_index("term")
    for key, term in (("t2_modality", "modality"), ("t2_len", "modality:len_z")):
        assert fast[f"{key}_b"] == pytest.approx(ct.loc[term, "estimate"], rel=1e-6, abs=1e-8)
        assert fast[f"{key}_se"] == pytest.approx(ct.loc[term, "se"], rel=1e-5)
        assert fast[f"{key}_df"] == pytest.approx(ct.loc[term, "df"], rel=1e-4)
    assert theta is not None and theta.size == 3


def test_icc_diff_power_uses_the_permutation_spread():
    rng = np.random.default_rng(2)
    n = 4000
    se = np.full(n, 0.05)
    alt = {
        "rec:diff1": rng.normal(0.0, 0.05, n),
        "rec:se1_audio": se / math.sqrt(2),
        "rec:se1_text": se / math.sqrt(2),
        "perm": rng.normal(0.0, 0.05, 2 * n),
    }
    power, _, crit = icc_diff_power(alt, 0.05)
    assert crit == pytest.approx(1.96, rel=0.03) and power == pytest.approx(0.05, abs=0.012)
    alt["perm"] = rng.normal(0.0, 0.025, 2 * n)  # a permutation null half as wide: the test rejects more
    power, _, crit = icc_diff_power(alt, 0.05)
    assert crit == pytest.approx(0.98, rel=0.03) and power > 0.25


def test_icc_diff_power_uses_the_jackknife_calibration():
    """Jackknife test: critical |z| = t_{.975, df} x (jackknife SE / Wald SE); no permutation draws needed."""
    rng = np.random.default_rng(3)
    n = 4000
    alt = {"rec:diff1": rng.normal(0.0, 0.1, n), "rec:se1_audio": np.full(n, 0.05), "rec:se1_text": np.full(n, 0.05)}
    power, _, crit = icc_diff_power(alt, 0.05, (1.0 / math.sqrt(0.5), 30.0))  # the jackknife SE is the true 0.1
    assert crit == pytest.approx(2.042 * math.sqrt(2), rel=1e-3) and power == pytest.approx(0.05, abs=0.012)
    power, _, _ = icc_diff_power(alt, 0.05, (1.0, 30.0))  # an SE too small by sqrt(2): over-rejects
    assert power == pytest.approx(0.149, abs=0.02)  # P(|Z| > 1.44)
    with pytest.raises(ValueError, match="jackknife"):
        icc_diff_power(alt, 0.05)


def test_jackknife_calibration_is_the_analysis_test():
    """The planner's calibration studies record the SE and df of Table 4's jackknife test: the same numbers the
    analysis computes from the study's tables (no residual refits, so both are deterministic)."""
    from modprefs.plan.analysis import jackknife_difference_record
    from modprefs.plan.fastsim import simulate_study, study_tables
    from modprefs.plan.layout import balanced_layout, prism_like_lengths
    from modprefs.stats.reliability.icc import analysable_ratings
    from modprefs.stats.reliability.icc_difference import icc_difference_test

    rng = np.random.default_rng(5)
    study = simulate_study(
        SimulationParams(),
        balanced_layout(12, 8, 6, ("audio", "text"), rng),
        prism_like_lengths(12, rng),
        rng,
        attention=False,
    )
    fast = jackknife_difference_record(study, 0, rng)
    ratings, participants, stimuli = study_tables(study)
    frames = {c: analysable_ratings(ratings, participants, c, stimuli) for c in ("audio", "text")}
    slow = icc_difference_test(frames, n_noise=0, seed=1)["icc_2_1"]
    assert fast["jk_se"] == pytest.approx(math.sqrt(slow.variance), rel=1e-6)
    assert fast["jk_df"] == pytest.approx(slow.df, rel=1e-6)
    [res] = run_tasks(
        [Task("central", "icc_diff", SimulationParams(), DESIGN, dataclasses.replace(SETTINGS, icc_test="jackknife"))]
    )
    assert "perm" not in res and res["cal_jk_se"].size == 2 and np.isfinite(res["cal_jk_se"]).all()
    assert res["cal_wald_diff_se"].size == 2


def test_recommend_picks_the_cheapest_design_meeting_all():
    table = pd.DataFrame(
        {
            "prompts": [40, 40, 80],
            "raters": [10, 20, 10],
            "cost": [100.0, 200.0, 150.0],
            "ratings": [400, 800, 400],
            "meets_all": [False, True, True],
        }
    )
    assert recommend(table)["cost"] == 150.0
    assert recommend(table.assign(meets_all=False)) is None


def test_icc_design_standardises_trial_within_rows():
    rng = np.random.default_rng(3)
    study = simulate_study(
        SimulationParams(), balanced_layout(10, 6, 5, ("text",), rng), prism_like_lengths(10, rng), rng
    )
    d = icc_design(study.ratings["text"])
    assert d.terms == ("presented_first", "trial_z")
    assert d.X[:, 2].mean() == pytest.approx(0.0, abs=1e-12) and d.X[:, 2].std(ddof=1) == pytest.approx(1.0)


def test_calibration_designs_span_the_grid():
    """At most `limit` designs calibrate the interval: the smallest, the largest, and a maximin spread that
    reaches every dimension's extremes; a grid no larger than the limit is calibrated whole."""
    from modprefs.plan.grid import design_grid
    from modprefs.plan.intervals import calibration_designs

    grid = design_grid([50, 100], [20, 30, 40, 50, 60, 70], [10, 20], "both")
    sizes = np.array([[d.prompts, d.raters, d.trials] for d in grid], float)
    chosen = calibration_designs(sizes, 6)
    assert len(chosen) == 6 == len(set(chosen))
    assert int(np.argmin(sizes.prod(axis=1))) in chosen and int(np.argmax(sizes.prod(axis=1))) in chosen
    for j in range(3):
        assert set(sizes[chosen, j]) >= {sizes[:, j].min(), sizes[:, j].max()}, j
    assert calibration_designs(sizes[:4], 6) == [0, 1, 2, 3]
    assert calibration_designs(sizes, 6) == chosen  # deterministic


@pytest.mark.slow  # over 10 s on 2 cores: not in `make test-fast`
def test_uncalibrated_designs_take_the_ratio_model(tmp_path):
    """make_plan calibrates only the chosen designs; every design still gets an interval factor."""
    from modprefs.plan.grid import Costs, Targets
    from modprefs.plan.planner import make_plan
    from modprefs.plan.priors import paper_priors

    designs = [Design(12, r, 6, ("audio", "text")) for r in (8, 12, 16)]
    settings = dataclasses.replace(SETTINGS, n_sims=8, n_calibration=4, calibration_designs=2)
    priors = paper_priors(seed=1, n_boot=4)
    result = make_plan(
        priors,
        designs,
        Targets(ci_half_width=0.3, target_conditions=("audio",)),
        Costs(),
        settings,
        ("central",),
        cache_dir=tmp_path,
    )
    factors = result.table["interval_factor_audio"].to_numpy()
    assert np.isfinite(factors).all() and (factors > 0).all()
    cached = [dict(np.load(f)) for f in sorted(tmp_path.glob("*.npz"))]
    assert sum("cal_analysis:audio" in c for c in cached) == 2 and len(cached) == 3
