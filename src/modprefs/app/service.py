"""The participant protocol as a state machine over the database (no HTTP here).

States of a participant (``app_participants.state``), in the paper's order (§3.2):

    consent -> demographics -> trials (trial 0 = attention check, then 1..n) -> difficulty -> done

and the ends ``declined`` (no consent), ``screened_out`` (under 18, or no English), ``full`` (no
open slot), ``failed_attention`` (preferred the nonsensical response at trial 0) and ``abandoned``
(no request for ``abandon_minutes`` while holding a slot).

Slots: a participant who passes the demographic screening takes the open slot (an assignment of
assignments.csv) with the lowest position (conditions alternate). A slot whose holder fails the
attention check or abandons is reopened and goes to the next arrival; it is ``done`` once its holder
has submitted every assigned trial. Claims are conditional updates (``status = 'open'``), so two
concurrent arrivals never take the same slot, on SQLite and PostgreSQL alike.

Every public function is one transaction. Trial submission is idempotent: a second submission of a
trial already stored (a double click, a re-sent form after a dropped connection) changes nothing and
reports ``duplicate``; the unique (participant, trial) constraint guarantees it under concurrency.
"""

from __future__ import annotations

import hmac
import json
import math
import re
import secrets
import time
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from modprefs.app.db import Database
from modprefs.app.models import Clip, Event, Meta, Participant, Prompt, Slot, SlotTrial, TrialResult
from modprefs.app.protocol import derive_measures, heard

EDUCATION_LEVELS = ["Less than high school", "High school diploma or GED", "Some college, no degree",
                    "Associate degree", "Bachelor's degree", "Master's degree", "Doctoral or professional degree"]
GENDERS = ["Woman", "Man", "Non-binary", "Prefer not to say"]
RACES = ["White", "Black or African American", "Asian", "American Indian or Alaska Native",
         "Native Hawaiian or Other Pacific Islander", "Multiracial", "Other"]
EMPLOYMENT = ["Full-time", "Part-time", "Self-employed", "Unemployed", "Student", "Retired", "Homemaker", "Other"]
ENGLISH_PROFICIENCY = ["Basic", "Intermediate", "Advanced", "Fluent"]
NO_ENGLISH = "None"

ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_TEXT = 100
MAX_OTHER_LANGUAGES = 300
MAX_JUSTIFICATION = 2000
MAX_EVENTS_PER_POST = 300
MAX_EVENTS_PER_TRIAL = 5000
EVENT_KINDS = {"onset", "play", "pause", "ended", "seek", "seek_refused", "ended_refused", "slider",
               "preference", "submit", "blur", "focus"}
SLIDER_FIELDS = {"rating", "audio_quality"}
HOLDING = ("trials",)


class AppError(Exception):
    status = 400

    def __init__(self, message: str, **context: Any):
        super().__init__(message)
        self.message = message
        self.context = context


class NotFound(AppError):
    status = 404


class Forbidden(AppError):
    status = 403


class Conflict(AppError):
    status = 409


class Invalid(AppError):
    status = 422


class TooLarge(AppError):
    status = 413


@dataclass
class Settings:
    abandon_minutes: float = 30.0
    entry: str = "any"  # any | prolific | invite
    completion_code: str = ""
    screenout_code: str = ""
    attention_fail_code: str = ""
    prolific_complete_url: str = "https://app.prolific.com/submissions/complete?cc={code}"
    study_title: str = "Rating AI assistant responses"
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_meta(cls, meta: Mapping[str, str], **overrides: Any) -> Settings:
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        values: dict[str, Any] = {k: v for k, v in meta.items() if k in known}
        values.update({k: v for k, v in overrides.items() if v is not None})
        values["abandon_minutes"] = float(values.get("abandon_minutes", 30.0))
        return cls(**values, extra={k: v for k, v in meta.items() if k not in known})


def now() -> float:
    return time.time()


def new_token() -> str:
    return secrets.token_urlsafe(24)


def read_settings(db: Database, **overrides: Any) -> Settings:
    with db.transaction() as s:
        meta = {m.key: m.value for m in s.scalars(select(Meta))}
    return Settings.from_meta(meta, **overrides)


# ---- entry ------------------------------------------------------------------------------------

def _clean_id(value: str | None, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not ID_RE.match(value):
        raise Invalid(f"{name} is not a valid identifier")
    return value


def enter(db: Database, settings: Settings, *, prolific_pid: str | None = None, study_id: str | None = None,
          session_id: str | None = None, user_agent: str | None = None) -> str:
    """A new participant session (or the existing one of this Prolific id); returns its token."""
    pid = _clean_id(prolific_pid, "PROLIFIC_PID")
    study = _clean_id(study_id, "STUDY_ID")
    sess = _clean_id(session_id, "SESSION_ID")
    if settings.entry == "prolific" and pid is None:
        raise Forbidden("This study is only open through its Prolific link (PROLIFIC_PID missing).")
    if settings.entry == "invite":
        raise Forbidden("This study is only open through personal invitation links.")
    for _ in range(3):
        try:
            with db.transaction() as s:
                if pid is not None:
                    q = select(Participant).where(Participant.prolific_pid == pid)
                    q = q.where(Participant.study_id == study) if study is not None else \
                        q.where(Participant.study_id.is_(None))
                    existing = s.scalars(q).first()
                    if existing is not None:
                        if existing.session_id and sess and existing.session_id != sess:
                            raise Forbidden("You have already taken part in this study.")
                        existing.last_seen = now()
                        return existing.token
                t = now()
                p = Participant(token=new_token(), csrf=new_token(), entry="prolific" if pid else "link",
                                prolific_pid=pid, study_id=study, session_id=sess, state="consent",
                                created_at=t, last_seen=t, user_agent=(user_agent or "")[:300] or None)
                s.add(p)
                s.flush()
                return p.token
        except IntegrityError:  # the same Prolific id arrived twice at once: take the stored one
            continue
    raise Conflict("Please reload the page.")


def invite(db: Database, n: int) -> list[str]:
    """``n`` personal invitation tokens (participants waiting at the consent page)."""
    tokens = []
    with db.transaction() as s:
        t = now()
        for _ in range(n):
            p = Participant(token=new_token(), csrf=new_token(), entry="invite", state="consent",
                            created_at=t, last_seen=t)
            s.add(p)
            tokens.append(p.token)
    return tokens


def _participant(s: Session, token: str, touch: bool = True) -> Participant:
    if not token or len(token) > 64:
        raise NotFound("Unknown link.")
    p = s.scalars(select(Participant).where(Participant.token == token)).first()
    if p is None:
        raise NotFound("Unknown link. Please use the link you were given.")
    if touch and p.state in ("consent", "demographics", "trials", "difficulty"):
        p.last_seen = now()
    return p


def _check_csrf(p: Participant, supplied: str | None) -> None:
    if not supplied or not hmac.compare_digest(str(supplied).encode(), p.csrf.encode()):
        raise Forbidden("The form expired or did not come from this site (CSRF check failed). Please reload.")


# ---- the current page ---------------------------------------------------------------------------

def page_state(db: Database, settings: Settings, token: str) -> dict[str, Any]:
    """What to show now: {"page": ..., plus the page's data}."""
    with db.transaction() as s:
        sweep_abandoned(s, settings)
        p = _participant(s, token)
        base = {"token": p.token, "csrf": p.csrf, "state": p.state, "entry": p.entry,
                "condition": p.condition, "study_title": settings.study_title}
        if p.state == "trials":
            return {**base, **_trial_view(s, p)}
        if p.state == "difficulty":
            return {**base, "page": "difficulty", "n_trials": p.n_trials}
        if p.state == "done":
            return {**base, "page": "done", "code": settings.completion_code,
                    "return_url": _return_url(settings, p, settings.completion_code)}
        if p.state in ("consent", "demographics"):
            return {**base, "page": p.state}
        code = {"failed_attention": settings.attention_fail_code or settings.screenout_code,
                "screened_out": settings.screenout_code, "full": settings.screenout_code}.get(p.state, "")
        return {**base, "page": "ended", "reason": p.state, "code": code,
                "return_url": _return_url(settings, p, code) if code else None}


def _return_url(settings: Settings, p: Participant, code: str) -> str | None:
    if p.entry != "prolific" or not settings.prolific_complete_url or not code:
        return None
    return settings.prolific_complete_url.replace("{code}", code)


def _slot_trial(s: Session, p: Participant, trial: int) -> SlotTrial:
    st = s.get(SlotTrial, (p.slot_id, trial))
    if st is None:
        raise NotFound("No such trial in your assignment.")
    return st


def _events_of(s: Session, p: Participant, trial: int) -> list[dict[str, Any]]:
    rows = s.scalars(select(Event).where(Event.participant == p.id, Event.trial == trial)).all()
    return [{"seq": e.seq, "kind": e.kind, "response": e.response, "field": e.field, "value": e.value,
             "t": e.client_ms} for e in rows]


def _trial_view(s: Session, p: Participant) -> dict[str, Any]:
    st = _slot_trial(s, p, p.current_trial)
    prompt = s.get(Prompt, st.prompt_id)
    order = [st.first_clip, 1 - st.first_clip]  # response index shown as A, then B
    events = _events_of(s, p, p.current_trial)
    done = heard(events)
    next_seq = max((e["seq"] for e in events), default=-1) + 1
    responses = []
    for pos, r in zip("AB", order):
        clip_id = f"{st.prompt_id}_{r}"
        responses.append({"pos": pos, "text": prompt.text_0 if r == 0 else prompt.text_1,
                          "audio_url": f"/p/{p.token}/audio/{clip_id}.wav" if p.condition == "audio" else None,
                          "heard": r in done})
    return {"page": "trial", "trial": p.current_trial, "n_trials": p.n_trials, "task_number": p.current_trial + 1,
            "task_total": (p.n_trials or 0) + 1, "history": json.loads(prompt.history_json), "prompt": prompt.prompt,
            "responses": responses, "next_seq": next_seq,
            "heard": [pos for pos, r in zip("AB", order) if r in done]}


# ---- consent and demographics ----------------------------------------------------------------------

def give_consent(db: Database, token: str, csrf: str | None, agree: bool) -> None:
    with db.transaction() as s:
        p = _participant(s, token)
        _check_csrf(p, csrf)
        if p.state != "consent":
            return  # already answered (a re-sent form)
        if agree:
            p.state, p.consent_at = "demographics", now()
        else:
            p.state, p.finished_at, p.screen_reason = "declined", now(), "no_consent"


def _text(form: Mapping[str, str], name: str, errors: dict[str, str], limit: int = MAX_TEXT) -> str | None:
    value = str(form.get(name, "") or "").strip()
    if len(value) > limit:
        errors[name] = f"at most {limit} characters"
        return None
    if any(ord(c) < 32 for c in value):
        errors[name] = "contains control characters"
        return None
    return value or None


def _choice(form: Mapping[str, str], name: str, options: list[str], errors: dict[str, str],
            required: bool = False) -> str | None:
    value = str(form.get(name, "") or "").strip()
    if value == "" or value == "Prefer not to say" and "Prefer not to say" not in options:
        if required:
            errors[name] = "please choose an answer"
        return None
    if value not in options:
        errors[name] = "not one of the choices"
        return None
    return value


def parse_demographics(form: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The §3.2.1 questionnaire -> (values, errors by field)."""
    errors: dict[str, str] = {}
    out: dict[str, Any] = {}
    age_raw = str(form.get("age", "")).strip()
    if not re.fullmatch(r"\d{1,3}", age_raw) or not 0 < int(age_raw) <= 120:
        errors["age"] = "please enter your age in years"
    else:
        out["age"] = int(age_raw)
    out["gender"] = _choice(form, "gender", GENDERS, errors)
    out["race"] = _choice(form, "race", RACES, errors)
    hisp = str(form.get("hispanic_latino", "")).strip()
    if hisp not in ("", "yes", "no", "na"):
        errors["hispanic_latino"] = "not one of the choices"
    out["hispanic_latino"] = {"yes": True, "no": False}.get(hisp)
    out["birthplace"] = _text(form, "birthplace", errors)
    out["education"] = _choice(form, "education", EDUCATION_LEVELS, errors)
    out["employment"] = _choice(form, "employment", EMPLOYMENT, errors)
    out["country"] = _text(form, "country", errors)
    out["primary_language"] = _text(form, "primary_language", errors)
    native = str(form.get("native_english", "")).strip()
    if native not in ("yes", "no"):
        errors["native_english"] = "please choose an answer"
    out["native_english"] = native == "yes"
    prof = str(form.get("english_proficiency", "")).strip()
    out["english_proficiency"] = None
    if native == "no":
        if prof not in ENGLISH_PROFICIENCY + [NO_ENGLISH]:
            errors["english_proficiency"] = "please choose your English proficiency"
        else:
            out["english_proficiency"] = prof
    others = _text(form, "other_languages", errors, MAX_OTHER_LANGUAGES)
    if others:
        parts = [x.strip() for x in re.split(r"[;,]", others) if x.strip()]
        others = ";".join(parts) or None
    out["other_languages"] = others
    tz = _text(form, "timezone", errors, 64)
    if tz and tz not in _timezones():
        errors["timezone"] = "not a known time zone (e.g. America/New_York)"
    out["timezone"] = tz
    return out, errors


_TZ: set[str] | None = None


def _timezones() -> set[str]:
    global _TZ
    if _TZ is None:
        _TZ = set(zoneinfo.available_timezones()) | {"UTC"}
    return _TZ


def submit_demographics(db: Database, settings: Settings, token: str, csrf: str | None,
                        form: Mapping[str, str]) -> dict[str, str]:
    """Store the questionnaire, screen (under 18, no English) and take a slot; returns errors (if any)."""
    values, errors = parse_demographics(form)
    with db.transaction() as s:
        p = _participant(s, token)
        _check_csrf(p, csrf)
        if p.state != "demographics":
            return {}
        if errors:
            return errors
        for k, v in values.items():
            setattr(p, k, v)
        if values["age"] < 18:
            p.state, p.screen_reason, p.finished_at = "screened_out", "under_18", now()
            return {}
        if values["english_proficiency"] == NO_ENGLISH:
            p.state, p.screen_reason, p.finished_at = "screened_out", "no_english", now()
            return {}
        sweep_abandoned(s, settings)
        if not claim_slot(s, p):
            p.state, p.screen_reason, p.finished_at = "full", "no_open_slot", now()
    return {}


def claim_slot(s: Session, p: Participant) -> bool:
    """Give ``p`` the open slot with the lowest position; False when none is open."""
    for _ in range(1000):
        slot = s.scalars(select(Slot).where(Slot.status == "open").order_by(Slot.position).limit(1)).first()
        if slot is None:
            return False
        res = s.execute(update(Slot).where(Slot.slot_id == slot.slot_id, Slot.status == "open")
                        .values(status="taken", holder=p.id, issues=Slot.issues + 1)
                        .execution_options(synchronize_session=False))
        if res.rowcount != 1:
            s.expire(slot)
            continue  # taken by a concurrent arrival: try the next one
        s.refresh(slot)
        n = s.scalar(select(func.max(SlotTrial.trial)).where(SlotTrial.slot_id == slot.slot_id))
        p.slot_id, p.condition = slot.slot_id, slot.condition
        p.participant_id = slot.slot_id if slot.issues == 1 else f"{slot.slot_id}_r{slot.issues}"
        p.state, p.current_trial, p.n_trials = "trials", 0, int(n or 0)
        return True
    raise Conflict("Too many concurrent arrivals; please reload.")


def sweep_abandoned(s: Session, settings: Settings) -> int:
    """Mark slot holders silent for ``abandon_minutes`` abandoned and reopen their slots."""
    cutoff = now() - settings.abandon_minutes * 60.0
    stale = s.execute(select(Participant.id, Participant.slot_id, Participant.last_seen)
                      .where(Participant.state.in_(HOLDING), Participant.last_seen < cutoff)).all()
    n = 0
    for pid, slot_id, last_seen in stale:
        res = s.execute(update(Participant).where(Participant.id == pid, Participant.state.in_(HOLDING),
                                                  Participant.last_seen < cutoff)
                        .values(state="abandoned", finished_at=last_seen, screen_reason="timeout")
                        .execution_options(synchronize_session=False))
        if res.rowcount == 1:
            _release(s, slot_id, pid)
            n += 1
    if n:
        s.expire_all()
    return n


def _release(s: Session, slot_id: str | None, holder: int) -> None:
    if slot_id is None:
        return
    s.execute(update(Slot).where(Slot.slot_id == slot_id, Slot.holder == holder, Slot.status == "taken")
              .values(status="open", holder=None).execution_options(synchronize_session=False))


# ---- events and trials --------------------------------------------------------------------------------

def parse_events(raw: Any) -> list[dict[str, Any]]:
    """Validate a batch of client events (a list of dicts); raises Invalid/TooLarge."""
    if not isinstance(raw, list):
        raise Invalid("events must be a list")
    if len(raw) > MAX_EVENTS_PER_POST:
        raise TooLarge(f"at most {MAX_EVENTS_PER_POST} events per request")
    out = []
    for e in raw:
        if not isinstance(e, dict):
            raise Invalid("an event must be an object")
        seq, kind, t = e.get("seq"), e.get("kind"), e.get("t")
        if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq < 1_000_000:
            raise Invalid("event seq must be an integer 0..999999")
        if kind not in EVENT_KINDS:
            raise Invalid(f"unknown event kind {str(kind)[:20]!r}")
        if not isinstance(t, (int, float)) or isinstance(t, bool) or not 0 <= t < 2 ** 53:
            raise Invalid("event t must be epoch milliseconds")
        pos = e.get("pos")
        if pos not in (None, "A", "B"):
            raise Invalid("event pos must be A, B or null")
        fld = e.get("field")
        if fld is not None and fld not in SLIDER_FIELDS:
            raise Invalid("event field must be rating or audio_quality")
        x = e.get("x")
        if x is not None and (not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x)
                              or abs(x) > 1e7):
            raise Invalid("event x must be a finite number")
        if kind == "slider" and (pos is None or fld is None or x is None or not 1 <= x <= 100):
            raise Invalid("a slider event needs pos, field and a value 1..100")
        out.append({"seq": seq, "kind": kind, "pos": pos, "field": fld, "x": None if x is None else float(x),
                    "t": int(t)})
    return out


def _insert_events(s: Session, db: Database, p: Participant, trial: int, first_clip: int,
                   events: list[dict[str, Any]]) -> int:
    if not events:
        return 0
    stored = s.scalar(select(func.count()).select_from(Event).where(Event.participant == p.id, Event.trial == trial))
    room = MAX_EVENTS_PER_TRIAL - int(stored or 0)
    events = [e for e in events if e["kind"] == "submit"] + [e for e in events if e["kind"] != "submit"]
    events = events[:max(room, 0)] if room < len(events) else events
    if not events:
        return 0
    ts = now()
    rows = [{"participant": p.id, "trial": trial, "seq": e["seq"], "kind": e["kind"],
             "response": None if e["pos"] is None else (first_clip if e["pos"] == "A" else 1 - first_clip),
             "field": e["field"], "value": e["x"], "client_ms": e["t"], "server_ts": ts} for e in events]
    if db.dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    stmt = insert(Event).values(rows).on_conflict_do_nothing(index_elements=["participant", "trial", "seq"])
    return s.execute(stmt).rowcount or 0


def record_events(db: Database, token: str, csrf: str | None, trial: int, events: list[dict[str, Any]]) -> dict:
    """Store a batch of the current trial's events (re-sent events are stored once)."""
    with db.transaction() as s:
        p = _participant(s, token)
        _check_csrf(p, csrf)
        if p.state in ("consent", "demographics"):
            raise Conflict("No trial is open.")
        if p.state != "trials" or trial < p.current_trial:
            return {"stored": 0, "ignored": len(events)}  # late events of a submitted trial
        if trial > p.current_trial:
            raise Conflict("That trial is not open yet.")
        st = _slot_trial(s, p, trial)
        n = _insert_events(s, db, p, trial, st.first_clip, events)
    return {"stored": n, "ignored": len(events) - n}


@dataclass
class TrialForm:
    rating_a: int
    rating_b: int
    audio_quality_a: int | None
    audio_quality_b: int | None
    choice: str  # A | B | tie (by position)
    justification: str | None
    submit_ms: int | None
    events: list[dict[str, Any]]


def _slider(form: Mapping[str, str], name: str, errors: list[str], required: bool = True) -> int | None:
    raw = str(form.get(name, "") or "").strip()
    if raw == "":
        if required:
            errors.append(f"{name}: please move the slider")
        return None
    if not re.fullmatch(r"\d{1,3}", raw) or not 1 <= int(raw) <= 100:
        errors.append(f"{name}: must be 1..100")
        return None
    return int(raw)


def parse_trial_form(form: Mapping[str, str], audio: bool) -> TrialForm:
    errors: list[str] = []
    ra, rb = _slider(form, "rating_A", errors), _slider(form, "rating_B", errors)
    aqa = _slider(form, "audio_quality_A", errors, audio)
    aqb = _slider(form, "audio_quality_B", errors, audio)
    choice = str(form.get("preference", "")).strip()
    if choice not in ("A", "B", "tie"):
        errors.append("preference: choose Response A, Response B or tie")
    just = str(form.get("justification", "") or "")
    if len(just) > MAX_JUSTIFICATION:
        raise TooLarge(f"The explanation is limited to {MAX_JUSTIFICATION} characters.")
    just = just.replace("\r\n", "\n").strip() or None
    submit_raw = str(form.get("submit_t", "") or "").strip()
    submit_ms = int(submit_raw) if re.fullmatch(r"\d{1,16}", submit_raw) else None
    raw_events = str(form.get("events", "") or "").strip()
    try:
        events = parse_events(json.loads(raw_events)) if raw_events else []
    except json.JSONDecodeError:
        raise Invalid("events: not JSON") from None
    if errors:
        raise Invalid("; ".join(errors))
    return TrialForm(ra, rb, aqa if audio else None, aqb if audio else None, choice, just, submit_ms, events)


def submit_trial(db: Database, token: str, csrf: str | None, trial: int, form: Mapping[str, str]) -> str:
    """Store a trial; returns ``stored``, ``duplicate`` (already stored: nothing changed) or ``failed_attention``."""
    try:
        with db.transaction() as s:
            p = _participant(s, token)
            _check_csrf(p, csrf)
            if trial < p.current_trial or p.state not in ("trials",):
                if s.scalars(select(TrialResult.id).where(TrialResult.participant == p.id,
                                                          TrialResult.trial == trial)).first() is not None:
                    return "duplicate"
                raise Conflict("This trial is not open.")
            if trial > p.current_trial:
                raise Conflict("That trial is not open yet.")
            audio = p.condition == "audio"
            data = parse_trial_form(form, audio)
            st = _slot_trial(s, p, trial)
            first = st.first_clip
            _insert_events(s, db, p, trial, first, data.events)
            events = _events_of(s, p, trial)
            if audio and heard(events) != {0, 1}:
                raise Invalid("Please listen to both responses in full before submitting.")
            measures = derive_measures(events, p.condition or "text", first, data.submit_ms)
            by_pos = {"A": first, "B": 1 - first}
            ratings = {by_pos["A"]: data.rating_a, by_pos["B"]: data.rating_b}
            aq = {by_pos["A"]: data.audio_quality_a, by_pos["B"]: data.audio_quality_b}
            preference = "tie" if data.choice == "tie" else str(by_pos[data.choice])
            s.add(TrialResult(participant=p.id, trial=trial, prompt_id=st.prompt_id, first_clip=first,
                              preference=preference, justification=data.justification,
                              rating_0=ratings[0], rating_1=ratings[1], audio_quality_0=aq[0], audio_quality_1=aq[1],
                              submitted_at=now(), **measures))
            s.flush()  # a concurrent double submission fails here (unique participant x trial)
            values: dict[str, Any] = {"last_seen": now()}
            outcome = "stored"
            if trial == 0:
                passed = preference != "1"  # response 1 of the attention check is the nonsensical one
                values["passed_attention"] = passed
                if not passed:
                    values.update(state="failed_attention", finished_at=now(), screen_reason="attention_check")
                    outcome = "failed_attention"
            if outcome == "stored":
                if trial >= (p.n_trials or 0):
                    values.update(state="difficulty", current_trial=trial + 1, completed=True)
                else:
                    values["current_trial"] = trial + 1
            res = s.execute(update(Participant).where(Participant.id == p.id, Participant.current_trial == trial,
                                                      Participant.state == "trials").values(**values)
                            .execution_options(synchronize_session=False))
            if res.rowcount != 1:
                raise IntegrityError("concurrent submission", None, Exception("duplicate"))
            if outcome == "failed_attention":
                _release(s, p.slot_id, p.id)
            elif values.get("state") == "difficulty":
                s.execute(update(Slot).where(Slot.slot_id == p.slot_id, Slot.holder == p.id)
                          .values(status="done").execution_options(synchronize_session=False))
            return outcome
    except IntegrityError:
        return "duplicate"


def submit_difficulty(db: Database, token: str, csrf: str | None, value: str | None) -> None:
    raw = str(value or "").strip()
    if raw not in {"1", "2", "3", "4", "5"}:
        raise Invalid("Please choose how difficult the task was (1-5).")
    with db.transaction() as s:
        p = _participant(s, token)
        _check_csrf(p, csrf)
        if p.state != "difficulty":
            if p.state == "done":
                return
            raise Conflict("Not at the end of the study yet.")
        p.difficulty, p.state, p.finished_at = int(raw), "done", now()


def audio_file(db: Database, token: str, clip_id: str) -> str:
    """The path of a clip of the participant's *current* trial; any other clip is refused."""
    with db.transaction() as s:
        p = _participant(s, token)
        if p.state != "trials" or p.condition != "audio":
            raise Forbidden("No audio for this page.")
        st = _slot_trial(s, p, p.current_trial)
        if clip_id not in (f"{st.prompt_id}_0", f"{st.prompt_id}_1"):
            raise Forbidden("This clip is not part of your current task.")
        clip = s.get(Clip, clip_id)
        if clip is None or not clip.path:
            raise NotFound("Audio not found.")
        return clip.path


# ---- admin ------------------------------------------------------------------------------------------

def status_counts(db: Database, settings: Settings | None = None) -> dict[str, Any]:
    with db.transaction() as s:
        if settings is not None:
            sweep_abandoned(s, settings)
        states = dict(s.execute(select(Participant.state, func.count()).group_by(Participant.state)).all())
        slots = dict(s.execute(select(Slot.status, func.count()).group_by(Slot.status)).all())
        n_trials = s.scalar(select(func.count()).select_from(TrialResult))
    return {"participants": states, "slots": slots, "trials_submitted": int(n_trials or 0)}
