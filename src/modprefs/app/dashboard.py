"""The admin dashboard (``/admin``) and the latest responses (``/admin/responses``).

Per condition: the slots of the design; participants ``assigned`` (took a slot, reissues included),
``started`` (submitted a task: they answered the attention check, so they are in the export's
participants.csv), ``completed``; the tasks done (the export's trials.csv rows, the practice trial left out)
of those planned (the design's tasks per slot); attention-check and headphone-check failures; the median
decision time per task; and the incidents by kind (all conditions).

What a lab runs a Prolific study from (:func:`participant_rows`, :func:`prolific_lists`, :func:`clip_rows`):
one row per session, whose first columns are the export's ``participants.csv`` columns with the same values
(so the rows marked ``in_export`` are that table), then the Prolific ids, the state, start and end, the code
the participant was shown, the exclusion reason and the Prolific decision it suggests (``approve``: shown the
completion code; ``reject``: failed the attention check; ``return``: screened out, declined or the study was
full; ``timed_out``: the session expired); the Prolific ids to approve and to reject; the raters per clip so far
(stored tasks, the practice task left out) against the design's.
"""

from __future__ import annotations

import statistics
from typing import Any

from sqlalchemy import func, select

from modprefs.app import export
from modprefs.app.db import Database
from modprefs.app.models import Incident, Participant, Slot, SlotTrial, TrialResult
from modprefs.app.service import Settings, intake, sweep_abandoned
from modprefs.app.sessions import code_shown

REFRESH_S = 30  # the dashboard's page script fetches fresh numbers this often
SESSION_COLUMNS = [
    "prolific_pid",
    "study_id",
    "session_id",
    "state",
    "started_utc",
    "finished_utc",
    "code_shown",
    "exclusion_reason",
    "prolific",
    "in_export",
]
PARTICIPANT_COLUMNS = export.COLUMNS["participants"] + SESSION_COLUMNS
DECISIONS = {
    "done": "approve",
    "failed_attention": "reject",
    "screened_out": "return",
    "declined": "return",
    "full": "return",
    "abandoned": "timed_out",
}


def progress(db: Database, settings: Settings | None = None) -> dict[str, Any]:
    """The dashboard's numbers: ``conditions`` {condition: {...}}, ``incidents`` {kind: n}, ``states``."""
    with db.transaction() as s:
        if settings is not None:
            sweep_abandoned(s, settings)
        slots = dict(s.execute(select(Slot.condition, func.count()).group_by(Slot.condition)).tuples().all())
        planned = dict(
            s.execute(
                select(Slot.condition, func.count())
                .select_from(SlotTrial)
                .join(Slot, Slot.slot_id == SlotTrial.slot_id)
                .group_by(Slot.condition)
            )
            .tuples()
            .all()
        )
        people = s.scalars(select(Participant).where(Participant.condition.is_not(None))).all()
        results = s.execute(
            select(Participant.condition, TrialResult.decision_time_s)
            .join(Participant, Participant.id == TrialResult.participant)
            .where(TrialResult.trial >= 0)
        ).all()
        incidents = dict(s.execute(select(Incident.kind, func.count()).group_by(Incident.kind)).tuples().all())
        states = dict(s.execute(select(Participant.state, func.count()).group_by(Participant.state)).tuples().all())
    conditions: dict[str, dict[str, Any]] = {}
    for cond in sorted(slots):
        mine = [p for p in people if p.condition == cond]
        times = [t for c, t in results if c == cond and t is not None]
        conditions[cond] = {
            "slots": int(slots[cond]),
            "assigned": len(mine),
            "started": sum(p.passed_attention is not None for p in mine),
            "completed": sum(bool(p.completed) for p in mine),
            "trials_done": sum(c == cond for c, _ in results),
            "trials_planned": int(planned.get(cond, 0)),
            "attention_failed": sum(p.passed_attention is False for p in mine),
            "headphone_failed": sum(p.headphone_check == "failed" for p in mine),
            "median_trial_s": round(statistics.median(times), 1) if times else None,
        }
    return {"conditions": conditions, "incidents": incidents, "states": states}


def latest_responses(db: Database, n: int = 500) -> list[dict[str, Any]]:
    """The latest ``n`` submitted tasks, newest first, with the preference as the participant saw it
    (``A`` = the response presented first, ``B``, ``tie``) and the condition."""
    with db.transaction() as s:
        rows = s.execute(
            select(TrialResult, Participant.participant_id, Participant.condition)
            .join(Participant, Participant.id == TrialResult.participant)
            .order_by(TrialResult.submitted_at.desc(), TrialResult.id.desc())
            .limit(n)
        ).all()
    out = []
    for r, pid, cond in rows:
        seen = "tie" if r.preference == "tie" else ("A" if int(r.preference) == r.first_clip else "B")
        out.append(
            {
                "participant_id": pid,
                "condition": cond,
                "trial": "practice" if r.trial < 0 else r.trial,
                "prompt_id": r.prompt_id,
                "preference": seen,
                "decision_time_s": None if r.decision_time_s is None else round(r.decision_time_s, 1),
                "justification": r.justification,
            }
        )
    return out


def participant_rows(db: Database, settings: Settings) -> list[dict[str, Any]]:
    """One row per session (entry order): the export's participants columns (``_participant_row``, blank
    demographics for those who did not answer them), then :data:`SESSION_COLUMNS`."""
    with db.transaction() as s:
        sweep_abandoned(s, settings)
        people = s.scalars(select(Participant).order_by(Participant.id)).all()
        rows = []
        for p in people:
            rows.append(
                {
                    **export.participant_row(p),
                    "prolific_pid": p.prolific_pid,
                    "study_id": p.study_id,
                    "session_id": p.session_id,
                    "state": p.state,
                    "started_utc": export.iso_utc(p.created_at),
                    "finished_utc": export.iso_utc(p.finished_at),
                    "code_shown": code_shown(p, settings),
                    "exclusion_reason": p.screen_reason,
                    "prolific": DECISIONS.get(p.state, ""),
                    "in_export": export.exported_participant(p),
                }
            )
    return rows


def participants_csv(rows: list[dict[str, Any]]) -> str:
    return export.to_csv(rows, PARTICIPANT_COLUMNS)


def prolific_lists(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The Prolific ids to approve (shown the completion code) and to reject (failed the attention check)."""
    return {
        decision: [r["prolific_pid"] for r in rows if r["prolific"] == decision and r["prolific_pid"]]
        for decision in ("approve", "reject")
    }


def clip_rows(db: Database) -> list[dict[str, Any]]:
    """Raters per clip so far, per condition: stored tasks (attention check included, practice left out) and
    the design's (its slots' tasks); every clip of a prompt is rated in the same task."""
    with db.transaction() as s:
        planned = s.execute(
            select(SlotTrial.prompt_id, Slot.condition, func.count())
            .join(Slot, Slot.slot_id == SlotTrial.slot_id)
            .group_by(SlotTrial.prompt_id, Slot.condition)
        ).all()
        rated = s.execute(
            select(TrialResult.prompt_id, Participant.condition, func.count())
            .join(Participant, Participant.id == TrialResult.participant)
            .where(TrialResult.trial >= 0)
            .group_by(TrialResult.prompt_id, Participant.condition)
        ).all()
    table: dict[str, dict[str, int]] = {}
    for prompt, cond, n in planned:
        table.setdefault(prompt, {})[f"{cond}_planned"] = int(n)
    for prompt, cond, n in rated:
        table.setdefault(prompt, {})[f"{cond}_rated"] = int(n)
    out = []
    for prompt in sorted(table):
        c = table[prompt]
        for r in (0, 1):
            out.append(
                {
                    "clip_id": f"{prompt}_{r}",
                    **{k: c.get(k, 0) for k in ("text_rated", "text_planned", "audio_rated", "audio_planned")},
                }
            )
    return out


def dashboard(db: Database, settings: Settings) -> dict[str, Any]:
    """Everything the dashboard page shows."""
    rows = participant_rows(db, settings)
    with db.transaction() as s:
        state = intake(s)
    return {
        **progress(db, settings),
        "participants": rows,
        "lists": prolific_lists(rows),
        "clips": clip_rows(db),
        "intake": state,
    }
