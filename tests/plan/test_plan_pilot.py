"""Pilot priors: reading and checking a pilot directory, and the simulator refitted to it."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pandas as pd
import pytest

from modprefs.errors import UserInputError
from modprefs.plan.errors import PlanInputError
from modprefs.plan.pilot import attrition_counts, fit_pilot, pilot_arrays, read_pilot
from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.ratings.sources import parse_column_map
from support.ratings_helpers import make_assignments, make_stimuli, write_tables

TRUTH = dataclasses.replace(
    SimulationParams(), var_clip_audio=1800.0, var_clip_text=700.0, var_resid_audio=800.0, intercept=70.0
)


@pytest.fixture()
def pilot(tmp_path):
    stim = make_stimuli(12, seed=2)
    ratings, trials, participants, _ = simulate_ratings(stim, make_assignments(stim, 10, 6, seed=3), TRUTH, seed=4)
    write_tables(tmp_path / "pilot", ratings, trials, participants)
    stim[["clip_id", "prompt_id", "n_chars"]].to_csv(tmp_path / "clips.csv", index=False)
    return tmp_path


def test_read_pilot_and_its_arrays(pilot):
    p = read_pilot(pilot / "pilot", pilot / "clips.csv")
    arrays = pilot_arrays(p)
    passed = set(p.participants.loc[p.participants["passed_attention"], "participant_id"])
    for c, r in arrays.ratings.items():
        rows = p.ratings[
            (p.ratings["condition"] == c) & (p.ratings["trial"] >= 1) & p.ratings["participant_id"].isin(passed)
        ]
        assert r.y.size == len(rows) and r.y.sum() == rows["rating"].sum()
        assert r.tie.size == r.y.size // 2
        lay = arrays.layout.conditions[c]
        assert lay.trial.size == r.y.size // 2
    assert arrays.lengths.shape == (12, 2)
    counts = attrition_counts(p)
    assert counts["audio"]["recruited"] == 10 and counts["audio"]["passed"] + counts["audio"]["failed"] == 10


@pytest.mark.parametrize(
    "corrupt, match",
    [
        (lambda d: ((d / "participants.csv").unlink(), (d / "trials.csv").unlink()), "no passed_attention"),
        (
            lambda d: pd.read_csv(d / "ratings.csv").drop(columns="trial").to_csv(d / "ratings.csv", index=False),
            r"ratings \(ratings.csv\) have no trial column",
        ),
        (
            lambda d: (
                pd.read_csv(d / "ratings.csv")
                .assign(rating=lambda x: x["rating"].astype(object).where(x.index != 5, "high"))
                .to_csv(d / "ratings.csv", index=False)
            ),
            "ratings.csv row 7, column rating: 'high'",
        ),
        (
            lambda d: (
                pd.read_csv(d / "ratings.csv")
                .assign(condition=lambda x: x["condition"].where(x.index != 3, "video"))
                .to_csv(d / "ratings.csv", index=False)
            ),
            "ratings.csv row 5, column condition: 'video'",
        ),
        (
            lambda d: pd.read_csv(d / "participants.csv").iloc[1:].to_csv(d / "participants.csv", index=False),
            r"trials.csv row 2, column participant_id: unknown participant .* \(not in participants.csv\)",
        ),
        (lambda d: shutil.rmtree(d), "does not exist"),
    ],
)
def test_bad_pilots_are_named_by_file_row_and_column(pilot, corrupt, match):
    corrupt(pilot / "pilot")
    with pytest.raises(UserInputError, match=match):
        read_pilot(pilot / "pilot")


def test_pilot_with_foreign_column_names_reads_as_the_native_one(pilot, tmp_path):
    """One long table with a lab's own column names (and the participant columns in it), mapped by --pilot-map."""
    d = pilot / "pilot"
    native = read_pilot(d, pilot / "clips.csv")
    parts = pd.read_csv(d / "participants.csv")[["participant_id", "passed_attention", "completed"]]
    foreign = (
        pd.read_csv(d / "ratings.csv")
        .merge(parts, on="participant_id")
        .rename(
            columns={
                "participant_id": "worker",
                "condition": "arm",
                "clip_id": "stimulus",
                "rating": "score",
                "trial": "trial_no",
                "presented_first": "shown_first",
                "passed_attention": "attn_ok",
            }
        )
    )
    foreign.to_csv(tmp_path / "lab_export.csv", index=False)
    mapping = parse_column_map(
        [
            "participant_id=worker,condition=arm,clip_id=stimulus,rating=score",
            "trial=trial_no,presented_first=shown_first,passed_attention=attn_ok",
        ]
    )
    mapped = read_pilot(tmp_path / "lab_export.csv", pilot / "clips.csv", mapping)
    a, b = pilot_arrays(native), pilot_arrays(mapped)
    for c in a.ratings:
        np.testing.assert_array_equal(a.ratings[c].y, b.ratings[c].y)
        np.testing.assert_array_equal(a.ratings[c].clip, b.ratings[c].clip)
        np.testing.assert_array_equal(a.ratings[c].first, b.ratings[c].first)
    np.testing.assert_array_equal(a.lengths, b.lengths)
    assert attrition_counts(native)["audio"]["failed"] == attrition_counts(mapped)["audio"]["failed"]
    # without the map the lab's table is refused with the missing canonical column named
    with pytest.raises(UserInputError, match="participant_id"):
        read_pilot(tmp_path / "lab_export.csv", pilot / "clips.csv")


def test_clips_table_must_cover_the_pilot(pilot):
    clips = pd.read_csv(pilot / "clips.csv")
    clips.iloc[2:].to_csv(pilot / "short.csv", index=False)
    with pytest.raises(UserInputError, match=r"ratings.csv row \d+, column clip_id: unknown clip"):
        read_pilot(pilot / "pilot", pilot / "short.csv")
    clips.assign(n_chars=clips["n_chars"].where(clips.index != 3)).to_csv(pilot / "gap.csv", index=False)
    with pytest.raises(PlanInputError, match="--pilot-clips: no n_chars"):
        pilot_arrays(read_pilot(pilot / "pilot", pilot / "gap.csv"))


def test_fit_matches_the_pilots_statistics(pilot):
    """Indirect inference: replicas of the pilot at the fitted parameters reproduce its statistics."""
    fit = fit_pilot(read_pilot(pilot / "pilot", pilot / "clips.csv"), seed=1, n_boot=20)
    for c, target in fit.target.items():
        sim = fit.fitted[c].mean()
        for v in ("var_clip", "var_participant", "var_resid", "mean_rating", "tie_rate", "b_first"):
            # the replicas' mean is within 3.5 Monte-Carlo SEs of the pilot's value (far inside one study's noise)
            se = fit.boot[c][v].std(ddof=1) / np.sqrt(len(fit.fitted[c]))
            assert abs(sim[v] - target[v]) < 3.5 * se + 0.05 * abs(target[v]), (c, v, sim[v], target[v])
    # the fit moved the latent parameters from the paper's towards this pilot's (audio clip variance up)
    assert fit.params.var_clip_audio > SimulationParams().var_clip_audio
    assert fit.params.p_fail_attention_audio == pytest.approx(
        attrition_counts(read_pilot(pilot / "pilot"))["audio"]["failed"] / 10
    )
