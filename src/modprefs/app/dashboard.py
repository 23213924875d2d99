"""The admin dashboard (``/admin``) and the latest responses (``/admin/responses``).

Per condition: the slots of the design; participants ``assigned`` (took a slot, reissues included),
``started`` (submitted a task: they answered the attention check, so they are in the export's
participants.csv), ``completed``; the tasks done (the export's trials.csv rows, the practice trial left out)
of those planned (the design's tasks per slot); attention-check and headphone-check failures; the median
decision time per task; and the incidents by kind (all conditions).
"""

from __future__ import annotations

import statistics
from typing import Any

from sqlalchemy import func, select

from modprefs.app.db import Database
from modprefs.app.models import Incident, Participant, Slot, SlotTrial, TrialResult
from modprefs.app.service import Settings, sweep_abandoned

REFRESH_S = 30  # the dashboard reloads itself this often


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
