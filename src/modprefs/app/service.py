"""The participant protocol as a state machine over the database (no HTTP here).

States of a participant (``app_participants.state``), in the paper's order (§3.2):

    consent -> demographics -> [headphones] -> trials (trial 0 = attention check, then 1..n) -> difficulty -> done

(``headphones``: the optional headphone screening of the audio condition, :mod:`.headphones`)
and the ends ``declined`` (no consent), ``screened_out`` (under 18, or no English), ``full`` (no
open slot), ``failed_attention`` (preferred the nonsensical response at trial 0) and ``abandoned``
(no request for ``abandon_minutes`` while holding a slot); ``screened_out`` also ends a failed
headphone screening when it is required.

Slots: a participant who passes the demographic screening takes the open slot (an assignment of
assignments.csv) with the lowest position (conditions alternate). A slot whose holder fails the
attention check or abandons is reopened and goes to the next arrival; it is ``done`` once its holder
has submitted every assigned trial. Claims are conditional updates (``status = 'open'``), so two
concurrent arrivals never take the same slot, on SQLite and PostgreSQL alike.

Every public function is one transaction. Trial submission is idempotent: a second submission of a
trial already stored (a double click, a re-sent form after a dropped connection) changes nothing and
reports ``duplicate``; the unique (participant, trial) constraint guarantees it under concurrency.

Events: the browser gives every event a unique id; the server stores an id once (a re-sent event is a
``duplicate``; the same id with other content is a ``conflict``, reported to the browser and logged
as an incident) and numbers events in the order it receives them. Writes for one participant are
serialised (the participant row is locked), so these numbers never collide. ``ended`` and ``reveal``
events are checked for plausibility on receipt (:mod:`.plausibility`); refused ones are kept,
marked, reported and logged, and a trial whose clips were not heard (or whose Response B was not
revealed) is refused with a message.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import re
import secrets
import time
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import CursorResult, Result, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from modprefs.app import headphones, plausibility
from modprefs.app.db import Database
from modprefs.app.models import Clip, Event, Fetch, Incident, Meta, Participant, Prompt, Slot, SlotTrial, TrialResult
from modprefs.app.protocol import derive_measures
from modprefs.errors import UserInputError
from modprefs.scale import PAPER_SCALE, RatingScale, scale_from_config

log = logging.getLogger("modprefs.app")

EDUCATION_LEVELS = [
    "Less than high school",
    "High school diploma or GED",
    "Some college, no degree",
    "Associate degree",
    "Bachelor's degree",
    "Master's degree",
    "Doctoral or professional degree",
]
GENDERS = ["Woman", "Man", "Non-binary", "Prefer not to say"]
RACES = [
    "White",
    "Black or African American",
    "Asian",
    "American Indian or Alaska Native",
    "Native Hawaiian or Other Pacific Islander",
    "Multiracial",
    "Other",
]
EMPLOYMENT = ["Full-time", "Part-time", "Self-employed", "Unemployed", "Student", "Retired", "Homemaker", "Other"]
ENGLISH_PROFICIENCY = ["Basic", "Intermediate", "Advanced", "Fluent"]
NO_ENGLISH = "None"

ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
EID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,48}$")
MAX_TEXT = 100
MAX_OTHER_LANGUAGES = 300
MAX_JUSTIFICATION = 2000
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
    "reveal",
}
SLIDER_FIELDS = {"rating", "audio_quality"}
HOLDING = ("trials", "headphones")
TEXT_REVEAL = ("next", "auto", "off")
HEADPHONE_CHECK = ("off", "record", "require")
ENTRY = ("any", "prolific", "invite")
SCALE_KEY = "rating_scale"  # app_meta: the study's rating scale as JSON (study.scale); absent = the paper's 1..100


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


class SettingsError(UserInputError):
    """A study setting (app_meta or a serve option) with a wrong value; the message names the key."""


@dataclass
class Settings:
    """The study's settings: app_meta (written by ``app load``) overridden by ``app serve`` options.

    Units: minutes for ``abandon_minutes``, seconds for every ``*_s``, requests per
    ``rate_window_s`` for the ``rate_*`` limits (0 disables a limit).
    """

    abandon_minutes: float = 30.0
    entry: str = "any"  # any | prolific | invite
    completion_code: str = ""
    screenout_code: str = ""
    attention_fail_code: str = ""
    prolific_complete_url: str = "https://app.prolific.com/submissions/complete?cc={code}"
    study_title: str = "Rating AI assistant responses"
    timing_tolerance_s: float = 0.5  # an ended (reveal) may arrive this much before duration (reading time)
    text_reveal: str = "next"  # next (a button, after the reading time) | auto (after the reading time) | off
    text_min_read_s: float = 3.0
    headphone_check: str = "off"  # off | record (recorded, exclusion at analysis) | require (fail ends the session)
    headphone_seed: int = 1
    rate_window_s: float = 60.0
    rate_start_ip: int = 60
    rate_start_pid: int = 10
    rate_session_ip: int = 1200
    rate_session_token: int = 300
    scale: RatingScale = PAPER_SCALE  # app_meta rating_scale (JSON, written by ``app load``); absent: the paper's
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_meta(cls, meta: Mapping[str, str], **overrides: Any) -> Settings:
        """Typed settings from the meta table's strings and ``overrides``; a bad value raises SettingsError."""
        fields = {f.name: f for f in cls.__dataclass_fields__.values() if f.name not in ("extra", "scale")}
        values: dict[str, Any] = {k: v for k, v in meta.items() if k in fields}
        values.update({k: v for k, v in overrides.items() if v is not None})
        typed: dict[str, Any] = {}
        for name, raw in values.items():
            kind: type[Any] = type(fields[name].default)
            try:
                value = kind(raw) if kind is not int else int(str(raw).strip())
            except (TypeError, ValueError):
                raise SettingsError(f"study setting {name}: {raw!r} is not a valid {kind.__name__}") from None
            if kind in (int, float) and (not math.isfinite(value) or value < 0):
                raise SettingsError(f"study setting {name}: {raw!r} must be a finite number >= 0")
            typed[name] = value
        scale = scale_from_meta(meta.get(SCALE_KEY))
        out = cls(**typed, scale=scale, extra={k: v for k, v in meta.items() if k not in fields})
        for name, allowed in (("entry", ENTRY), ("text_reveal", TEXT_REVEAL), ("headphone_check", HEADPHONE_CHECK)):
            if getattr(out, name) not in allowed:
                raise SettingsError(f"study setting {name}: {getattr(out, name)!r} is not one of {', '.join(allowed)}")
        if out.abandon_minutes <= 0:
            raise SettingsError(f"study setting abandon_minutes: {out.abandon_minutes} must be > 0")
        return out


def scale_from_meta(raw: str | None) -> RatingScale:
    """The rating scale stored in app_meta (JSON ``{min, max, step, labels}``); the paper's when absent."""
    if not raw:
        return PAPER_SCALE
    try:
        return scale_from_config(json.loads(raw))
    except (json.JSONDecodeError, TypeError, ValueError, AttributeError) as exc:
        raise SettingsError(f"study setting {SCALE_KEY}: {raw!r} is not a rating scale ({exc})") from None


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


def enter(
    db: Database,
    settings: Settings,
    *,
    prolific_pid: str | None = None,
    study_id: str | None = None,
    session_id: str | None = None,
    user_agent: str | None = None,
) -> str:
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
                    q = (
                        q.where(Participant.study_id == study)
                        if study is not None
                        else q.where(Participant.study_id.is_(None))
                    )
                    existing = s.scalars(q).first()
                    if existing is not None:
                        if existing.session_id and sess and existing.session_id != sess:
                            raise Forbidden("You have already taken part in this study.")
                        existing.last_seen = now()
                        return existing.token
                t = now()
                p = Participant(
                    token=new_token(),
                    csrf=new_token(),
                    entry="prolific" if pid else "link",
                    prolific_pid=pid,
                    study_id=study,
                    session_id=sess,
                    state="consent",
                    created_at=t,
                    last_seen=t,
                    user_agent=(user_agent or "")[:300] or None,
                )
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
            p = Participant(
                token=new_token(), csrf=new_token(), entry="invite", state="consent", created_at=t, last_seen=t
            )
            s.add(p)
            tokens.append(p.token)
    return tokens


def _participant(s: Session, token: str, touch: bool = True, lock: bool = False) -> Participant:
    """The participant of ``token``; ``lock`` takes the row lock (PostgreSQL; SQLite's BEGIN IMMEDIATE
    already serialises writers), so one participant's writes never interleave."""
    if not token or len(token) > 64:
        raise NotFound("Unknown link.")
    q = select(Participant).where(Participant.token == token)
    p = s.scalars(q.with_for_update() if lock else q).first()
    if p is None:
        raise NotFound("Unknown link. Please use the link you were given.")
    if touch and p.state in ("consent", "demographics", "headphones", "trials", "difficulty"):
        p.last_seen = now()
    return p


def _check_csrf(p: Participant, supplied: str | None) -> None:
    if not supplied or not hmac.compare_digest(str(supplied).encode(), p.csrf.encode()):
        raise Forbidden("The form expired or did not come from this site (CSRF check failed). Please reload.")


def _incident(s: Session, p: Participant, trial: int | None, kind: str, detail: str) -> None:
    """Log what the server refused or could not reconcile (app_incidents and the server log)."""
    s.add(Incident(participant=p.id, trial=trial, kind=kind, detail=detail[:2000], server_ts=now()))
    log.warning("participant %s (session %s) trial %s: %s: %s", p.participant_id, p.id, trial, kind, detail)


# ---- the current page ---------------------------------------------------------------------------


def page_state(db: Database, settings: Settings, token: str) -> dict[str, Any]:
    """What to show now: {"page": ..., plus the page's data}."""
    with db.transaction() as s:
        sweep_abandoned(s, settings)
        p = _participant(s, token)
        base = {
            "token": p.token,
            "csrf": p.csrf,
            "state": p.state,
            "entry": p.entry,
            "condition": p.condition,
            "study_title": settings.study_title,
        }
        if p.state == "trials":
            return {**base, **_trial_view(s, p, settings)}
        if p.state == "headphones":
            return {**base, "page": "headphones", "n_questions": headphones.N_TRIALS, "pass_min": headphones.PASS_MIN}
        if p.state == "difficulty":
            return {**base, "page": "difficulty", "n_trials": p.n_trials}
        if p.state == "done":
            return {
                **base,
                "page": "done",
                "code": settings.completion_code,
                "return_url": _return_url(settings, p, settings.completion_code),
            }
        if p.state in ("consent", "demographics"):
            return {**base, "page": p.state}
        code = {
            "failed_attention": settings.attention_fail_code or settings.screenout_code,
            "screened_out": settings.screenout_code,
            "full": settings.screenout_code,
        }.get(p.state, "")
        return {
            **base,
            "page": "ended",
            "reason": p.state,
            "screen_reason": p.screen_reason,
            "code": code,
            "return_url": _return_url(settings, p, code) if code else None,
        }


def _return_url(settings: Settings, p: Participant, code: str) -> str | None:
    if p.entry != "prolific" or not settings.prolific_complete_url or not code:
        return None
    return settings.prolific_complete_url.replace("{code}", code)


def _rowcount(res: Result[Any]) -> int:
    """Rows an UPDATE matched: ``Session.execute`` is typed as returning a ``Result``; for an UPDATE it is a
    ``CursorResult``."""
    return cast(CursorResult[Any], res).rowcount


def _slot_trial(s: Session, p: Participant, trial: int) -> SlotTrial:
    st = s.get(SlotTrial, (p.slot_id, trial))
    if st is None:
        raise NotFound("No such trial in your assignment.")
    return st


def _events_of(s: Session, p: Participant, trial: int) -> list[dict[str, Any]]:
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
        }
        for e in rows
    ]


def _restore(events: list[dict[str, Any]], order: list[int]) -> dict[str, Any]:
    """The values the participant last set in this trial (sliders by input name, the preference)."""
    pos_of = {r: pos for pos, r in zip("AB", order)}
    sliders: dict[str, float] = {}
    preference = None
    for e in plausibility.accepted(events):
        if e["kind"] == "slider" and e["response"] is not None and e["value"] is not None:
            sliders[f"{e['field'] or 'rating'}_{pos_of[int(e['response'])]}"] = _slider_number(e["value"])
        elif e["kind"] == "preference":
            preference = "tie" if e["response"] is None else pos_of[int(e["response"])]
    return {"sliders": sliders, "preference": preference}


def _slider_number(value: float) -> float:
    """A slider value as the page sets it: a whole number as an int (1..100: always), else the float."""
    return int(round(value)) if float(value).is_integer() else float(value)


def _unlocked(st: SlotTrial, events: list[dict[str, Any]]) -> dict[str, Any]:
    """What the server has accepted so far: heard clips (positions) and whether B was revealed."""
    order = [st.first_clip, 1 - st.first_clip]
    done = plausibility.heard_clips(events)
    return {"heard": [pos for pos, r in zip("AB", order) if r in done], "revealed": plausibility.revealed(events)}


def _trial_view(s: Session, p: Participant, settings: Settings) -> dict[str, Any]:
    st = _slot_trial(s, p, p.current_trial)
    prompt = s.get(Prompt, st.prompt_id)
    assert prompt is not None  # SlotTrial.prompt_id is a foreign key to app_prompts
    order = [st.first_clip, 1 - st.first_clip]  # response index shown as A, then B
    events = _events_of(s, p, p.current_trial)
    state = _unlocked(st, events)
    responses = []
    for pos, r in zip("AB", order):
        clip_id = f"{st.prompt_id}_{r}"
        responses.append(
            {
                "pos": pos,
                "text": prompt.text_0 if r == 0 else prompt.text_1,
                "audio_url": f"/p/{p.token}/audio/{clip_id}.wav" if p.condition == "audio" else None,
                "heard": pos in state["heard"],
            }
        )
    reveal = "off" if p.condition == "audio" else settings.text_reveal
    return {
        "page": "trial",
        "trial": p.current_trial,
        "n_trials": p.n_trials,
        "task_number": p.current_trial + 1,
        "task_total": (p.n_trials or 0) + 1,
        "history": json.loads(prompt.history_json),
        "prompt": prompt.prompt,
        "responses": responses,
        "heard": state["heard"],
        "revealed": state["revealed"] or reveal == "off",
        "reveal": {"mode": reveal, "min_read_s": settings.text_min_read_s},
        "restore": _restore(events, order),
    }


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


def _choice(
    form: Mapping[str, str], name: str, options: list[str], errors: dict[str, str], required: bool = False
) -> str | None:
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


def submit_demographics(
    db: Database, settings: Settings, token: str, csrf: str | None, form: Mapping[str, str]
) -> dict[str, str]:
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
        elif p.condition == "audio" and settings.headphone_check != "off":
            p.state = "headphones"
    return {}


def claim_slot(s: Session, p: Participant) -> bool:
    """Give ``p`` the open slot with the lowest position; False when none is open."""
    for _ in range(1000):
        slot = s.scalars(select(Slot).where(Slot.status == "open").order_by(Slot.position).limit(1)).first()
        if slot is None:
            return False
        res = s.execute(
            update(Slot)
            .where(Slot.slot_id == slot.slot_id, Slot.status == "open")
            .values(status="taken", holder=p.id, issues=Slot.issues + 1)
            .execution_options(synchronize_session=False)
        )
        if _rowcount(res) != 1:
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
    stale = s.execute(
        select(Participant.id, Participant.slot_id, Participant.last_seen).where(
            Participant.state.in_(HOLDING), Participant.last_seen < cutoff
        )
    ).all()
    n = 0
    for pid, slot_id, last_seen in stale:
        res = s.execute(
            update(Participant)
            .where(Participant.id == pid, Participant.state.in_(HOLDING), Participant.last_seen < cutoff)
            .values(state="abandoned", finished_at=last_seen, screen_reason="timeout")
            .execution_options(synchronize_session=False)
        )
        if _rowcount(res) == 1:
            _release(s, slot_id, pid)
            n += 1
    if n:
        s.expire_all()
    return n


def _release(s: Session, slot_id: str | None, holder: int) -> None:
    if slot_id is None:
        return
    s.execute(
        update(Slot)
        .where(Slot.slot_id == slot_id, Slot.holder == holder, Slot.status == "taken")
        .values(status="open", holder=None)
        .execution_options(synchronize_session=False)
    )


# ---- headphone screening ----------------------------------------------------------------------------


def _headphone_orders(settings: Settings, p: Participant) -> list[tuple[str, str, str]]:
    return headphones.trial_orders(settings.headphone_seed, p.id)


def headphone_wav(db: Database, settings: Settings, token: str, which: str) -> bytes:
    """The screening's sound ``which`` (``calibration`` or a question number 0..N-1) for this participant."""
    with db.transaction() as s:
        p = _participant(s, token)
        if p.state != "headphones":
            raise Forbidden("No headphone check on this page.")
        if which == "calibration":
            return headphones.calibration_wav()
        if not which.isdigit() or not 0 <= int(which) < headphones.N_TRIALS:
            raise NotFound("No such sound.")
        return headphones.wav_bytes(_headphone_orders(settings, p)[int(which)])


def submit_headphones(db: Database, settings: Settings, token: str, csrf: str | None, form: Mapping[str, str]) -> str:
    """Score the screening's answers (``q0``..``q5``: 1, 2 or 3); returns ``passed`` or ``failed``.

    Recorded per participant (``headphone_check``, ``headphone_correct``). With ``headphone_check =
    require`` a failure ends the session (``screened_out``, reason ``headphone_check``) and reopens the slot.
    """
    answers = [str(form.get(f"q{i}", "") or "").strip() for i in range(headphones.N_TRIALS)]
    missing = [i + 1 for i, a in enumerate(answers) if a not in ("1", "2", "3")]
    if missing:
        raise Invalid("Please answer every question (missing: " + ", ".join(map(str, missing)) + ").")
    with db.transaction() as s:
        p = _participant(s, token, lock=True)
        _check_csrf(p, csrf)
        if p.state != "headphones":
            if p.headphone_check is not None:
                return p.headphone_check  # a re-sent form
            raise Conflict("No headphone check on this page.")
        correct, passed = headphones.score(_headphone_orders(settings, p), [int(a) for a in answers])
        p.headphone_check, p.headphone_correct = ("passed" if passed else "failed"), correct
        if not passed and settings.headphone_check == "require":
            p.state, p.screen_reason, p.finished_at = "screened_out", "headphone_check", now()
            _release(s, p.slot_id, p.id)
        else:
            p.state = "trials"
        return p.headphone_check


# ---- events and trials --------------------------------------------------------------------------------


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

    def as_json(self) -> dict[str, Any]:
        return {
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
) -> dict[str, Any]:
    """Add one event row to the session; returns it in the form ``_events_of`` gives."""
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
        )
    )
    return {
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
    _incident(
        s,
        p,
        trial,
        "listen_refused" if e["kind"] == "ended" else "reveal_refused",
        f"{e['kind']} of {what} refused: {plausibility.MESSAGES[refused]}",
    )


def _store_events(
    s: Session,
    p: Participant,
    settings: Settings,
    trial: int,
    st: SlotTrial,
    events: list[dict[str, Any]],
    receipt: EventReceipt,
) -> list[dict[str, Any]]:
    """Store new events (the participant row is locked); fills ``receipt``; returns the trial's events."""
    stored = _events_of(s, p, trial)
    first = st.first_clip
    pos_of: dict[int | None, str] = {first: "A", 1 - first: "B"}
    if not events:
        return stored
    eids = list(dict.fromkeys(e["eid"] for e in events))
    known = {row.eid: row for row in s.scalars(select(Event).where(Event.participant == p.id, Event.eid.in_(eids)))}
    seen: dict[str, tuple[Any, ...]] = {
        eid: _payload(r.trial, r.kind, r.response, r.field, r.value, r.client_ms) for eid, r in known.items()
    }
    room = MAX_EVENTS_PER_TRIAL - len(stored)
    next_seq = max((e["seq"] for e in stored), default=-1) + 1
    clips = {r: s.get(Clip, f"{st.prompt_id}_{r}") for r in (0, 1)}
    fetched = _fetch_times(s, p, st)
    ts = now()
    # the submission first, so that a full trial still records it
    for e in [e for e in events if e["kind"] == "submit"] + [e for e in events if e["kind"] != "submit"]:
        response = None if e["pos"] is None else (first if e["pos"] == "A" else 1 - first)
        payload = _payload(trial, e["kind"], response, e["field"], e["x"], e["t"])
        if e["eid"] in seen:
            if seen[e["eid"]] == payload:
                receipt.duplicates += 1
            else:
                receipt.conflicts.append(e["eid"])
                _incident(
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
        stored.append(_add_event(s, p, trial, next_seq, e, response, ts, refused))
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
    db: Database, settings: Settings, token: str, csrf: str | None, trial: int, events: list[dict[str, Any]]
) -> dict[str, Any]:
    """Store a batch of the current trial's events; the answer says what became of each (EventReceipt)."""
    receipt = EventReceipt()
    with db.transaction() as s:
        p = _participant(s, token, lock=True)
        _check_csrf(p, csrf)
        if p.state in ("consent", "demographics", "headphones"):
            raise Conflict("No trial is open.")
        if p.state != "trials" or trial < p.current_trial:
            receipt.ignored = len(events)  # late events of a submitted trial
            return receipt.as_json()
        if trial > p.current_trial:
            raise Conflict("That trial is not open yet.")
        st = _slot_trial(s, p, trial)
        stored = _store_events(s, p, settings, trial, st, events, receipt)
        state = _unlocked(st, stored)
        receipt.heard, receipt.revealed = state["heard"], state["revealed"]
    return receipt.as_json()


@dataclass
class TrialForm:
    rating_a: float  # values of the study's rating scale (ints on an integer scale)
    rating_b: float
    audio_quality_a: float | None
    audio_quality_b: float | None
    choice: str  # A | B | tie (by position)
    justification: str | None
    submit_ms: int | None
    events: list[dict[str, Any]]


def _scale_range(scale: RatingScale) -> str:
    """``1..100``; ``0..10 in steps of 0.5`` for a scale with another step."""
    step = "" if scale.step == 1 else f" in steps of {scale.step:g}"
    return f"{scale.min:g}..{scale.max:g}{step}"


def _slider(
    form: Mapping[str, str], name: str, errors: list[str], required: bool = True, scale: RatingScale = PAPER_SCALE
) -> float | None:
    """A submitted slider value on the study's scale (an int on an integer scale), or None with an error."""
    raw = str(form.get(name, "") or "").strip()
    if raw == "":
        if required:
            errors.append(f"{name}: please move the slider")
        return None
    number = r"-?\d{1,7}" if scale.is_integer else r"-?\d{1,7}(\.\d{1,6})?"
    if not re.fullmatch(number, raw) or not scale.on_scale(float(raw)):
        errors.append(f"{name}: must be {_scale_range(scale)}")
        return None
    return int(raw) if scale.is_integer else _slider_number(float(raw))


def parse_trial_form(form: Mapping[str, str], audio: bool, scale: RatingScale = PAPER_SCALE) -> TrialForm:
    errors: list[str] = []
    ra, rb = _slider(form, "rating_A", errors, scale=scale), _slider(form, "rating_B", errors, scale=scale)
    aqa = _slider(form, "audio_quality_A", errors, audio, scale)
    aqb = _slider(form, "audio_quality_B", errors, audio, scale)
    choice = str(form.get("preference", "")).strip()
    if choice not in ("A", "B", "tie"):
        errors.append("preference: choose Response A, Response B or tie")
    just = str(form.get("justification", "") or "")
    if len(just) > MAX_JUSTIFICATION:
        raise TooLarge(f"The explanation is limited to {MAX_JUSTIFICATION} characters.")
    justification = just.replace("\r\n", "\n").strip() or None
    submit_raw = str(form.get("submit_t", "") or "").strip()
    submit_ms = int(submit_raw) if re.fullmatch(r"\d{1,16}", submit_raw) else None
    raw_events = str(form.get("events", "") or "").strip()
    try:
        events = parse_events(json.loads(raw_events), scale) if raw_events else []
    except json.JSONDecodeError:
        raise Invalid("events: not JSON") from None
    if errors:
        raise Invalid("; ".join(errors))
    assert ra is not None and rb is not None  # required sliders: a missing one is in errors
    return TrialForm(ra, rb, aqa if audio else None, aqb if audio else None, choice, justification, submit_ms, events)


def _trial_refusal(p: Participant, settings: Settings, st: SlotTrial, events: list[dict[str, Any]]) -> str | None:
    """Why the trial cannot be stored yet (clips not heard, Response B not revealed), or None."""
    if p.condition == "audio":
        order = [st.first_clip, 1 - st.first_clip]
        done = plausibility.heard_clips(events)
        missing = [pos for pos, r in zip("AB", order) if r not in done]
        if missing:
            reasons = {plausibility.MESSAGES[e["refused"]] for e in events if e["kind"] == "ended" and e["refused"]}
            why = f" (the server could not confirm the listen: {'; '.join(sorted(reasons))})" if reasons else ""
            has: dict[tuple[str, ...], str] = {("A",): "Response A has", ("B",): "Response B has"}
            what = has.get(tuple(missing), "Responses A and B have")
            return f"Please listen to both responses in full before submitting: {what} not been heard to the end{why}."
    elif settings.text_reveal != "off" and not plausibility.revealed(events):
        return "Please read Response A, then show Response B, before submitting."
    return None


def submit_trial(
    db: Database, settings: Settings, token: str, csrf: str | None, trial: int, form: Mapping[str, str]
) -> str:
    """Store a trial; returns ``stored``, ``duplicate`` (already stored: nothing changed) or ``failed_attention``.

    A trial whose clips the server has not accepted as heard (or whose Response B was not revealed)
    is refused: its events are kept, the refusal is logged as an incident and Invalid (422) is raised.
    """
    refusal = None
    try:
        with db.transaction() as s:
            p = _participant(s, token, lock=True)
            _check_csrf(p, csrf)
            if trial < p.current_trial or p.state not in ("trials",):
                if (
                    s.scalars(
                        select(TrialResult.id).where(TrialResult.participant == p.id, TrialResult.trial == trial)
                    ).first()
                    is not None
                ):
                    return "duplicate"
                raise Conflict("This trial is not open.")
            if trial > p.current_trial:
                raise Conflict("That trial is not open yet.")
            audio = p.condition == "audio"
            data = parse_trial_form(form, audio, settings.scale)
            st = _slot_trial(s, p, trial)
            first = st.first_clip
            events = _store_events(s, p, settings, trial, st, data.events, EventReceipt())
            refusal = _trial_refusal(p, settings, st, events)
            if refusal is not None:
                _incident(s, p, trial, "trial_refused", refusal)
            else:
                return _store_trial(s, p, trial, st, first, data, events)
    except IntegrityError:
        return "duplicate"
    raise Invalid(refusal)


def _store_trial(
    s: Session, p: Participant, trial: int, st: SlotTrial, first: int, data: TrialForm, events: list[dict[str, Any]]
) -> str:
    measures = derive_measures(plausibility.accepted(events), p.condition or "text", first, data.submit_ms)
    by_pos = {"A": first, "B": 1 - first}
    ratings = {by_pos["A"]: data.rating_a, by_pos["B"]: data.rating_b}
    aq = {by_pos["A"]: data.audio_quality_a, by_pos["B"]: data.audio_quality_b}
    preference = "tie" if data.choice == "tie" else str(by_pos[data.choice])
    s.add(
        TrialResult(
            participant=p.id,
            trial=trial,
            prompt_id=st.prompt_id,
            first_clip=first,
            preference=preference,
            justification=data.justification,
            rating_0=ratings[0],
            rating_1=ratings[1],
            audio_quality_0=aq[0],
            audio_quality_1=aq[1],
            submitted_at=now(),
            **measures,
        )
    )
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
    res = s.execute(
        update(Participant)
        .where(Participant.id == p.id, Participant.current_trial == trial, Participant.state == "trials")
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    if _rowcount(res) != 1:
        raise IntegrityError("concurrent submission", None, Exception("duplicate"))
    if outcome == "failed_attention":
        _release(s, p.slot_id, p.id)
    elif values.get("state") == "difficulty":
        s.execute(
            update(Slot)
            .where(Slot.slot_id == p.slot_id, Slot.holder == p.id)
            .values(status="done")
            .execution_options(synchronize_session=False)
        )
    return outcome


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
    """The path of a clip of the participant's *current* trial (any other clip is refused); records
    the session's first fetch of the clip (the listening check needs it)."""
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
        if s.get(Fetch, (p.id, clip_id)) is None:  # concurrent range requests: the first one wins
            s.execute(
                _insert(db, Fetch)
                .values(participant=p.id, clip_id=clip_id, first_ts=now())
                .on_conflict_do_nothing(index_elements=["participant", "clip_id"])
            )
        return clip.path


def _insert(db: Database, model: Any) -> Any:
    """The dialect's INSERT (it has ``on_conflict_do_nothing``)."""
    if db.dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(model)
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(model)


# ---- admin ------------------------------------------------------------------------------------------


def status_counts(db: Database, settings: Settings | None = None) -> dict[str, Any]:
    with db.transaction() as s:
        if settings is not None:
            sweep_abandoned(s, settings)
        states = dict(s.execute(select(Participant.state, func.count()).group_by(Participant.state)).tuples().all())
        slots = dict(s.execute(select(Slot.status, func.count()).group_by(Slot.status)).tuples().all())
        n_trials = s.scalar(select(func.count()).select_from(TrialResult))
        incidents = dict(s.execute(select(Incident.kind, func.count()).group_by(Incident.kind)).tuples().all())
        phones = dict(
            s.execute(
                select(Participant.headphone_check, func.count())
                .where(Participant.headphone_check.is_not(None))
                .group_by(Participant.headphone_check)
            )
            .tuples()
            .all()
        )
    return {
        "participants": states,
        "slots": slots,
        "trials_submitted": int(n_trials or 0),
        "incidents": incidents,
        "headphone_check": phones,
    }
