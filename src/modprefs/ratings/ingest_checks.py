"""The checks of :func:`modprefs.ratings.ingest.validate_ratings` across rows and files, of the attention check and
of the study as a whole; every problem is collected with its file, row and column (:class:`Problems`).

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

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import pandas as pd

from modprefs.ratings.source_tables import ATTENTION_CLIPS, Origin
from modprefs.study.terms import ATTENTION_PROMPT

AUDIO_ONLY_TRIAL_COLUMNS = ("deliberation_time_s", "replays_0", "replays_1")
FAILED_ATTENTION_PREFERENCE = "1"  # the nonsensical response attn_1


class Problems:
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


def is_present(x: object) -> bool:
    return x is not None and not (isinstance(x, float) and x != x) and x is not pd.NA


def column_values(df: pd.DataFrame | None, name: str) -> list:
    """The column as a list, or all-None when the table lacks it."""
    if df is None:
        return []
    return df[name].tolist() if name in df.columns else [None] * len(df)


def stimulus_maps(stimuli: pd.DataFrame) -> tuple[set[str], dict[str, tuple[str, int]], dict[str, set[str]]]:
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


def check_attention(tables: dict[str, pd.DataFrame | None], problems: Problems, notes: list[str]) -> None:
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
        if is_attn and is_present(pref)
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
        if pid not in answer or not is_present(flag):
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


def check_study(
    tables: dict[str, pd.DataFrame | None], problems: Problems, notes: list[str], assignments: pd.DataFrame | None
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
        if pid in ok and is_present(pid) and pid not in rating_people:
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


def check_across(
    tables: dict[str, pd.DataFrame | None], stimuli: pd.DataFrame, problems: Problems, given_participants: bool
) -> None:
    prompts, clip_of, clips_by_prompt = stimulus_maps(stimuli)
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

    problems: Problems
    prompts: set[str]
    known_participants: set[str] | None
    by_trial: bool
    key_col: str
    can_key: bool

    def check_participant(self, table: str, i: int, pid: object) -> None:
        """An unknown participant (not in participants.csv, when given) is a problem."""
        if self.known_participants is not None and is_present(pid) and pid not in self.known_participants:
            self.problems.cell(
                table,
                i,
                "participant_id",
                f"unknown participant {pid!r} (not in {self.problems.origins['participants'].file()})",
            )

    def check_prompt(self, table: str, i: int, prompt: object, trial: object) -> None:
        """An unknown prompt, or the attention check anywhere but at trial 0, is a problem."""
        if not is_present(prompt):
            return
        if prompt not in self.prompts:
            self.problems.cell(
                table, i, "prompt_id", f"unknown prompt {prompt!r} (not in the stimuli nor the attention check)"
            )
        elif is_present(trial):
            if trial == 0 and prompt != ATTENTION_PROMPT:
                self.problems.cell(table, i, "prompt_id", f"trial 0 is the attention check, but prompt is {prompt!r}")
            elif trial != 0 and prompt == ATTENTION_PROMPT:
                self.problems.cell(table, i, "trial", f"the attention check must be trial 0, not {trial}")

    def key_of(self, pid: object, trial: Any, prompt: Any) -> tuple | None:
        """The row's trial key (participant, trial or prompt); None when it cannot be formed."""
        value = trial if self.by_trial else prompt
        if not (self.can_key and is_present(pid) and is_present(value)):
            return None
        return (pid, int(value) if self.by_trial else value)

    def key_text(self, key: tuple) -> str:
        """The trial key's second part as the messages name it."""
        return f"trial {key[1]}" if self.by_trial else f"prompt {key[1]!r}"


def _participant_conditions(
    parts: pd.DataFrame | None, problems: Problems, given_participants: bool
) -> tuple[dict[str, str], set[str] | None]:
    """(condition of each participant, the known participants or None): duplicates in participants.csv reported."""
    cond_of: dict[str, str] = {}
    known_participants: set[str] | None = None
    if parts is not None:
        first_row: dict[str, int] = {}
        for i, (pid, cond) in enumerate(zip(column_values(parts, "participant_id"), column_values(parts, "condition"))):
            if not is_present(pid):
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
            if is_present(cond):
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
            c: column_values(trials, c)
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
                    if is_present(prompt):
                        trial_prompt[key] = prompt
            if is_present(pid) and cond_of.get(pid) == "text":
                for col in AUDIO_ONLY_TRIAL_COLUMNS:
                    if is_present(cols[col][i]):
                        problems.cell(
                            "trials", i, col, f"audio-only measure present for text-condition participant {pid!r}"
                        )
                if is_present(cols["relistened_first"][i]) and bool(cols["relistened_first"][i]):
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
        c: column_values(ratings, c)
        for c in ("participant_id", "condition", "prompt_id", "clip_id", "trial", "audio_quality", "presented_first")
    }
    for i in range(len(ratings)):
        pid, cond, prompt = cols["participant_id"][i], cols["condition"][i], cols["prompt_id"][i]
        clip, trial = cols["clip_id"][i], cols["trial"][i]
        checks.check_participant("ratings", i, pid)
        checks.check_prompt("ratings", i, prompt, trial)
        if is_present(clip):
            if clip not in clip_of:
                problems.cell(
                    "ratings", i, "clip_id", f"unknown clip {clip!r} (not in the stimuli nor the attention check)"
                )
            elif is_present(prompt) and clip_of[clip][0] != prompt:
                problems.cell(
                    "ratings",
                    i,
                    "clip_id",
                    f"clip {clip!r} belongs to prompt {clip_of[clip][0]!r}, not to this row's prompt {prompt!r}",
                )
            if is_present(pid):
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
        if is_present(pid) and is_present(cond) and pid in cond_of and cond_of[pid] != cond:
            where = problems.at("participants", _row_of(parts, pid))
            problems.cell(
                "ratings",
                i,
                "condition",
                f"{cond!r} but participant {pid!r} is in the {cond_of[pid]!r} condition ({where})",
            )
        if is_present(cond) and has_aq:
            if cond == "text" and is_present(cols["audio_quality"][i]):
                problems.cell("ratings", i, "audio_quality", "audio_quality is present in the text condition")
            if cond == "audio" and not is_present(cols["audio_quality"][i]):
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
            elif checks.by_trial and key in trial_prompt and is_present(prompt) and trial_prompt[key] != prompt:
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
        expected = clips_by_prompt.get(prompt, set()) if prompt is not None and is_present(prompt) else set()
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
            and all(is_present(f) for f in firsts)
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


def _row_of(parts: pd.DataFrame | None, pid: object) -> int:
    assert parts is not None
    return int(parts.index[parts["participant_id"] == pid][0])
