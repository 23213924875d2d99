"""Ingest validation: every problem reported with file, spreadsheet row and column."""

from __future__ import annotations

import pandas as pd
import pytest

from modprefs.ratings.ingest import MAX_LISTED, RatingsValidationError, ingest_ratings, validate_ratings_dir
from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.ratings.source_tables import RatingsSourceError
from modprefs.scale import PAPER_SCALE
from support.ratings_helpers import make_assignments, make_stimuli, write_tables


@pytest.fixture(scope="module")
def design():
    stim = make_stimuli(12)
    asg = make_assignments(stim, raters_per_condition=6, trials=6)
    params = SimulationParams(
        p_fail_attention_audio=0.0, p_fail_attention_text=0.0, p_incomplete_audio=0.0, p_incomplete_text=0.0
    )
    r, t, p, _ = simulate_ratings(stim, asg, params, seed=3)
    return stim, r, t, p


@pytest.fixture
def raw(design, tmp_path):
    """The valid tables as strings, and a writer for a mutated copy."""
    stim, r, t, p = design
    write_tables(tmp_path, r, t, p)
    frames = {
        n: pd.read_csv(tmp_path / f"{n}.csv", dtype=str, keep_default_na=False)
        for n in ("ratings", "trials", "participants")
    }

    def write():
        for n, df in frames.items():
            df.to_csv(tmp_path / f"{n}.csv", index=False)
        return tmp_path

    return stim, frames, write


def _problems(directory, stim):
    with pytest.raises(RatingsValidationError) as exc:
        validate_ratings_dir(directory, stim, scale=PAPER_SCALE)
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
    tables = validate_ratings_dir(tmp_path, stim, scale=PAPER_SCALE)
    assert len(tables["ratings"]) == len(r) and len(tables["trials"]) == len(t)
    assert tables["ratings"]["rating"].between(1, 100).all()
    assert (tables["ratings"]["source"] == "simulated").all()


def test_source_filled_with_collected(raw):
    stim, f, write = raw
    for n in list(f):
        f[n] = f[n].drop(columns="source")
    tables = validate_ratings_dir(write(), stim, scale=PAPER_SCALE)
    assert all((tables[n]["source"] == "collected").all() for n in tables)


def test_optional_files_and_the_required_one(raw):
    stim, f, write = raw
    d = write()
    (d / "participants.csv").unlink()
    valid = ingest_ratings(d, stim, scale=PAPER_SCALE)
    parts = valid.tables["participants"]
    assert sorted(parts["participant_id"]) == sorted(set(f["ratings"]["participant_id"]))
    assert any("participants (id, condition) derived from the ratings" in n for n in valid.notes)
    # passed_attention comes from the attention check's preference when participants.csv lacks it
    assert parts["passed_attention"].all() and any("passed_attention derived" in n for n in valid.notes)
    (d / "ratings.csv").unlink()
    with pytest.raises(RatingsSourceError, match="no ratings data file"):
        validate_ratings_dir(d, stim, scale=PAPER_SCALE)


def test_missing_columns_optional_and_required(raw):
    stim, f, write = raw
    f["trials"] = f["trials"].drop(columns="preference")
    tables = validate_ratings_dir(write(), stim, scale=PAPER_SCALE)
    assert "preference" not in tables["trials"].columns  # absent stays absent: no invented column
    f["ratings"] = f["ratings"].drop(columns=["rating", "audio_quality"])
    err = _problems(write(), stim)
    assert err.problems == ["ratings.csv: missing column 'rating'"]


@pytest.mark.parametrize(
    "value,fragment",
    [
        ("0", "below the minimum"),
        ("101", "above the maximum"),
        ("abc", "not an integer"),
        ("50.5", "not an integer"),
        ("", "empty value"),
    ],
)
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
    assert f"first at ratings.csv row {4 + 2}" in str(err)


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


# ---- attention check, empty studies, ids ----------------------------------------------------------------
def _attention_row(f, pid):
    t = f["trials"]
    return _row(t, participant_id=pid, trial="0")


def test_passed_attention_must_agree_with_the_attention_check(raw):
    stim, f, write = raw
    p = f["participants"]
    pid = p.loc[3, "participant_id"]
    f["trials"].loc[_attention_row(f, pid), "preference"] = "1"  # preferred the nonsensical response
    other = p.loc[5, "participant_id"]
    p.loc[5, "passed_attention"] = "False"  # says failed, but preferred the coherent one
    err = _problems(write(), stim)
    _assert_cell(err, "participants.csv", 3, "passed_attention", f"participant {pid!r} has passed_attention true")
    assert f"trials.csv row {_attention_row(f, pid) + 2}) preferred '1'" in str(err)
    _assert_cell(err, "participants.csv", 5, "passed_attention", f"participant {other!r} has passed_attention false")
    assert len(err.problems) == 2


def test_a_tie_at_the_attention_check_passes(raw):
    stim, f, write = raw
    pid = f["participants"].loc[2, "participant_id"]
    f["trials"].loc[_attention_row(f, pid), "preference"] = "tie"
    assert validate_ratings_dir(write(), stim, scale=PAPER_SCALE)["participants"]["passed_attention"].all()


def _study_problems(directory, stim):
    with pytest.raises(RatingsValidationError) as exc:
        ingest_ratings(directory, stim, scale=PAPER_SCALE)
    return exc.value


def test_empty_studies_are_refused(raw, tmp_path):
    stim, f, write = raw
    for n in f:
        f[n] = f[n].iloc[:0]
    err = _study_problems(write(), stim)
    assert any("ratings.csv: no rating rows" in m and "empty study" in m for m in err.problems)
    # the tables alone are valid (an app export before anyone rated): only the analysis refuses them
    assert validate_ratings_dir(write(), stim, scale=PAPER_SCALE)["ratings"].empty


def test_everyone_failed_the_attention_check(raw):
    stim, f, write = raw
    t, r, p = f["trials"], f["ratings"], f["participants"]
    f["trials"] = t[t["trial"] == "0"].assign(preference="1")
    f["ratings"] = r[r["trial"] == "0"]
    f["participants"] = p.assign(passed_attention="False", completed="False")
    err = _study_problems(write(), stim)
    assert any("no rating left to analyse" in m for m in err.problems)


def test_na_participant_id_is_an_id(raw):
    stim, f, write = raw
    old = sorted(f["participants"]["participant_id"])[0]
    for df in f.values():
        df.loc[df["participant_id"] == old, "participant_id"] = "NA"
    tables = validate_ratings_dir(write(), stim, scale=PAPER_SCALE)
    for name, df in tables.items():
        assert (df["participant_id"] == "NA").sum() == (f[name]["participant_id"] == "NA").sum() > 0, name


def test_ids_not_in_the_design_are_accepted_and_noted(raw, design):
    stim, f, write = raw
    old = f["participants"]["participant_id"].iloc[1]
    for df in f.values():
        df.loc[df["participant_id"] == old, "participant_id"] = f"{old}_r2"
    asg = make_assignments(stim, raters_per_condition=6, trials=6)
    valid = ingest_ratings(write(), stim, assignments=asg, scale=PAPER_SCALE)
    assert any(f"'{old}_r2'" in n and "not in the design" in n for n in valid.notes)


def test_trials_keyed_by_prompt_without_trial_numbers(raw):
    stim, f, write = raw
    f["ratings"] = f["ratings"].drop(columns=["trial"])
    f["trials"] = f["trials"].drop(columns=["trial"])
    tables = validate_ratings_dir(write(), stim, scale=PAPER_SCALE)
    assert "trial" not in tables["ratings"].columns
    t = f["trials"]
    f["trials"] = pd.concat([t, t.iloc[[7]]], ignore_index=True)
    _assert_cell(_problems(write(), stim), "trials.csv", len(t), "prompt_id", "duplicate prompt")


# ---- the workflow's ingest rule (scratch workdir with a study's stimuli and design) ---------------------
WORKFLOW_TARGETS = ["results/stats/tables/icc.csv", "results/stats/tables/behaviour.csv"]


@pytest.fixture(scope="module")
def workflow_study(tmp_path_factory):
    """The embedded default's study size (12 prompts, 18 raters per condition, 8 trials), simulated."""
    from modprefs.study.design import make_assignments as design_assignments

    root = tmp_path_factory.mktemp("ingest_workflow")
    stim = make_stimuli(12, seed=4)
    asg = design_assignments(list(dict.fromkeys(stim["prompt_id"])), 18, 8, seed=4)
    r, t, p, _ = simulate_ratings(stim, asg, SimulationParams(), seed=4)
    return root, stim, asg, r, t, p


def _workdir(root, name, stim, asg):
    wd = root / name
    (wd / "results/study").mkdir(parents=True)
    stim.to_csv(wd / "results/study/stimuli.csv", index=False)
    asg.to_csv(wd / "results/study/assignments.csv", index=False)
    return wd


def _ingest_run(root, name, stim, asg, tables, overrides=None, targets=WORKFLOW_TARGETS):
    """Write ``tables`` as the collected source, run ingest (+ targets) on a scratch workdir; the process."""
    from support.workflow_runner import run_workflow, write_config

    wd = _workdir(root, name, stim, asg)
    src = root / f"{name}_collected"
    write_tables(src, *tables)
    cfg = write_config(wd, {"ratings": {"source": str(src)}, "stats": {"n_boot": 20, "n_perm": 0}, **(overrides or {})})
    proc = run_workflow(wd, "--allowed-rules", "ingest_ratings", "icc_table", "table3", "--", *targets, configfile=cfg)
    return wd, proc


@pytest.mark.slow
def test_workflow_na_id_and_ids_outside_the_design_analysed_as_any_id(workflow_study):
    root, stim, asg, r, t, p = workflow_study
    wd0, proc = _ingest_run(root, "ordinary", stim, asg, (r, t, p))
    assert proc.returncode == 0, proc.stderr[-3000:]
    icc0 = (wd0 / "results/stats/tables/icc.csv").read_bytes()
    audio = p[(p["condition"] == "audio") & p["passed_attention"]]["participant_id"]
    old = sorted(audio)[0]  # 'NA' sorts before every P.... id: same order, same bootstrap draws

    def renamed(new):
        return tuple(df.assign(participant_id=df["participant_id"].replace(old, new)) for df in (r, t, p))

    wd1, proc = _ingest_run(root, "na_id", stim, asg, renamed("NA"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    ingested = pd.read_csv(wd1 / "results/ratings/ratings.csv", dtype=str, keep_default_na=False)
    assert (ingested["participant_id"] == "NA").sum() == (r["participant_id"] == old).sum() > 0
    assert (wd1 / "results/stats/tables/icc.csv").read_bytes() == icc0  # same rows: the NA rater counted
    assert pd.read_csv(wd0 / "results/stats/tables/icc.csv")["n_participants"].iloc[0] == len(audio)
    # a participant outside the design (the app's reissued slot): accepted, noted, replays still mapped
    wd2, proc = _ingest_run(root, "reissued", stim, asg, renamed(f"{old}_r2"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = (wd2 / "results/logs/ratings/ingest_ratings.log").read_text()
    assert f"1 participant(s) not in the design (assignments.csv), e.g. '{old}_r2'" in log
    b0 = pd.read_csv(wd0 / "results/stats/tables/behaviour.csv")
    b2 = pd.read_csv(wd2 / "results/stats/tables/behaviour.csv")
    pd.testing.assert_frame_equal(b0, b2)
    assert b2.set_index("measure").loc["replays_first", "n_audio"] == len(audio)
    # the source is a declared input: editing it plans the ingest again (and what follows)
    from support.workflow_runner import planned_jobs, run_workflow

    assert (
        planned_jobs(
            run_workflow(wd0, "-n", "--allowed-rules", "ingest_ratings", "icc_table", "table3", "--", *WORKFLOW_TARGETS)
        )
        == {}
    )
    _edit_csv(
        root / "ordinary_collected" / "ratings.csv", lambda d: d.assign(rating=d["rating"].where(d.index != 20, "55"))
    )
    jobs = planned_jobs(
        run_workflow(wd0, "-n", "--allowed-rules", "ingest_ratings", "icc_table", "table3", "--", *WORKFLOW_TARGETS)
    )
    assert jobs == {"ingest_ratings": 1, "icc_table": 1, "table3": 1}


def _bad_source(root, name, tables, edit):
    src = root / f"{name}_collected"
    write_tables(src, *tables)
    edit(src)
    return src


WORKFLOW_BAD = {
    "rating_out_of_range": (
        lambda s: _edit_csv(s / "ratings.csv", lambda d: d.assign(rating=d["rating"].where(d.index != 4, 101))),
        ["ratings.csv row 6, column rating", "above the maximum"],
    ),
    "non_utf8_trials": (
        lambda s: (s / "trials.csv").write_bytes((s / "trials.csv").read_bytes().replace(b"tie", b"ti\xe9", 1)),
        ["trials.csv: not UTF-8 text", "line "],
    ),
    "header_only_tables": (
        lambda s: [_edit_csv(s / f"{n}.csv", lambda d: d.iloc[:0]) for n in TABLES_],
        ["ratings.csv: no rating rows", "empty study"],
    ),
    "attention_disagrees": (
        lambda s: _edit_csv(s / "participants.csv", lambda d: d.assign(passed_attention=True)),
        ["participants.csv row", "column passed_attention", "preferred '1'"],
    ),
    "unknown_clip": (
        lambda s: _edit_csv(s / "ratings.csv", lambda d: d.assign(clip_id=d["clip_id"].where(d.index != 9, "zz_0"))),
        ["ratings.csv row 11, column clip_id", "unknown clip"],
    ),
}
TABLES_ = ("ratings", "trials", "participants")


def _edit_csv(path, change):
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    change(df).to_csv(path, index=False)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(WORKFLOW_BAD) + ["self_reference", "columns_typo", "missing_source"])
def test_workflow_ingest_bad_inputs_fail_cleanly(workflow_study, case):
    import sys

    from support.bad_inputs import assert_clean_failure
    from support.workflow_runner import ROOT, write_config

    root, stim, asg, r, t, p = workflow_study
    wd = _workdir(root, f"bad_{case}", stim, asg)
    ratings_cfg: dict = {"source": str(root / f"{case}_collected")}
    if case in WORKFLOW_BAD:
        edit, mention = WORKFLOW_BAD[case]
        _bad_source(root, case, (r, t, p), edit)
    elif case == "self_reference":
        write_tables(wd / "results/ratings", r, t, p)  # the workflow's own output as the source
        ratings_cfg, mention = {"source": "results/ratings"}, ["ratings.source", "inside results/"]
    elif case == "columns_typo":
        write_tables(root / f"{case}_collected", r, t, p)
        ratings_cfg["columns"] = {"ratng": "score"}
        mention = ["ratings.columns: unknown column 'ratng'"]
    else:
        mention = ["ratings.source: not found"]
    cfg = write_config(wd, {"ratings": ratings_cfg, "stats": {"n_boot": 20}})
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(wd),
        "--configfile",
        str(cfg),
        "--cores",
        "1",
        "--allowed-rules",
        "ingest_ratings",
        "icc_table",
        "--",
        "results/stats/tables/icc.csv",
    ]
    assert_clean_failure(
        cmd,
        watch=[wd / "results/study", wd / "results/ratings", wd / "results/stats"],
        must_mention=mention,
        env={"OPENBLAS_NUM_THREADS": "1"},
    )


@pytest.mark.parametrize("passed", ["True", "False"])
def test_a_participant_without_ratings_is_named_unless_not_analysed(raw, passed):
    """A participants.csv row with no rating: an error naming its row if it passed the attention check (Table 1
    would count a participant with no data); accepted as recruited-not-analysed if it did not."""
    stim, f, write = raw
    p = f["participants"]
    ghost = p.iloc[[0]].assign(participant_id="GHOST1", passed_attention=passed)
    f["participants"] = pd.concat([p, ghost], ignore_index=True)
    if passed == "True":
        err = _study_problems(write(), stim)
        _assert_cell(
            err, "participants.csv", len(p), "participant_id", "'GHOST1' passed the attention check but has no rating"
        )
    else:
        tables = validate_ratings_dir(write(), stim, scale=PAPER_SCALE)
        assert "GHOST1" in set(tables["participants"]["participant_id"])
