"""Export the collected data in the workflow's schemas (``workflow/schemas/*.schema.yaml``).

* ``ratings.csv``: two rows per submitted trial (one per clip), attention check included.
* ``trials.csv``: one row per submitted trial; audio-only measures empty in the text condition; extra columns
  ``hidden_count``, ``hidden_s`` and ``blur_count``: the times the page was hidden, the seconds it stayed
  hidden and the times the window lost the focus during the trial (its submitting tab's events).
* both with an extra column ``practice``: 1 for the practice trial (``trial`` -1, before the attention check),
  0 otherwise; the ratings reader drops practice rows (:func:`modprefs.ratings.sources.load_ratings_source`),
  so no statistic ever sees them.
* ``participants.csv``: one row per participant who held a slot and answered the attention check
  (those who failed it included, ``passed_attention`` false); ``completed`` = every assigned trial
  submitted; ``session_minutes`` = entry to the end (or the last request, for dropouts); an extra
  column ``headphone_check`` (``passed`` / ``failed`` / ``not_run``: the audio condition's headphone
  screening). With ``exclude_headphone_failed`` those who failed it are left out of the three tables
  (an exclusion rule applied at export; they stay in sessions.csv).

Beside them, for audit and further analyses (extra files the ingest ignores):

* ``sessions.csv``: every session, screened-out, declined and pre-attention dropouts included, with
  ``calibrated_utc`` (when the audio condition's volume was set and confirmed) and the Prolific ids
  (personal data: keep it with the study's records, not with the ratings).
* ``events.csv``: the raw event log: the server's sequence number (receipt order), the browser's
  event id, the browser tab that sent it (``tab``), and ``refused`` (why the server did not accept an
  ``ended``/``reveal`` as plausible).
* ``incidents.csv``: what the server refused or could not reconcile (event conflicts, implausible
  listens or reveals, refused trials), per participant and trial.

``source`` is ``collected`` everywhere. ``rating`` and ``audio_quality`` are on the study's rating scale
(app_meta ``rating_scale``, written by ``app load``; the paper's 1..100 when absent), whole numbers on an
integer scale. The three tables pass :func:`modprefs.ratings.ingest.validate_ratings_dir` against the loaded
stimuli.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from modprefs.app.db import Database
from modprefs.app.models import Event, Incident, Meta, Participant, TrialResult
from modprefs.app.service import SCALE_KEY, scale_from_meta
from modprefs.ratings.schema import PARTICIPANTS_COLUMNS, RATINGS_COLUMNS, TRIALS_COLUMNS
from modprefs.scale import PAPER_SCALE, RatingScale

SESSIONS_COLUMNS = [
    "participant_id",
    "slot_id",
    "condition",
    "entry",
    "prolific_pid",
    "study_id",
    "session_id",
    "state",
    "screen_reason",
    "current_trial",
    "n_trials",
    "passed_attention",
    "completed",
    "headphone_check",
    "headphone_correct",
    "calibrated_utc",
    "created_utc",
    "finished_utc",
    "session_minutes",
]
EVENTS_COLUMNS = [
    "participant_id",
    "trial",
    "seq",
    "event_id",
    "kind",
    "response",
    "field",
    "value",
    "client_ms",
    "server_ts",
    "refused",
    "tab",
]
INCIDENTS_COLUMNS = ["participant_id", "trial", "kind", "detail", "server_utc"]
HEADPHONE_COLUMN = "headphone_check"  # beside the schema's participant columns (extra columns are allowed)
PRACTICE_COLUMN = "practice"  # beside the schema's ratings and trials columns: 1 = the practice trial (trial -1)
# beside the schema's trials columns: the page's attention (the tab hidden, seconds hidden, the window's focus lost)
ATTENTION_COLUMNS = ["hidden_count", "hidden_s", "blur_count"]
DEMOGRAPHICS = [
    "age",
    "gender",
    "race",
    "hispanic_latino",
    "birthplace",
    "education",
    "employment",
    "country",
    "primary_language",
    "native_english",
    "english_proficiency",
    "other_languages",
    "timezone",
]
TABLES = ("ratings", "trials", "participants", "sessions", "events", "incidents")


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(round(v, 4)) if v == v else ""
    return str(v)


def to_csv(rows: Iterable[dict[str, Any]], columns: list[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in columns])
    return buf.getvalue()


def iso_utc(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")


def _minutes(p: Participant) -> float:
    end = p.finished_at if p.finished_at is not None else p.last_seen
    return round(max(0.0, end - p.created_at) / 60.0, 2)


def _headphones(p: Participant) -> str:
    return p.headphone_check or "not_run"


def _session_row(p: Participant) -> dict[str, Any]:
    """One ``sessions`` row: every participant record, exported or not."""
    return {
        "participant_id": p.participant_id,
        "slot_id": p.slot_id,
        "condition": p.condition,
        "entry": p.entry,
        "prolific_pid": p.prolific_pid,
        "study_id": p.study_id,
        "session_id": p.session_id,
        "state": p.state,
        "screen_reason": p.screen_reason,
        "current_trial": p.current_trial,
        "n_trials": p.n_trials,
        "passed_attention": p.passed_attention,
        "completed": bool(p.completed),
        "headphone_check": _headphones(p),
        "headphone_correct": p.headphone_correct,
        "calibrated_utc": iso_utc(p.calibrated_at),
        "created_utc": iso_utc(p.created_at),
        "finished_utc": iso_utc(p.finished_at),
        "session_minutes": _minutes(p),
    }


def participant_row(p: Participant) -> dict[str, Any]:
    """One ``participants`` row (an exported participant)."""
    return {
        "participant_id": p.participant_id,
        "condition": p.condition,
        **{k: getattr(p, k) for k in DEMOGRAPHICS},
        "passed_attention": bool(p.passed_attention),
        "completed": bool(p.completed),
        "session_minutes": _minutes(p),
        "difficulty": p.difficulty,
        "source": "collected",
        HEADPHONE_COLUMN: _headphones(p),
    }


def _trial_row(r: TrialResult, p: Participant) -> dict[str, Any]:
    """One ``trials`` row (the listening measures are None in the text condition)."""
    audio = p.condition == "audio"
    return {
        "participant_id": p.participant_id,
        "prompt_id": r.prompt_id,
        "trial": r.trial,
        "preference": r.preference,
        "justification": r.justification,
        "decision_time_s": r.decision_time_s,
        "deliberation_time_s": r.deliberation_time_s if audio else None,
        "rating_changes": r.rating_changes,
        "replays_0": r.replays_0 if audio else None,
        "replays_1": r.replays_1 if audio else None,
        "relistened_first": r.relistened_first if audio else None,
        "source": "collected",
        PRACTICE_COLUMN: int(r.trial < 0),
        **{c: getattr(r, c) for c in ATTENTION_COLUMNS},
    }


def _on_scale(value: float | None, scale: RatingScale) -> float | None:
    """A stored rating as exported: a whole number on an integer scale (the paper's), else the float."""
    if value is None:
        return None
    return int(round(value)) if scale.is_integer else float(value)


def _rating_rows(r: TrialResult, p: Participant, scale: RatingScale = PAPER_SCALE) -> list[dict[str, Any]]:
    """The trial's two ``ratings`` rows, response 0 then response 1 (ratings on the study's ``scale``)."""
    audio = p.condition == "audio"
    return [
        {
            "participant_id": p.participant_id,
            "condition": p.condition,
            "prompt_id": r.prompt_id,
            "clip_id": f"{r.prompt_id}_{resp}",
            "trial": r.trial,
            "presented_first": resp == r.first_clip,
            "rating": _on_scale(r.rating_0 if resp == 0 else r.rating_1, scale),
            "audio_quality": _on_scale(r.audio_quality_0 if resp == 0 else r.audio_quality_1, scale) if audio else None,
            "source": "collected",
            PRACTICE_COLUMN: int(r.trial < 0),
        }
        for resp in (0, 1)
    ]


def _event_row(e: Event, pid: str | None) -> dict[str, Any]:
    """One ``events`` row (a session without a participant id is named ``session<N>``)."""
    return {
        "participant_id": pid or f"session{e.participant}",
        "trial": e.trial,
        "seq": e.seq,
        "event_id": e.eid,
        "kind": e.kind,
        "response": e.response,
        "field": e.field,
        "value": e.value,
        "client_ms": e.client_ms,
        "server_ts": round(e.server_ts, 3),
        "refused": e.refused,
        "tab": e.tab,
    }


def _incident_row(inc: Incident, pid: str | None) -> dict[str, Any]:
    """One ``incidents`` row (a session without a participant id is named ``session<N>``)."""
    return {
        "participant_id": pid or f"session{inc.participant}",
        "trial": inc.trial,
        "kind": inc.kind,
        "detail": inc.detail,
        "server_utc": iso_utc(inc.server_ts),
    }


def exported_participant(p: Participant, exclude_headphone_failed: bool = False) -> bool:
    """Whether ``p`` is a row of participants.csv: they held a slot and answered the attention check (and, with
    ``exclude_headphone_failed``, did not fail the headphone check)."""
    return (
        p.participant_id is not None
        and p.passed_attention is not None
        and not (exclude_headphone_failed and p.headphone_check == "failed")
    )


def collect(db: Database, exclude_headphone_failed: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Every export table as a list of row dicts (column order: the ``*_COLUMNS`` lists)."""
    with db.transaction() as s:
        scale = scale_from_meta(s.scalar(select(Meta.value).where(Meta.key == SCALE_KEY)))
        people = s.scalars(select(Participant).order_by(Participant.id)).all()
        results = s.scalars(select(TrialResult).order_by(TrialResult.participant, TrialResult.trial)).all()
        events = s.execute(
            select(Event, Participant.participant_id)
            .join(Participant, Event.participant == Participant.id)
            .order_by(Event.participant, Event.trial, Event.seq)
        ).all()
        incidents = s.execute(
            select(Incident, Participant.participant_id)
            .join(Participant, Incident.participant == Participant.id)
            .order_by(Incident.id)
        ).all()
    by_id = {p.id: p for p in people}
    exported = {p.id for p in people if exported_participant(p, exclude_headphone_failed)}
    tables: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
    for p in people:
        tables["sessions"].append(_session_row(p))
        if p.id in exported:
            tables["participants"].append(participant_row(p))
    for r in results:
        p = by_id[r.participant]
        if p.id not in exported:
            continue
        tables["trials"].append(_trial_row(r, p))
        tables["ratings"].extend(_rating_rows(r, p, scale))
    for e, pid in events:
        tables["events"].append(_event_row(e, pid))
    for inc, pid in incidents:
        tables["incidents"].append(_incident_row(inc, pid))
    return tables


COLUMNS = {
    "ratings": RATINGS_COLUMNS + [PRACTICE_COLUMN],
    "trials": TRIALS_COLUMNS + [PRACTICE_COLUMN, *ATTENTION_COLUMNS],
    "participants": PARTICIPANTS_COLUMNS + [HEADPHONE_COLUMN],
    "sessions": SESSIONS_COLUMNS,
    "events": EVENTS_COLUMNS,
    "incidents": INCIDENTS_COLUMNS,
}


def export_csv_texts(db: Database, exclude_headphone_failed: bool = False) -> dict[str, str]:
    tables = collect(db, exclude_headphone_failed)
    return {name: to_csv(rows, COLUMNS[name]) for name, rows in tables.items()}


def export_dir(db: Database, out: str | Path, exclude_headphone_failed: bool = False) -> dict[str, int]:
    """Write every table to ``out/<table>.csv`` (atomically); returns row counts."""
    from modprefs.io import atomic_path

    out = Path(out)
    tables = collect(db, exclude_headphone_failed)
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        with atomic_path(out / f"{name}.csv") as tmp:
            tmp.write_text(to_csv(rows, COLUMNS[name]), encoding="utf-8")
    return {name: len(rows) for name, rows in tables.items()}


def export_zip(db: Database) -> bytes:
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in export_csv_texts(db).items():
            zf.writestr(f"{name}.csv", text)
    return buf.getvalue()
