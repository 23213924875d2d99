"""ICC confidence-interval methods (modprefs.stats.reliability.icc_ci): the crossed jackknife (default) and the
stimulus, prompt, two-way and parametric bootstraps.

Coverage itself is measured by benchmarks/validity/icc_coverage.py (too slow for a test).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.stats.mixed.reml import fit_crossed_intercepts
from modprefs.stats.reliability.icc import (
    CI_METHOD,
    ICC_COLUMNS,
    analysable_ratings,
    condition_design,
    fit_iccs,
    icc_for_design,
)
from modprefs.stats.reliability.icc_ci import (
    CI_METHODS,
    DEFAULT_CI_METHOD,
    RESAMPLING_METHODS,
    ci_method_label,
    icc_by_condition,
    icc_with_ci,
    interval_from_boot,
)
from modprefs.stats.reliability.icc_jackknife import jackknife_interval
from modprefs.stats.reliability.icc_resampling import (
    bootstrap_iccs,
    crossed_blups,
    jackknife_iccs,
    reflate,
    resample_clips_and_participants,
    resample_prompts,
    residual_bootstrap_iccs,
)
from modprefs.stats.reliability.rater_scaling import icc_k
from modprefs.study.design import make_assignments
from support.recovery_model import paper_stimuli

GAUSSIAN = dataclasses.replace(
    SimulationParams(),
    clip_ratings=False,
    tie_mode="threshold",
    clip_df=math.inf,
    resid_df=math.inf,
    resid_scale_cv=0.0,
    rho_clip_within_prompt_audio=0.0,
    rho_clip_within_prompt_text=0.0,
    rho_clip_modality=0.0,
)
# audio: the length effect counts as clip variance (len_z is not in the ICC model), rounding adds 1/12
GAUSSIAN_TRUTH = (GAUSSIAN.var_clip_audio + GAUSSIAN.b_len**2) / (
    GAUSSIAN.var_clip_audio + GAUSSIAN.b_len**2 + GAUSSIAN.var_participant_audio + GAUSSIAN.var_resid_audio + 1 / 12
)


def _simulate(n_prompts: int, raters: int, trials: int, seed: int, params: SimulationParams | None = None):
    stim = paper_stimuli(seed)
    prompts = list(dict.fromkeys(stim["prompt_id"]))[:n_prompts]
    stim = stim[stim["prompt_id"].isin(prompts)].reset_index(drop=True)
    assignments = make_assignments(prompts, raters, trials, seed=seed)
    ratings, _, participants, _ = simulate_ratings(stim, assignments, params or SimulationParams(), seed=seed)
    return ratings, participants, stim


@pytest.fixture(scope="module")
def small():
    return _simulate(30, 20, 8, seed=3)


@pytest.mark.parametrize("method", RESAMPLING_METHODS)
def test_deterministic_per_method_and_columns(small, method):
    ratings, participants, stim = small
    a = icc_with_ci(ratings, participants, method, n_boot=12, seed=7, stimuli=stim)
    b = icc_with_ci(ratings, participants, method, n_boot=12, seed=7, stimuli=stim)
    pd.testing.assert_frame_equal(a, b)
    assert list(a.columns) == ICC_COLUMNS
    assert list(a["condition"]) == ["audio", "text"]
    assert (a["ci_method"] == ci_method_label(method)).all()
    assert (a["n_boot"] == 12).all() and (a["n_boot_failed"] == 0).all()
    for stat in ("icc_2_1", "icc_2_k"):
        assert (a[f"{stat}_lo"] <= a[f"{stat}_hi"]).all()
        assert a[[f"{stat}_lo", f"{stat}_hi"]].apply(lambda s: s.between(0, 1)).all().all()
    c = icc_with_ci(ratings, participants, method, n_boot=12, seed=8, stimuli=stim)
    assert not np.allclose(a["icc_2_1_lo"], c["icc_2_1_lo"])
    pd.testing.assert_series_equal(a["icc_2_1"], c["icc_2_1"])  # the point estimate does not depend on the seed


def test_stimulus_method_is_the_papers_icc_by_condition(small):
    ratings, participants, stim = small
    a = icc_with_ci(ratings, participants, "stimulus", n_boot=15, seed=11, stimuli=stim)
    pd.testing.assert_frame_equal(a, icc_by_condition(ratings, participants, n_boot=15, seed=11, stimuli=stim))
    assert (a["ci_method"] == CI_METHOD).all()


def test_generic_stimulus_bootstrap_draws_as_icc_for_design(small):
    ratings, participants, _ = small
    design = condition_design(analysable_ratings(ratings, participants, "audio"))
    row = icc_for_design("audio", design, 20, np.random.default_rng(5))
    fit, _, icc1, icck = fit_iccs(design)
    boot, failed = bootstrap_iccs(design, fit, "stimulus", 20, np.random.default_rng(5))
    (lo1, hi1), (lok, hik) = interval_from_boot(np.array([icc1, icck]), boot)
    assert failed == 0
    np.testing.assert_allclose(
        [lo1, hi1, lok, hik], [row["icc_2_1_lo"], row["icc_2_1_hi"], row["icc_2_k_lo"], row["icc_2_k_hi"]], rtol=1e-12
    )


def test_two_way_draw_relabels_duplicated_participants_and_clips(small):
    ratings, participants, _ = small
    design = condition_design(analysable_ratings(ratings, participants, "audio"))
    rows, clip, part = resample_clips_and_participants(design, np.random.default_rng(1))
    # replay the two draws: clips first, then participants (one integers() call each)
    replay = np.random.default_rng(1)
    drawn_clips = replay.integers(0, design.n_clips, size=design.n_clips)
    drawn_parts = replay.integers(0, design.n_participants, size=design.n_participants)
    assert len(set(drawn_parts.tolist())) < design.n_participants  # some participant drawn more than once
    expected = Counter()
    for cc, c in enumerate(drawn_clips):
        for pp, p in enumerate(drawn_parts):
            for r in np.flatnonzero((design.clip == c) & (design.participant == p)):
                expected[(int(r), cc, pp)] += 1
    got = Counter(zip(rows.tolist(), clip.tolist(), part.tolist()))
    assert got == expected
    assert max(got.values()) == 1  # every (row, clip copy, participant copy) once
    # a participant drawn twice (with ratings of drawn clips) enters as two distinct participant levels
    dups = [p for p in np.flatnonzero(np.bincount(drawn_parts) >= 2) if np.isin(design.participant[rows], p).any()]
    assert dups
    codes = {int(code) for r, code in zip(rows, part) if design.participant[r] == dups[0]}
    assert codes == set(np.flatnonzero(drawn_parts == dups[0]).tolist())
    assert len(codes) >= 2
    assert np.array_equal(design.participant[rows], drawn_parts[part])
    assert np.array_equal(design.clip[rows], drawn_clips[clip])


def test_parametric_bootstrap_on_a_large_gaussian_design_covers_the_truth():
    ratings, participants, stim = _simulate(100, 60, 20, seed=21, params=GAUSSIAN)
    out = icc_with_ci(ratings, participants, "parametric", n_boot=99, seed=2, stimuli=stim, conditions=("audio",))
    row = out.iloc[0]
    assert row["n_boot_failed"] == 0
    assert row["icc_2_1_lo"] < GAUSSIAN_TRUTH < row["icc_2_1_hi"]
    assert row["icc_2_1_hi"] - row["icc_2_1_lo"] < 0.25
    assert abs(row["icc_2_1"] - GAUSSIAN_TRUTH) < 0.1


def test_two_way_intervals_wider_than_stimulus_only(small):
    """Observed property, not a theorem: resampling raters too widens the interval on average.

    On this design (30 prompts, 24 raters x 8 trials, default simulator, 39 resamples) the two-way
    interval was wider in 7 of 8 datasets checked (seeds 1-8; mean width 0.33 vs 0.24); a single
    dataset can go the other way, so only the mean over five datasets is asserted.
    benchmarks/validity/icc_coverage.py, 500 studies per setting: mean width .229 vs .175 (Gaussian LMM),
    .296 vs .224 (paper calibration)."""
    widths = {m: [] for m in ("stimulus", "two_way")}
    for seed in (1, 2, 3, 4, 5):
        ratings, participants, stim = _simulate(30, 24, 8, seed=seed)
        for m in widths:
            row = icc_with_ci(ratings, participants, m, n_boot=39, seed=seed, stimuli=stim, conditions=("audio",)).iloc[
                0
            ]
            widths[m].append(row["icc_2_1_hi"] - row["icc_2_1_lo"])
    assert np.mean(widths["two_way"]) > np.mean(widths["stimulus"])


def test_basic_interval_and_empty_condition(small):
    ratings, participants, stim = small
    out = icc_with_ci(
        ratings,
        participants,
        "parametric",
        n_boot=15,
        seed=1,
        stimuli=stim,
        conditions=("audio", "video"),
        interval="basic",
    )
    assert list(out.columns) == ICC_COLUMNS
    assert out["ci_method"].tolist() == [ci_method_label("parametric", "basic")] * 2
    audio, video = out.iloc[0], out.iloc[1]
    assert 0 <= audio["icc_2_1_lo"] <= audio["icc_2_1_hi"] <= 1
    assert video["n_ratings"] == 0 and math.isnan(video["icc_2_1"]) and "no analysable" in video["note"]
    # basic = 2 * estimate - reversed percentile quantiles
    boot = np.array([[0.2, 0.5], [0.3, 0.6], [0.4, 0.7], [np.nan, np.nan]])
    np.testing.assert_allclose(
        interval_from_boot(np.array([0.3, 0.6]), boot, 0.5, "basic"),
        2 * np.array([[0.3], [0.6]]) - interval_from_boot(np.array([0.3, 0.6]), boot, 0.5)[:, ::-1],
    )


def test_invalid_arguments(small):
    ratings, participants, _ = small
    with pytest.raises(ValueError, match="unknown CI method"):
        icc_with_ci(ratings, participants, "bca", n_boot=5, seed=0)
    with pytest.raises(ValueError, match="percentile or basic intervals, not 'bca'"):
        icc_with_ci(ratings, participants, "two_way", n_boot=5, seed=0, interval="bca")
    with pytest.raises(ValueError, match="logit-t intervals, not 'percentile'"):
        icc_with_ci(ratings, participants, "jackknife", n_boot=5, seed=0, interval="percentile")
    with pytest.raises(ValueError, match="n_boot"):
        icc_with_ci(ratings, participants, "two_way", n_boot=-1, seed=0)
    with pytest.raises(ValueError, match="ci_level"):
        icc_with_ci(ratings, participants, "two_way", n_boot=5, seed=0, ci_level=1.5)


# --- the crossed jackknife (the default) and its pieces --------------------------------------------


def test_default_method_is_auto_and_labels():
    """The default chooses per condition (tests/stats/reliability/test_icc_f_interval.py); on incomplete ratings
    (every simulated study here) it is the jackknife."""
    assert DEFAULT_CI_METHOD == "auto" and set(RESAMPLING_METHODS) < set(CI_METHODS)
    assert ci_method_label("jackknife").startswith("logit-t, crossed jackknife")
    assert ci_method_label("auto").startswith("auto: F-based")
    assert ci_method_label("auto").endswith(f"else {ci_method_label('jackknife')}")


def test_prompt_bootstrap_keeps_a_prompts_clips_together(small):
    ratings, participants, stim = small
    design = condition_design(analysable_ratings(ratings, participants, "audio", stim))
    assert design.n_prompts == stim["prompt_id"].nunique() and design.n_clips == 2 * design.n_prompts
    rows, clip = resample_prompts(design, np.random.default_rng(4))
    drawn = np.random.default_rng(4).integers(0, design.n_prompts, size=design.n_prompts)
    # every drawn prompt copy brings all its rows; each copy's two clips are two new levels
    assert (
        np.bincount(design.prompt[rows], minlength=design.n_prompts).tolist()
        == (
            np.bincount(drawn, minlength=design.n_prompts) * np.bincount(design.prompt, minlength=design.n_prompts)
        ).tolist()
    )
    assert clip.max() + 1 == 2 * design.n_prompts
    for c in np.unique(clip):
        assert len(set(design.clip[rows][clip == c].tolist())) == 1  # a new level is one original clip
    pairs = pd.DataFrame({"new": clip, "prompt": design.prompt[rows]}).drop_duplicates()
    assert (pairs.groupby("prompt")["new"].nunique() % 2 == 0).all()


def test_blups_solve_the_mixed_model_equations(small):
    ratings, participants, stim = small
    design = condition_design(analysable_ratings(ratings, participants, "text", stim))
    fit, *_ = fit_iccs(design)
    u, v, e = crossed_blups(design, fit)
    Z = np.zeros((design.y.size, design.n_clips + design.n_participants))
    Z[np.arange(design.y.size), design.clip] = 1
    Z[np.arange(design.y.size), design.n_clips + design.participant] = 1
    penalty = np.r_[
        np.full(design.n_clips, fit.var_resid / fit.var_g1), np.full(design.n_participants, fit.var_resid / fit.var_g2)
    ]
    b = np.linalg.solve(Z.T @ Z + np.diag(penalty), Z.T @ (design.y - design.X @ fit.beta))
    np.testing.assert_allclose(np.r_[u, v], b, atol=1e-6)
    np.testing.assert_allclose(e, design.y - design.X @ fit.beta - Z @ b, atol=1e-6)
    r = reflate(u, 7.0)
    assert abs(r.mean()) < 1e-12 and np.mean(r**2) == pytest.approx(7.0)


def test_jackknife_refits_leave_one_unit_out(small):
    ratings, participants, stim = small
    design = condition_design(analysable_ratings(ratings, participants, "audio", stim))
    fit, k, icc1, _ = fit_iccs(design)
    jp, jr = jackknife_iccs(design, fit, "prompt"), jackknife_iccs(design, fit, "participant")
    assert jp.shape == (design.n_prompts, 2) and jr.shape == (design.n_participants, 2)
    keep = design.participant != 3
    f = fit_crossed_intercepts(design.y[keep], design.X[keep], design.clip[keep], design.participant[keep])
    assert jr[3, 0] == pytest.approx(f.var_g1 / (f.var_g1 + f.var_g2 + f.var_resid), rel=1e-6)
    with pytest.raises(ValueError, match="jackknife unit"):
        jackknife_iccs(design, fit, "clip")


def test_jackknife_interval_variance_decomposition(small):
    ratings, participants, stim = small
    design = condition_design(analysable_ratings(ratings, participants, "audio", stim))
    fit, k, icc1, icck = fit_iccs(design)
    jk = jackknife_interval(design, fit, icc1, 30, np.random.default_rng(2))
    logit = lambda x: np.log(x / (1 - x))  # noqa: E731
    for values, v in (
        (jackknife_iccs(design, fit, "prompt")[:, 0], jk.var_prompt),
        (jackknife_iccs(design, fit, "participant")[:, 0], jk.var_participant),
    ):
        lv = logit(values)
        assert v == pytest.approx((lv.size - 1) / lv.size * np.sum((lv - lv.mean()) ** 2))
    noise = residual_bootstrap_iccs(design, fit, 30, np.random.default_rng(2))[:, 0]
    assert jk.var_noise == pytest.approx(np.var(logit(noise), ddof=1))
    assert jk.variance == pytest.approx(
        max(jk.var_prompt + jk.var_participant - jk.var_noise, jk.var_prompt, jk.var_participant)
    )
    # the noise is counted once: it is a real, non-negligible part of both one-way variances
    assert 0 < jk.var_noise < min(jk.var_prompt, jk.var_participant) * 1.5
    from scipy import stats

    q = stats.t.ppf(0.975, jk.df)
    assert logit(jk.hi) - logit(icc1) == pytest.approx(q * np.sqrt(jk.variance))
    assert logit(icc1) - logit(jk.lo) == pytest.approx(q * np.sqrt(jk.variance))
    row = icc_with_ci(ratings, participants, "jackknife", n_boot=30, seed=5, stimuli=stim).set_index("condition")
    audio = row.loc["audio"]
    np.testing.assert_allclose(
        [audio.icc_2_k_lo, audio.icc_2_k_hi],
        icc_k(np.array([audio.icc_2_1_lo, audio.icc_2_1_hi]), audio.k_effective),
    )
    assert icc_k(audio.icc_2_1, audio.k_effective) == pytest.approx(audio.icc_2_k)


def test_jackknife_interval_is_undefined_with_one_prompt_left(small):
    ratings, participants, stim = small
    first = stim["prompt_id"].iloc[0]
    one = ratings[ratings["prompt_id"].isin([first, "attn"])]
    out = icc_with_ci(one, participants, "jackknife", n_boot=5, seed=0, stimuli=stim, conditions=("audio",)).iloc[0]
    assert math.isnan(out["icc_2_1_lo"]) and out["note"]
