"""Validate collected (or simulated) ratings from any ratings source, every problem at once.

:func:`ingest_ratings` loads a source (:mod:`modprefs.ratings.sources`: the three-table folder, a
single CSV/Parquet table in long or wide format with a column map, a ``datasets`` folder, ...) and
:func:`validate_ratings` checks it. Every problem is a message naming the user's file, the row as a
spreadsheet shows it (the header is row 1, so the first data row of a CSV is row 2; for Parquet and
``datasets`` row 1 is the first record) and the user's column name. If there is any problem,
:class:`RatingsValidationError` lists them (the first :data:`MAX_LISTED`, then a count);
otherwise the typed tables come back with notes on what was derived.

Required: ratings with participant_id, clip_id (or prompt_id + response) and rating.
Everything else is optional and checked when present (``workflow/schemas/*.schema.yaml``: types,
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

The checks across rows and files, the attention check and the study-level checks are in
:mod:`modprefs.ratings.ingest_checks`; here loading, parsing each column against its schema and the scale, and
the result.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError
from modprefs.ratings.ingest_checks import Problems, check_across, check_attention, check_study
from modprefs.ratings.schema import TABLES, ColumnSpec, column_specs, parse_column
from modprefs.ratings.source_tables import RawTables
from modprefs.ratings.sources import load_ratings_source
from modprefs.scale import RatingScale

MAX_LISTED = 50
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


def _parse_table(table: str, raw: pd.DataFrame, problems: Problems, scale: RatingScale) -> pd.DataFrame:
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
    problems = Problems(raw.origins)
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
    check_across(tables, stimuli, problems, given_participants)
    if not problems.items:
        tables["participants"] = _participants(tables, notes)
        check_attention(tables, problems, notes)
    if not problems.items and study_checks:
        check_study(tables, problems, notes, assignments)
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


def write_valid(valid: ValidRatings, paths: Mapping[str, str | Path]) -> None:
    """Write the validated tables (atomically) to ``paths`` ({table: file}); a source without trials gets a
    trials file with the key columns and no rows (the analyses that need trials are then skipped)."""
    from modprefs.io import write_csv  # noqa: PLC0415

    for table in TABLES:
        df = valid.tables.get(table)
        if df is None:
            df = pd.DataFrame(columns=["participant_id", "prompt_id", "trial"])
        write_csv(df, paths[table])


def validate_as_collected(tables: Mapping[str, pd.DataFrame], stimuli: pd.DataFrame, *, scale: RatingScale) -> None:
    """Validate ratings, trials and participants tables as collected ones, on the study's ``scale``: written as CSV
    files to a temporary folder and checked there by :func:`validate_ratings_dir` (raises as it does)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, df in tables.items():
            df.to_csv(Path(tmp) / f"{name}.csv", index=False)
        validate_ratings_dir(tmp, stimuli, scale=scale)
