"""The ``rater_types`` generating model of the benchmarks (benchmarks/tools/generators.py, issue #50): raters who
differ in how they use the scale and how many of their trials they rate, with the same law in both conditions."""

from __future__ import annotations

import numpy as np
import pytest

from support.benchmarks import bench_module


@pytest.fixture(scope="module")
def study():
    gen = bench_module("generators")
    stimuli, assignments = gen.study_design(40, 20, 10, seed=3)
    ratings, participants = gen.generate(gen.GeneratorParams(model="rater_types"), stimuli, assignments, seed=3)
    return gen, stimuli, assignments, ratings, participants


def test_ratings_are_on_the_scale_in_the_workflows_schema(study):
    _, _, _, ratings, participants = study
    assert {"participant_id", "condition", "prompt_id", "clip_id", "trial", "presented_first", "rating"} <= set(
        ratings.columns
    )
    assert ratings["rating"].between(1, 100).all() and (ratings["rating"] == ratings["rating"].round()).all()
    assert set(ratings["participant_id"]) <= set(participants["participant_id"])


def test_raters_skip_an_uneven_share_of_their_trials_in_whole_trials(study):
    _, _, assignments, ratings, _ = study
    assigned = assignments[assignments.trial > 0].groupby("participant_id").size()
    rated = ratings.groupby("participant_id")["trial"].nunique()
    share = 1 - rated / assigned.loc[rated.index]
    assert share.max() > 0.2 and share.min() < 0.1 and (rated >= 2).all()
    assert (ratings.groupby(["participant_id", "trial"]).size() == 2).all()  # both clips of a rated trial


def test_rater_types_and_the_tie_habit_show_in_the_ratings(study):
    _, _, _, ratings, _ = study
    per_rater = ratings.groupby("participant_id")["rating"]
    coarse = per_rater.apply(lambda r: bool((r % 10 == 0).all()))
    assert 0.05 < coarse.mean() < 0.6  # some raters rate in steps of 10, most do not
    assert (ratings["rating"] == 50).mean() > 0.1  # the tie-at-50 habit
    spread = per_rater.std()
    assert spread.max() / spread.min() > 3  # compressed against stretched raters


def test_both_conditions_follow_the_same_law(study):
    gen, stimuli, assignments, _, _ = study
    means, sds = [], []
    for seed in range(6):
        r, _ = gen.generate(
            gen.GeneratorParams(model="rater_types", mu_text=70.0, b_len_text=3.5), stimuli, assignments, seed
        )
        by = r.groupby("condition")["rating"]
        means.append(by.mean().to_numpy())
        sds.append(by.std().to_numpy())
    assert np.abs(np.diff(np.mean(means, axis=0))) < 3 and np.abs(np.diff(np.mean(sds, axis=0))) < 3
