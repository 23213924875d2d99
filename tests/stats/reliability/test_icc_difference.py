"""The tests of the audio - text ICC difference (modprefs.stats.reliability.icc_difference): the crossed-jackknife
t test and its calibrated version (Table 4's default).

Their size and power under several data-generating models are measured in benchmarks/validity/icc_difference_null.py;
here: properties that hold exactly (sign under swapping, invariance to a linear rescaling of one
condition, which the participant permutation test lacks), a clear difference found, the undefined cases, and the
calibration's parts (its unbiased sampled jackknife, its null world at equal ICCs).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from modprefs.ratings.simulate import simulate_ratings
from modprefs.stats.reliability.icc import analysable_ratings, fit_iccs
from modprefs.stats.reliability.icc_difference import (
    _condition_parts,
    _sampled_jackknife_variance,
    calibrated_tests,
    calibration,
    difference_tests,
    draw_null,
    icc_difference_test,
    null_world,
)
from modprefs.stats.reliability.jackknife_excess import calibrated_variance
from modprefs.stats.reliability.resampling import jackknife_variance
from support.ratings_helpers import make_assignments, make_stimuli


@pytest.fixture(scope="module")
def frames():
    stimuli = make_stimuli(30, seed=4)
    assignments = make_assignments(stimuli, raters_per_condition=20, trials=10, seed=4)
    ratings, _, participants, _ = simulate_ratings(stimuli, assignments, seed=5)
    return {c: analysable_ratings(ratings, participants, c, stimuli) for c in ("audio", "text")}


def test_swapping_the_conditions_flips_the_sign(frames):
    a = icc_difference_test(frames, n_noise=20, seed=1)
    b = icc_difference_test({"audio": frames["text"], "text": frames["audio"]}, n_noise=20, seed=1)
    for name in ("icc_2_1", "icc_2_k"):
        assert a[name].n_prompts == 30 and math.isfinite(a[name].t)
        assert a[name].difference == pytest.approx(-b[name].difference)
        assert a[name].var_prompt == pytest.approx(b[name].var_prompt)  # the prompt part is symmetric


def test_invariant_to_rescaling_one_condition(frames):
    """An ICC does not change when one condition's ratings are multiplied and shifted; nor does this test."""
    before = icc_difference_test(frames, n_noise=20, seed=1)
    scaled = {**frames, "text": frames["text"].assign(rating=2.5 * frames["text"]["rating"] + 40.0)}
    after = icc_difference_test(scaled, n_noise=20, seed=1)
    for name in ("icc_2_1", "icc_2_k"):
        assert after[name].text == pytest.approx(before[name].text, rel=1e-5)
        assert after[name].t == pytest.approx(before[name].t, rel=1e-4)
        assert after[name].p_value == pytest.approx(before[name].p_value, rel=1e-4, abs=1e-8)


@pytest.mark.slow  # over 5 s on 2 cores: not in `make test-fast`
def test_a_clear_difference_is_found(frames):
    """Audio ratings given a large extra clip effect: a far higher audio ICC, a small p."""
    rng = np.random.default_rng(0)
    clips = frames["audio"]["clip_id"].astype(str)
    boost = dict(zip(sorted(clips.unique()), rng.normal(0, 60, clips.nunique())))
    strong = frames["audio"].assign(rating=frames["audio"]["rating"] + clips.map(boost))
    res = icc_difference_test({"audio": strong, "text": frames["text"]}, n_noise=20, seed=1)
    assert res["icc_2_1"].difference > 0.3 and res["icc_2_1"].p_value < 0.01, res["icc_2_1"]
    same = icc_difference_test({"audio": frames["audio"], "text": frames["audio"]}, n_noise=20, seed=1)
    assert same["icc_2_1"].t == 0 and same["icc_2_1"].p_value == pytest.approx(1.0)


def test_undefined_cases_say_why(frames):
    one_prompt = {c: f[f["prompt_id"] == f["prompt_id"].iloc[0]] for c, f in frames.items()}
    res = icc_difference_test(one_prompt, n_noise=5, seed=1)
    assert math.isnan(res["icc_2_1"].p_value) and res["icc_2_1"].note
    # one participant in a condition (a browser pilot): no model to fit, so NaN with the reason, not an error
    one_rater = {
        **frames,
        "text": frames["text"][frames["text"]["participant_id"] == frames["text"]["participant_id"].iloc[0]],
    }
    res = icc_difference_test(one_rater, n_noise=5, seed=1)
    assert all(math.isnan(r.p_value) and "text has fewer" in r.note for r in res.values())
    with pytest.raises(ValueError, match="both conditions"):
        icc_difference_test({"audio": frames["audio"], "text": frames["text"].iloc[:0]}, n_noise=5, seed=1)


def test_table4_reports_the_chosen_icc_test(frames):
    """stats.icc_test = jackknife / calibrated: Table 4's ICC p-values are that test's, each row says which test and
    interval it used and what they resampled; an unknown test is refused."""
    from modprefs.stats.reliability.icc_ci import icc_with_ci
    from modprefs.stats.tables.reliability_table import ICC_TESTS, TABLE4_COLUMNS, table4, table4_title

    stimuli = make_stimuli(30, seed=4)
    assignments = make_assignments(stimuli, raters_per_condition=20, trials=10, seed=4)
    ratings, trials, participants, _ = simulate_ratings(stimuli, assignments, seed=5)
    icc = icc_with_ci(ratings, participants, "jackknife", 10, seed=3, stimuli=stimuli)
    kw = dict(
        trials=trials,
        assignments=assignments,
        participants=participants,
        stimuli=stimuli,
        n_boot_alpha=20,
        n_perm_alpha=19,
        seed=3,
        ci_level=0.9,
    )
    jk = table4(icc, ratings, n_perm=0, icc_test="jackknife", n_noise=10, **kw)
    assert list(jk.columns) == TABLE4_COLUMNS
    jk = jk.set_index("metric")
    expected = icc_difference_test(frames, n_noise=10, seed=3)
    for name, label in (("icc_2_1", "ICC(2,1)"), ("icc_2_k", "ICC(2,k)")):
        row = jk.loc[label]
        assert row["p_value"] == pytest.approx(expected[name].p_value) and row["n_perm_participants"] == 0
        assert row["test"] == ICC_TESTS["jackknife"] and row["n_jackknife_noise_refits"] == 10
        assert row["n_null_studies"] == 0 and row["n_boot_alpha_stimuli"] == 0 and "jackknife" in row["ci_method"]
    alpha = jk.loc["Krippendorff's alpha (cont.)"]
    assert alpha["ci_level"] == 0.9 and alpha["n_boot_alpha_stimuli"] == 20 and alpha["n_perm_participants"] == 19
    assert "stimulus bootstrap" in alpha["ci_method"] and "clip_id" in alpha["ci_method"]
    assert "studentized" in alpha["test"] and alpha["n_jackknife_noise_refits"] == 0
    title = table4_title("Table 4", jk.reset_index(), icc, 0.9)
    assert "90 %" in title and ICC_TESTS["jackknife"] in title and "studentized" in title and "20 resamples" in title
    with pytest.raises(ValueError, match="icc_test"):
        table4(icc, ratings, n_perm=0, icc_test="bootstrap", **kw)


@pytest.mark.slow  # the calibration's null studies: ~10 s on 2 cores
def test_table4_calibrated_is_the_default_and_says_so(frames):
    from modprefs.stats.reliability.icc_ci import icc_with_ci
    from modprefs.stats.tables.reliability_table import ICC_TESTS, table4

    stimuli = make_stimuli(30, seed=4)
    assignments = make_assignments(stimuli, raters_per_condition=20, trials=10, seed=4)
    ratings, trials, participants, _ = simulate_ratings(stimuli, assignments, seed=5)
    icc = icc_with_ci(ratings, participants, "jackknife", 10, seed=3, stimuli=stimuli)
    t4 = table4(icc, ratings, trials, assignments, participants, stimuli, 0, 0, 0, seed=3, n_noise=10)
    t4 = t4.set_index("metric")
    expected = icc_difference_test(frames, n_noise=10, seed=3, method="calibrated")
    for name, label in (("icc_2_1", "ICC(2,1)"), ("icc_2_k", "ICC(2,k)")):
        assert t4.loc[label, "p_value"] == pytest.approx(expected[name].p_value)
        assert t4.loc[label, "test"] == ICC_TESTS["calibrated"] and t4.loc[label, "n_null_studies"] > 0


def test_sampled_jackknife_variance_is_the_jackknife_variance_on_every_unit():
    rng = np.random.default_rng(3)
    loo = rng.normal(size=(17, 2))
    full = _sampled_jackknife_variance(loo, 17)
    for j in range(2):
        assert full[j] == pytest.approx(jackknife_variance(loo[:, j])[0], rel=1e-12)
    # a subsample is unbiased for it: the mean over many random subsets of 5
    subs = [_sampled_jackknife_variance(loo[rng.choice(17, 5, replace=False)], 17) for _ in range(20000)]
    assert np.mean(subs, axis=0) == pytest.approx(full, rel=0.03)


@pytest.fixture(scope="module")
def parts(frames):
    rng = np.random.default_rng(0)
    return {c: _condition_parts(frames[c], 10, rng) for c in ("audio", "text")}


def test_null_world_has_equal_iccs_and_the_study_design(parts):
    world = null_world(parts)
    sims = [draw_null(world, np.random.default_rng(i)) for i in range(3)]
    for c in ("audio", "text"):
        d, fit = world.designs[c], world.fits[c]
        assert all(y[c].shape == d.y.shape for y in sims)
        var_clip = np.mean(np.concatenate(list(world.effects[c].values())) ** 2)
        icc = var_clip / (var_clip + fit.var_g2 + fit.var_resid)
        assert icc == pytest.approx(np.mean([p.estimates[0] for p in parts.values()]), rel=0.05)


def test_a_null_world_without_prompt_resampling_keeps_each_prompts_clip_effects(parts):
    """resample_prompts=False: every clip keeps its own null-world effect, so with the participant and residual
    variances set to 0 each draw is the fixed effects plus those effects; resampled, the clips' effects move."""
    world = null_world(parts)
    still = dataclasses.replace(
        world, fits={c: dataclasses.replace(f, var_g2=0.0, var_resid=0.0) for c, f in world.fits.items()}
    )
    for i in range(2):
        held, moved = draw_null(still, np.random.default_rng(i), False), draw_null(still, np.random.default_rng(i))
        for c in ("audio", "text"):
            d = still.designs[c]
            u = np.zeros(d.n_clips)
            for g, codes in still.clips[c].items():
                u[codes] = still.effects[c][g]
            np.testing.assert_allclose(held[c], d.X @ still.fits[c].beta + u[d.clip])
            assert not np.allclose(moved[c], held[c])


def test_calibration_corrects_the_variance_and_says_what_it_used(parts):
    cal = calibration(parts, np.random.default_rng(1), n_replicates=3, n_null=10)
    assert cal.n_replicates == 3 and cal.n_null == 13 and np.isfinite(cal.expected_variance).all()
    base = difference_tests(parts)
    out = calibrated_tests(base, cal)
    for j, s in enumerate(("icc_2_1", "icc_2_k")):
        e, n, v = cal.expected_variance[j], cal.null_variance[j], base[s].variance
        assert out[s].variance == pytest.approx(max((v - (e - n) + v * n / e) / 2, v * n / e))
        assert out[s].parts["variance_jackknife"] == v and out[s].parts["df_jackknife"] == base[s].df
        spread = cal.expected_variance_var[j]
        assert spread > 0 and out[s].parts["null_expected_variance_var"] == spread
        assert out[s].df == calibrated_variance(v, base[s].df, e, n, cal.n_null, spread)[1] < base[s].df
        assert out[s].p_value == pytest.approx(2 * stats.t.sf(abs(out[s].t), out[s].df))
        assert 0 < out[s].p_value <= 1 and out[s].difference == base[s].difference
    undefined = calibrated_tests(base, type(cal)(np.full(2, np.nan), np.full(2, np.nan), 0, 0, "no null world"))
    assert undefined["icc_2_1"].p_value == base["icc_2_1"].p_value and "not calibrated" in undefined["icc_2_1"].note


@pytest.mark.slow  # two calibrated tests: ~15 s on 2 cores
def test_calibrated_test_is_invariant_to_rescaling_one_condition(frames):
    opts = dict(n_noise=10, seed=2, method="calibrated", n_replicates=3, n_null=20)
    before = icc_difference_test(frames, **opts)
    scaled = {**frames, "text": frames["text"].assign(rating=2.5 * frames["text"]["rating"] + 40.0)}
    after = icc_difference_test(scaled, **opts)
    for name in ("icc_2_1", "icc_2_k"):
        assert after[name].variance == pytest.approx(before[name].variance, rel=1e-3)
        assert after[name].p_value == pytest.approx(before[name].p_value, rel=1e-3, abs=1e-6)


def test_the_planner_plans_for_the_calibrated_test():
    """`modprefs plan` with stats.icc_test = calibrated records the calibrated test's SE and df (the planned power
    mimics the test Table 4 will run); the SE is the calibrated variance's."""
    from modprefs.plan.analysis import jackknife_difference_record
    from modprefs.plan.fastsim import simulate_study
    from modprefs.plan.layout import balanced_layout, prism_like_lengths
    from modprefs.ratings.simulation.params import SimulationParams

    rng = np.random.default_rng(5)
    layout = balanced_layout(12, 8, 6, ("audio", "text"), rng)
    study = simulate_study(SimulationParams(), layout, prism_like_lengths(12, rng), rng, attention=False)
    plain = jackknife_difference_record(study, 0, np.random.default_rng(1))
    calibrated = jackknife_difference_record(study, 0, np.random.default_rng(1), "calibrated")
    assert np.isfinite([calibrated["jk_se"], calibrated["jk_df"]]).all()
    assert calibrated["jk_df"] < plain["jk_df"] and calibrated["jk_se"] != plain["jk_se"]


def test_the_raters_null_world_keeps_each_raters_scale_and_the_icc(parts):
    """The ``raters`` null world draws each simulated rater's residual scale from the study's raters': its pooled
    residual variance (so its ICC) is the Gaussian world's, its raters differ in noise as the study's do."""
    gaussian, raters = null_world(parts), null_world(parts, "raters")
    assert gaussian.raters is None
    for c in ("audio", "text"):
        scales = raters.raters[c].scales
        assert scales.shape == (raters.designs[c].n_participants,) and np.mean(scales**2) == pytest.approx(1.0)
        assert 0.3 < raters.raters[c].noise_factor <= 1.0
    # the simulator's raters differ in their noise (resid_scale_cv): the study's scales spread, the draws follow
    assert np.std(raters.raters["audio"].scales) > 0.1
    # with the clip and rater effects zeroed, what is left is each simulated rater's residuals
    quiet = {
        "effects": {c: {g: 0 * x for g, x in e.items()} for c, e in raters.effects.items()},
        "fits": {c: dataclasses.replace(f, var_g2=0.0) for c, f in raters.fits.items()},
    }
    d, fit = raters.designs["audio"], raters.fits["audio"]
    n_j = np.bincount(d.participant)

    def rater_log_spread(world) -> tuple[float, float]:
        spread, pooled = [], []
        for i in range(40):
            e = draw_null(world, np.random.default_rng(i))["audio"] - d.X @ fit.beta
            spread.append(np.std(np.log(np.bincount(d.participant, e * e) / n_j)))
            pooled.append(np.mean(e * e))
        return float(np.mean(spread)), float(np.mean(pooled))

    spread_r, pooled_r = rater_log_spread(dataclasses.replace(raters, **quiet))
    spread_g, pooled_g = rater_log_spread(dataclasses.replace(gaussian, **quiet))
    assert spread_r > spread_g + 0.1, (spread_r, spread_g)
    factor = raters.raters["audio"].noise_factor
    assert pooled_r == pytest.approx(factor**2 * pooled_g, rel=0.1) and pooled_g == pytest.approx(
        fit.var_resid, rel=0.1
    )
    # with the slopes' interaction back in, the raters world's ICC is the Gaussian world's (the null's ICC)
    iccs = {}
    for name, world in (("gaussian", gaussian), ("raters", raters)):
        ys = [draw_null(world, np.random.default_rng(100 + i))["audio"] for i in range(30)]
        iccs[name] = np.mean([fit_iccs(dataclasses.replace(d, y=y))[2] for y in ys])
    assert iccs["raters"] == pytest.approx(iccs["gaussian"], abs=0.03), iccs
    with pytest.raises(ValueError, match="unknown null model"):
        calibration(parts, np.random.default_rng(0), null_model="student")
