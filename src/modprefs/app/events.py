"""The event log of a trial: a batch's validation, storage (an id once, numbered on receipt), the
plausibility of ``ended`` and ``reveal`` events on receipt, and the receipt the browser gets
(:mod:`.service` describes the protocol)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from modprefs.app import plausibility, service
from modprefs.app.db import Database
from modprefs.app.models import Clip, Event, Fetch, Participant, SlotTrial
from modprefs.app.service import (
    Conflict,
    Invalid,
    Settings,
    TooLarge,
    check_csrf,
    check_tab,
    find_participant,
    log_incident,
    slot_trial,
)
from modprefs.scale import PAPER_SCALE, RatingScale

EID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,48}$")
MAX_EVENTS_PER_POST = 300
MAX_EVENTS_PER_TRIAL = 5000
EVENT_KINDS = {
    "onset",
    "play",
    "pause",
    "ended",
    "seek",
    "seek_refused",
    "ended_refused",
    "slider",
    "preference",
    "submit",
    "blur",
    "focus",
    "hidden",
    "visible",
    "reveal",
}
SLIDER_FIELDS = {"rating", "audio_quality"}


# ---- the stored log ----------------------------------------------------------------------------------


def events_of(s: Session, p: Participant, trial: int) -> list[dict[str, Any]]:
    """The trial's stored events in receipt order (keys of :mod:`.protocol` and :mod:`.plausibility`)."""
    rows = s.scalars(select(Event).where(Event.participant == p.id, Event.trial == trial).order_by(Event.seq)).all()
    return [
        {
            "seq": e.seq,
            "eid": e.eid,
            "kind": e.kind,
            "response": e.response,
            "field": e.field,
            "value": e.value,
            "t": e.client_ms,
            "server_ts": e.server_ts,
            "refused": e.refused,
            "tab": e.tab,
        }
        for e in rows
    ]


def of_tab(events: list[dict[str, Any]], tab: str | None) -> list[dict[str, Any]]:
    """The events one browser tab sent (``tab`` None: those sent without a tab id)."""
    return [e for e in events if e.get("tab") == tab]


def unlocked(st: SlotTrial, events: list[dict[str, Any]]) -> dict[str, Any]:
    """What the server has accepted so far: heard clips (positions) and whether B was revealed."""
    order = [st.first_clip, 1 - st.first_clip]
    done = plausibility.heard_clips(events)
    return {"heard": [pos for pos, r in zip("AB", order) if r in done], "revealed": plausibility.revealed(events)}


# ---- a batch from the browser ------------------------------------------------------------------------


def _number(e: Mapping[str, Any], key: str) -> float | None:
    x = e.get(key)
    if x is None:
        return None
    if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x) or abs(x) > 1e7:
        raise Invalid(f"event {key} must be a finite number")
    return float(x)


def parse_events(raw: Any, scale: RatingScale = PAPER_SCALE) -> list[dict[str, Any]]:
    """Validate a batch of client events (a list of dicts with ``id``, ``kind``, ``t``, ``pos``,
    ``field``, ``x``); raises Invalid/TooLarge. ``t`` is the browser clock in epoch milliseconds; a
    slider's ``x`` lies in the study's rating ``scale`` (its range; the submitted form is checked on its steps)."""
    if not isinstance(raw, list):
        raise Invalid("events must be a list")
    if len(raw) > MAX_EVENTS_PER_POST:
        raise TooLarge(f"at most {MAX_EVENTS_PER_POST} events per request")
    out = []
    for e in raw:
        if not isinstance(e, dict):
            raise Invalid("an event must be an object")
        eid, kind, t = e.get("id"), e.get("kind"), e.get("t")
        if not isinstance(eid, str) or not EID_RE.match(eid):
            raise Invalid("event id must be 1-48 characters of A-Z a-z 0-9 _ . : -")
        if kind not in EVENT_KINDS:
            raise Invalid(f"unknown event kind {str(kind)[:20]!r}")
        if not isinstance(t, (int, float)) or isinstance(t, bool) or not 0 <= t < 2**53:
            raise Invalid("event t must be epoch milliseconds")
        pos = e.get("pos")
        if pos not in (None, "A", "B"):
            raise Invalid("event pos must be A, B or null")
        fld = e.get("field")
        if fld is not None and fld not in SLIDER_FIELDS:
            raise Invalid("event field must be rating or audio_quality")
        x = _number(e, "x")
        if kind == "slider" and (pos is None or fld is None or x is None or not scale.min <= x <= scale.max):
            raise Invalid(f"a slider event needs pos, field and a value {scale.min:g}..{scale.max:g}")
        out.append({"eid": eid, "kind": kind, "pos": pos, "field": fld, "x": x, "t": int(t)})
    return out


@dataclass
class EventReceipt:
    """What became of a batch of events (the JSON answer of ``POST /events``)."""

    stored: int = 0
    duplicates: int = 0
    ignored: int = 0  # late events of a submitted trial, or beyond the per-trial cap
    conflicts: list[str] = field(default_factory=list)  # ids already stored with other content
    refused: list[dict[str, Any]] = field(default_factory=list)  # implausible ended/reveal: id, pos, reason
    heard: list[str] = field(default_factory=list)
    revealed: bool = False
    state: str = "trials"  # the session's state (the page goes on when it is no longer "trials")

    def as_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "stored": self.stored,
            "duplicates": self.duplicates,
            "ignored": self.ignored,
            "conflicts": self.conflicts,
            "refused": self.refused,
            "heard": self.heard,
            "revealed": self.revealed,
        }


def _payload(
    trial: int, kind: str, response: int | None, fld: str | None, value: float | None, t: int
) -> tuple[Any, ...]:
    return (int(trial), kind, response, fld, None if value is None else float(value), int(t))


def _fetch_times(s: Session, p: Participant, st: SlotTrial) -> dict[str, float]:
    """clip_id -> server time the participant first fetched the trial's clip (fetched clips only)."""
    return dict(
        s.execute(
            select(Fetch.clip_id, Fetch.first_ts).where(
                Fetch.participant == p.id, Fetch.clip_id.in_([f"{st.prompt_id}_0", f"{st.prompt_id}_1"])
            )
        )
        .tuples()
        .all()
    )


def _refusal(
    e: dict[str, Any],
    response: int | None,
    p: Participant,
    st: SlotTrial,
    settings: Settings,
    stored: list[dict[str, Any]],
    clips: dict[int, Clip | None],
    fetched: dict[str, float],
    ts: float,
) -> str | None:
    """Why a first ``ended`` (audio) or ``reveal`` (text) is implausible, or None (every other event: None)."""
    if (
        e["kind"] == "ended"
        and p.condition == "audio"
        and response is not None
        and response not in plausibility.heard_clips(stored)
    ):
        clip = clips[response]
        return plausibility.check_listen(
            stored,
            response,
            ts,
            clip.duration_s if clip else None,
            fetched.get(f"{st.prompt_id}_{response}"),
            settings.timing_tolerance_s,
        )
    if e["kind"] == "reveal" and p.condition == "text" and not plausibility.revealed(stored):
        return plausibility.check_reveal(stored, ts, settings.text_min_read_s, settings.timing_tolerance_s)
    return None


def _add_event(
    s: Session,
    p: Participant,
    trial: int,
    seq: int,
    e: dict[str, Any],
    response: int | None,
    ts: float,
    refused: str | None,
    tab: str | None = None,
) -> dict[str, Any]:
    """Add one event row to the session; returns it in the form ``events_of`` gives."""
    s.add(
        Event(
            participant=p.id,
            trial=trial,
            seq=seq,
            eid=e["eid"],
            kind=e["kind"],
            response=response,
            field=e["field"],
            value=e["x"],
            client_ms=e["t"],
            server_ts=ts,
            refused=refused,
            tab=tab,
        )
    )
    return {
        "tab": tab,
        "seq": seq,
        "eid": e["eid"],
        "kind": e["kind"],
        "response": response,
        "field": e["field"],
        "value": e["x"],
        "t": e["t"],
        "server_ts": ts,
        "refused": refused,
    }


def _note_refusal(
    s: Session, p: Participant, trial: int, e: dict[str, Any], what: str, refused: str, receipt: EventReceipt
) -> None:
    """Report a refused ``ended``/``reveal`` in the receipt and record it as an incident."""
    receipt.refused.append(
        {
            "id": e["eid"],
            "pos": e["pos"],
            "kind": e["kind"],
            "reason": refused,
            "message": plausibility.MESSAGES[refused],
        }
    )
    log_incident(
        s,
        p,
        trial,
        "listen_refused" if e["kind"] == "ended" else "reveal_refused",
        f"{e['kind']} of {what} refused: {plausibility.MESSAGES[refused]}",
    )


def store_events(
    s: Session,
    p: Participant,
    settings: Settings,
    trial: int,
    st: SlotTrial,
    events: list[dict[str, Any]],
    receipt: EventReceipt,
    tab: str | None = None,
) -> list[dict[str, Any]]:
    """Store new events sent by browser tab ``tab`` (the participant row is locked); fills ``receipt``; returns
    the trial's events of that tab (their plausibility is judged against that tab's own events)."""
    every = events_of(s, p, trial)
    stored = of_tab(every, tab)
    first = st.first_clip
    pos_of: dict[int | None, str] = {first: "A", 1 - first: "B"}
    if not events:
        return stored
    eids = list(dict.fromkeys(e["eid"] for e in events))
    known = {row.eid: row for row in s.scalars(select(Event).where(Event.participant == p.id, Event.eid.in_(eids)))}
    seen: dict[str, tuple[Any, ...]] = {
        eid: _payload(r.trial, r.kind, r.response, r.field, r.value, r.client_ms) for eid, r in known.items()
    }
    room = MAX_EVENTS_PER_TRIAL - len(every)
    next_seq = max((e["seq"] for e in every), default=-1) + 1
    clips = {r: s.get(Clip, f"{st.prompt_id}_{r}") for r in (0, 1)}
    fetched = _fetch_times(s, p, st)
    ts = service.now()
    # the submission first, so that a full trial still records it
    for e in [e for e in events if e["kind"] == "submit"] + [e for e in events if e["kind"] != "submit"]:
        response = None if e["pos"] is None else (first if e["pos"] == "A" else 1 - first)
        payload = _payload(trial, e["kind"], response, e["field"], e["x"], e["t"])
        if e["eid"] in seen:
            if seen[e["eid"]] == payload:
                receipt.duplicates += 1
            else:
                receipt.conflicts.append(e["eid"])
                log_incident(
                    s,
                    p,
                    trial,
                    "event_conflict",
                    f"event id {e['eid']} was stored as {seen[e['eid']]}, re-sent as {payload}: the stored one is kept",
                )
            continue
        if room <= 0:
            receipt.ignored += 1
            continue
        refused = _refusal(e, response, p, st, settings, stored, clips, fetched, ts)
        stored.append(_add_event(s, p, trial, next_seq, e, response, ts, refused, tab))
        seen[e["eid"]] = payload
        next_seq += 1
        room -= 1
        receipt.stored += 1
        if refused:
            what = f"response {pos_of.get(response, '?')}" if e["kind"] == "ended" else "Response B"
            _note_refusal(s, p, trial, e, what, refused, receipt)
    s.flush()
    return stored


def record_events(
    db: Database,
    settings: Settings,
    token: str,
    csrf: str | None,
    trial: int,
    events: list[dict[str, Any]],
    tab: str | None = None,
) -> dict[str, Any]:
    """Store a batch of the current trial's events from browser tab ``tab``; the answer says what became of
    each (EventReceipt). A tab that is not the session's live tab is refused (Superseded, 409)."""
    receipt = EventReceipt()
    with db.transaction() as s:
        p = find_participant(s, token, lock=True)
        check_csrf(p, csrf)
        check_tab(p, tab)
        receipt.state = p.state
        if p.state in ("consent", "demographics", "calibration", "headphones", "instructions"):
            raise Conflict("No trial is open.")
        if p.state != "trials" or trial < p.current_trial:
            receipt.ignored = len(events)  # late events of a submitted trial
            return receipt.as_json()
        if trial > p.current_trial:
            raise Conflict("That trial is not open yet.")
        st = slot_trial(s, p, trial)
        stored = store_events(s, p, settings, trial, st, events, receipt, tab)
        state = unlocked(st, stored)
        receipt.heard, receipt.revealed = state["heard"], state["revealed"]
    return receipt.as_json()
