"""The crossed-jackknife test of the audio - text ICC difference (modprefs.stats.reliability.icc_difference).

Its size and power under several data-generating models are measured in benchmarks/icc_difference_null.py;
here: properties that hold exactly (sign under swapping, invariance to a linear rescaling of one
condition, which the participant permutation test lacks), a clear difference found, and the undefined cases.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from _ratings_helpers import make_assignments, make_stimuli
from modprefs.ratings.simulate import simulate_ratings
from modprefs.stats.reliability.icc import analysable_ratings
from modprefs.stats.reliability.icc_difference import icc_difference_test


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
    """stats.icc_test = jackknife: Table 4's ICC p-values are this test's; an unknown test is refused."""
    from modprefs.stats.reliability.icc_ci import icc_with_ci
    from modprefs.stats.tables.reliability_table import table4

    stimuli = make_stimuli(30, seed=4)
    assignments = make_assignments(stimuli, raters_per_condition=20, trials=10, seed=4)
    ratings, trials, participants, _ = simulate_ratings(stimuli, assignments, seed=5)
    icc = icc_with_ci(ratings, participants, "jackknife", 10, seed=3, stimuli=stimuli)
    kw = dict(
        trials=trials,
        assignments=assignments,
        participants=participants,
        stimuli=stimuli,
        n_boot_alpha=0,
        n_perm_alpha=0,
        seed=3,
    )
    jk = table4(icc, ratings, n_perm=0, icc_test="jackknife", n_noise=10, **kw).set_index("metric")
    expected = icc_difference_test(frames, n_noise=10, seed=3)
    for name, label in (("icc_2_1", "ICC(2,1)"), ("icc_2_k", "ICC(2,k)")):
        assert jk.loc[label, "p_value"] == pytest.approx(expected[name].p_value) and jk.loc[label, "n_perm"] == 0
    with pytest.raises(ValueError, match="icc_test"):
        table4(icc, ratings, n_perm=0, icc_test="bootstrap", **kw)
