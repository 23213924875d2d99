"""The simulated rater panel on the study's rating scale (study.scale, modprefs.scale)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.scale import PAPER_SCALE, RatingScale, parse_scale_arg
from support.ratings_helpers import make_assignments, make_stimuli


@pytest.fixture(scope="module")
def design():
    stim = make_stimuli(16)
    return stim, make_assignments(stim, raters_per_condition=12, trials=8)


@pytest.fixture(scope="module")
def paper(design):
    return simulate_ratings(*design, SimulationParams(), seed=7)


def test_paper_scale_is_the_default_and_unchanged(design, paper):
    explicit = simulate_ratings(*design, SimulationParams(), seed=7, scale=PAPER_SCALE)
    for a, b in zip(paper, explicit):
        pd.testing.assert_frame_equal(a, b)
    assert pd.api.types.is_integer_dtype(paper[0]["rating"])


def test_five_point_scale(design, paper):
    tables = simulate_ratings(*design, SimulationParams(), seed=7, scale=RatingScale(1, 5, 1, "Bad", "Excellent"))
    ratings, trials, parts, truth = tables
    assert pd.api.types.is_integer_dtype(ratings["rating"])
    assert set(ratings["rating"]) <= {1, 2, 3, 4, 5} and ratings["rating"].nunique() >= 3
    audio = ratings["condition"] == "audio"
    assert set(ratings.loc[audio, "audio_quality"].astype(int)) <= {1, 2, 3, 4, 5}
    assert ratings.loc[~audio, "audio_quality"].isna().all()
    # the mapping runs after every random draw: the same trials, participants and truth, ratings mapped
    for a, b in zip(paper[1:], tables[1:]):
        pd.testing.assert_frame_equal(a, b)
    expected = RatingScale(1, 5, 1).from_paper_units(paper[0]["rating"])
    np.testing.assert_array_equal(ratings["rating"].to_numpy(float), expected)


def test_preference_is_monotone_in_mapped_ratings(design):
    ratings, trials, _, _ = simulate_ratings(*design, SimulationParams(), seed=7, scale=parse_scale_arg("1:5"))
    wide = (
        ratings[ratings["trial"] > 0]
        .assign(resp=lambda d: d["clip_id"].str[-1])
        .pivot_table(index=["participant_id", "trial"], columns="resp", values="rating")
        .reset_index()
    )
    m = trials[trials["trial"] > 0].merge(wide, on=["participant_id", "trial"])
    assert (m.loc[m["preference"] == "0", "0"] >= m.loc[m["preference"] == "0", "1"]).all()
    assert (m.loc[m["preference"] == "1", "1"] >= m.loc[m["preference"] == "1", "0"]).all()


def test_half_point_scale_from_zero(design):
    scale = RatingScale(0, 10, 0.5)
    ratings = simulate_ratings(*design, SimulationParams(), seed=7, scale=scale)[0]
    assert scale.on_scale(ratings["rating"]).all()
    assert (ratings["rating"] % 1 == 0.5).any()
    aq = ratings.loc[ratings["condition"] == "audio", "audio_quality"].to_numpy(float)
    assert scale.on_scale(aq).all()


def test_unclipped_mode_rounds_to_the_step_without_clipping(design):
    params = SimulationParams(clip_ratings=False, tie_mode="threshold")
    paper = simulate_ratings(*design, params, seed=3)[0]
    mapped = simulate_ratings(*design, params, seed=3, scale=RatingScale(0, 10, 0.5))[0]
    raw = RatingScale(0, 10, 0.5).from_paper_units(paper["rating"], snap=False)
    np.testing.assert_allclose(mapped["rating"], np.round(raw * 2) / 2)
    assert (paper["rating"] > 100).any() == (mapped["rating"] > 10).any()
