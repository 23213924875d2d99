"""The planner's fast simulator and fast analysis against the real ones (modprefs.plan.fastsim/analysis/layout)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from modprefs.plan.analysis import icc_design, study_record
from modprefs.plan.fastsim import simulate_study, study_tables
from modprefs.plan.layout import balanced_layout, layout_from_assignments, prism_like_lengths
from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.stats.reliability.icc import analysable_ratings, condition_design, fit_iccs
from modprefs.study.design import make_assignments

P, R, T, N = 24, 14, 8, 40
KEYS = ("icc1", "icck", "k", "mean_rating")


def _stimuli(lengths: np.ndarray) -> pd.DataFrame:
    rows = []
    for i, (a, b) in enumerate(lengths):
        for r, n in enumerate((a, b)):
            rows.append(
                {
                    "prompt_id": f"q{i:03d}",
                    "clip_id": f"q{i:03d}_{r}",
                    "response": r,
                    "n_chars": int(n),
                    "duration_s": n / 15,
                }
            )
    return pd.DataFrame(rows)


def _slow(params: SimulationParams, seed: int) -> dict[str, float]:
    """The real simulator and the real ICC analysis on one study."""
    rng = np.random.default_rng([seed, 1])
    stim = _stimuli(prism_like_lengths(P, rng))
    prompts = list(dict.fromkeys(stim["prompt_id"]))
    ratings, _, participants, _ = simulate_ratings(stim, make_assignments(prompts, R, T, seed=seed), params, seed=seed)
    out = {}
    for c in ("audio", "text"):
        df = analysable_ratings(ratings, participants, c, stim)
        _, k, icc1, icck = fit_iccs(condition_design(df))
        out.update(
            {f"icc1_{c}": icc1, f"icck_{c}": icck, f"k_{c}": k, f"mean_rating_{c}": pd.to_numeric(df["rating"]).mean()}
        )
    return out


def _fast(params: SimulationParams, seed: int) -> dict[str, float]:
    """The fast simulator (with attention failures, as simulate_ratings) on the same kind of study."""
    rng = np.random.default_rng([seed, 2])
    lengths = prism_like_lengths(P, rng)
    layout = balanced_layout(P, R, T, ("audio", "text"), rng)
    return study_record(simulate_study(params, layout, lengths, rng, attention=True), table2=False)


@pytest.fixture(scope="module")
def slow_runs() -> pd.DataFrame:
    return pd.DataFrame([_slow(SimulationParams(), s) for s in range(N)])


def _z(a: pd.Series, b: pd.Series) -> float:
    return float((a.mean() - b.mean()) / math.sqrt(a.var() / len(a) + b.var() / len(b)))


def test_fast_simulator_gives_the_distribution_of_simulate_ratings(slow_runs):
    """Means within 4 Monte-Carlo SEs and SDs within a factor 1.5, for every analysed quantity."""
    fast = pd.DataFrame([_fast(SimulationParams(), 1000 + s) for s in range(N)])
    for c in ("audio", "text"):
        for key in KEYS:
            col = f"{key}_{c}"
            assert abs(_z(fast[col], slow_runs[col])) < 4, (col, fast[col].mean(), slow_runs[col].mean())
            if key != "k":
                assert 1 / 1.5 < fast[col].std() / slow_runs[col].std() < 1.5, col


def test_the_comparison_detects_a_wrong_simulator(slow_runs):
    """Negative control: the same comparison flags a fast simulator with 3x the audio clip variance."""
    wrong = dataclasses.replace(SimulationParams(), var_clip_audio=3 * SimulationParams().var_clip_audio)
    fast = pd.DataFrame([_fast(wrong, 1000 + s) for s in range(N)])
    assert abs(_z(fast["icc1_audio"], slow_runs["icc1_audio"])) > 4


def test_balanced_layout_is_balanced_and_counterbalanced():
    rng = np.random.default_rng(3)
    layout = balanced_layout(30, 17, 12, ("audio", "text"), rng)
    for lay in layout.conditions.values():
        counts = np.bincount(lay.prompt, minlength=30)
        assert counts.max() - counts.min() <= 1
        for p in range(17):
            mine = lay.prompt[lay.participant == p]
            assert len(set(mine)) == len(mine) == 12
            assert sorted(lay.trial[lay.participant == p]) == list(range(1, 13))
        for q in range(30):
            f = lay.first[lay.prompt == q]
            assert abs(int((f == 0).sum()) - int((f == 1).sum())) <= 1
    a, t = layout.conditions["audio"], layout.conditions["text"]
    assert not np.array_equal(a.prompt, t.prompt)  # conditions laid out independently


def test_balanced_layout_rejects_more_trials_than_prompts():
    with pytest.raises(ValueError, match="trials per participant"):
        balanced_layout(5, 4, 6, ("audio",), np.random.default_rng(0))


def test_layout_from_assignments_round_trip():
    prompts = [f"q{i:03d}" for i in range(10)]
    asg = make_assignments(prompts, 6, 5, seed=2)
    layout = layout_from_assignments(asg, prompts)
    assert layout.max_trial == 5 and layout.n_prompts == 10
    a = layout.conditions["audio"]
    rated = asg[(asg["condition"] == "audio") & (asg["trial"] > 0)].sort_values(["participant_id", "trial"])
    assert list(a.prompt) == [prompts.index(p) for p in rated["prompt_id"]]
    assert list(a.first) == list(rated["first_clip"])
    with pytest.raises(ValueError, match="not in the stimuli"):
        layout_from_assignments(asg, prompts[:5])


def test_fast_analysis_equals_the_analysis_on_the_same_ratings():
    """study_tables -> condition_design gives the same model and ICCs as icc_design on the arrays."""
    rng = np.random.default_rng(5)
    study = simulate_study(
        SimulationParams(), balanced_layout(16, 10, 8, ("audio", "text"), rng), prism_like_lengths(16, rng), rng
    )
    ratings, participants, stimuli = study_tables(study)
    for c in ("audio", "text"):
        fast_design = icc_design(study.ratings[c])
        slow_design = condition_design(analysable_ratings(ratings, participants, c, stimuli))
        # the same prompts (the jackknife's unit): equal counts and the same partition of the ratings by prompt
        assert fast_design.n_prompts == slow_design.n_prompts > 0
        assert sorted(np.bincount(fast_design.prompt)) == sorted(np.bincount(slow_design.prompt))
        fast, slow = fit_iccs(fast_design), fit_iccs(slow_design)
        assert fast[1:] == pytest.approx(slow[1:], rel=1e-6)
        assert fast[0].var_g1 == pytest.approx(slow[0].var_g1, rel=1e-6)


def test_simulation_is_deterministic_and_seed_dependent():
    def run(seed):
        rng = np.random.default_rng(seed)
        return study_record(
            simulate_study(
                SimulationParams(), balanced_layout(12, 8, 6, ("audio", "text"), rng), prism_like_lengths(12, rng), rng
            )
        )

    assert run(4) == run(4)
    assert run(4) != run(5)
