"""Read the study's tables for the statistics -- the same way in the workflow and in ``modprefs stats``.

:func:`read_stimuli` reads and checks a stimulus table (the workflow's ``results/study/stimuli.csv``
or the ``--clips`` file of ``modprefs stats``). :func:`read_study` reads the validated rating
tables (``results/ratings/*.csv``, or the ones ``modprefs stats`` writes under ``--out``) with the
one reader (:func:`modprefs.io_tables.read_table`: ids verbatim, so a participant ``NA`` stays one)
and :func:`prepare_study` turns them into what the analyses take:

* ``present``: per table, the columns holding at least one value *in the data* -- what
  :func:`modprefs.stats.tables.analyses.run_analysis` checks each analysis's needs against;
* in-memory stand-ins where a column is absent and the analyses only *filter or adjust* by it
  (each one noted): ``passed_attention`` absent -> every participant analysed; ``trial`` absent ->
  0 for the attention check, 1 for every other rating (a constant: the ICC model leaves trial out);
  ``presented_first`` absent -> false everywhere (a constant: left out of the ICC model). Nothing
  is written back; analyses that need the real column are skipped with its name;
* ``ratings.response``: each rating's response index, from the stimuli (whatever the clip ids look like);
* ``assignments``: each rated trial's presentation order (``first_clip``, the response shown
  first) derived from ``ratings.presented_first`` -- for every participant, including those not in
  the design's assignments.csv (the annotation app's reissued ``<slot>_r2`` ids); the design is
  used only to note such participants.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError
from modprefs.io_tables import read_table
from modprefs.ratings.source_tables import ATTENTION_CLIPS
from modprefs.study.terms import ATTENTION_PROMPT

ASSIGNMENT_COLUMNS = ["participant_id", "condition", "trial", "prompt_id", "first_clip"]
RATING_TABLES = ("ratings", "trials", "participants")


class StimuliError(UserInputError):
    """A stimulus (clips) table that the analyses cannot use; lists every problem with file, row and column."""


def read_stimuli(path: str | os.PathLike[str], what: str | None = None) -> pd.DataFrame:
    """A stimulus table: clip_id, prompt_id, response (a whole number >= 0), + extras (n_chars, prism_score, ...).

    ``response`` is honoured as given, whatever the clip ids look like; without it, a clip's response is
    its id's ``_N`` suffix when every clip id has one (the workflow's ``{prompt_id}_{response}``), else
    its position among its prompt's clips in the file (0, 1, ...). A prompt may have any number of
    clips: two (responses 0 and 1) is the paper's pairwise design, one a single-stimulus (MOS) design
    (:func:`pairs_reason` says whether the pairwise analyses can run).

    Checks: the columns exist; ids non-empty; ``response`` a whole number >= 0; no clip twice; no two
    clips of a prompt with the same response; ``n_chars`` (optional) a non-negative number.

    Raises:
        TableError: unreadable file (missing, empty, header-only, non-UTF-8, ...).
        StimuliError: every problem, each naming the file, row and column.
    """
    name = what or str(path)
    df = read_table(path, what=name)
    problems: list[str] = []

    def cell(i: int, column: str, msg: str) -> None:
        problems.append(f"{name} row {i + 2}, column {column}: {msg}")

    missing = [c for c in ("clip_id", "prompt_id") if c not in df.columns]
    if missing:
        raise StimuliError(
            f"{name}: missing column(s) {missing} (needed: clip_id, prompt_id; optional: response, "
            f"n_chars, ...; has {list(df.columns)})"
        )
    clips = df["clip_id"].astype(object)
    response = _stimulus_responses(df)
    if "response" in df.columns:
        for bad in np.flatnonzero(response.isna().to_numpy()):
            cell(int(bad), "response", f"{df['response'].iloc[bad]!r} is not a response index (a whole number >= 0)")
    first: dict[str, int] = {}
    for i, (clip, prompt) in enumerate(zip(clips, df["prompt_id"])):
        if clip is None or pd.isna(clip):
            cell(i, "clip_id", "empty clip id")
            continue
        if prompt is None or pd.isna(prompt):
            cell(i, "prompt_id", "empty prompt id")
        if clip in first:
            cell(i, "clip_id", f"duplicate clip {clip!r} (first at row {first[clip] + 2})")
        else:
            first[clip] = i
    if not problems:
        for prompt, rows in df.groupby(df["prompt_id"].astype(str)).groups.items():
            got = [int(response.loc[r]) for r in rows]
            for r in sorted({x for x in got if got.count(x) > 1}):
                cell(
                    int(rows[0]),
                    "prompt_id",
                    f"prompt {prompt!r} has two clips with response {r} (rows "
                    f"{[int(i) + 2 for i, x in zip(rows, got) if x == r]}); each clip of a prompt needs its own "
                    "response index",
                )
    if "n_chars" in df.columns:
        chars = pd.to_numeric(df["n_chars"], errors="coerce")
        for bad in np.flatnonzero((chars.isna() & df["n_chars"].notna()).to_numpy() | (chars < 0).to_numpy()):
            cell(int(bad), "n_chars", f"{_plain_value(df['n_chars'].iloc[bad])!r} is not a non-negative number")
    if problems:
        raise StimuliError(
            f"{len(problems)} problem(s) with the stimuli {name}:\n" + "\n".join(f"  - {p}" for p in problems[:50])
        )
    return df.assign(response=response.astype(int))


def _plain_value(value: object) -> object:
    """A cell as a user wrote it: numpy scalars as Python numbers (``-500``, not ``np.int64(-500)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _stimulus_responses(df: pd.DataFrame) -> pd.Series:
    """Each clip's response index (float, NaN where a given ``response`` is not a whole number >= 0)."""
    if "response" in df.columns:
        text = df["response"].astype("string").str.strip().str.replace(r"\.0$", "", regex=True)
        return pd.to_numeric(text.where(text.str.fullmatch(r"\d+").fillna(False)), errors="coerce")
    suffix = df["clip_id"].astype(str).str.extract(r"_(\d+)$")[0]
    if suffix.notna().all():
        return pd.to_numeric(suffix).astype(float)
    return df.groupby(df["prompt_id"].astype(str)).cumcount().astype(float)


def pairs_reason(stimuli: pd.DataFrame | None) -> str | None:
    """None when every prompt has exactly two clips, responses 0 and 1 (the paper's pairwise design, which
    the analyses of rating pairs, preferences and winners need); otherwise the reason they are skipped."""
    need = "needs a pairwise design (two responses, 0 and 1, per prompt)"
    if stimuli is None or stimuli.empty or not {"prompt_id", "response"} <= set(stimuli.columns):
        return f"{need}; no stimuli"
    got = stimuli.groupby(stimuli["prompt_id"].astype(str))["response"].agg(lambda r: tuple(sorted(int(x) for x in r)))
    bad = got[got != (0, 1)]
    if bad.empty:
        return None
    sizes = bad.map(len).value_counts().sort_index()
    kinds = {1: "1 response (a single-stimulus design)", 2: "2 responses other than 0 and 1"}
    what = ", ".join(f"{n} with {kinds.get(int(k), f'{k} responses')}" for k, n in sizes.items())
    return f"{need}; {len(bad)} of {len(got)} prompt(s) are not pairs: {what}"


@dataclass
class Study:
    """What the analyses take: ``tables`` (with in-memory stand-ins), ``present`` columns, ``notes``."""

    tables: dict[str, pd.DataFrame]
    present: dict[str, frozenset[str]]
    notes: list[str] = field(default_factory=list)


def present_columns(df: pd.DataFrame | None) -> frozenset[str]:
    """Columns of ``df`` holding at least one value (an empty column is not present)."""
    if df is None:
        return frozenset()
    return frozenset(
        str(c)
        for c in df.columns
        if df[c].notna().any() and not (df[c].dtype == object and df[c].astype(str).str.strip().eq("").all())
    )


def _truthy(values: pd.Series) -> pd.Series:
    text = values.astype("string").str.strip().str.lower()
    return text.isin(["true", "1", "1.0", "yes"]).fillna(False).astype(bool)


def first_clips(ratings: pd.DataFrame, stimuli: pd.DataFrame) -> pd.DataFrame:
    """Assignments implied by the ratings: per rated trial, the response index of the clip presented first."""
    if not {"presented_first", "trial", "clip_id"} <= set(ratings.columns):
        return pd.DataFrame(columns=ASSIGNMENT_COLUMNS)
    response = {c: r for c, (_, r) in ATTENTION_CLIPS.items()}
    response.update(zip(stimuli["clip_id"].astype(str), stimuli["response"].astype(int)))
    first = ratings[_truthy(ratings["presented_first"]).to_numpy()]
    out = pd.DataFrame(
        {
            "participant_id": first["participant_id"].to_numpy(),
            "condition": first["condition"].to_numpy(),
            "trial": pd.to_numeric(first["trial"], errors="coerce").to_numpy(),
            "prompt_id": first["prompt_id"].to_numpy(),
            "first_clip": first["clip_id"].astype(str).map(response).to_numpy(),
        }
    )
    out = out.dropna(subset=["trial", "first_clip"]).astype({"trial": int, "first_clip": int})
    return out.sort_values(["participant_id", "trial"], kind="mergesort").reset_index(drop=True)


def _without_practice(df: pd.DataFrame, name: str, notes: list[str]) -> pd.DataFrame:
    """A copy without the annotation app's practice rows (``practice`` 1/true; never analysed), noted."""
    if "practice" not in df.columns:
        return df.copy()
    from modprefs.ratings.sources import PRACTICE_COLUMN, is_practice

    flag = is_practice(df[PRACTICE_COLUMN])
    if flag.any():
        notes.append(f"{name}: {int(flag.sum())} practice row(s) (practice = 1) left out")
    return df[~flag].reset_index(drop=True)


def prepare_study(tables: Mapping[str, pd.DataFrame | None], design: pd.DataFrame | None = None) -> Study:
    """The analyses' view of validated tables (see the module docstring).

    Args:
        tables: ratings, trials (may be None or 0 rows), participants, stimuli; optionally judges.
        design: the study's assignments.csv, if any (only to note participants outside it).
    """
    present = {name: present_columns(df) for name, df in tables.items()}
    notes: list[str] = []
    ratings_table, participants_table = tables["ratings"], tables["participants"]
    assert ratings_table is not None and participants_table is not None  # required tables (see Args)
    ratings = _without_practice(ratings_table, "ratings", notes)
    participants = participants_table.copy()
    trials = tables.get("trials")
    trials = (
        pd.DataFrame(columns=["participant_id", "prompt_id", "trial"])
        if trials is None
        else _without_practice(trials, "trials", notes)
    )
    for c in ("participant_id", "prompt_id", "trial"):
        if c not in trials.columns:
            trials[c] = pd.Series(dtype=object)
    if "passed_attention" not in present["participants"]:
        participants["passed_attention"] = True
        notes.append("no attention-check result (participants.passed_attention): every participant is analysed")
    if "trial" not in present["ratings"]:
        ratings["trial"] = np.where(ratings["prompt_id"].astype(str) == ATTENTION_PROMPT, 0, 1)
        notes.append(
            "no trial numbers (ratings.trial): every rating counts as a response trial; models without trial number"
        )
    if "presented_first" not in present["ratings"]:
        ratings["presented_first"] = False
        notes.append("no presentation order (ratings.presented_first): models without the order effect")
    stimuli = tables["stimuli"]
    if stimuli is not None and "clip_id" in ratings.columns:  # each rating's response index, from the stimuli
        response = {c: r for c, (_, r) in ATTENTION_CLIPS.items()}
        response.update(zip(stimuli["clip_id"].astype(str), stimuli["response"].astype(int)))
        ratings["response"] = ratings["clip_id"].astype(str).map(response).astype("Int64")
    out = {
        **{k: v for k, v in tables.items() if v is not None},
        "ratings": ratings,
        "participants": participants,
        "trials": trials,
        "assignments": first_clips(ratings, stimuli)
        if "presented_first" in present["ratings"] and "trial" in present["ratings"]
        else pd.DataFrame(columns=ASSIGNMENT_COLUMNS),
    }
    conditions = sorted(set(ratings["condition"].dropna().astype(str)))
    if len(conditions) == 1:
        notes.append(f"only the {conditions[0]} condition has ratings: analyses comparing text and audio are skipped")
    if design is not None and len(design):
        extra = sorted(set(ratings["participant_id"].dropna().astype(str)) - set(design["participant_id"].astype(str)))
        if extra:
            shown = ", ".join(repr(p) for p in extra[:5]) + (" ..." if len(extra) > 5 else "")
            notes.append(
                f"{len(extra)} participant(s) not in the design's assignments.csv (e.g. {shown}): analysed, "
                "with their presentation order from ratings.presented_first"
            )
    return Study(out, present, notes)


def read_study(
    paths: Mapping[str, str | os.PathLike[str]],
    design: str | os.PathLike[str] | None = None,
    stimuli: pd.DataFrame | None = None,
) -> Study:
    """Read the tables of ``paths`` ({name: file}) and, when ratings are among them, ``prepare_study`` them.

    ``stimuli`` is read with :func:`read_stimuli` (unless given as a frame); ``design`` is the
    study's assignments.csv (optional). Without ratings (e.g. only the ICC table) the tables are
    returned as read.
    """
    tables: dict[str, pd.DataFrame | None] = {}
    for name, path in paths.items():
        if name != "stimuli":
            tables[name] = read_table(path, allow_empty=name != "ratings", what=str(path))
    if stimuli is not None or "stimuli" in paths:
        tables["stimuli"] = stimuli if stimuli is not None else read_stimuli(paths["stimuli"])
    if "ratings" not in tables:
        return Study(
            {k: v for k, v in tables.items() if v is not None}, {k: present_columns(v) for k, v in tables.items()}
        )
    plan = read_table(design, allow_empty=True) if design is not None and Path(design).is_file() else None
    return prepare_study(tables, plan)
