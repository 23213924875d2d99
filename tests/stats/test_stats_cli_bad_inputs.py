"""``modprefs stats`` on bad inputs and arguments (issue #13): every one fails cleanly before writing anything.

Each case runs the real command in a subprocess and checks, with ``tests/support/bad_inputs.py``: exit status
!= 0, a message naming the file and row/column (or the argument), no Python traceback, and the
``--out`` folder's parent byte-identical before and after (no partial output, no temporary folder
left). Two documented results close the file: a participant called ``NA`` gives the same icc.csv as
an ordinary id, and a study with one condition gives a labelled partial analysis.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from modprefs.cli import main
from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from support.bad_inputs import assert_clean_failure
from support.ratings_helpers import make_assignments, make_stimuli, write_tables

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--n-boot", "5", "--n-perm", "0", "--n-boot-alpha", "0", "--n-perm-alpha", "0"]


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    """A valid study: ratings/ (three tables), clips.csv, judges.csv, terms.txt."""
    base = tmp_path_factory.mktemp("valid")
    stim = make_stimuli(8, seed=1)
    asg = make_assignments(stim, raters_per_condition=4, trials=4, seed=1)
    r, t, p, _ = simulate_ratings(
        stim, asg, SimulationParams(p_fail_attention_audio=0, p_fail_attention_text=0), seed=1
    )
    write_tables(base / "ratings", r, t, p)
    stim.to_csv(base / "clips.csv", index=False)
    judges = pd.DataFrame(
        [
            {
                "judge": "j",
                "backend": "b",
                "model": "m",
                "prompt_version": "v1",
                "modality": "text",
                "kind": "response_quality",
                "prompt_id": c.prompt_id,
                "clip_id": c.clip_id,
                "sample": 0,
                "rating": 50,
                "status": "ok",
                "reason": "",
            }
            for c in stim.itertuples()
        ]
    )
    judges.to_csv(base / "judges.csv", index=False)
    shutil.copy(ROOT / "resources/analysis/modality_terms.txt", base / "terms.txt")
    return base


def _csv(path: Path, change: Callable[[pd.DataFrame], pd.DataFrame]) -> None:
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    change(df).to_csv(path, index=False)


def _set(column: str, row: int, value: str) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(df: pd.DataFrame) -> pd.DataFrame:
        df.loc[row, column] = value
        return df

    return change


def _then(*_effects: object, args: list[str] | None = None) -> list[str]:
    """The extra arguments of a case after its setup effects (evaluated as the call's arguments)."""
    return list(args or [])


def _bytes(path: Path, old: bytes, new: bytes) -> None:
    path.write_bytes(path.read_bytes().replace(old, new, 1))


def _clips_inside_out(work: Path) -> list[str]:
    (work / "o" / "out").mkdir()
    shutil.move(work / "clips.csv", work / "o" / "out" / "clips.csv")
    return ["--clips", str(work / "o" / "out" / "clips.csv"), "--overwrite"]


def _damaged_datasets_folder(work: Path) -> list[str]:
    """The study's ratings as a datasets save_to_disk folder, one string in its .arrow file made invalid UTF-8 (the
    file is memory-mapped: pyarrow's "Wrapping ... failed" when the column is read)."""
    import datasets

    folder = work / "ds"
    tables = {t: pd.read_csv(work / "ratings" / f"{t}.csv") for t in ("ratings", "trials", "participants")}
    datasets.DatasetDict({t: datasets.Dataset.from_pandas(df) for t, df in tables.items()}).save_to_disk(str(folder))
    arrow = next((folder / "ratings").glob("*.arrow"))
    data = arrow.read_bytes()
    at = data.index(b"P0002P0002")
    arrow.write_bytes(data[:at] + b"\xff\xfe\xfd" + data[at + 3 :])
    return ["--ratings", str(folder)]


def _published_like(work: Path, card: bytes) -> None:
    """work/pub: the study's ratings as a datasets folder with a dataset card (README.md) of ``card``'s bytes."""
    import datasets

    tables = {t: pd.read_csv(work / "ratings" / f"{t}.csv") for t in ("ratings", "trials", "participants")}
    folder = work / "pub"
    datasets.DatasetDict({t: datasets.Dataset.from_pandas(df) for t, df in tables.items()}).save_to_disk(str(folder))
    (folder / "README.md").write_bytes(card)


# case: (setup(work) -> extra args, fragments the message must contain). ``work`` holds a copy of the valid
# study; the command is ``modprefs stats --ratings work/ratings --clips work/clips.csv --out work/o/out``.
CASES: dict[str, tuple[Callable[[Path], list[str]], list[str]]] = {
    "clips_missing": (lambda w: ["--clips", str(w / "nowhere.csv")], ["nowhere.csv: file not found"]),
    "clips_a_folder": (lambda w: ["--clips", str(w / "ratings")], ["ratings: is a folder; give the table's file"]),
    "clips_n_chars_negative": (
        lambda w: _then(_csv(w / "clips.csv", _set("n_chars", 1, "-500"))),
        ["clips.csv row 3, column n_chars: -500 is not a non-negative number"],
    ),
    "clips_empty": (lambda w: _then((w / "clips.csv").write_text("")), ["clips.csv: the file is empty"]),
    "clips_non_utf8": (
        lambda w: _then(_bytes(w / "clips.csv", b"pr01_0", b"pr\xe901_0")),
        ["clips.csv: not UTF-8 text", "line 4"],
    ),
    "clips_header_only": (
        lambda w: _then(_csv(w / "clips.csv", lambda d: d.iloc[:0])),
        ["clips.csv: has a header but no data rows"],
    ),
    "clips_response_x": (
        lambda w: _then(_csv(w / "clips.csv", _set("response", 1, "x"))),
        ["clips.csv row 3, column response", "'x'"],
    ),
    "clips_duplicate_row": (
        lambda w: _then(_csv(w / "clips.csv", lambda d: pd.concat([d, d.iloc[[2]]]))),
        ["clips.csv row 18, column clip_id", "duplicate clip 'pr01_0'"],
    ),
    "clips_without_prompt": (
        lambda w: _then(_csv(w / "clips.csv", lambda d: d.drop(columns="prompt_id"))),
        ["clips.csv", "missing column(s) ['prompt_id']"],
    ),
    "ci_level_1.5": (lambda w: ["--ci-level", "1.5"], ["argument --ci-level", "1.5"]),
    "slope_alpha_0": (
        lambda w: ["--table2-slope-alpha", "0"],
        ["argument --table2-slope-alpha", "0.0 is not in (0, 1]"],
    ),
    "slope_alpha_text": (
        lambda w: ["--table2-slope-alpha", "p"],
        ["argument --table2-slope-alpha", "'p' is not a number"],
    ),
    "n_boot_negative": (lambda w: ["--n-boot", "-1"], ["argument --n-boot", "negative"]),
    "n_perm_text": (lambda w: ["--n-perm", "many"], ["argument --n-perm", "'many' is not an integer"]),
    "ci_method_unknown": (lambda w: ["--ci-method", "bca"], ["argument --ci-method", "invalid choice"]),
    "judges_missing": (lambda w: ["--judges", str(w / "no_judges.csv")], ["--judges", "no_judges.csv: file not found"]),
    "judges_without_columns": (
        lambda w: _then(
            _csv(w / "judges.csv", lambda d: d.drop(columns=["kind", "status"])),
            args=["--judges", str(w / "judges.csv")],
        ),
        ["--judges", "judges.csv: missing column(s) ['kind', 'status']"],
    ),
    "modality_terms_missing": (
        lambda w: ["--modality-terms", str(w / "none.txt")],
        ["--modality-terms", "none.txt: file not found"],
    ),
    "modality_terms_non_utf8": (
        lambda w: _then((w / "terms.txt").write_bytes(b"caf\xe9\n"), args=["--modality-terms", str(w / "terms.txt")]),
        ["--modality-terms", "not UTF-8"],
    ),
    "three_header_only_files": (
        lambda w: _then(
            *[_csv(w / "ratings" / f"{n}.csv", lambda d: d.iloc[:0]) for n in ("ratings", "trials", "participants")]
        ),
        ["ratings.csv: no rating rows", "empty study"],
    ),
    "ratings_source_missing": (lambda w: _then(shutil.rmtree(w / "ratings")), ["ratings", "no such file or folder"]),
    "ratings_non_utf8": (
        lambda w: _then(_bytes(w / "ratings" / "ratings.csv", b"text", b"t\xe9xt")),
        ["ratings.csv: not UTF-8 text", "byte 0xe9"],
    ),
    "ratings_field_count": (
        lambda w: _then(_bytes(w / "ratings" / "ratings.csv", b"\n", b",extra\n")),
        ["ratings.csv: line 2 has 9 field(s) but the header has 10"],
    ),
    "rating_out_of_range": (
        lambda w: _then(_csv(w / "ratings" / "ratings.csv", _set("rating", 4, "101"))),
        ["ratings.csv row 6, column rating", "above the maximum 100"],
    ),
    "ratings_duplicate_header": (
        lambda w: _then(_bytes(w / "ratings" / "ratings.csv", b"condition,", b"rating,")),
        ["ratings.csv: column 'rating' appears more than once"],
    ),
    "duplicate_participant": (
        lambda w: _then(
            _csv(w / "ratings" / "participants.csv", lambda d: pd.concat([d, d.iloc[[1]]], ignore_index=True))
        ),
        ["participants.csv row 10, column participant_id", "duplicate participant"],
    ),
    "unknown_clip": (
        lambda w: _then(_csv(w / "ratings" / "ratings.csv", _set("clip_id", 6, "zz_1"))),
        ["ratings.csv row 8, column clip_id", "unknown clip 'zz_1'"],
    ),
    "attention_disagrees": (
        lambda w: _then(
            _csv(
                w / "ratings" / "trials.csv",
                lambda d: d.assign(preference=d["preference"].where(d["trial"] != "0", "1")),
            )
        ),
        ["participants.csv row 2, column passed_attention", "preferred '1'"],
    ),
    "all_failed_attention": (
        lambda w: _then(
            _csv(
                w / "ratings" / "trials.csv",
                lambda d: d.assign(preference=d["preference"].where(d["trial"] != "0", "1")),
            ),
            _csv(w / "ratings" / "participants.csv", lambda d: d.assign(passed_attention="false")),
        ),
        ["no rating left to analyse", "failed the attention check"],
    ),
    "participant_without_ratings": (
        lambda w: _then(
            _csv(
                w / "ratings" / "participants.csv",
                lambda d: pd.concat([d, d.iloc[[0]].assign(participant_id="GHOST1")], ignore_index=True),
            )
        ),
        ["participants.csv row", "column participant_id", "'GHOST1' passed the attention check but has no rating"],
    ),
    "out_not_empty": (
        lambda w: _then((w / "o" / "out").mkdir(), (w / "o" / "out" / "report.html").write_text("old")),
        ["--out", "is not empty; pass --overwrite"],
    ),
    "out_overwrite_would_delete_an_input": (
        lambda w: _clips_inside_out(w),
        ["--out", "holds the input", "clips.csv", "would delete it"],
    ),
    "out_is_a_file": (lambda w: _then((w / "o" / "out").write_text("a file")), ["--out", "is not a folder"]),
    "out_under_a_file": (
        lambda w: _then((w / "o" / "f").write_text("a file"), args=["--out", str(w / "o" / "f" / "out")]),
        ["--out", "/o/f is a file, not a folder"],
    ),
    "out_under_dev_null": (lambda w: ["--out", "/dev/null/out"], ["--out /dev/null/out: lies in /dev"]),
    "out_in_proc": (lambda w: ["--out", "/proc/x"], ["--out /proc/x: lies in /proc, a kernel filesystem"]),
    "map_unknown_column": (lambda w: ["--map", "ratng=score"], ["column map: unknown column 'ratng'"]),
    "map_source_column_absent": (
        lambda w: ["--map", "rating=score"],
        ["column map rating=score", "no table has a column 'score'"],
    ),
    "map_malformed": (lambda w: ["--map", "rating"], ["--map 'rating'", "expected canonical=source"]),
    "wide_with_one_rating_column": (
        lambda w: _then(_csv(w / "ratings" / "ratings.csv", lambda d: d.rename(columns={"rating": "rating_0"}))),
        ["'rating_0' but no 'rating_1'"],
    ),
    "participant_column_disagrees_in_one_table": (
        lambda w: _then(
            _csv(w / "single.csv", lambda d: d.assign(age=["30"] * (len(d) - 1) + ["31"])),
            args=["--ratings", str(w / "single.csv")],
        ),
        ["single.csv row", "column age", "'31'", "must agree"],
    ),
    "corrupt_parquet": (
        lambda w: _then((w / "r.parquet").write_bytes(b"PAR1garbage"), args=["--ratings", str(w / "r.parquet")]),
        ["r.parquet: cannot be read as Parquet"],
    ),
    "unsupported_file_type": (
        lambda w: _then((w / "r.xlsx").write_bytes(b"x"), args=["--ratings", str(w / "r.xlsx")]),
        ["unsupported file type '.xlsx'"],
    ),
    "ratings_source_a_symbolic_link_loop": (
        lambda w: _then(
            (w / "loop").symlink_to("loop2"), (w / "loop2").symlink_to("loop"), args=["--ratings", str(w / "loop")]
        ),
        ["ratings source", "loop: is a symbolic link loop"],
    ),
    "clips_a_dangling_link": (
        lambda w: _then((w / "gone.csv").symlink_to("nowhere.csv"), args=["--clips", str(w / "gone.csv")]),
        ["--clips", "gone.csv: is a symbolic link to nowhere.csv, which does not exist"],
    ),
    "modality_terms_a_folder": (
        lambda w: ["--modality-terms", str(w / "ratings")],
        ["--modality-terms", "ratings: is a folder, not a file"],
    ),
    "published_card_not_utf8": (
        lambda w: _then(_published_like(w, b"---\n\xff\xfe rating_scale\n---\n"), args=["--ratings", str(w / "pub")]),
        ["ratings source", "pub/README.md: the dataset card is not UTF-8 text (byte 0xff"],
    ),
    "threads_zero": (lambda w: ["--threads", "0"], ["argument --threads: 0 is not a number of threads"]),
    "threads_negative": (
        lambda w: ["--threads", "-1"],
        ["argument --threads: -1 is not a number of threads (a whole number >= 1)"],
    ),
    "threads_beyond_the_cores_noted": (
        lambda w: ["--threads", "10000", "--clips", str(w / "nowhere.csv")],
        ["note: --threads 10000 is more than the", "cores this machine gives the command; using", "file not found"],
    ),
    "damaged_arrow_in_a_datasets_folder": (
        _damaged_datasets_folder,
        ["ratings source", "cannot read the datasets folder", "data-00000-of-00001.arrow: a damaged Arrow file"],
    ),
    "hub_unreachable": (
        lambda w: ["--ratings", "hf://some-lab/released-ratings"],
        ["could not load the Hugging Face dataset 'some-lab/released-ratings' from the hub"],
    ),
}


def test_at_least_25_cases():
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_fails_cleanly(valid, tmp_path, case):
    work = tmp_path / "work"
    shutil.copytree(valid, work)
    r = pd.read_csv(work / "ratings" / "ratings.csv", dtype=str, keep_default_na=False)
    r.assign(age="30").to_csv(work / "single.csv", index=False)
    (work / "o").mkdir()
    setup, mention = CASES[case]
    extra = setup(work)
    args = {"--ratings": str(work / "ratings"), "--clips": str(work / "clips.csv"), "--out": str(work / "o" / "out")}
    for flag in list(args):
        if flag in extra:
            i = extra.index(flag)
            args[flag] = extra[i + 1]
            extra = extra[:i] + extra[i + 2 :]
    cmd = [sys.executable, "-m", "modprefs.cli", "stats", *(x for kv in args.items() for x in kv), *FAST, *extra]
    listing = sorted(p.name for p in (work / "o").iterdir())
    env = {
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }
    result = assert_clean_failure(cmd, watch=[work / "o"], must_mention=mention, env=env, timeout=300)
    assert result.returncode == 2
    assert sorted(p.name for p in (work / "o").iterdir()) == listing  # no temporary folder left behind


# ---- documented results ------------------------------------------------------------------------------------
@pytest.mark.slow  # a real analysis: over 5 s on 2 cores
def test_a_cell_longer_than_the_csv_modules_field_limit_is_read(valid, tmp_path):
    """A 200,000-character justification (Python's csv module stops at 131,072 characters a field, which the table
    checks used to hit) is read and analysed like any other."""
    work = tmp_path / "work"
    shutil.copytree(valid, work)
    trials = pd.read_csv(work / "ratings" / "trials.csv", dtype=str, keep_default_na=False)
    trials.loc[trials.index[3], "justification"] = "long " * 40_000
    trials.to_csv(work / "ratings" / "trials.csv", index=False)
    assert _run(work / "ratings", work / "clips.csv", tmp_path / "out") == 0
    written = pd.read_csv(tmp_path / "out" / "ratings" / "trials.csv", dtype=str, keep_default_na=False)
    assert written["justification"].str.len().max() == 200_000


def _run(source: Path, clips: Path, out: Path) -> int:
    return main(["stats", "--ratings", str(source), "--clips", str(clips), "--out", str(out), *FAST])


@pytest.mark.slow  # over 5 s on 2 cores: not in `make test-fast`
def test_participant_called_na_gives_the_same_icc(valid, tmp_path):
    assert _run(valid / "ratings", valid / "clips.csv", tmp_path / "ordinary") == 0
    parts = pd.read_csv(valid / "ratings" / "participants.csv", dtype=str, keep_default_na=False)
    audio = sorted(parts.loc[parts["condition"] == "audio", "participant_id"])
    renamed = tmp_path / "renamed"
    renamed.mkdir()
    for name in ("ratings", "trials", "participants"):
        _csv_copy = pd.read_csv(valid / "ratings" / f"{name}.csv", dtype=str, keep_default_na=False)
        _csv_copy["participant_id"] = _csv_copy["participant_id"].replace(audio[0], "NA")
        _csv_copy.to_csv(renamed / f"{name}.csv", index=False)
    assert _run(renamed, valid / "clips.csv", tmp_path / "na") == 0
    icc = (tmp_path / "na" / "tables" / "icc.csv").read_bytes()
    assert icc == (tmp_path / "ordinary" / "tables" / "icc.csv").read_bytes()
    assert pd.read_csv(tmp_path / "na" / "tables" / "icc.csv").set_index("condition").loc[
        "audio", "n_participants"
    ] == len(audio)
    written = pd.read_csv(tmp_path / "na" / "ratings" / "participants.csv", dtype=str, keep_default_na=False)
    assert "NA" in set(written["participant_id"])


def test_one_condition_is_a_labelled_partial_analysis(valid, tmp_path, capsys):
    src = tmp_path / "audio_only"
    src.mkdir()
    parts = pd.read_csv(valid / "ratings" / "participants.csv", dtype=str, keep_default_na=False)
    keep = set(parts.loc[parts["condition"] == "audio", "participant_id"])
    for name in ("ratings", "trials", "participants"):
        df = pd.read_csv(valid / "ratings" / f"{name}.csv", dtype=str, keep_default_na=False)
        df[df["participant_id"].isin(keep)].to_csv(src / f"{name}.csv", index=False)
    assert _run(src, valid / "clips.csv", tmp_path / "out") == 0
    err = capsys.readouterr().err
    icc = pd.read_csv(tmp_path / "out" / "tables" / "icc.csv").set_index("condition")
    assert icc.loc["audio", "icc_2_1"] == icc.loc["audio", "icc_2_1"] and icc.loc["text", "n_ratings"] == 0
    assert "no analysable ratings" in icc.loc["text", "note"]
    for name in ("table2_lmm", "table4_reliability", "cross_modality_agreement", "random_slope"):
        table = pd.read_csv(tmp_path / "out" / "tables" / f"{name}.csv")
        assert (
            table["status"].iloc[0] == "skipped"
            and "needs ratings in the audio and text conditions" in table["reason"].iloc[0]
        ), name
        assert f"skipped {name}: needs ratings in the audio and text conditions" in err
    report = (tmp_path / "out" / "report.html").read_text()
    assert "only the audio condition has ratings" in report
    assert pd.read_csv(tmp_path / "out" / "tables" / "audio_quality.csv").columns[0] != "status"


@pytest.fixture(scope="module")
def slow_study(tmp_path_factory):
    """A study whose analysis takes many seconds (30 prompts, 12 raters per condition, 10 trials)."""
    base = tmp_path_factory.mktemp("slow")
    stim = make_stimuli(30, seed=2)
    asg = make_assignments(stim, raters_per_condition=12, trials=10, seed=2)
    r, t, p, _ = simulate_ratings(stim, asg, SimulationParams(), seed=2)
    write_tables(base / "ratings", r, t, p)
    stim.to_csv(base / "clips.csv", index=False)
    return base


@pytest.mark.slow  # a real analysis stopped part-way: over 5 s on 2 cores
@pytest.mark.parametrize(
    ("sig", "status", "said"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_a_stopped_run_leaves_nothing_behind(slow_study, tmp_path, sig, status, said):
    """Ctrl-C (SIGINT) or SIGTERM while the analysis runs in its temporary folder: a one-line message, exit 130
    or 143, no traceback, the temporary folder removed and the kept ``--out`` (with --overwrite) unchanged.

    The study is large enough (30 prompts, 12 raters per condition, permutation tests on) that its analysis runs
    for many seconds after the temporary folder appears, so the signal cannot arrive after the analysis ended."""
    work = tmp_path / "o"
    (work / "out").mkdir(parents=True)
    (work / "out" / "report.html").write_text("kept")
    cmd = [
        sys.executable, "-m", "modprefs.cli", "stats", "--ratings", str(slow_study / "ratings"), "--clips",
        str(slow_study / "clips.csv"), "--out", str(work / "out"), "--overwrite", "--n-boot", "400",
        "--n-perm", "2000",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OPENBLAS_NUM_THREADS": "1"}
    # a shell without job control starts background commands with SIGINT ignored, and Python then installs no
    # KeyboardInterrupt handler: `bash .ci/run &` would make the analysis deaf to Ctrl-C and this test fail
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509 (no threads started yet)
    )
    deadline = time.monotonic() + 120
    while not list(work.glob(".out.*.tmp")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the analysis finished before it could be stopped: give it more resamples"
    time.sleep(0.2)
    assert proc.poll() is None, "the analysis finished before it could be stopped: give it more resamples"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == status, err
    assert said in err and "Traceback" not in err and str(work / "out") in err
    assert sorted(p.name for p in work.iterdir()) == ["out"]
    assert [p.name for p in (work / "out").iterdir()] == ["report.html"]
    assert (work / "out" / "report.html").read_text() == "kept"
