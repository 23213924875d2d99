"""A participant's session outside the trials: entry (``/start``, invitations), the current page,
consent, the demographic questionnaire and its screening, the headphone screening and the closing
question (:mod:`.service` describes the protocol)."""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from modprefs.app import headphones, service
from modprefs.app.db import Database
from modprefs.app.models import Clip, Incident, Participant
from modprefs.app.service import (
    AppError,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    Settings,
    check_csrf,
    claim_slot,
    claim_tab,
    find_participant,
    log_incident,
    new_token,
    next_step,
    release_slot,
    sweep_abandoned,
)
from modprefs.app.trials import tab_state, trial_view
from modprefs.study.terms import ATTENTION_CLIPS, EDUCATION_LEVELS, EMPLOYMENT, ENGLISH_PROFICIENCY, GENDERS, RACES

NO_ENGLISH = "None"
ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# the questionnaire's fields in the form's order (the first one with an error gets the focus)
DEMOGRAPHIC_FIELDS = [
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
MAX_TEXT = 100
MAX_OTHER_LANGUAGES = 300


# ---- entry -------------------------------------------------------------------------------------------


class AlreadyTakenPart(Forbidden):
    """A Prolific id coming back with another session: shown its own end page ("already taken part")."""


class IntakeStopped(AppError):
    """The lab paused or closed the intake (the dashboard): no new session starts; shown its own page."""

    status = 503

    def __init__(self, intake: str):
        closed = intake == "closed"
        super().__init__(
            "This study is closed: it takes no new participants." if closed else "This study is paused.",
            intake=intake,
        )
        self.status = 403 if closed else 503


# the states of a Prolific id that may come back with another SESSION_ID: nothing was collected from them
# (only the consent page opened, the questionnaire not sent, or the study was full); one who declined consent
# has answered, and stays "already taken part"
RETURNABLE = ("consent", "demographics", "full")


def _come_back(p: Participant, sess: str | None) -> None:
    """A Prolific id from whom nothing was collected returns with another session: resume it under that session;
    one who found the study full starts again at the consent page."""
    if p.state == "full":
        p.state, p.finished_at, p.screen_reason = "consent", None, None
    p.session_id = sess


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
                            if existing.state not in RETURNABLE:
                                raise AlreadyTakenPart("You have already taken part in this study.")
                            _come_back(existing, sess)
                        existing.last_seen = service.now()
                        return existing.token
                if (state := service.intake(s)) != "open":
                    raise IntakeStopped(state)
                t = service.now()
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
        t = service.now()
        for _ in range(n):
            p = Participant(
                token=new_token(), csrf=new_token(), entry="invite", state="consent", created_at=t, last_seen=t
            )
            s.add(p)
            tokens.append(p.token)
    return tokens


# ---- the current page --------------------------------------------------------------------------------


def page_state(db: Database, settings: Settings, token: str) -> dict[str, Any]:
    """What to show now: {"page": ..., plus the page's data}."""
    with db.transaction() as s:
        sweep_abandoned(s, settings)
        p = find_participant(s, token)
        base = {
            "token": p.token,
            "csrf": p.csrf,
            "state": p.state,
            "entry": p.entry,
            "condition": p.condition,
            "study_title": settings.study_title,
        }
        if p.state == "trials":
            return {**base, **trial_view(s, p, settings)}
        if p.state == "headphones":
            return {**base, "page": "headphones", "n_questions": headphones.N_TRIALS, "pass_min": headphones.PASS_MIN}
        if p.state == "calibration":
            return {**base, "page": "calibration", "headphone_check": settings.headphone_check != "off"}
        if p.state == "instructions":
            return {**base, "page": "instructions", "n_trials": p.n_trials}
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
        code = code_shown(p, settings)
        return {
            **base,
            "page": "ended",
            "reason": p.state,
            "screen_reason": p.screen_reason,
            "code": code,
            "return_url": _return_url(settings, p, code) if code else None,
        }


def code_shown(p: Participant, settings: Settings) -> str:
    """The Prolific code the participant's end page shows ('' for none, or while the session goes on)."""
    return {
        "done": settings.completion_code,
        "failed_attention": settings.attention_fail_code or settings.screenout_code,
        "screened_out": settings.screenout_code,
        "full": settings.screenout_code,
        "declined": settings.no_consent_code,
        "abandoned": settings.expired_code,
    }.get(p.state, "")


def _return_url(settings: Settings, p: Participant, code: str) -> str | None:
    if p.entry != "prolific" or not settings.prolific_complete_url or not code:
        return None
    return settings.prolific_complete_url.replace("{code}", code)


# ---- consent and demographics ------------------------------------------------------------------------


def give_consent(db: Database, token: str, csrf: str | None, agree: bool) -> None:
    with db.transaction() as s:
        p = find_participant(s, token)
        check_csrf(p, csrf)
        if p.state != "consent":
            return  # already answered (a re-sent form)
        if agree:
            p.state, p.consent_at = "demographics", service.now()
        else:
            p.state, p.finished_at, p.screen_reason = "declined", service.now(), "no_consent"


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
    form: Mapping[str, str], name: str, options: Sequence[str], errors: dict[str, str], required: bool = False
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
        if prof not in (*ENGLISH_PROFICIENCY, NO_ENGLISH):
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
        p = find_participant(s, token)
        check_csrf(p, csrf)
        if p.state != "demographics":
            return {}
        if errors:
            return errors
        for k, v in values.items():
            setattr(p, k, v)
        if values["age"] < 18:
            p.state, p.screen_reason, p.finished_at = "screened_out", "under_18", service.now()
            return {}
        if values["english_proficiency"] == NO_ENGLISH:
            p.state, p.screen_reason, p.finished_at = "screened_out", "no_english", service.now()
            return {}
        intake = service.intake(s)
        if intake == "paused":
            raise IntakeStopped(intake)  # nothing stored: the questionnaire can be sent again once intake resumes
        sweep_abandoned(s, settings)
        if intake == "closed":
            p.state, p.screen_reason, p.finished_at = "full", "closed", service.now()
        elif not claim_slot(s, p, settings):
            p.state, p.screen_reason, p.finished_at = "full", "no_open_slot", service.now()
    return {}


# ---- calibration and instructions --------------------------------------------------------------------


def calibration_sound(db: Database, token: str) -> tuple[str | None, bytes | None]:
    """The level-setting step's sound: the attention check's first clip (speech at the study's level) as a
    path, or (a study without it) the headphone check's calibration tone as bytes."""
    with db.transaction() as s:
        p = find_participant(s, token)
        if p.state != "calibration":
            raise Forbidden("No calibration on this page.")
        clip = s.get(Clip, ATTENTION_CLIPS[0])  # the coherent response
        if clip is not None and clip.path:
            return clip.path, None
    return None, headphones.calibration_wav()


def submit_calibration(db: Database, settings: Settings, token: str, csrf: str | None, confirmed: bool) -> None:
    """The participant set a comfortable volume and confirmed it: ``calibrated_at``, then the next step."""
    if not confirmed:
        raise Invalid("Please play the sample, set a comfortable volume and confirm it.")
    with db.transaction() as s:
        p = find_participant(s, token, lock=True)
        check_csrf(p, csrf)
        if p.state != "calibration":
            return  # a re-sent form
        p.calibrated_at = service.now()
        p.state = next_step(p, settings, "calibration")


def finish_instructions(db: Database, settings: Settings, token: str, csrf: str | None) -> None:
    """The participant read the instructions: on to the practice trial."""
    with db.transaction() as s:
        p = find_participant(s, token, lock=True)
        check_csrf(p, csrf)
        if p.state == "instructions":
            p.state = next_step(p, settings, "instructions")


# ---- headphone screening -----------------------------------------------------------------------------


def _headphone_orders(settings: Settings, p: Participant) -> list[tuple[str, str, str]]:
    return headphones.trial_orders(settings.headphone_seed, p.id)


def headphone_wav(db: Database, settings: Settings, token: str, which: str) -> bytes:
    """The screening's sound ``which`` (``calibration`` or a question number 0..N-1) for this participant."""
    with db.transaction() as s:
        p = find_participant(s, token)
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
        p = find_participant(s, token, lock=True)
        check_csrf(p, csrf)
        if p.state != "headphones":
            if p.headphone_check is not None:
                return p.headphone_check  # a re-sent form
            raise Conflict("No headphone check on this page.")
        correct, passed = headphones.score(_headphone_orders(settings, p), [int(a) for a in answers])
        p.headphone_check, p.headphone_correct = ("passed" if passed else "failed"), correct
        if not passed and settings.headphone_check == "require":
            p.state, p.screen_reason, p.finished_at = "screened_out", "headphone_check", service.now()
            release_slot(s, p.slot_id, p.id)
        else:
            p.state = next_step(p, settings, "headphones")
        return p.headphone_check


# ---- the end -----------------------------------------------------------------------------------------


def submit_difficulty(db: Database, token: str, csrf: str | None, value: str | None) -> None:
    raw = str(value or "").strip()
    if raw not in {"1", "2", "3", "4", "5"}:
        raise Invalid("Please choose how difficult the task was (1-5).")
    with db.transaction() as s:
        p = find_participant(s, token)
        check_csrf(p, csrf)
        if p.state != "difficulty":
            if p.state == "done":
                return
            raise Conflict("Not at the end of the study yet.")
        p.difficulty, p.state, p.finished_at = int(raw), "done", service.now()


def leave(db: Database, settings: Settings, token: str, csrf: str | None, tab: str | None = None) -> bool:
    """The participant left the page (the ``pagehide`` beacon): a slot holder's slot is released once the leave
    grace (``settings.leave_grace_s``) passes with no request from them (a reload, the next page or another open
    tab's heartbeat comes back within it and keeps the slot); the abandon timeout still applies to everyone else.
    A tab that is not the live one leaving changes nothing (the live tab is still open). True if marked."""
    with db.transaction() as s:
        p = find_participant(s, token, touch=False, lock=True)
        check_csrf(p, csrf)
        if p.state not in service.HOLDING or (tab is not None and p.live_tab is not None and tab != p.live_tab):
            return False
        t = service.now()
        p.last_seen = min(p.last_seen, t - settings.abandon_minutes * 60.0 + settings.leave_grace_s)
        p.left_at = t
        return True


def page_name(p: Participant) -> str:
    """The page the session is at (the ``page`` of :func:`page_state`)."""
    if p.state == "trials":
        return "trial"
    if p.state in ("consent", "demographics", "headphones", "calibration", "instructions", "difficulty", "done"):
        return p.state
    return "ended"


def ping(
    db: Database, settings: Settings, token: str, csrf: str | None, tab: str | None, claim: bool
) -> dict[str, Any]:
    """An open page's heartbeat (every ``settings.heartbeat_s``, visible or hidden: an open page never expires)
    and, on load (``claim``), its claim of the session: one live tab per session, the last page opened wins.

    Answers ``live`` (this tab holds the session), where the session is (``state``, ``page``, ``trial``) so a page
    that is behind can reload, and on a trial page that claims, the trial as this tab left it (:func:`tab_state`).
    A heartbeat of a tab that is not live still counts as the participant's presence."""
    with db.transaction() as s:
        p = find_participant(s, token, lock=True)
        check_csrf(p, csrf)
        took_over = None
        if claim and tab is not None and p.state in ("consent", "demographics", *service.HOLDING, "difficulty"):
            took_over = claim_tab(s, p, tab)
        out: dict[str, Any] = {
            "live": tab is None or p.live_tab in (None, tab),
            "state": p.state,
            "page": page_name(p),
            "trial": p.current_trial if p.state == "trials" else None,
            "heartbeat_s": settings.heartbeat_s,
            "took_over": took_over is not None,
        }
        if claim and tab is not None and p.state == "trials":
            out["tab_state"] = tab_state(s, p, settings, tab)
        return out


def report_problem(
    db: Database, token: str, csrf: str | None, tab: str | None, trial: Any, what: str, detail: str
) -> None:
    """The page could not go on (``what``: ``media``, a clip that failed to load after its retries): an incident
    ``media_failed`` with the page's description; the participant is shown the problem page (:func:`problem_view`)."""
    if what != "media":
        raise Invalid("what must be media")
    with db.transaction() as s:
        p = find_participant(s, token, lock=True)
        check_csrf(p, csrf)
        n = trial if isinstance(trial, int) and not isinstance(trial, bool) else None
        log_incident(s, p, n, "media_failed", f"tab {tab}: {str(detail)[:500]}")


def problem_view(db: Database, settings: Settings, token: str) -> dict[str, Any]:
    """The problem page: the latest ``media_failed`` incident of the session, the lab's error code."""
    with db.transaction() as s:
        p = find_participant(s, token)
        inc = s.scalars(
            select(Incident)
            .where(Incident.participant == p.id, Incident.kind == "media_failed")
            .order_by(Incident.id.desc())
            .limit(1)
        ).first()
        if inc is None:
            raise NotFound("No problem was reported for this session.")
        return {
            "token": p.token,
            "csrf": p.csrf,
            "state": p.state,
            "entry": p.entry,
            "page": "problem",
            "detail": inc.detail.split(": ", 1)[-1],
            "code": settings.error_code,
            "return_url": _return_url(settings, p, settings.error_code) if settings.error_code else None,
        }
