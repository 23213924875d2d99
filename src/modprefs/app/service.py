"""The participant protocol as a state machine over the database (no HTTP here): the shared ground.

States of a participant (``app_participants.state``), in the paper's order (§3.2):

    consent -> demographics -> [calibration] -> [headphones] -> [instructions -> trial -1 (practice)]
            -> trials (trial 0 = attention check, then 1..n) -> difficulty -> done

(``calibration``: the audio condition's level-setting step; ``headphones``: the audio condition's headphone
screening, :mod:`.headphones`; ``instructions`` and the practice trial -1: ``practice = on``; see :func:`setup_steps`)
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

One live tab per session: a page that loads claims the session for its browser tab (:func:`claim_tab`; the
last page opened wins, a takeover is an incident); a request from another tab is refused (:func:`check_tab`,
:class:`Superseded`) and a trial's state and measures are those of the tab that sends its events. An open page
sends a heartbeat (``Settings.heartbeat_s``), so only a session with no page open is ever abandoned
(:func:`sweep_abandoned`, an incident ``session_expired``).

The layer, module by module (each imports only those above it):

* this module: the settings, the errors, the clock (:func:`now`, read as ``service.now()`` everywhere,
  so one clock rules the whole layer), a participant and their trial, the slots, the status counts;
* :mod:`.events`: the event log (a batch's validation, storage, plausibility, receipt);
* :mod:`.trials`: the trial page, the trial submission and the trial's audio;
* :mod:`.sessions`: entry and invitations, the current page, consent, demographics, the headphone
  screening and the closing question.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import CursorResult, Result, func, select, update
from sqlalchemy.orm import Session

from modprefs.app.db import Database
from modprefs.app.models import Incident, Meta, Participant, Prompt, Slot, SlotTrial, TrialResult
from modprefs.errors import UserInputError
from modprefs.scale import PAPER_SCALE, RatingScale, scale_from_config
from modprefs.study.terms import ATTENTION_PROMPT

log = logging.getLogger("modprefs.app")
HOLDING = ("trials", "headphones", "calibration", "instructions")  # the states of a slot holder
# a participant whose page sent the "leave" beacon (pagehide) and who makes no request for this long
# is abandoned and their slot reopened (a reload or the next page is back well within it); serve --leave-grace
LEAVE_GRACE_S = 60.0
# an open page sends a heartbeat this often at most (less with a short grace or abandon timeout: heartbeat_s)
HEARTBEAT_MAX_S = 30.0
TAB_RE = re.compile(r"^[A-Za-z0-9_-]{8,32}$")  # the id a page gives its browser tab (app.js)
INTAKE = ("open", "paused", "closed")  # app_meta "intake": whether new participants may start (the dashboard)
INTAKE_KEY = "intake"
TEXT_REVEAL = ("next", "auto", "off")
HEADPHONE_CHECK = ("off", "record", "require")
ON_OFF = ("on", "off")
PRACTICE_TRIAL = -1  # the practice trial's number (before the attention check, trial 0)
ENTRY = ("any", "prolific", "invite")
SCALE_KEY = "rating_scale"  # app_meta: the study's rating scale as JSON (study.scale); absent = the paper's 1..100
POINT_LABELS_KEY = "point_labels"  # app_meta: a short scale's labels, one per point, as a JSON list (app load)
POINTS_MAX = 11  # a scale of at most this many points is shown as labelled, numbered category points
# ITU-T P.808's Absolute Category Rating labels of the 1..5 scale (its listening-quality MOS)
ACR_LABELS = ["Bad", "Poor", "Fair", "Good", "Excellent"]


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


class Superseded(Conflict):
    """A request from a browser tab that another tab of the same session took over (one live tab per session)."""


class Expired(Conflict):
    """A request of a session that was marked abandoned (its slot reissued)."""


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
    no_consent_code: str = ""  # Prolific's code for those who decline consent (they return the submission)
    expired_code: str = ""  # Prolific's "timed out" code: shown when a session expired (abandoned)
    error_code: str = ""  # shown when the study cannot go on for a technical reason (media that fail to load)
    leave_grace_s: float = LEAVE_GRACE_S  # seconds a page that left (pagehide beacon) has to come back
    headphone_check: str = "record"  # off | record (recorded, exclusion at analysis) | require (fail ends the session)
    calibration: str = "on"  # audio condition: the level-setting step before the first trial (on | off)
    practice: str = "on"  # the instructions page and a practice trial (-1) before the first task (on | off)
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
        for name, allowed in (
            ("entry", ENTRY),
            ("text_reveal", TEXT_REVEAL),
            ("headphone_check", HEADPHONE_CHECK),
            ("calibration", ON_OFF),
            ("practice", ON_OFF),
        ):
            if getattr(out, name) not in allowed:
                raise SettingsError(f"study setting {name}: {getattr(out, name)!r} is not one of {', '.join(allowed)}")
        if out.abandon_minutes <= 0:
            raise SettingsError(f"study setting abandon_minutes: {out.abandon_minutes} must be > 0")
        out.points  # noqa: B018 (a bad point_labels entry is refused here, before anything is served)
        return out

    @property
    def points(self) -> list[dict[str, str]] | None:
        """The rating scale's category points (:func:`scale_points`), None for a slider scale."""
        return scale_points(self.scale, point_labels(self.extra))

    @property
    def heartbeat_s(self) -> float:
        """How often an open page tells the server it is still open: at most every :data:`HEARTBEAT_MAX_S`,
        and at least three times within the leave grace and four within the abandon timeout (>= 1 s)."""
        return max(1.0, min(HEARTBEAT_MAX_S, self.leave_grace_s / 3.0, self.abandon_minutes * 60.0 / 4.0))


def scale_from_meta(raw: str | None) -> RatingScale:
    """The rating scale stored in app_meta (JSON ``{min, max, step, labels}``); the paper's when absent."""
    if not raw:
        return PAPER_SCALE
    try:
        return scale_from_config(json.loads(raw))
    except (json.JSONDecodeError, TypeError, ValueError, AttributeError) as exc:
        raise SettingsError(f"study setting {SCALE_KEY}: {raw!r} is not a rating scale ({exc})") from None


def scale_points(scale: RatingScale, labels: list[str] | None = None) -> list[dict[str, str]] | None:
    """A short scale's category points (value, label), or None for a longer one (the paper's unmarked slider).

    ``labels``: one per point (app load --point-labels); else P.808's ACR labels on 1..5, else the scale's end
    labels at the two ends and the number alone in between."""
    n = scale.n_points
    if n > POINTS_MAX:
        return None
    values = [scale.min + i * scale.step for i in range(n)]
    if labels is None:
        if (scale.min, scale.max, scale.step) == (1.0, 5.0, 1.0):
            labels = ACR_LABELS
        else:
            labels = [scale.label_min] + [""] * (n - 2) + [scale.label_max]
    if len(labels) != n:
        raise SettingsError(f"study setting {POINT_LABELS_KEY}: {len(labels)} labels for a scale of {n} points")
    return [{"value": f"{v:g}", "label": str(label)} for v, label in zip(values, labels)]


def point_labels(extra: Mapping[str, str]) -> list[str] | None:
    """The stored point labels (app_meta ``point_labels``), None when the study has none."""
    raw = extra.get(POINT_LABELS_KEY)
    if not raw:
        return None
    try:
        labels = json.loads(raw)
    except json.JSONDecodeError:
        labels = None
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise SettingsError(f"study setting {POINT_LABELS_KEY}: {raw!r} is not a JSON list of labels")
    return labels


def now() -> float:
    return time.time()


def new_token() -> str:
    return secrets.token_urlsafe(24)


def read_settings(db: Database, **overrides: Any) -> Settings:
    with db.transaction() as s:
        meta = {m.key: m.value for m in s.scalars(select(Meta))}
    return Settings.from_meta(meta, **overrides)


# ---- a participant and their trial -------------------------------------------------------------------


def find_participant(s: Session, token: str, touch: bool = True, lock: bool = False) -> Participant:
    """The participant of ``token``; ``lock`` takes the row lock (PostgreSQL; SQLite's BEGIN IMMEDIATE
    already serialises writers), so one participant's writes never interleave."""
    if not token or len(token) > 64:
        raise NotFound("Unknown link.")
    q = select(Participant).where(Participant.token == token)
    p = s.scalars(q.with_for_update() if lock else q).first()
    if p is None:
        raise NotFound("Unknown link. Please use the link you were given.")
    if touch and p.state in ("consent", "demographics", *HOLDING, "difficulty"):
        p.last_seen = now()
        p.left_at = None
    return p


def check_csrf(p: Participant, supplied: str | None) -> None:
    if not supplied or not hmac.compare_digest(str(supplied).encode(), p.csrf.encode()):
        raise Forbidden("The form expired or did not come from this site (CSRF check failed). Please reload.")


def clean_tab(tab: Any) -> str | None:
    """The browser tab id of a request (None: a request without one, e.g. a script or a browser without JS)."""
    if tab is None or tab == "":
        return None
    if not isinstance(tab, str) or not TAB_RE.match(tab):
        raise Invalid("tab must be 8-32 characters of A-Z a-z 0-9 _ -")
    return tab


def check_tab(p: Participant, tab: str | None) -> None:
    """Refuse a request from a tab that is not the session's live tab (Superseded, 409). A request without a tab
    id is not checked (no page script: nothing of it is attributed to a tab)."""
    if tab is not None and p.live_tab is not None and tab != p.live_tab:
        raise Superseded(
            "This study is open in another tab or window, which took it over: only one can be used at a time. "
            "What you did on this page was not saved. Continue in the other tab, or use this one again."
        )


def claim_tab(s: Session, p: Participant, tab: str) -> str | None:
    """Make ``tab`` the session's live tab (a page that loads claims it: the last one opened wins); returns the
    tab it took over from (logged as an incident ``tab_takeover``), None if it held it already or none did."""
    previous = p.live_tab
    if previous == tab:
        return None
    p.live_tab = tab
    if previous is not None:
        trial = p.current_trial if p.state == "trials" else None
        log_incident(s, p, trial, "tab_takeover", f"tab {tab} took the session over from tab {previous} ({p.state})")
    return previous


def intake(s: Session) -> str:
    """Whether new participants may start: ``open``, ``paused`` or ``closed`` (app_meta ``intake``)."""
    value = s.scalar(select(Meta.value).where(Meta.key == INTAKE_KEY))
    return value if value in INTAKE else "open"


def set_intake(db: Database, value: str) -> None:
    if value not in INTAKE:
        raise Invalid(f"intake must be one of {', '.join(INTAKE)}")
    with db.transaction() as s:
        s.merge(Meta(key=INTAKE_KEY, value=value))


def log_incident(s: Session, p: Participant, trial: int | None, kind: str, detail: str) -> None:
    """Log what the server refused or could not reconcile (app_incidents and the server log)."""
    s.add(Incident(participant=p.id, trial=trial, kind=kind, detail=detail[:2000], server_ts=now()))
    log.warning("participant %s (session %s) trial %s: %s: %s", p.participant_id, p.id, trial, kind, detail)


def slot_trial(s: Session, p: Participant, trial: int) -> SlotTrial:
    """The assigned trial ``trial`` of ``p``'s slot; the practice trial (-1): :func:`practice_trial`."""
    if trial == PRACTICE_TRIAL:
        return practice_trial(s, p)
    st = s.get(SlotTrial, (p.slot_id, trial))
    if st is None:
        raise NotFound("No such trial in your assignment.")
    return st


def practice_trial(s: Session, p: Participant) -> SlotTrial:
    """The practice trial (not stored in app_slot_trials): a loaded prompt this slot is not assigned (the
    first by id), else the slot's first rated item (trial 1) re-used; presented in trial 1's order."""
    assigned = s.scalars(select(SlotTrial).where(SlotTrial.slot_id == p.slot_id).order_by(SlotTrial.trial)).all()
    if not assigned:
        raise NotFound("No such trial in your assignment.")
    first = next((t for t in assigned if t.trial >= 1), assigned[0])
    used = {t.prompt_id for t in assigned} | {ATTENTION_PROMPT}
    other = s.scalars(select(Prompt.prompt_id).where(Prompt.prompt_id.not_in(used)).order_by(Prompt.prompt_id)).first()
    return SlotTrial(
        slot_id=p.slot_id, trial=PRACTICE_TRIAL, prompt_id=other or first.prompt_id, first_clip=first.first_clip
    )


def setup_steps(p: Participant, settings: Settings) -> list[str]:
    """The steps between taking a slot and the first trial, in order: ``calibration`` and ``headphones``
    (audio condition, when on), ``instructions`` (before the practice trial, when on)."""
    steps = []
    if p.condition == "audio" and settings.calibration == "on":
        steps.append("calibration")
    if p.condition == "audio" and settings.headphone_check != "off":
        steps.append("headphones")
    if settings.practice == "on":
        steps.append("instructions")
    return steps


def next_step(p: Participant, settings: Settings, done: str | None = None) -> str:
    """The state after ``done`` (None: after taking the slot): the next setup step, else ``trials``."""
    steps = setup_steps(p, settings)
    rest = steps[steps.index(done) + 1 :] if done in steps else ([] if done is not None else steps)
    return rest[0] if rest else "trials"


def rowcount(res: Result[Any]) -> int:
    """Rows an UPDATE matched: ``Session.execute`` is typed as returning a ``Result``; for an UPDATE it is a
    ``CursorResult``."""
    return cast(CursorResult[Any], res).rowcount


# ---- slots -------------------------------------------------------------------------------------------


def claim_slot(s: Session, p: Participant, settings: Settings | None = None) -> bool:
    """Give ``p`` the open slot with the lowest position; False when none is open. ``p`` goes on to the first
    setup step (:func:`setup_steps`) or the trials, at the practice trial when ``settings.practice`` is on."""
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
        if rowcount(res) != 1:
            s.expire(slot)
            continue  # taken by a concurrent arrival: try the next one
        s.refresh(slot)
        n = s.scalar(select(func.max(SlotTrial.trial)).where(SlotTrial.slot_id == slot.slot_id))
        p.slot_id, p.condition = slot.slot_id, slot.condition
        p.participant_id = slot.slot_id if slot.issues == 1 else f"{slot.slot_id}_r{slot.issues}"
        settings = settings or Settings()
        p.state, p.n_trials = next_step(p, settings), int(n or 0)
        p.current_trial = PRACTICE_TRIAL if settings.practice == "on" else 0
        return True
    raise Conflict("Too many concurrent arrivals; please reload.")


def sweep_abandoned(s: Session, settings: Settings) -> int:
    """Mark slot holders silent for ``abandon_minutes`` (or gone: their page left and did not come back within
    the leave grace) abandoned, reopen their slots, and log each as an incident ``session_expired``."""
    t = now()
    cutoff = t - settings.abandon_minutes * 60.0
    stale = s.execute(
        select(
            Participant.id,
            Participant.slot_id,
            Participant.last_seen,
            Participant.left_at,
            Participant.state,
            Participant.current_trial,
        ).where(Participant.state.in_(HOLDING), Participant.last_seen < cutoff)
    ).all()
    n = 0
    for pid, slot_id, last_seen, left_at, state, current in stale:
        trial = current if state == "trials" else None
        reason = "left" if left_at is not None else "timeout"
        res = s.execute(
            update(Participant)
            .where(Participant.id == pid, Participant.state.in_(HOLDING), Participant.last_seen < cutoff)
            .values(state="abandoned", finished_at=left_at if left_at is not None else last_seen, screen_reason=reason)
            .execution_options(synchronize_session=False)
        )
        if rowcount(res) == 1:
            release_slot(s, slot_id, pid)
            detail = (
                f"the page left (pagehide) and did not come back within {settings.leave_grace_s:g} s"
                if left_at is not None
                else f"no request for {settings.abandon_minutes:g} minutes"
            )
            s.add(Incident(participant=pid, trial=trial, kind="session_expired", detail=detail, server_ts=t))
            n += 1
    if n:
        s.expire_all()
    return n


def release_slot(s: Session, slot_id: str | None, holder: int) -> None:
    if slot_id is None:
        return
    s.execute(
        update(Slot)
        .where(Slot.slot_id == slot_id, Slot.holder == holder, Slot.status == "taken")
        .values(status="open", holder=None)
        .execution_options(synchronize_session=False)
    )


# ---- the study's status (admin) ----------------------------------------------------------------------


def status_counts(db: Database, settings: Settings | None = None) -> dict[str, Any]:
    with db.transaction() as s:
        if settings is not None:
            sweep_abandoned(s, settings)
        states = dict(s.execute(select(Participant.state, func.count()).group_by(Participant.state)).tuples().all())
        slots = dict(s.execute(select(Slot.status, func.count()).group_by(Slot.status)).tuples().all())
        n_trials = s.scalar(select(func.count()).select_from(TrialResult).where(TrialResult.trial >= 0))  # no practice
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
