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
from modprefs.ratings.sources import ATTENTION_CLIPS

ATTENTION_PROMPT = "attn"
ASSIGNMENT_COLUMNS = ["participant_id", "condition", "trial", "prompt_id", "first_clip"]
RATING_TABLES = ("ratings", "trials", "participants")


class StimuliError(UserInputError):
    """A stimulus (clips) table that the analyses cannot use; lists every problem with file, row and column."""


def read_stimuli(path: str | os.PathLike[str], what: str | None = None) -> pd.DataFrame:
    """A stimulus table: clip_id, prompt_id, response (0/1; from the clip id's ``_0``/``_1`` when absent), + extras.

    Checks: the columns exist; ids non-empty; ``response`` 0 or 1 and equal to the clip id's suffix
    (the analyses read a clip's response index from it); no clip twice; each prompt with exactly
    one clip of response 0 and one of response 1; ``n_chars`` (optional) a non-negative number.

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
    suffix = clips.astype(str).str.extract(r"_([01])$")[0]
    if "response" in df.columns:
        text = df["response"].astype("string").str.strip().str.replace(r"\.0$", "", regex=True)
        response = pd.to_numeric(text.where(text.isin(["0", "1"])), errors="coerce")
        for bad in np.flatnonzero(response.isna().to_numpy()):
            cell(int(bad), "response", f"{df['response'].iloc[bad]!r} is not a response index (0 or 1)")
    else:
        response = pd.to_numeric(suffix, errors="coerce")
    for i, (clip, prompt, suf, resp) in enumerate(zip(clips, df["prompt_id"], suffix, response)):
        if clip is None or pd.isna(clip):
            cell(i, "clip_id", "empty clip id")
            continue
        if prompt is None or pd.isna(prompt):
            cell(i, "prompt_id", "empty prompt id")
        if pd.isna(suf):
            cell(
                i,
                "clip_id",
                f"{clip!r} does not end in _0 or _1 (the response index; clip ids are {{prompt_id}}_{{response}})",
            )
        elif pd.notna(resp) and int(suf) != int(resp):
            cell(i, "clip_id", f"{clip!r} ends in _{suf} but its response is {int(resp)}")
    first: dict[str, int] = {}
    for i, clip in enumerate(clips):
        if clip is None or pd.isna(clip):
            continue
        if clip in first:
            cell(i, "clip_id", f"duplicate clip {clip!r} (first at row {first[clip] + 2})")
        else:
            first[clip] = i
    if not problems:
        for prompt, rows in df.groupby(df["prompt_id"].astype(str)).groups.items():
            got = sorted(int(response.loc[r]) for r in rows)
            if got != [0, 1]:
                cell(
                    int(rows[0]),
                    "prompt_id",
                    f"prompt {prompt!r} has clips with responses {got} (rows "
                    f"{[int(r) + 2 for r in rows]}); each prompt needs one clip of "
                    "response 0 and one of response 1",
                )
    if "n_chars" in df.columns:
        chars = pd.to_numeric(df["n_chars"], errors="coerce")
        for bad in np.flatnonzero((chars.isna() & df["n_chars"].notna()).to_numpy() | (chars < 0).to_numpy()):
            cell(int(bad), "n_chars", f"{df['n_chars'].iloc[bad]!r} is not a non-negative number")
    if problems:
        raise StimuliError(
            f"{len(problems)} problem(s) with the stimuli {name}:\n" + "\n".join(f"  - {p}" for p in problems[:50])
        )
    return df.assign(response=response.astype(int))


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
    ratings = ratings_table.copy()
    participants = participants_table.copy()
    trials = tables.get("trials")
    trials = pd.DataFrame(columns=["participant_id", "prompt_id", "trial"]) if trials is None else trials.copy()
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
