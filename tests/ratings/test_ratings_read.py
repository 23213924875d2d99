"""The one reader for user tables and the "any ratings table in" sources (issues #12 and #13).

Reader: ids verbatim (participant ``NA`` is an id), encodings, delimiters, empty/header-only
files, Parquet. Sources: column map, wide format, trial/participant columns split off a single
table, ``datasets`` folders, data-files folders, hub ids. Acceptance: a four-column table, a wide
table with foreign names, a Parquet file and a ``datasets`` folder give the same ``icc.csv`` as the
same data in the native schema (through ``modprefs stats``), and every skipped analysis names its
missing column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from modprefs.cli import main
from modprefs.io_tables import TableError, read_table
from modprefs.ratings.ingest import RatingsValidationError, ingest_ratings
from modprefs.ratings.read import StimuliError, first_clips, prepare_study, read_stimuli
from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.ratings.source_tables import RatingsSourceError
from modprefs.ratings.sources import load_ratings_source, parse_column_map, ratings_config_problems
from modprefs.scale import PAPER_SCALE
from support.ratings_helpers import make_assignments, make_stimuli, write_tables

NA_IDS = ["NA", "None", "null", "nan", "NULL", "N/A", "NaN"]


# ---- the reader ------------------------------------------------------------------------------------------
def test_na_tokens_are_ids_in_id_columns_and_missing_elsewhere(tmp_path):
    path = tmp_path / "t.csv"
    rows = "".join(f"{pid},{pid},{i}\n" for i, pid in enumerate(NA_IDS))
    path.write_text("participant_id,note,rating\n" + rows + ",,\n")
    df = read_table(path)
    assert df["participant_id"].tolist()[:-1] == NA_IDS and df["participant_id"].iloc[-1] is None
    assert df["note"].isna().all()  # an ordinary column: pandas' NA tokens are missing
    assert df["rating"].tolist()[:-1] == list(range(len(NA_IDS)))
    raw = read_table(path, strings=True)
    assert raw["participant_id"].tolist() == [*NA_IDS, ""] and raw["note"].tolist() == [*NA_IDS, ""]


@pytest.mark.parametrize("delim", [",", ";", "\t", "|"])
def test_delimiter_detected(tmp_path, delim):
    path = tmp_path / "t.csv"
    path.write_text(delim.join(["participant_id", "rating"]) + "\n" + delim.join(["P1", "5"]) + "\n")
    df = read_table(path)
    assert list(df.columns) == ["participant_id", "rating"] and df.iloc[0].tolist() == ["P1", 5]


def test_encodings(tmp_path):
    text = "participant_id,justification\nP1,très clair\n"
    (tmp_path / "bom.csv").write_bytes(text.encode("utf-8-sig"))
    (tmp_path / "u16.csv").write_bytes(text.encode("utf-16"))
    for name in ("bom.csv", "u16.csv"):
        df = read_table(tmp_path / name)
        assert list(df.columns) == ["participant_id", "justification"] and df.iloc[0, 1] == "très clair"
    (tmp_path / "latin1.csv").write_bytes(text.encode("latin-1"))
    with pytest.raises(TableError, match=r"latin1\.csv: not UTF-8 text: byte 0xe8 at line 2, column 6"):
        read_table(tmp_path / "latin1.csv")


@pytest.mark.parametrize(
    "content,fragment",
    [
        ("", "the file is empty"),
        ("\n  \n", "the file is empty"),
        ("participant_id,rating\n", "has a header but no data rows"),
        ("a,b,a\n1,2,3\n", "column 'a' appears more than once"),
        ("a,,b\n1,2,3\n", "column 2 of the header has no name"),
        ("a,b\n1,2\n3,4,5\n", "line 3 has 3 field(s) but the header has 2"),
    ],
)
def test_unreadable_tables_name_the_file(tmp_path, content, fragment):
    path = tmp_path / "x.csv"
    path.write_text(content)
    with pytest.raises(TableError) as exc:
        read_table(path)
    assert fragment in str(exc.value) and "x.csv" in str(exc.value)


def test_header_only_allowed_when_asked(tmp_path):
    (tmp_path / "h.csv").write_text("participant_id,prompt_id,trial\n")
    df = read_table(tmp_path / "h.csv", allow_empty=True)
    assert df.empty and list(df.columns) == ["participant_id", "prompt_id", "trial"]


def test_parquet_ids_are_strings(tmp_path):
    pd.DataFrame({"participant_id": ["NA", "P2", None], "prompt_id": [1, 2, 3], "rating": [5, None, 7]}).to_parquet(
        tmp_path / "t.parquet"
    )
    df = read_table(tmp_path / "t.parquet")
    assert df["participant_id"].tolist() == ["NA", "P2", None] and df["prompt_id"].tolist() == ["1", "2", "3"]
    assert df["rating"].iloc[1] != df["rating"].iloc[1]  # NaN
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(TableError, match=r"bad\.parquet: cannot be read as Parquet"):
        read_table(tmp_path / "bad.parquet")


# ---- stimuli (clips) -------------------------------------------------------------------------------------
def _clips(tmp_path, rows: str, header: str = "clip_id,prompt_id,response,n_chars"):
    path = tmp_path / "clips.csv"
    path.write_text(header + "\n" + rows)
    return path


def test_stimuli_response_from_suffix_and_checks(tmp_path):
    df = read_stimuli(_clips(tmp_path, "p1_0,p1,10\np1_1,p1,20\n", "clip_id,prompt_id,n_chars"))
    assert df["response"].tolist() == [0, 1]
    for rows, fragment in [
        ("p1_0,p1,x,10\np1_1,p1,1,20\n", "row 2, column response: 'x' is not a response index"),
        ("p1_0,p1,0,10\np1_1,p1,1,20\np1_1,p1,1,20\n", "row 4, column clip_id: duplicate clip 'p1_1' (first at row 3)"),
        ("p1_0,p1,1,10\np1_1,p1,1,20\n", "row 2, column prompt_id: prompt 'p1' has two clips with response 1"),
        ("p1_0,p1,0,ten\np1_1,p1,1,20\n", "row 2, column n_chars: 'ten' is not a non-negative number"),
        ("p1_0,,0,10\np1_1,p1,1,20\n", "row 2, column prompt_id: empty prompt id"),
    ]:
        with pytest.raises(StimuliError) as exc:
            read_stimuli(_clips(tmp_path, rows))
        assert fragment in str(exc.value), (fragment, str(exc.value))
    with pytest.raises(StimuliError, match=r"missing column\(s\) \['prompt_id'\]"):
        read_stimuli(_clips(tmp_path, "p1_0\n", "clip_id"))
    # the response column is honoured whatever the clip ids look like; one response per prompt is a design too
    assert read_stimuli(_clips(tmp_path, "p1_a,p1,0,10\np1_1,p1,1,20\n"))["response"].tolist() == [0, 1]
    assert read_stimuli(_clips(tmp_path, "p1_0,p1,0,10\np2_1,p2,1,20\n"))["response"].tolist() == [0, 1]


# ---- sources ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def study():
    """A small simulated study without attention failures or dropouts (native tables)."""
    stim = make_stimuli(10, seed=2)
    asg = make_assignments(stim, raters_per_condition=6, trials=5, seed=2)
    params = SimulationParams(
        p_fail_attention_audio=0.0, p_fail_attention_text=0.0, p_incomplete_audio=0.0, p_incomplete_text=0.0
    )
    r, t, p, _ = simulate_ratings(stim, asg, params, seed=11)
    return stim, asg, r, t, p


def _wide(r: pd.DataFrame, t: pd.DataFrame) -> pd.DataFrame:
    """One row per trial: ratings of response 0/1, audio quality, first_clip, and the trial's columns."""
    r = r.assign(response=r["clip_id"].str[-1].astype(int))
    w = r.pivot_table(
        index=["participant_id", "condition", "prompt_id", "trial"],
        columns="response",
        values=["rating", "audio_quality"],
        aggfunc="first",
    )
    w.columns = [f"{a}_{b}" for a, b in w.columns]
    w = w.reset_index()
    first = r[r["presented_first"]].set_index(["participant_id", "trial"])["response"].rename("first_clip")
    w = w.join(first, on=["participant_id", "trial"])
    w = w.merge(t.drop(columns=["prompt_id", "source"]), on=["participant_id", "trial"])
    for c in ("rating_0", "rating_1", "audio_quality_0", "audio_quality_1"):
        w[c] = w[c].astype("Int64")
    return w


def test_column_map_and_wide_format(study, tmp_path):
    stim, _, r, t, p = study
    wide = _wide(r, t).rename(
        columns={
            "participant_id": "worker",
            "rating_0": "score_a",
            "rating_1": "score_b",
            "prompt_id": "item",
            "first_clip": "shown_first",
        }
    )
    wide.to_csv(tmp_path / "wide.csv", index=False)
    cols = parse_column_map(
        "participant_id=worker,rating_0=score_a,rating_1=score_b,prompt=item,first_clip=shown_first"
    )
    raw = load_ratings_source(tmp_path / "wide.csv", cols, stim)
    assert set(raw.tables) == {"ratings", "trials"} and len(raw.tables["ratings"]) == 2 * len(wide)
    valid = ingest_ratings(tmp_path / "wide.csv", stim, cols, scale=PAPER_SCALE)
    got = valid.tables["ratings"].sort_values(["participant_id", "clip_id"]).reset_index(drop=True)
    want = r.sort_values(["participant_id", "clip_id"]).reset_index(drop=True)
    for c in ("participant_id", "condition", "prompt_id", "clip_id", "trial", "rating"):
        assert got[c].astype(str).tolist() == want[c].astype(str).tolist(), c
    assert got["presented_first"].astype(bool).tolist() == want["presented_first"].tolist()
    assert len(valid.tables["trials"]) == len(t)
    # a bad cell is named by the user's file, row (of the trial) and column
    wide.loc[3, "score_b"] = 250
    wide.to_csv(tmp_path / "wide.csv", index=False)
    with pytest.raises(RatingsValidationError) as exc:
        ingest_ratings(tmp_path / "wide.csv", stim, cols, scale=PAPER_SCALE)
    assert "wide.csv row 5, column score_b: '250' is above the maximum 100" in exc.value.problems


def test_column_map_problems(study, tmp_path):
    stim, _, r, _, _ = study
    r.to_csv(tmp_path / "r.csv", index=False)
    for cols, fragment in [
        ({"ratting": "rating"}, "unknown column 'ratting'"),
        ({"rating": "score"}, "no table has a column 'score'"),
        ({"rating": "trial"}, "the table already has a column 'rating'"),
        ({"rating": "x", "trial": "x"}, "mapped to more than one column"),
    ]:
        with pytest.raises(RatingsSourceError) as exc:
            load_ratings_source(tmp_path / "r.csv", cols, stim)
        assert fragment in str(exc.value), fragment
    with pytest.raises(RatingsSourceError, match="expected canonical=source"):
        parse_column_map(["rating"])
    wide = pd.DataFrame({"participant_id": ["P1"], "condition": ["text"], "prompt_id": ["pr00"], "rating_0": [5]})
    wide.to_csv(tmp_path / "w.csv", index=False)
    with pytest.raises(RatingsSourceError, match="has 'rating_0' but no 'rating_1'"):
        load_ratings_source(tmp_path / "w.csv", None, stim)


def test_single_table_splits_trial_and_participant_columns(study, tmp_path):
    stim, _, r, t, p = study
    one = r.merge(
        t[["participant_id", "trial", "preference", "decision_time_s"]], on=["participant_id", "trial"]
    ).merge(p[["participant_id", "age", "passed_attention"]], on="participant_id")
    one.to_csv(tmp_path / "one.csv", index=False)
    valid = ingest_ratings(tmp_path / "one.csv", stim, scale=PAPER_SCALE)
    assert len(valid.tables["trials"]) == len(t) and len(valid.tables["participants"]) == len(p)
    assert {"preference", "decision_time_s"} <= set(valid.tables["trials"].columns)
    assert "preference" not in valid.tables["ratings"].columns
    one.loc[one.index[one["participant_id"] == one["participant_id"].iloc[0]][3], "age"] = 99
    one.to_csv(tmp_path / "one.csv", index=False)
    with pytest.raises(
        RatingsSourceError,
        match=r"one\.csv row \d+, column age: '99', but one\.csv row 2 of the same "
        "participant",
    ):
        ingest_ratings(tmp_path / "one.csv", stim, scale=PAPER_SCALE)


def test_prompt_and_response_instead_of_clip(study, tmp_path):
    stim, _, r, _, _ = study
    r.assign(response=r["clip_id"].str[-1])[["participant_id", "condition", "prompt_id", "response", "rating"]].to_csv(
        tmp_path / "pr.csv", index=False
    )
    valid = ingest_ratings(tmp_path / "pr.csv", stim, scale=PAPER_SCALE)
    assert valid.tables["ratings"]["clip_id"].tolist() == r["clip_id"].tolist()


def test_datasets_folders_and_data_files(study, tmp_path):
    datasets = pytest.importorskip("datasets")
    stim, _, r, t, p = study
    datasets.Dataset.from_pandas(r, preserve_index=False).save_to_disk(str(tmp_path / "ds"))
    assert len(load_ratings_source(tmp_path / "ds", None, stim).tables["ratings"]) == len(r)
    dd = datasets.DatasetDict(
        {
            "ratings": datasets.Dataset.from_pandas(r, preserve_index=False),
            "trials": datasets.Dataset.from_pandas(t, preserve_index=False),
        }
    )
    dd.save_to_disk(str(tmp_path / "dd"))
    assert set(load_ratings_source(tmp_path / "dd", None, stim).tables) == {"ratings", "trials"}
    datasets.DatasetDict({"a": dd["ratings"], "b": dd["trials"]}).save_to_disk(str(tmp_path / "ab"))
    with pytest.raises(RatingsSourceError, match=r"the dataset has splits \['a', 'b'\]"):
        load_ratings_source(tmp_path / "ab", None, stim)
    files = tmp_path / "files" / "data"
    files.mkdir(parents=True)
    r.iloc[:100].to_parquet(files / "train-00000-of-00002.parquet")
    r.iloc[100:].to_parquet(files / "train-00001-of-00002.parquet")
    t.to_csv(files / "trials.csv", index=False)
    raw = load_ratings_source(tmp_path / "files", None, stim)
    assert len(raw.tables["ratings"]) == len(r) and len(raw.tables["trials"]) == len(t)
    assert raw.origins["ratings"].where(100, "rating") == "data/train-00001-of-00002.parquet row 1, column rating"


@pytest.mark.integration  # a server or the network: not in `make test-fast`
def test_hub_id_unreachable_says_what_failed(study, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(RatingsSourceError) as exc:
        load_ratings_source("hf://some-lab/released-ratings", None, study[0])
    text = str(exc.value)
    assert "could not load the Hugging Face dataset 'some-lab/released-ratings' from the hub" in text
    assert "save_to_disk" in text
    with pytest.raises(RatingsSourceError, match="a hub id is hf://owner/name"):
        load_ratings_source("hf://not a repo", None, study[0])


def test_config_problems_ratings_source(tmp_path):
    (tmp_path / "results" / "ratings").mkdir(parents=True)
    (tmp_path / "collected").mkdir()
    assert ratings_config_problems({"source": "collected"}, tmp_path) == []
    assert ratings_config_problems({"source": "hf://lab/data"}, tmp_path) == []
    for source in ("results/ratings", "results", "./results/../results/ratings", str(tmp_path / "results/x")):
        (msg,) = ratings_config_problems({"source": source}, tmp_path)
        assert msg.startswith("ratings.source:") and "inside results/" in msg
    for source in (".", "./", str(tmp_path), ".."):
        (msg,) = ratings_config_problems({"source": source}, tmp_path)
        assert msg.startswith(f"ratings.source: {source!r} is the workflow's working directory or a folder above it")
    (msg,) = ratings_config_problems({"source": "nowhere"}, tmp_path)
    assert "ratings.source: not found: 'nowhere'" in msg
    (msg,) = ratings_config_problems({"source": "collected", "columns": {"ratng": "score"}}, tmp_path)
    assert msg.startswith("ratings.columns: unknown column 'ratng'")


def test_practice_rows_read_directly_are_left_out_and_noted(study):
    """The annotation app's practice trial (practice = 1, trial -1) never reaches an analysis, read either way."""
    stim, asg, r, t, p = study
    row = r.iloc[[0]].assign(trial=-1, practice=1)
    ratings = pd.concat([r.assign(practice=0), row], ignore_index=True)
    view = prepare_study({"ratings": ratings, "trials": t, "participants": p, "stimuli": stim}, asg)
    assert len(view.tables["ratings"]) == len(r) and (view.tables["ratings"]["trial"] >= 0).all()
    assert any("1 practice row(s)" in n for n in view.notes)


def test_presentation_order_from_the_ratings_equals_the_design(study):
    stim, asg, r, t, p = study
    derived = first_clips(r, stim).set_index(["participant_id", "trial"])
    merged = asg.set_index(["participant_id", "trial"]).join(derived.add_suffix("_d"), how="inner")
    assert len(merged) == len(t) and (merged.first_clip == merged.first_clip_d).all()
    view = prepare_study({"ratings": r, "trials": t, "participants": p, "stimuli": stim}, asg)
    assert view.notes == [] and "presented_first" in view.present["ratings"]
    other = r.assign(participant_id=r["participant_id"].where(r["participant_id"] != "P0003", "P0003_r2"))
    view = prepare_study({"ratings": other, "trials": t, "participants": p, "stimuli": stim}, asg)
    assert any("1 participant(s) not in the design" in n and "'P0003_r2'" in n for n in view.notes)
    assert "P0003_r2" in set(view.tables["assignments"]["participant_id"])


# ---- acceptance: any table in, the same icc.csv ------------------------------------------------------------
STATS_ARGS = ["--n-boot", "20", "--n-perm", "0", "--n-boot-alpha", "0", "--n-perm-alpha", "0", "--seed", "7"]


def _stats(tmp_path, name: str, source, clips, *extra: str) -> pd.DataFrame:
    out = tmp_path / f"out_{name}"
    rc = main(["stats", "--ratings", str(source), "--clips", str(clips), "--out", str(out), *STATS_ARGS, *extra])
    assert rc == 0, name
    return pd.read_csv(out / "tables" / "icc.csv")


def _assert_icc_equal(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert a.columns.tolist() == b.columns.tolist()
    num = a.select_dtypes("number").columns
    np.testing.assert_allclose(a[num].to_numpy(float), b[num].to_numpy(float), rtol=1e-10, atol=1e-12, equal_nan=True)
    rest = [c for c in a.columns if c not in num]
    pd.testing.assert_frame_equal(a[rest], b[rest])


@pytest.mark.slow
def test_any_table_gives_the_native_icc(study, tmp_path):
    datasets = pytest.importorskip("datasets")
    stim, _, r, t, p = study
    clips = tmp_path / "clips.csv"
    stim.to_csv(clips, index=False)
    native = tmp_path / "native"
    write_tables(native, r, t, p)
    reference = _stats(tmp_path, "native", native, clips)
    assert reference["n_participants"].tolist() == [6, 6] and reference["icc_2_1"].notna().all()
    # wide, foreign names, one row per trial
    wide = _wide(r, t).rename(
        columns={
            "participant_id": "worker",
            "rating_0": "score_a",
            "rating_1": "score_b",
            "prompt_id": "item",
            "first_clip": "shown_first",
            "condition": "arm",
        }
    )
    wide.to_csv(tmp_path / "wide.csv", index=False)
    got = _stats(
        tmp_path,
        "wide",
        tmp_path / "wide.csv",
        clips,
        "--map",
        "participant=worker,rating_0=score_a,rating_1=score_b,prompt=item,first_clip=shown_first",
        "--map",
        "condition=arm",
    )
    _assert_icc_equal(got, reference)
    # Parquet, and a datasets save_to_disk folder
    r.to_parquet(tmp_path / "ratings.parquet")
    _assert_icc_equal(_stats(tmp_path, "parquet", tmp_path / "ratings.parquet", clips), reference)
    datasets.Dataset.from_pandas(r, preserve_index=False).save_to_disk(str(tmp_path / "ds"))
    _assert_icc_equal(_stats(tmp_path, "datasets", tmp_path / "ds", clips), reference)
    # four columns with foreign names == the same four columns in the native schema (a model without the
    # trial and order covariates the four columns do not hold)
    four = r[["participant_id", "condition", "clip_id", "rating"]]
    write_tables(tmp_path / "four_native", four, t.iloc[:0][["participant_id", "prompt_id"]], p[["participant_id"]])
    four_native = _stats(tmp_path, "four_native", tmp_path / "four_native", clips)
    four.rename(columns={"participant_id": "rater", "clip_id": "stimulus", "rating": "score"}).to_csv(
        tmp_path / "four.csv", index=False
    )
    got = _stats(
        tmp_path, "four", tmp_path / "four.csv", clips, "--map", "participant=rater,clip_id=stimulus,rating=score"
    )
    _assert_icc_equal(got, four_native)
    assert (got["model"] == "rating ~ 1 + (1|clip_id) + (1|participant_id)").all()
    # every skipped analysis names the column it misses
    skipped = {}
    for path in (tmp_path / "out_four" / "tables").glob("*.csv"):
        df = pd.read_csv(path)
        if list(df.columns) == ["status", "reason"]:
            skipped[path.stem] = df["reason"].iloc[0]
    assert {
        "table2_lmm",
        "practice_effects",
        "table3_session",
        "behaviour",
        "thresholds_gaps",
        "justifications",
        "audio_quality",
    } <= set(skipped)
    # Table 4 runs its ICC and continuous-alpha rows; its preference alphas say what they miss
    table4 = pd.read_csv(tmp_path / "out_four" / "tables" / "table4_reliability.csv").set_index("metric")
    assert "skipped: needs trials.trial, trials.preference" in table4.loc["Krippendorff's alpha (ord.)", "note"]
    for name, reason in skipped.items():
        assert "needs " in reason and any(f"{t}." in reason for t in ("ratings", "trials", "participants")), name
    assert "trials.preference" in skipped["thresholds_gaps"] and "ratings.presented_first" in skipped["table2_lmm"]
    assert not (tmp_path / "out_four" / "tables" / "random_slope.csv").read_text().startswith("status")
