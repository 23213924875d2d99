"""The app's tables (SQLAlchemy 2 declarative; every name prefixed ``app_``).

* ``app_meta``: study settings (key/value): completion codes, trials per participant, timeouts, the
  rating scale (``rating_scale``, JSON ``{min, max, step, labels}``; absent: the paper's 1..100).
* ``app_prompts`` / ``app_clips``: the stimuli, with conversation history, prompt, response texts
  and the audio file of each clip (absolute path; text-only studies leave it empty).
* ``app_slots`` / ``app_slot_trials``: assignments.csv, one slot per assigned participant id, in the
  balanced order arriving participants take them (``position``).
* ``app_participants``: one row per person who entered (a session): token, Prolific ids, state,
  demographics (§3.2.1), outcomes.
* ``app_trials``: one row per submitted trial (unique per participant and trial: a double
  submission cannot create a second row), with the measures derived from the event log. Trial -1 is
  the practice trial (exported with ``practice`` 1, left out of every analysis).
* ``app_events``: the event log (prompt onset, play/pause/end per clip, slider changes,
  submission). Each event carries the id the browser gave it (``eid``, unique per participant: a
  re-sent event is stored once, one re-sent with other content is a conflict) and a sequence number
  the server assigns on receipt (``seq``, 0, 1, 2, ... per participant and trial, so no two events
  ever share one). ``refused`` holds the reason when the server did not accept an ``ended`` or
  ``reveal`` event as plausible (it is kept, and ignored by the measures).
  Events carry the browser tab that sent them (``tab``): a trial's measures come from the tab that submitted it.
* ``app_fetches``: the first time each participant's session fetched each clip (server clock).
* ``app_incidents``: what the server refused or could not reconcile (event conflicts, implausible
  listens, refused trials), with the participant, trial and a message.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

ID_LEN = 64
# Written to app_meta by `modprefs app load`; a database loaded by a version with other tables is
# refused by serve/export/status/invite with a message (reload it, or export with the old version).
# 3: the ratings are numbers of the study's rating scale (app_meta rating_scale; float columns).
# 4: the participant's calibration (calibrated_at); the practice trial (trial -1); the study texts in app_meta.
# 5: one live tab per session (live_tab, events and trials per tab), left_at, the trial's hidden/blur counts.
SCHEMA_VERSION = "5"


class Base(DeclarativeBase):
    pass


class Meta(Base):
    __tablename__ = "app_meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Prompt(Base):
    __tablename__ = "app_prompts"
    prompt_id: Mapped[str] = mapped_column(String(ID_LEN), primary_key=True)
    history_json: Mapped[str] = mapped_column(Text, default="[]")
    prompt: Mapped[str] = mapped_column(Text)
    text_0: Mapped[str] = mapped_column(Text)
    text_1: Mapped[str] = mapped_column(Text)


class Clip(Base):
    __tablename__ = "app_clips"
    clip_id: Mapped[str] = mapped_column(String(ID_LEN + 2), primary_key=True)
    prompt_id: Mapped[str] = mapped_column(ForeignKey("app_prompts.prompt_id"), index=True)
    response: Mapped[int] = mapped_column(Integer)
    path: Mapped[str | None] = mapped_column(Text, nullable=True)
    duration_s: Mapped[float | None] = mapped_column(Float, nullable=True)


class Slot(Base):
    __tablename__ = "app_slots"
    slot_id: Mapped[str] = mapped_column(String(ID_LEN), primary_key=True)
    condition: Mapped[str] = mapped_column(String(8))
    position: Mapped[int] = mapped_column(Integer, unique=True)
    status: Mapped[str] = mapped_column(String(12), default="open", index=True)  # open | taken | done
    holder: Mapped[int | None] = mapped_column(Integer, nullable=True)
    issues: Mapped[int] = mapped_column(Integer, default=0)


class SlotTrial(Base):
    __tablename__ = "app_slot_trials"
    slot_id: Mapped[str] = mapped_column(ForeignKey("app_slots.slot_id"), primary_key=True)
    trial: Mapped[int] = mapped_column(Integer, primary_key=True)
    prompt_id: Mapped[str] = mapped_column(ForeignKey("app_prompts.prompt_id"))
    first_clip: Mapped[int] = mapped_column(Integer)


class Participant(Base):
    __tablename__ = "app_participants"
    __table_args__ = (UniqueConstraint("prolific_pid", "study_id", name="uq_app_participants_prolific"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    token: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    csrf: Mapped[str] = mapped_column(String(64))
    participant_id: Mapped[str | None] = mapped_column(String(ID_LEN + 8), unique=True, nullable=True)
    slot_id: Mapped[str | None] = mapped_column(String(ID_LEN), nullable=True, index=True)
    condition: Mapped[str | None] = mapped_column(String(8), nullable=True)
    entry: Mapped[str] = mapped_column(String(16), default="link")  # prolific | invite | link
    prolific_pid: Mapped[str | None] = mapped_column(String(ID_LEN), nullable=True)
    study_id: Mapped[str | None] = mapped_column(String(ID_LEN), nullable=True)
    session_id: Mapped[str | None] = mapped_column(String(ID_LEN), nullable=True)
    # consent | demographics | calibration | headphones | instructions | trials | difficulty | done |
    # screened_out | declined | failed_attention | abandoned | full
    state: Mapped[str] = mapped_column(String(20), default="consent", index=True)
    current_trial: Mapped[int] = mapped_column(Integer, default=0)
    n_trials: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[float] = mapped_column(Float)
    last_seen: Mapped[float] = mapped_column(Float, index=True)
    consent_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    screen_reason: Mapped[str | None] = mapped_column(String(64), nullable=True)
    user_agent: Mapped[str | None] = mapped_column(String(300), nullable=True)
    age: Mapped[int | None] = mapped_column(Integer, nullable=True)
    gender: Mapped[str | None] = mapped_column(String(100), nullable=True)
    race: Mapped[str | None] = mapped_column(String(100), nullable=True)
    hispanic_latino: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    birthplace: Mapped[str | None] = mapped_column(String(100), nullable=True)
    education: Mapped[str | None] = mapped_column(String(100), nullable=True)
    employment: Mapped[str | None] = mapped_column(String(100), nullable=True)
    country: Mapped[str | None] = mapped_column(String(100), nullable=True)
    primary_language: Mapped[str | None] = mapped_column(String(100), nullable=True)
    native_english: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    english_proficiency: Mapped[str | None] = mapped_column(String(20), nullable=True)
    other_languages: Mapped[str | None] = mapped_column(String(300), nullable=True)
    timezone: Mapped[str | None] = mapped_column(String(64), nullable=True)
    passed_attention: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    completed: Mapped[bool] = mapped_column(Boolean, default=False)
    difficulty: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # the headphone screening (audio condition, when enabled): passed | failed (None: not run)
    headphone_check: Mapped[str | None] = mapped_column(String(8), nullable=True)
    headphone_correct: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # the audio condition's level-setting step: when the participant confirmed a comfortable volume
    calibrated_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    # the browser tab that holds the session (the last page that claimed it: service.claim_tab); None: none yet
    live_tab: Mapped[str | None] = mapped_column(String(32), nullable=True)
    # when the live tab's page sent the leave beacon (pagehide); cleared by the next request
    left_at: Mapped[float | None] = mapped_column(Float, nullable=True)


class TrialResult(Base):
    __tablename__ = "app_trials"
    __table_args__ = (UniqueConstraint("participant", "trial", name="uq_app_trials_participant_trial"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    participant: Mapped[int] = mapped_column(ForeignKey("app_participants.id"), index=True)
    trial: Mapped[int] = mapped_column(Integer)
    prompt_id: Mapped[str] = mapped_column(String(ID_LEN))
    first_clip: Mapped[int] = mapped_column(Integer)
    preference: Mapped[str] = mapped_column(String(3))  # "0" | "1" | "tie" (response index)
    justification: Mapped[str | None] = mapped_column(Text, nullable=True)
    # on the study's rating scale (app_meta rating_scale; whole numbers on the paper's 1..100)
    rating_0: Mapped[float] = mapped_column(Float)
    rating_1: Mapped[float] = mapped_column(Float)
    audio_quality_0: Mapped[float | None] = mapped_column(Float, nullable=True)
    audio_quality_1: Mapped[float | None] = mapped_column(Float, nullable=True)
    decision_time_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    deliberation_time_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    rating_changes: Mapped[int | None] = mapped_column(Integer, nullable=True)
    slider_moves: Mapped[int | None] = mapped_column(Integer, nullable=True)
    replays_0: Mapped[int | None] = mapped_column(Integer, nullable=True)
    replays_1: Mapped[int | None] = mapped_column(Integer, nullable=True)
    relistened_first: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    # the page's attention: times the tab was hidden, seconds hidden, times the window lost the focus
    hidden_count: Mapped[int | None] = mapped_column(Integer, nullable=True)
    hidden_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    blur_count: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tab: Mapped[str | None] = mapped_column(String(32), nullable=True)  # the tab that submitted it
    submitted_at: Mapped[float] = mapped_column(Float)


class Event(Base):
    __tablename__ = "app_events"
    __table_args__ = (
        UniqueConstraint("participant", "trial", "seq", name="uq_app_events_seq"),
        UniqueConstraint("participant", "eid", name="uq_app_events_eid"),
        Index("ix_app_events_participant_trial", "participant", "trial"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    participant: Mapped[int] = mapped_column(ForeignKey("app_participants.id"))
    trial: Mapped[int] = mapped_column(Integer)
    seq: Mapped[int] = mapped_column(Integer)  # assigned by the server on receipt
    eid: Mapped[str] = mapped_column(String(48))  # the browser's id for the event
    kind: Mapped[str] = mapped_column(String(16))
    response: Mapped[int | None] = mapped_column(Integer, nullable=True)  # the clip's response index
    field: Mapped[str | None] = mapped_column(String(16), nullable=True)  # rating | audio_quality
    value: Mapped[float | None] = mapped_column(Float, nullable=True)  # slider value / audio position
    client_ms: Mapped[int] = mapped_column(BigInteger)
    server_ts: Mapped[float] = mapped_column(Float)
    refused: Mapped[str | None] = mapped_column(String(32), nullable=True)
    tab: Mapped[str | None] = mapped_column(String(32), nullable=True)  # the browser tab that sent it


class Fetch(Base):
    __tablename__ = "app_fetches"
    participant: Mapped[int] = mapped_column(ForeignKey("app_participants.id"), primary_key=True)
    clip_id: Mapped[str] = mapped_column(String(ID_LEN + 2), primary_key=True)
    first_ts: Mapped[float] = mapped_column(Float)


class Incident(Base):
    __tablename__ = "app_incidents"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    participant: Mapped[int] = mapped_column(ForeignKey("app_participants.id"), index=True)
    trial: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # event_conflict | listen_refused | reveal_refused | trial_refused | submission_refused | tab_takeover |
    # superseded_submission | session_expired | media_failed
    kind: Mapped[str] = mapped_column(String(32))
    detail: Mapped[str] = mapped_column(Text)
    server_ts: Mapped[float] = mapped_column(Float)
