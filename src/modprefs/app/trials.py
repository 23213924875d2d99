"""A trial: what its page shows (and restores after a reload), its submission (checked against the
event log, stored once) and its audio clips (:mod:`.service` describes the protocol)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from modprefs.app import plausibility, service
from modprefs.app.db import Database
from modprefs.app.events import EventReceipt, events_of, of_tab, parse_events, store_events, unlocked
from modprefs.app.models import Clip, Fetch, Participant, Prompt, Slot, SlotTrial, TrialResult
from modprefs.app.protocol import derive_measures
from modprefs.app.service import (
    Conflict,
    Expired,
    Forbidden,
    Invalid,
    NotFound,
    Settings,
    Superseded,
    TooLarge,
    check_csrf,
    check_tab,
    clean_tab,
    find_participant,
    log_incident,
    release_slot,
    rowcount,
    slot_trial,
)
from modprefs.scale import PAPER_SCALE, RatingScale

MAX_JUSTIFICATION = 2000


# ---- the trial page ----------------------------------------------------------------------------------


def trial_view(s: Session, p: Participant, settings: Settings) -> dict[str, Any]:
    """The trial page. Its state (clips heard, Response B shown, the values set) is that of the events sent
    without a tab id (a script's; none for a browser page, whose tab gets its own state from :func:`tab_state`
    when it claims the session)."""
    st = slot_trial(s, p, p.current_trial)
    prompt = s.get(Prompt, st.prompt_id)
    assert prompt is not None  # SlotTrial.prompt_id is a foreign key to app_prompts
    order = [st.first_clip, 1 - st.first_clip]  # response index shown as A, then B
    events = of_tab(events_of(s, p, p.current_trial), None)
    state = unlocked(st, events)
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
        "practice": p.current_trial == service.PRACTICE_TRIAL,
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


def tab_state(s: Session, p: Participant, settings: Settings, tab: str) -> dict[str, Any]:
    """The current trial as browser tab ``tab`` left it (its own events only: a trial's measures come from the
    tab that submits it): clips heard, Response B revealed, the values to restore; ``elsewhere``: another tab
    has events in this trial (the page says the task starts afresh here)."""
    st = slot_trial(s, p, p.current_trial)
    order = [st.first_clip, 1 - st.first_clip]
    every = events_of(s, p, p.current_trial)
    mine = of_tab(every, tab)
    state = unlocked(st, mine)
    reveal = "off" if p.condition == "audio" else settings.text_reveal
    return {
        "heard": state["heard"],
        "revealed": state["revealed"] or reveal == "off",
        "restore": _restore(mine, order),
        "elsewhere": any(e.get("tab") != tab for e in every) and not mine,
    }


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


# ---- the submission ----------------------------------------------------------------------------------


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
    try:
        return _submit_trial(db, settings, token, csrf, trial, form)
    except (Conflict, Invalid, TooLarge, Forbidden) as exc:
        if not exc.context.get("logged"):
            kind = "superseded_submission" if isinstance(exc, Superseded) else "submission_refused"
            detail = exc.context.get("detail", exc.message)
            _log_refused_submission(db, token, trial, detail, kind)
        raise


def _log_refused_submission(
    db: Database, token: str, trial: int | None, message: str, kind: str = "submission_refused"
) -> None:
    """A submission refused before it reached the event log's checks (a bad form, a trial not open, a failed
    CSRF check): an incident ``submission_refused`` in its own transaction (the refused one rolled back).
    Forms outside the trials (consent, demographics, headphones, ...) log with ``trial`` None."""
    with db.transaction() as s:
        try:
            p = find_participant(s, token, touch=False)
        except NotFound:
            return
        log_incident(s, p, trial, kind, message)


def log_refused_form(db: Database, token: str, form: str, message: str) -> None:
    """A refused page form (``form``: consent, demographics, headphones, calibration, instructions, difficulty)."""
    _log_refused_submission(db, token, None, f"{form}: {message}")


def _submit_trial(
    db: Database, settings: Settings, token: str, csrf: str | None, trial: int, form: Mapping[str, str]
) -> str:
    refusal = None
    tab = clean_tab(form.get("tab"))
    try:
        with db.transaction() as s:
            p = find_participant(s, token, lock=True)
            check_csrf(p, csrf)
            try:
                check_tab(p, tab)
            except Superseded as exc:
                exc.context["detail"] = (
                    f"trial {trial} submitted from tab {tab}, superseded by tab {p.live_tab}: not stored"
                )
                raise
            if p.state == "abandoned":
                raise Expired("This session has expired.", detail=f"trial {trial} submitted after the session expired")
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
            st = slot_trial(s, p, trial)
            first = st.first_clip
            events = store_events(s, p, settings, trial, st, data.events, EventReceipt(), tab)
            refusal = _trial_refusal(p, settings, st, events)
            if refusal is not None:
                log_incident(s, p, trial, "trial_refused", refusal)
            else:
                return _store_trial(s, p, trial, st, first, data, events, tab)
    except IntegrityError:
        return "duplicate"
    raise Invalid(refusal or "", logged=True)  # logged as trial_refused with the events that were kept


def _store_trial(
    s: Session,
    p: Participant,
    trial: int,
    st: SlotTrial,
    first: int,
    data: TrialForm,
    events: list[dict[str, Any]],
    tab: str | None = None,
) -> str:
    """Store the trial; ``events``: the submitting tab's (its measures are that tab's alone)."""
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
            submitted_at=service.now(),
            tab=tab,
            **measures,
        )
    )
    s.flush()  # a concurrent double submission fails here (unique participant x trial)
    values: dict[str, Any] = {"last_seen": service.now()}
    outcome = "stored"
    if trial == 0:
        passed = preference != "1"  # response 1 of the attention check is the nonsensical one
        values["passed_attention"] = passed
        if not passed:
            values.update(state="failed_attention", finished_at=service.now(), screen_reason="attention_check")
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
    if rowcount(res) != 1:
        raise IntegrityError("concurrent submission", None, Exception("duplicate"))
    if outcome == "failed_attention":
        release_slot(s, p.slot_id, p.id)
    elif values.get("state") == "difficulty":
        s.execute(
            update(Slot)
            .where(Slot.slot_id == p.slot_id, Slot.holder == p.id)
            .values(status="done")
            .execution_options(synchronize_session=False)
        )
    return outcome


# ---- audio -------------------------------------------------------------------------------------------


def audio_file(db: Database, token: str, clip_id: str) -> str:
    """The path of a clip of the participant's *current* trial (any other clip is refused); records
    the session's first fetch of the clip (the listening check needs it)."""
    with db.transaction() as s:
        p = find_participant(s, token)
        if p.state != "trials" or p.condition != "audio":
            raise Forbidden("No audio for this page.")
        st = slot_trial(s, p, p.current_trial)
        if clip_id not in (f"{st.prompt_id}_0", f"{st.prompt_id}_1"):
            raise Forbidden("This clip is not part of your current task.")
        clip = s.get(Clip, clip_id)
        if clip is None or not clip.path:
            raise NotFound("Audio not found.")
        if s.get(Fetch, (p.id, clip_id)) is None:  # concurrent range requests: the first one wins
            s.execute(
                _insert(db, Fetch)
                .values(participant=p.id, clip_id=clip_id, first_ts=service.now())
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
