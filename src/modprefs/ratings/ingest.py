"""Validate a directory of collected (or simulated) ratings: ratings.csv, trials.csv, participants.csv.

:func:`validate_ratings_dir` collects *every* problem before giving up, each as a message naming
the file, the row as a spreadsheet shows it (the header is row 1, so the first data row is row 2)
and the column. If there is any problem it raises :class:`RatingsValidationError` listing them
(the first :data:`MAX_LISTED`, then a count); otherwise it returns the three tables, typed.

Checks, per file: the file exists and parses; every required column is present; every cell has
the column's type and allowed values/range (workflow/schemas/*.schema.yaml: e.g. ratings 1..100
integers, preference 0/1/tie). Across rows and files: unique keys (participant x clip in ratings,
participant x trial in trials, participant in participants); prompt_id and clip_id known (the
stimuli's plus the attention check's ``attn``, ``attn_0``, ``attn_1``) and the clip belonging to
the row's prompt; the attention check at trial 0 only; the rating row's condition equal to the
participant's; audio_quality present in the audio condition and absent in text; audio-only trial
measures (deliberation_time_s, replays_0/1, relistened_first true) absent in text; every
participant of ratings/trials listed in participants.csv; every trial with exactly one rating of
each of its prompt's two clips, exactly one of them presented first, and every rating with its
trial row.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pandas as pd

from modprefs.ratings.schema import TABLE_FILES, TABLES, column_specs, parse_column

ATTENTION_PROMPT = "attn"
ATTENTION_CLIPS = {"attn_0": ("attn", 0), "attn_1": ("attn", 1)}
MAX_LISTED = 50
AUDIO_ONLY_TRIAL_COLUMNS = ("deliberation_time_s", "replays_0", "replays_1")


class RatingsValidationError(ValueError):
    """Raised with every problem found; ``.problems`` holds the full list of messages."""

    def __init__(self, problems: list[str], directory: str | Path | None = None):
        self.problems = list(problems)
        where = f" in {directory}" if directory is not None else ""
        shown = "\n".join(f"  - {m}" for m in self.problems[:MAX_LISTED])
        more = len(self.problems) - MAX_LISTED
        tail = f"\n  ... and {more} more problem(s) not listed" if more > 0 else ""
        super().__init__(f"{len(self.problems)} problem(s) with the ratings{where}:\n{shown}{tail}")


class _Problems:
    def __init__(self) -> None:
        self.items: list[str] = []

    def file(self, file: str, msg: str) -> None:
        self.items.append(f"{file}: {msg}")

    def cell(self, file: str, idx: int, column: str, msg: str) -> None:
        # idx is the 0-based data-row index; the spreadsheet row is idx + 2 (header = row 1)
        self.items.append(f"{file} row {idx + 2}, column {column}: {msg}")


def _read_raw(path: Path, file: str, problems: _Problems) -> pd.DataFrame | None:
    if not path.is_file():
        problems.file(file, f"file not found ({path})")
        return None
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[])
    except pd.errors.EmptyDataError:
        problems.file(file, "the file is empty (no header row)")
        return None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        problems.file(file, f"cannot be parsed as CSV ({exc})")
        return None
    df.columns = [str(c).strip() for c in df.columns]
    dup = sorted({c for c in df.columns if list(df.columns).count(c) > 1})
    for c in dup:
        problems.file(file, f"column {c!r} appears more than once in the header")
    return df


def _parse_table(table: str, raw: pd.DataFrame, problems: _Problems) -> pd.DataFrame:
    file = TABLE_FILES[table]
    out = pd.DataFrame(index=raw.index)
    for spec in column_specs(table):
        if spec.name not in raw.columns:
            if spec.required:
                problems.file(file, f"missing column {spec.name!r}")
            out[spec.name] = pd.Series(pd.NA, index=raw.index, dtype=object)
            continue
        series, errs = parse_column(raw[spec.name], spec)
        for idx, msg in errs:
            problems.cell(file, idx, spec.name, msg)
        out[spec.name] = series
    extra = [c for c in raw.columns if c not in out.columns]
    for c in extra:  # extra columns are kept as strings
        out[c] = raw[c]
    return out


def _stimulus_maps(stimuli: pd.DataFrame) -> tuple[set[str], dict[str, tuple[str, int]], dict[str, set[str]]]:
    prompts = set(stimuli["prompt_id"].astype(str)) | {ATTENTION_PROMPT}
    clip_of: dict[str, tuple[str, int]] = dict(ATTENTION_CLIPS)
    for pid, cid, resp in zip(stimuli["prompt_id"].astype(str), stimuli["clip_id"].astype(str),
                              stimuli["response"].astype(int)):
        clip_of[cid] = (pid, int(resp))
    clips_by_prompt: dict[str, set[str]] = defaultdict(set)
    for cid, (pid, _) in clip_of.items():
        clips_by_prompt[pid].add(cid)
    return prompts, clip_of, clips_by_prompt


def _present(x: object) -> bool:
    return x is not None and not (isinstance(x, float) and x != x) and x is not pd.NA


def validate_ratings_dir(directory: str | Path, stimuli: pd.DataFrame,
                         paths: dict[str, str | Path] | None = None) -> dict[str, pd.DataFrame]:
    """Validate the three rating tables in ``directory`` against ``stimuli`` (see module docstring).

    Args:
        directory: folder holding ratings.csv, trials.csv and participants.csv.
        stimuli: the stimulus table (results/study/stimuli.csv): prompt_id, clip_id, response.
        paths: optional explicit path per table name (overrides ``directory``/<table>.csv).

    Returns:
        {"ratings": df, "trials": df, "participants": df}, typed (Int64/Float64/boolean columns),
        with ``source`` filled with ``collected`` where the column is absent.

    Raises:
        RatingsValidationError: listing every problem found.
    """
    directory = Path(directory)
    paths = {t: Path(paths[t]) if paths and t in paths else directory / TABLE_FILES[t] for t in TABLES}
    problems = _Problems()
    tables: dict[str, pd.DataFrame | None] = {}
    for t in TABLES:
        raw = _read_raw(paths[t], TABLE_FILES[t], problems)
        tables[t] = None if raw is None else _parse_table(t, raw, problems)
        if tables[t] is not None and "source" in tables[t].columns:
            had_source = raw is not None and "source" in raw.columns
            if not had_source:
                tables[t]["source"] = "collected"
    _cross_checks(tables, stimuli, problems)
    if problems.items:
        raise RatingsValidationError(problems.items, directory)
    return {t: tables[t] for t in TABLES}  # type: ignore[misc]


def _cross_checks(tables: dict[str, pd.DataFrame | None], stimuli: pd.DataFrame, problems: _Problems) -> None:
    prompts, clip_of, clips_by_prompt = _stimulus_maps(stimuli)
    ratings, trials, parts = tables["ratings"], tables["trials"], tables["participants"]
    RF, TF, PF = TABLE_FILES["ratings"], TABLE_FILES["trials"], TABLE_FILES["participants"]

    # ---- participants ----------------------------------------------------------------------------
    cond_of: dict[str, str] = {}
    if parts is not None:
        first_row: dict[str, int] = {}
        for i, (pid, cond) in enumerate(zip(parts["participant_id"], parts["condition"])):
            if not _present(pid):
                continue
            if pid in first_row:
                problems.cell(PF, i, "participant_id", f"duplicate participant {pid!r} (first at row {first_row[pid] + 2})")
                continue
            first_row[pid] = i
            if _present(cond):
                cond_of[pid] = cond
    known_participants = set(cond_of) if parts is not None else None

    def check_participant(file: str, i: int, pid: object) -> None:
        if known_participants is not None and _present(pid) and pid not in known_participants:
            problems.cell(file, i, "participant_id", f"unknown participant {pid!r} (not in participants.csv)")

    def check_prompt(file: str, i: int, prompt: object, trial: object) -> None:
        if not _present(prompt):
            return
        if prompt not in prompts:
            problems.cell(file, i, "prompt_id", f"unknown prompt {prompt!r} (not in stimuli.csv nor the attention check)")
        elif _present(trial):
            if trial == 0 and prompt != ATTENTION_PROMPT:
                problems.cell(file, i, "prompt_id", f"trial 0 is the attention check, but prompt is {prompt!r}")
            elif trial != 0 and prompt == ATTENTION_PROMPT:
                problems.cell(file, i, "trial", f"the attention check must be trial 0, not {trial}")

    # ---- trials ------------------------------------------------------------------------------------
    trial_rows: dict[tuple[str, int], int] = {}
    trial_prompt: dict[tuple[str, int], str] = {}
    if trials is not None:
        for i, row in enumerate(trials.itertuples(index=False)):
            pid, prompt, trial = row.participant_id, row.prompt_id, row.trial
            check_participant(TF, i, pid)
            check_prompt(TF, i, prompt, trial)
            if _present(pid) and _present(trial):
                key = (pid, int(trial))
                if key in trial_rows:
                    problems.cell(TF, i, "trial", f"duplicate trial {trial} of participant {pid!r} "
                                                  f"(first at row {trial_rows[key] + 2})")
                else:
                    trial_rows[key] = i
                    if _present(prompt):
                        trial_prompt[key] = prompt
            if _present(pid) and cond_of.get(pid) == "text":
                for col in AUDIO_ONLY_TRIAL_COLUMNS:
                    if _present(getattr(row, col)):
                        problems.cell(TF, i, col, f"audio-only measure present for text-condition participant {pid!r}")
                if _present(row.relistened_first) and bool(row.relistened_first):
                    problems.cell(TF, i, "relistened_first",
                                  f"re-listening is audio-only, but participant {pid!r} is in the text condition")

    # ---- ratings -----------------------------------------------------------------------------------
    seen_clip: dict[tuple[str, str], int] = {}
    per_trial: dict[tuple[str, int], list[int]] = defaultdict(list)
    if ratings is not None:
        for i, row in enumerate(ratings.itertuples(index=False)):
            pid, cond, prompt, clip, trial = row.participant_id, row.condition, row.prompt_id, row.clip_id, row.trial
            check_participant(RF, i, pid)
            check_prompt(RF, i, prompt, trial)
            if _present(clip):
                if clip not in clip_of:
                    problems.cell(RF, i, "clip_id", f"unknown clip {clip!r} (not in stimuli.csv nor the attention check)")
                elif _present(prompt) and clip_of[clip][0] != prompt:
                    problems.cell(RF, i, "clip_id", f"clip {clip!r} belongs to prompt {clip_of[clip][0]!r}, "
                                                    f"not to this row's prompt {prompt!r}")
                if _present(pid):
                    key = (pid, clip)
                    if key in seen_clip:
                        problems.cell(RF, i, "clip_id", f"duplicate rating of clip {clip!r} by participant {pid!r} "
                                                        f"(first at row {seen_clip[key] + 2})")
                    else:
                        seen_clip[key] = i
            if _present(pid) and _present(cond) and pid in cond_of and cond_of[pid] != cond:
                problems.cell(RF, i, "condition", f"{cond!r} but participant {pid!r} is in the "
                                                  f"{cond_of[pid]!r} condition (participants.csv)")
            if _present(cond):
                if cond == "text" and _present(row.audio_quality):
                    problems.cell(RF, i, "audio_quality", "audio_quality is present in the text condition")
                if cond == "audio" and not _present(row.audio_quality):
                    problems.cell(RF, i, "audio_quality", "audio_quality is missing in the audio condition")
            if _present(pid) and _present(trial):
                key = (pid, int(trial))
                per_trial[key].append(i)
                if trials is not None and key not in trial_rows:
                    problems.cell(RF, i, "trial", f"no row in trials.csv for participant {pid!r} trial {trial}")
                elif key in trial_prompt and _present(prompt) and trial_prompt[key] != prompt:
                    problems.cell(RF, i, "prompt_id", f"{prompt!r} but trials.csv has prompt "
                                                      f"{trial_prompt[key]!r} for participant {pid!r} trial {trial}")

    # ---- each trial: exactly the prompt's two clips, one presented first ----------------------------
    if trials is not None and ratings is not None:
        for key, i in trial_rows.items():
            pid, trial = key
            rows = per_trial.get(key, [])
            if not rows:
                problems.cell(TF, i, "trial", f"no ratings in ratings.csv for participant {pid!r} trial {trial}")
                continue
            prompt = trial_prompt.get(key)
            clips = [ratings.at[ratings.index[r], "clip_id"] for r in rows]
            expected = clips_by_prompt.get(prompt, set()) if prompt is not None else set()
            if expected and (len(rows) != 2 or set(clips) != expected):
                problems.cell(TF, i, "trial", f"participant {pid!r} trial {trial} has {len(rows)} rating row(s) "
                                              f"(clips {sorted(str(c) for c in clips)}); expected one per clip "
                                              f"{sorted(expected)} (ratings.csv rows {[r + 2 for r in rows]})")
                continue
            firsts = [ratings.at[ratings.index[r], "presented_first"] for r in rows]
            if all(_present(f) for f in firsts) and sum(bool(f) for f in firsts) != 1:
                problems.cell(RF, rows[0], "presented_first",
                              f"participant {pid!r} trial {trial}: exactly one of the two clips must be "
                              f"presented first (rows {[r + 2 for r in rows]})")
