"""Ingest validation: every problem reported with file, spreadsheet row and column."""

from __future__ import annotations

import pandas as pd
import pytest

from _ratings_helpers import make_assignments, make_stimuli, write_tables
from modprefs.ratings.ingest import MAX_LISTED, RatingsValidationError, validate_ratings_dir
from modprefs.ratings.simulate import SimulationParams, simulate_ratings


@pytest.fixture(scope="module")
def design():
    stim = make_stimuli(12)
    asg = make_assignments(stim, raters_per_condition=6, trials=6)
    params = SimulationParams(p_fail_attention_audio=0.0, p_fail_attention_text=0.0,
                              p_incomplete_audio=0.0, p_incomplete_text=0.0)
    r, t, p, _ = simulate_ratings(stim, asg, params, seed=3)
    return stim, r, t, p


@pytest.fixture
def raw(design, tmp_path):
    """The valid tables as strings, and a writer for a mutated copy."""
    stim, r, t, p = design
    write_tables(tmp_path, r, t, p)
    frames = {n: pd.read_csv(tmp_path / f"{n}.csv", dtype=str, keep_default_na=False)
              for n in ("ratings", "trials", "participants")}

    def write():
        for n, df in frames.items():
            df.to_csv(tmp_path / f"{n}.csv", index=False)
        return tmp_path

    return stim, frames, write


def _problems(directory, stim):
    with pytest.raises(RatingsValidationError) as exc:
        validate_ratings_dir(directory, stim)
    return exc.value


def _assert_cell(err, file, idx, column, fragment=""):
    prefix = f"{file} row {idx + 2}, column {column}:"
    hits = [m for m in err.problems if m.startswith(prefix) and fragment in m]
    assert hits, f"no problem {prefix} ...{fragment}... in:\n" + "\n".join(err.problems)
    assert prefix in str(err)


def _row(df, **eq):
    mask = pd.Series(True, index=df.index)
    for k, v in eq.items():
        mask &= df[k] == v
    return int(df.index[mask][0])


def test_valid_round_trip(design, tmp_path):
    stim, r, t, p = design
    write_tables(tmp_path, r, t, p)
    tables = validate_ratings_dir(tmp_path, stim)
    assert len(tables["ratings"]) == len(r) and len(tables["trials"]) == len(t)
    assert tables["ratings"]["rating"].between(1, 100).all()
    assert (tables["ratings"]["source"] == "simulated").all()


def test_source_filled_with_collected(raw):
    stim, f, write = raw
    for n in list(f):
        f[n] = f[n].drop(columns="source")
    tables = validate_ratings_dir(write(), stim)
    assert all((tables[n]["source"] == "collected").all() for n in tables)


def test_missing_file(raw):
    stim, f, write = raw
    d = write()
    (d / "participants.csv").unlink()
    err = _problems(d, stim)
    assert any(m.startswith("participants.csv: file not found") for m in err.problems)


def test_missing_column(raw):
    stim, f, write = raw
    f["trials"] = f["trials"].drop(columns="preference")
    err = _problems(write(), stim)
    assert "trials.csv: missing column 'preference'" in err.problems


@pytest.mark.parametrize("value,fragment", [("0", "below the minimum"), ("101", "above the maximum"),
                                            ("abc", "not an integer"), ("50.5", "not an integer"),
                                            ("", "empty value")])
def test_bad_rating_values(raw, value, fragment):
    stim, f, write = raw
    f["ratings"].loc[7, "rating"] = value
    _assert_cell(_problems(write(), stim), "ratings.csv", 7, "rating", fragment)


def test_audio_quality_in_text_condition(raw):
    stim, f, write = raw
    i = _row(f["ratings"], condition="text")
    f["ratings"].loc[i, "audio_quality"] = "55"
    _assert_cell(_problems(write(), stim), "ratings.csv", i, "audio_quality", "present in the text condition")


def test_audio_quality_missing_in_audio_condition(raw):
    stim, f, write = raw
    i = _row(f["ratings"], condition="audio")
    f["ratings"].loc[i, "audio_quality"] = ""
    _assert_cell(_problems(write(), stim), "ratings.csv", i, "audio_quality", "missing in the audio condition")


def test_duplicate_participant_clip(raw):
    stim, f, write = raw
    r = f["ratings"]
    f["ratings"] = pd.concat([r, r.iloc[[4]]], ignore_index=True)
    err = _problems(write(), stim)
    _assert_cell(err, "ratings.csv", len(r), "clip_id", "duplicate rating")
    assert f"first at row {4 + 2}" in str(err)


def test_unknown_prompt_in_trials(raw):
    stim, f, write = raw
    i = _row(f["trials"], trial="2")
    f["trials"].loc[i, "prompt_id"] = "nosuchprompt"
    _assert_cell(_problems(write(), stim), "trials.csv", i, "prompt_id", "unknown prompt")


def test_unknown_clip(raw):
    stim, f, write = raw
    i = _row(f["ratings"], trial="3")
    f["ratings"].loc[i, "clip_id"] = "zz99_0"
    _assert_cell(_problems(write(), stim), "ratings.csv", i, "clip_id", "unknown clip")


def test_clip_of_another_prompt(raw):
    stim, f, write = raw
    r = f["ratings"]
    i = _row(r, trial="1")
    other = next(c for c in stim["clip_id"] if not c.startswith(r.loc[i, "prompt_id"] + "_"))
    r.loc[i, "clip_id"] = other
    _assert_cell(_problems(write(), stim), "ratings.csv", i, "clip_id", "belongs to prompt")


def test_condition_mismatch(raw):
    stim, f, write = raw
    i = _row(f["ratings"], condition="text", trial="2")
    f["ratings"].loc[i, "condition"] = "audio"
    _assert_cell(_problems(write(), stim), "ratings.csv", i, "condition", "is in the 'text' condition")


def test_unknown_participant(raw):
    stim, f, write = raw
    f["ratings"].loc[9, "participant_id"] = "PX999"
    _assert_cell(_problems(write(), stim), "ratings.csv", 9, "participant_id", "unknown participant")


def test_bad_preference(raw):
    stim, f, write = raw
    f["trials"].loc[5, "preference"] = "2"
    _assert_cell(_problems(write(), stim), "trials.csv", 5, "preference", "not one of")


def test_trial_without_ratings(raw):
    stim, f, write = raw
    t, r = f["trials"], f["ratings"]
    i = _row(t, trial="4")
    pid = t.loc[i, "participant_id"]
    f["ratings"] = r[~((r["participant_id"] == pid) & (r["trial"] == "4"))].reset_index(drop=True)
    _assert_cell(_problems(write(), stim), "trials.csv", i, "trial", "no ratings")


def test_rating_without_trial_row(raw):
    stim, f, write = raw
    t, r = f["trials"], f["ratings"]
    i = _row(t, trial="5")
    pid = t.loc[i, "participant_id"]
    f["trials"] = t.drop(index=i).reset_index(drop=True)
    j = _row(r, participant_id=pid, trial="5")
    _assert_cell(_problems(write(), stim), "ratings.csv", j, "trial", "no row in trials.csv")


def test_bad_boolean(raw):
    stim, f, write = raw
    f["ratings"].loc[3, "presented_first"] = "maybe"
    _assert_cell(_problems(write(), stim), "ratings.csv", 3, "presented_first", "not a boolean")


def test_audio_measure_in_text_trial(raw):
    stim, f, write = raw
    text_p = set(f["participants"].loc[f["participants"]["condition"] == "text", "participant_id"])
    i = int(f["trials"].index[f["trials"]["participant_id"].isin(text_p)][1])
    f["trials"].loc[i, "replays_0"] = "2"
    _assert_cell(_problems(write(), stim), "trials.csv", i, "replays_0", "audio-only")


def test_bad_participant_fields(raw):
    stim, f, write = raw
    f["participants"].loc[2, "difficulty"] = "7"
    f["participants"].loc[3, "age"] = "twelve"
    err = _problems(write(), stim)
    _assert_cell(err, "participants.csv", 2, "difficulty", "above the maximum")
    _assert_cell(err, "participants.csv", 3, "age", "not an integer")


def test_every_problem_collected_and_listing_capped(raw):
    stim, f, write = raw
    n = 60
    f["ratings"].loc[: n - 1, "rating"] = "101"
    f["trials"].loc[1, "preference"] = "maybe"
    err = _problems(write(), stim)
    assert len(err.problems) >= n + 1
    assert any(m.startswith("trials.csv row 3, column preference") for m in err.problems)
    assert f"and {len(err.problems) - MAX_LISTED} more problem(s)" in str(err)
    assert str(err).count("\n  - ") == MAX_LISTED
