"""Validate collected (or simulated) ratings from any ratings source, every problem at once.

:func:`ingest_ratings` loads a source (:mod:`modprefs.ratings.sources`: the three-table folder, a
single CSV/Parquet table in long or wide format with a column map, a ``datasets`` folder, ...) and
:func:`validate_ratings` checks it. Every problem is a message naming the user's file, the row as a
spreadsheet shows it (the header is row 1, so the first data row of a CSV is row 2; for Parquet and
``datasets`` row 1 is the first record) and the user's column name. If there is any problem,
:class:`RatingsValidationError` lists them (the first :data:`MAX_LISTED`, then a count);
otherwise the typed tables come back with notes on what was derived.

Required: ratings with participant_id, clip_id (or prompt_id + response) and rating.
Everything else is optional and checked when present (workflow/schemas/*.schema.yaml: types,
ranges, allowed values). trials.csv and participants.csv are optional; without participants.csv
the participants (id, condition) are derived from the ratings. Without a ``condition`` column
(in the ratings or participants) every rating is in one condition, named ``text`` (noted): the
statistics' single-condition case, whose comparisons of conditions are skipped with that reason.

Rating scale: ``rating`` and ``audio_quality`` are checked against the study's
:class:`~modprefs.scale.RatingScale` (``scale``: config ``study.scale``, ``modprefs stats --scale``;
default the paper's 1..100 in whole points): a value below its minimum, above its maximum or off
its step is an error naming the file, row and column, and the error says how to choose another
scale. On a scale of whole numbers the columns are integers, otherwise numbers.

Stimuli: given (the workflow's stimuli.csv, ``--clips``), or, when ``stimuli`` is None, derived
from the ratings themselves (:func:`modprefs.ratings.sources.derive_stimuli`: from ``prompt_id`` +
``response`` columns, from ``{prompt}_{response}`` clip ids, else each clip its own item) and
returned in :attr:`ValidRatings.stimuli`. A prompt may have any number of responses (one: a
single-stimulus / MOS design; the pairwise analyses are skipped later, with that reason).

Checks across rows and files, each where its columns exist: unique keys (participant x clip in
ratings, participant x trial in trials, participant in participants); prompt_id and clip_id known
(the stimuli's plus the attention check's ``attn``, ``attn_0``, ``attn_1``) and the clip belonging
to the row's prompt; the attention check at trial 0 only; the rating row's condition equal to the
participant's; audio_quality present in the audio condition and absent in text; audio-only trial
measures (deliberation_time_s, replays_0/1, relistened_first true) absent in text; every
participant of ratings/trials listed in participants.csv (when given), and every participant listed
there who passed the attention check with at least one rating (a participant who rated nothing is an
error, not a silent row in Table 1's counts); every trial with exactly one
rating of each of its prompt's clips (two in the paper's design), exactly one of them presented
first (prompts with two or more clips), and every rating with its trial row (when trials are given).

Attention check (trial 0, prompt ``attn``: ``attn_0`` coherent, ``attn_1`` nonsensical): a
participant passes unless they preferred the nonsensical response (preference ``1``; ``0`` and
``tie`` pass, as the annotation app scores it). When participants.csv has ``passed_attention``
and trials.csv a trial-0 preference, they must agree: a disagreement is an ERROR naming the
participant, both rows and both values (the analyses exclude by ``passed_attention``; a record
contradicting the participant's own answer means one of them is wrong). Without
``passed_attention`` it is derived from the trial-0 preference (noted).

Study-level checks: a study without rating rows (an empty or header-only ratings table), or with
no rating left to analyse (every participant failed the attention check, only trial-0 rows) is an
error. A single condition is accepted: analyses comparing conditions are skipped later, with that
reason. Ratings by participants not in the design (``assignments``; the annotation app's reissued
``<slot>_r2`` participants) are accepted and noted: the analyses take each trial's presentation
order from the ratings' ``presented_first``, not from assignments.csv.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError
from modprefs.ratings.schema import TABLES, ColumnSpec, column_specs, parse_column
from modprefs.ratings.sources import ATTENTION_CLIPS, Origin, RawTables, load_ratings_source
from modprefs.scale import RatingScale
from modprefs.study.terms import ATTENTION_PROMPT

MAX_LISTED = 50
AUDIO_ONLY_TRIAL_COLUMNS = ("deliberation_time_s", "replays_0", "replays_1")
FAILED_ATTENTION_PREFERENCE = "1"  # the nonsensical response attn_1
SCALE_COLUMNS = ("rating", "audio_quality")  # checked against the study's rating scale
#: the condition of every rating when a source has no condition column (the single-condition case)
DEFAULT_CONDITION = "text"


class RatingsValidationError(UserInputError):
    """Raised with every problem found; ``.problems`` holds the full list of messages."""

    def __init__(self, problems: list[str], directory: str | Path | None = None, hint: str = ""):
        self.problems = list(problems)
        where = f" in {directory}" if directory is not None else ""
        shown = "\n".join(f"  - {m}" for m in self.problems[:MAX_LISTED])
        more = len(self.problems) - MAX_LISTED
        tail = f"\n  ... and {more} more problem(s) not listed" if more > 0 else ""
        tail += f"\n{hint}" if hint else ""
        super().__init__(f"{len(self.problems)} problem(s) with the ratings{where}:\n{shown}{tail}")


@dataclass
class ValidRatings:
    """Typed tables (only the columns the source has, plus ``source`` and derived participants) and notes."""

    tables: dict[str, pd.DataFrame]
    notes: list[str] = field(default_factory=list)
    #: the stimuli the ratings were checked against (given, or derived from the ratings)
    stimuli: pd.DataFrame | None = None


class _Problems:
    def __init__(self, origins: Mapping[str, Origin]) -> None:
        self.items: list[str] = []
        self.origins = origins
        self.off_scale = False  # a rating or audio quality outside the scale (the error then names the scale)

    def file(self, table: str, msg: str) -> None:
        self.items.append(f"{self.origins[table].file()}: {msg}")

    def cell(self, table: str, idx: int, column: str, msg: str) -> None:
        self.items.append(f"{self.origins[table].where(idx, column)}: {msg}")

    def at(self, table: str, idx: int) -> str:
        return self.origins[table].where(idx)


def _plain(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


def scale_spec(spec: ColumnSpec, scale: RatingScale) -> ColumnSpec:
    """``spec`` of a rating column on ``scale``: integers on a scale of whole numbers, else numbers, within
    [min, max] (the step is checked by :func:`_off_step`)."""
    return dataclasses.replace(
        spec, kind="integer" if scale.is_integer else "number", minimum=_plain(scale.min), maximum=_plain(scale.max)
    )


def _off_step(values: pd.Series, scale: RatingScale) -> list[int]:
    """Rows of ``values`` (parsed, within range) that are not on one of the scale's steps."""
    x = pd.to_numeric(values, errors="coerce").astype(float).to_numpy()
    return [int(i) for i in np.flatnonzero(np.isfinite(x) & ~scale.on_scale(x))]


def scale_hint(scale: RatingScale) -> str:
    """The line a rating error ends with: which scale the ratings were checked against, how to choose another."""
    return (
        f"  (ratings and audio quality are checked against the rating scale {scale.describe()}; a study on "
        "another scale sets it with `modprefs stats --scale MIN:MAX[:STEP]` or the workflow config's study.scale)"
    )


def _parse_table(table: str, raw: pd.DataFrame, problems: _Problems, scale: RatingScale) -> pd.DataFrame:
    """Typed columns per the schema (rating columns per ``scale``); missing optional columns stay absent,
    extra columns stay strings."""
    out = pd.DataFrame(index=raw.index)
    specs = {s.name: s for s in column_specs(table)}
    for name, spec in specs.items():
        if name not in raw.columns:
            if spec.required:
                hint = " (or prompt_id + response)" if (table, name) == ("ratings", "clip_id") else ""
                problems.file(table, f"missing column {problems.origins[table].column(name)!r}{hint}")
            continue
        on_scale = table == "ratings" and name in SCALE_COLUMNS
        series, errs = parse_column(raw[name], scale_spec(spec, scale) if on_scale else spec)
        for idx, msg in errs:
            problems.cell(table, idx, name, msg)
        if on_scale:
            problems.off_scale |= any(k in m for _, m in errs for k in ("minimum", "maximum", "integer"))
            for idx in _off_step(series, scale):
                problems.off_scale = True
                problems.cell(
                    table,
                    idx,
                    name,
                    f"{raw[name].iloc[idx]!r} is not on the scale's steps ({scale.min:g}, "
                    f"{scale.min + scale.step:g}, ... {scale.max:g}: step {scale.step:g})",
                )
        out[name] = series
    for c in raw.columns:
        if c not in out.columns:
            out[c] = raw[c]
    return out


def _present(x: object) -> bool:
    return x is not None and not (isinstance(x, float) and x != x) and x is not pd.NA


def _col(df: pd.DataFrame | None, name: str) -> list:
    """The column as a list, or all-None when the table lacks it."""
    if df is None:
        return []
    return df[name].tolist() if name in df.columns else [None] * len(df)


def _stimulus_maps(stimuli: pd.DataFrame) -> tuple[set[str], dict[str, tuple[str, int]], dict[str, set[str]]]:
    prompts = set(stimuli["prompt_id"].astype(str)) | {ATTENTION_PROMPT}
    clip_of: dict[str, tuple[str, int]] = dict(ATTENTION_CLIPS)
    for pid, cid, resp in zip(
        stimuli["prompt_id"].astype(str), stimuli["clip_id"].astype(str), stimuli["response"].astype(int)
    ):
        clip_of[cid] = (pid, int(resp))
    clips_by_prompt: dict[str, set[str]] = defaultdict(set)
    for cid, (pid, _) in clip_of.items():
        clips_by_prompt[pid].add(cid)
    return prompts, clip_of, clips_by_prompt


def ingest_ratings(
    source: str | Path,
    stimuli: pd.DataFrame | None,
    columns: Mapping[str, str] | None = None,
    assignments: pd.DataFrame | None = None,
    *,
    scale: RatingScale,
) -> ValidRatings:
    """Load ``source`` (:func:`modprefs.ratings.sources.load_ratings_source`) and validate it.

    ``stimuli`` None: derived from the ratings (module docstring), returned in ``.stimuli`` as the
    given ones are. ``scale``: the study's rating scale (required: no stage assumes the paper's 1..100).

    Raises:
        RatingsValidationError: every problem with the values; RatingsSourceError / TableError: a
        source, file or column map that cannot be read (each names the file).
    """
    raw = load_ratings_source(source, columns, stimuli, derive_stimuli=stimuli is None)
    if stimuli is None:
        stimuli = raw.stimuli
        assert stimuli is not None  # derive_stimuli=True always sets it
    return validate_ratings(raw, stimuli, assignments, scale=scale)


def validate_ratings_dir(
    directory: str | Path,
    stimuli: pd.DataFrame,
    columns: Mapping[str, str] | None = None,
    *,
    scale: RatingScale,
) -> dict[str, pd.DataFrame]:
    """Validate the tables of the ratings source ``directory`` against ``stimuli``; the typed tables.

    The tables' checks only (as the annotation app's ``export --validate`` needs): an export made
    before anyone rated passes. :func:`ingest_ratings` adds the study-level checks for analysis.
    """
    raw = load_ratings_source(directory, columns, stimuli)
    return validate_ratings(raw, stimuli, study_checks=False, scale=scale).tables


def validate_ratings(
    raw: RawTables,
    stimuli: pd.DataFrame,
    assignments: pd.DataFrame | None = None,
    study_checks: bool = True,
    *,
    scale: RatingScale,
) -> ValidRatings:
    """Check the loaded tables (see the module docstring); raise :class:`RatingsValidationError` on any problem.

    Args:
        raw: the source's tables as strings with their provenance.
        stimuli: the stimulus table: prompt_id, clip_id, response.
        assignments: the study design (participant_id, ...); participants not in it are noted.
        study_checks: also refuse a study with nothing to analyse (no rating rows, or none left
            after the attention check); off for validating an export's tables only.
        scale: the rating scale ``rating`` and ``audio_quality`` must be on (the study's; required).

    Returns:
        :class:`ValidRatings`: typed ratings, trials (when given) and participants (given, or
        derived from the ratings), ``source`` filled with ``collected`` where absent, and ``stimuli``.
    """
    problems = _Problems(raw.origins)
    notes = list(raw.notes)
    tables: dict[str, pd.DataFrame | None] = {t: None for t in TABLES}
    for t in TABLES:
        if t in raw.tables and t != "ratings" and raw.tables[t].empty:
            notes.append(f"{raw.origins[t].file()}: no rows, treated as absent")
        elif t in raw.tables:
            tables[t] = _parse_table(t, raw.tables[t], problems, scale)
    ratings = tables["ratings"]
    assert ratings is not None
    _fill_condition(tables, notes)
    if ratings.empty and study_checks:
        problems.file(
            "ratings",
            "no rating rows (a header without data, or an empty dataset): an empty study has nothing to analyse",
        )
    given_participants = tables["participants"] is not None
    _cross_checks(tables, stimuli, problems, given_participants)
    if not problems.items:
        tables["participants"] = _participants(tables, notes)
        _attention_check(tables, problems, notes)
    if not problems.items and study_checks:
        _study_checks(tables, problems, notes, assignments)
    if problems.items:
        raise RatingsValidationError(problems.items, raw.source, scale_hint(scale) if problems.off_scale else "")
    out = {t: df for t, df in tables.items() if df is not None}
    for df in out.values():
        if "source" not in df.columns:
            df["source"] = "collected"
    return ValidRatings(out, notes, stimuli)


def _fill_condition(tables: dict[str, pd.DataFrame | None], notes: list[str]) -> None:
    """A ratings table without ``condition``: the participants' condition when they have one, else
    :data:`DEFAULT_CONDITION` for every rating (noted)."""
    ratings, parts = tables["ratings"], tables["participants"]
    assert ratings is not None
    if "condition" in ratings.columns:
        return
    if parts is not None and "condition" in parts.columns and "participant_id" in ratings.columns:
        of = parts.dropna(subset=["participant_id"]).drop_duplicates("participant_id")
        ratings["condition"] = ratings["participant_id"].map(of.set_index("participant_id")["condition"])
        notes.append("ratings without condition: taken from the participants table")
        return
    ratings["condition"] = DEFAULT_CONDITION
    if parts is not None and "condition" not in parts.columns:
        parts["condition"] = DEFAULT_CONDITION
    notes.append(
        f"no condition column: every rating is in one condition, analysed as {DEFAULT_CONDITION!r} "
        "(the analyses comparing conditions are skipped)"
    )


def _participants(tables: dict[str, pd.DataFrame | None], notes: list[str]) -> pd.DataFrame:
    """participants.csv as given (condition filled from the ratings when absent) or derived from the ratings."""
    ratings = tables["ratings"]
    assert ratings is not None
    cond = ratings.dropna(subset=["participant_id"]).drop_duplicates("participant_id").set_index("participant_id")
    parts = tables["participants"]
    if parts is None:
        notes.append("no participants table: participants (id, condition) derived from the ratings")
        return pd.DataFrame({"participant_id": cond.index.to_list(), "condition": cond["condition"].to_list()})
    if "condition" not in parts.columns:
        notes.append("participants table without condition: taken from the ratings")
        parts = parts.assign(condition=parts["participant_id"].map(cond["condition"]))
    return parts


def _attention_check(tables: dict[str, pd.DataFrame | None], problems: _Problems, notes: list[str]) -> None:
    """passed_attention against the trial-0 preference (module docstring); derive it when absent."""
    trials, parts = tables["trials"], tables["participants"]
    if trials is None or "preference" not in trials.columns:
        return
    if "trial" in trials.columns:
        attn = trials["trial"].astype("Int64") == 0
    else:
        attn = trials["prompt_id"].astype(str) == ATTENTION_PROMPT
    attn = attn.fillna(False).to_numpy(bool)
    answer = {
        pid: (i, pref)
        for i, (pid, pref, is_attn) in enumerate(zip(trials["participant_id"], trials["preference"], attn))
        if is_attn and _present(pref)
    }
    if not answer:
        return
    assert parts is not None
    if "passed_attention" not in parts.columns:
        passed = {pid: pref != FAILED_ATTENTION_PREFERENCE for pid, (_, pref) in answer.items()}
        parts["passed_attention"] = parts["participant_id"].map(passed).astype("boolean")
        notes.append(
            "passed_attention derived from the attention check's preference (trial 0: 1 = the nonsensical "
            "response = failed)"
        )
        unanswered = parts.loc[parts["passed_attention"].isna(), "participant_id"].tolist()
        if unanswered:
            notes.append(
                f"{len(unanswered)} participant(s) without an attention-check answer are not analysed, "
                f"e.g. {', '.join(repr(p) for p in unanswered[:5])}"
            )
        return
    for i, (pid, flag) in enumerate(zip(parts["participant_id"], parts["passed_attention"])):
        if pid not in answer or not _present(flag):
            continue
        j, pref = answer[pid]
        expected = pref != FAILED_ATTENTION_PREFERENCE
        verdict = "not the nonsensical response: passed" if expected else "the nonsensical response attn_1: failed"
        if bool(flag) != expected:
            problems.cell(
                "participants",
                i,
                "passed_attention",
                f"participant {pid!r} has passed_attention {str(bool(flag)).lower()}, but at the attention "
                f"check ({problems.at('trials', j)}) preferred {pref!r} "
                f"({verdict})",
            )


def _study_checks(
    tables: dict[str, pd.DataFrame | None], problems: _Problems, notes: list[str], assignments: pd.DataFrame | None
) -> None:
    ratings, parts = tables["ratings"], tables["participants"]
    assert ratings is not None and parts is not None
    if ratings.empty:
        return
    if "passed_attention" in parts.columns:
        ok = set(parts.loc[parts["passed_attention"].fillna(False).astype(bool), "participant_id"])
    else:
        ok = set(parts["participant_id"])
    rated = ratings["participant_id"].isin(ok) & (
        ratings["prompt_id"].astype(str) != ATTENTION_PROMPT if "prompt_id" in ratings.columns else True
    )
    if "trial" in ratings.columns:
        rated &= ratings["trial"].astype("Int64").fillna(0) >= 1
    if not rated.any():
        problems.file(
            "ratings",
            "no rating left to analyse: every participant failed the attention check "
            "(passed_attention) or only attention-check (trial 0) ratings are present",
        )
        return
    rating_people = set(ratings["participant_id"].dropna())
    for i, pid in parts["participant_id"].items():
        if pid in ok and _present(pid) and pid not in rating_people:
            problems.cell(
                "participants",
                int(cast(int, i)),
                "participant_id",
                f"participant {pid!r} passed the attention check but has no rating in "
                f"{problems.origins['ratings'].file()}: a participant who rated nothing cannot be analysed (Table 1 "
                "would count them); set passed_attention to false (recruited, not analysed) or remove the row",
            )
    if assignments is not None and len(assignments):
        design = set(assignments["participant_id"].astype(str))
        extra = sorted(set(ratings["participant_id"].dropna()) - design)
        if extra:
            shown = ", ".join(repr(p) for p in extra[:5]) + (" ..." if len(extra) > 5 else "")
            notes.append(
                f"{len(extra)} participant(s) not in the design (assignments.csv), e.g. {shown}: accepted; "
                "their presentation order is taken from ratings.presented_first"
            )


def _cross_checks(
    tables: dict[str, pd.DataFrame | None], stimuli: pd.DataFrame, problems: _Problems, given_participants: bool
) -> None:
    prompts, clip_of, clips_by_prompt = _stimulus_maps(stimuli)
    ratings, trials, parts = tables["ratings"], tables["trials"], tables["participants"]
    assert ratings is not None
    cond_of, known_participants = _participant_conditions(parts, problems, given_participants)
    # Trials are keyed by (participant, trial) when both tables have trial numbers, else by (participant, prompt).
    by_trial = "trial" in ratings.columns and (trials is None or "trial" in trials.columns)
    key_col = "trial" if by_trial else "prompt_id"
    can_key = key_col in ratings.columns and (trials is None or key_col in trials.columns)
    checks = _RowChecks(problems, prompts, known_participants, by_trial, key_col, can_key)
    trial_rows, trial_prompt = _check_trials(trials, checks, cond_of)
    per_trial, cols = _check_ratings(ratings, trials, parts, checks, clip_of, cond_of, trial_rows, trial_prompt)
    _check_trial_clips(ratings, trials, checks, clips_by_prompt, trial_rows, trial_prompt, per_trial, cols)


@dataclass
class _RowChecks:
    """The row checks that trials and ratings share: participant and prompt known, and each row's trial key."""

    problems: _Problems
    prompts: set[str]
    known_participants: set[str] | None
    by_trial: bool
    key_col: str
    can_key: bool

    def check_participant(self, table: str, i: int, pid: object) -> None:
        """An unknown participant (not in participants.csv, when given) is a problem."""
        if self.known_participants is not None and _present(pid) and pid not in self.known_participants:
            self.problems.cell(
                table,
                i,
                "participant_id",
                f"unknown participant {pid!r} (not in {self.problems.origins['participants'].file()})",
            )

    def check_prompt(self, table: str, i: int, prompt: object, trial: object) -> None:
        """An unknown prompt, or the attention check anywhere but at trial 0, is a problem."""
        if not _present(prompt):
            return
        if prompt not in self.prompts:
            self.problems.cell(
                table, i, "prompt_id", f"unknown prompt {prompt!r} (not in the stimuli nor the attention check)"
            )
        elif _present(trial):
            if trial == 0 and prompt != ATTENTION_PROMPT:
                self.problems.cell(table, i, "prompt_id", f"trial 0 is the attention check, but prompt is {prompt!r}")
            elif trial != 0 and prompt == ATTENTION_PROMPT:
                self.problems.cell(table, i, "trial", f"the attention check must be trial 0, not {trial}")

    def key_of(self, pid: object, trial: Any, prompt: Any) -> tuple | None:
        """The row's trial key (participant, trial or prompt); None when it cannot be formed."""
        value = trial if self.by_trial else prompt
        if not (self.can_key and _present(pid) and _present(value)):
            return None
        return (pid, int(value) if self.by_trial else value)

    def key_text(self, key: tuple) -> str:
        """The trial key's second part as the messages name it."""
        return f"trial {key[1]}" if self.by_trial else f"prompt {key[1]!r}"


def _participant_conditions(
    parts: pd.DataFrame | None, problems: _Problems, given_participants: bool
) -> tuple[dict[str, str], set[str] | None]:
    """(condition of each participant, the known participants or None): duplicates in participants.csv reported."""
    cond_of: dict[str, str] = {}
    known_participants: set[str] | None = None
    if parts is not None:
        first_row: dict[str, int] = {}
        for i, (pid, cond) in enumerate(zip(_col(parts, "participant_id"), _col(parts, "condition"))):
            if not _present(pid):
                continue
            if pid in first_row:
                problems.cell(
                    "participants",
                    i,
                    "participant_id",
                    f"duplicate participant {pid!r} (first at {problems.at('participants', first_row[pid])})",
                )
                continue
            first_row[pid] = i
            if _present(cond):
                cond_of[pid] = cond
        known_participants = set(first_row) if given_participants else None
    return cond_of, known_participants


def _check_trials(
    trials: pd.DataFrame | None, checks: _RowChecks, cond_of: dict[str, str]
) -> tuple[dict[tuple, int], dict[tuple, str]]:
    """(row of each trial key, prompt of each trial key) in trials.csv; its row problems reported."""
    problems, key_col = checks.problems, checks.key_col
    trial_rows: dict[tuple, int] = {}
    trial_prompt: dict[tuple, str] = {}
    if trials is not None:
        cols = {
            c: _col(trials, c)
            for c in ("participant_id", "prompt_id", "trial", "relistened_first", *AUDIO_ONLY_TRIAL_COLUMNS)
        }
        for i in range(len(trials)):
            pid, prompt, trial = cols["participant_id"][i], cols["prompt_id"][i], cols["trial"][i]
            checks.check_participant("trials", i, pid)
            checks.check_prompt("trials", i, prompt, trial)
            key = checks.key_of(pid, trial, prompt)
            if key is not None:
                if key in trial_rows:
                    problems.cell(
                        "trials",
                        i,
                        key_col,
                        f"duplicate {checks.key_text(key)} of participant {pid!r} "
                        f"(first at {problems.at('trials', trial_rows[key])})",
                    )
                else:
                    trial_rows[key] = i
                    if _present(prompt):
                        trial_prompt[key] = prompt
            if _present(pid) and cond_of.get(pid) == "text":
                for col in AUDIO_ONLY_TRIAL_COLUMNS:
                    if _present(cols[col][i]):
                        problems.cell(
                            "trials", i, col, f"audio-only measure present for text-condition participant {pid!r}"
                        )
                if _present(cols["relistened_first"][i]) and bool(cols["relistened_first"][i]):
                    problems.cell(
                        "trials",
                        i,
                        "relistened_first",
                        f"re-listening is audio-only, but participant {pid!r} is in the text condition",
                    )
    return trial_rows, trial_prompt


def _check_ratings(
    ratings: pd.DataFrame,
    trials: pd.DataFrame | None,
    parts: pd.DataFrame | None,
    checks: _RowChecks,
    clip_of: dict[str, tuple[str, int]],
    cond_of: dict[str, str],
    trial_rows: dict[tuple, int],
    trial_prompt: dict[tuple, str],
) -> tuple[dict[tuple, list[int]], dict[str, list]]:
    """(rating rows of each trial key, the ratings' key columns as lists); its row problems reported."""
    problems, key_col = checks.problems, checks.key_col
    seen_clip: dict[tuple[str, str], int] = {}
    per_trial: dict[tuple, list[int]] = defaultdict(list)
    has_aq = "audio_quality" in ratings.columns
    cols = {
        c: _col(ratings, c)
        for c in ("participant_id", "condition", "prompt_id", "clip_id", "trial", "audio_quality", "presented_first")
    }
    for i in range(len(ratings)):
        pid, cond, prompt = cols["participant_id"][i], cols["condition"][i], cols["prompt_id"][i]
        clip, trial = cols["clip_id"][i], cols["trial"][i]
        checks.check_participant("ratings", i, pid)
        checks.check_prompt("ratings", i, prompt, trial)
        if _present(clip):
            if clip not in clip_of:
                problems.cell(
                    "ratings", i, "clip_id", f"unknown clip {clip!r} (not in the stimuli nor the attention check)"
                )
            elif _present(prompt) and clip_of[clip][0] != prompt:
                problems.cell(
                    "ratings",
                    i,
                    "clip_id",
                    f"clip {clip!r} belongs to prompt {clip_of[clip][0]!r}, not to this row's prompt {prompt!r}",
                )
            if _present(pid):
                clip_key = (pid, clip)
                if clip_key in seen_clip:
                    problems.cell(
                        "ratings",
                        i,
                        "clip_id",
                        f"duplicate rating of clip {clip!r} by participant {pid!r} "
                        f"(first at {problems.at('ratings', seen_clip[clip_key])})",
                    )
                else:
                    seen_clip[clip_key] = i
        if _present(pid) and _present(cond) and pid in cond_of and cond_of[pid] != cond:
            where = problems.at("participants", _row_of(parts, pid))
            problems.cell(
                "ratings",
                i,
                "condition",
                f"{cond!r} but participant {pid!r} is in the {cond_of[pid]!r} condition ({where})",
            )
        if _present(cond) and has_aq:
            if cond == "text" and _present(cols["audio_quality"][i]):
                problems.cell("ratings", i, "audio_quality", "audio_quality is present in the text condition")
            if cond == "audio" and not _present(cols["audio_quality"][i]):
                problems.cell("ratings", i, "audio_quality", "audio_quality is missing in the audio condition")
        key = checks.key_of(pid, trial, prompt)
        if key is not None:
            per_trial[key].append(i)
            if trials is not None and key not in trial_rows:
                problems.cell(
                    "ratings",
                    i,
                    key_col,
                    f"no row in {problems.origins['trials'].file()} for participant {pid!r} {checks.key_text(key)}",
                )
            elif checks.by_trial and key in trial_prompt and _present(prompt) and trial_prompt[key] != prompt:
                problems.cell(
                    "ratings",
                    i,
                    "prompt_id",
                    f"{prompt!r} but {problems.origins['trials'].file()} has prompt {trial_prompt[key]!r} "
                    f"for participant {pid!r} trial {trial}",
                )
    return per_trial, cols


def _check_trial_clips(
    ratings: pd.DataFrame,
    trials: pd.DataFrame | None,
    checks: _RowChecks,
    clips_by_prompt: dict[str, set[str]],
    trial_rows: dict[tuple, int],
    trial_prompt: dict[tuple, str],
    per_trial: dict[tuple, list[int]],
    cols: dict[str, list],
) -> None:
    """Each trial: exactly the prompt's clips rated (two in the paper's design), exactly one of them presented
    first (prompts with two or more clips)."""
    problems, key_col, key_text = checks.problems, checks.key_col, checks.key_text
    groups = trial_rows if trials is not None else {k: rows[0] for k, rows in per_trial.items()}
    for key, i in groups.items():
        pid = key[0]
        rows = per_trial.get(key, [])
        if not rows:
            problems.cell("trials", i, key_col, f"no ratings for participant {pid!r} {key_text(key)}")
            continue
        prompt = trial_prompt.get(key) if trials is not None else cols["prompt_id"][rows[0]]
        if not checks.by_trial and prompt is None:
            prompt = key[1]
        clips = [cols["clip_id"][r] for r in rows]
        expected = clips_by_prompt.get(prompt, set()) if prompt is not None and _present(prompt) else set()
        if expected and (len(rows) != len(expected) or set(clips) != expected):
            where = ("trials", i) if trials is not None else ("ratings", rows[0])
            problems.cell(
                where[0],
                where[1],
                key_col,
                f"participant {pid!r} {key_text(key)} has {len(rows)} rating row(s) (clips "
                f"{sorted(str(c) for c in clips)}); expected one per clip {sorted(expected)} (rating rows "
                f"{', '.join(problems.at('ratings', r) for r in rows)})",
            )
            continue
        firsts = [cols["presented_first"][r] for r in rows]
        if (
            "presented_first" in ratings.columns
            and len(rows) >= 2
            and all(_present(f) for f in firsts)
            and sum(bool(f) for f in firsts) != 1
        ):
            what = "the two clips" if len(rows) == 2 else f"the {len(rows)} clips"
            problems.cell(
                "ratings",
                rows[0],
                "presented_first",
                f"participant {pid!r} {key_text(key)}: exactly one of {what} must be presented first "
                f"(rows {', '.join(problems.at('ratings', r) for r in rows)})",
            )


def write_valid(valid: ValidRatings, paths: Mapping[str, str | Path]) -> None:
    """Write the validated tables (atomically) to ``paths`` ({table: file}); a source without trials gets a
    trials file with the key columns and no rows (the analyses that need trials are then skipped)."""
    from modprefs.io import write_csv  # noqa: PLC0415

    for table in TABLES:
        df = valid.tables.get(table)
        if df is None:
            df = pd.DataFrame(columns=["participant_id", "prompt_id", "trial"])
        write_csv(df, paths[table])


def _row_of(parts: pd.DataFrame | None, pid: object) -> int:
    assert parts is not None
    return int(parts.index[parts["participant_id"] == pid][0])


def validate_as_collected(tables: Mapping[str, pd.DataFrame], stimuli: pd.DataFrame, *, scale: RatingScale) -> None:
    """Validate ratings, trials and participants tables as collected ones, on the study's ``scale``: written as CSV
    files to a temporary folder and checked there by :func:`validate_ratings_dir` (raises as it does)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, df in tables.items():
            df.to_csv(Path(tmp) / f"{name}.csv", index=False)
        validate_ratings_dir(tmp, stimuli, scale=scale)
