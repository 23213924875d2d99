"""The trial measures of paper §3.2.2, derived from a trial's event log (pure functions).

An event is a mapping with ``kind``, ``t`` (client clock, epoch milliseconds), ``response`` (the
clip's response index 0/1, or None), ``field`` (``rating``/``audio_quality`` for sliders) and
``value`` (slider value, or the audio position in seconds). Kinds the client logs:

``onset`` (the trial page is shown: conversation history and prompt; logged again after a reload),
``play`` / ``pause`` / ``ended`` (per clip), ``seek`` (after the first full listen),
``seek_refused`` / ``ended_refused`` (a seek, or a jump to the end, refused on the first listen),
``slider`` (a committed slider change: one per pointer gesture or keyboard burst, docs/app.md),
``preference``, ``submit``, ``reveal`` (text condition:
Response B shown after Response A was read), ``hidden`` / ``visible`` (the tab was hidden / shown again:
another tab or window in front, the window minimised) and ``blur`` / ``focus`` (the window lost / regained
the keyboard focus). The caller passes the events the server accepted
(:func:`modprefs.app.plausibility.accepted`) of the tab that submitted the trial.

Derived measures (the columns of trials.csv):

* decision_time_s: prompt onset (the first ``onset``) to submission.
* deliberation_time_s (audio): the end of the last listen (the last ``ended`` or ``pause`` of any
  clip) to submission; 0 if a clip was still playing when the participant submitted.
* replays_0 / replays_1 (audio): listens of a clip started after its first full listen (its first
  ``ended``). A ``play`` that resumes a paused listen at the position it was paused, with no other
  clip played in between, continues that listen and is not counted.
* relistened_first (audio): the first-presented clip was replayed (replays of it > 0).
* rating_changes: preference reversals while rating: with both response-quality sliders set, the
  sign of rating_0 - rating_1 (equal values skipped) changed from one committed slider change to
  the next. Text-condition audio measures are None (empty in the export).
* hidden_count, hidden_s, blur_count (attention, as P.808 and jsPsych labs screen it): the times the page
  was hidden, the seconds it stayed hidden (until shown again, or until the submission), and the times the
  window lost the focus.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

RESUME_TOLERANCE_S = 0.5
FIRST_LISTEN_KINDS = ("play", "pause", "ended")


def _sorted(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(events, key=lambda e: (e["t"], e.get("seq", 0)))


def count_replays(events: Iterable[Mapping[str, Any]]) -> dict[int, int]:
    evs = _sorted(events)
    first_end: dict[int, float] = {}
    replays = {0: 0, 1: 0}
    paused_at: dict[int, float | None] = {0: None, 1: None}
    for e in evs:
        r = e.get("response")
        if r is None or e["kind"] not in ("play", "pause", "ended", "seek"):
            continue
        r = int(r)
        other = 1 - r
        if e["kind"] == "ended":
            first_end.setdefault(r, e["t"])
            paused_at[r] = None
        elif e["kind"] == "pause":
            paused_at[r] = e.get("value")
        elif e["kind"] == "seek":
            paused_at[r] = None
        elif e["kind"] == "play":
            was_paused_at = paused_at[r]
            resumed = (
                was_paused_at is not None
                and e.get("value") is not None
                and abs(float(e["value"]) - float(was_paused_at)) <= RESUME_TOLERANCE_S
            )
            if r in first_end and not resumed:
                replays[r] += 1
            paused_at[r] = None
            paused_at[other] = None  # playing one clip ends any paused listen of the other
    return replays


def count_reversals(events: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """(preference reversals between the two response-quality ratings, committed slider changes)."""
    values: dict[int, float] = {}
    last_sign = 0
    reversals = 0
    moves = 0
    for e in _sorted(events):
        if e["kind"] != "slider" or e.get("response") is None or e.get("value") is None:
            continue
        moves += 1
        if e.get("field", "rating") != "rating":
            continue
        values[int(e["response"])] = float(e["value"])
        if len(values) < 2:
            continue
        diff = values[0] - values[1]
        sign = (diff > 0) - (diff < 0)
        if sign == 0:
            continue
        if last_sign and sign != last_sign:
            reversals += 1
        last_sign = sign
    return reversals, moves


def count_attention(events: Iterable[Mapping[str, Any]], submit_ms: float | None) -> dict[str, Any]:
    """``hidden_count``, ``hidden_s`` (to the next ``visible``, or to ``submit_ms``) and ``blur_count``."""
    hidden_n = blur_n = 0
    hidden_ms = 0.0
    since: float | None = None
    for e in _sorted(events):
        if e["kind"] == "hidden":
            hidden_n += 1
            since = e["t"] if since is None else since
        elif e["kind"] == "visible" and since is not None:
            hidden_ms += max(0.0, e["t"] - since)
            since = None
        elif e["kind"] == "blur":
            blur_n += 1
    if since is not None and submit_ms is not None:
        hidden_ms += max(0.0, submit_ms - since)
    return {"hidden_count": hidden_n, "hidden_s": round(hidden_ms / 1000.0, 3), "blur_count": blur_n}


def derive_measures(
    events: Iterable[Mapping[str, Any]], condition: str, first_clip: int, submit_ms: float | None
) -> dict[str, Any]:
    """The trial's derived measures (keys as trials.csv columns, plus ``slider_moves``; ``hidden_count``,
    ``hidden_s`` and ``blur_count`` are the export's extra trials columns)."""
    evs = _sorted(events)
    onsets = [e["t"] for e in evs if e["kind"] == "onset"]
    if submit_ms is None:
        submits = [e["t"] for e in evs if e["kind"] == "submit"]
        submit_ms = submits[-1] if submits else None
    decision = None
    if onsets and submit_ms is not None:
        decision = round(max(0.0, (submit_ms - onsets[0]) / 1000.0), 3)
    reversals, moves = count_reversals(evs)
    out: dict[str, Any] = {
        "decision_time_s": decision,
        "rating_changes": reversals,
        "slider_moves": moves,
        "deliberation_time_s": None,
        "replays_0": None,
        "replays_1": None,
        "relistened_first": None,
        **count_attention(evs, submit_ms),
    }
    if condition != "audio":
        return out
    replays = count_replays(evs)
    listen = [e for e in evs if e["kind"] in FIRST_LISTEN_KINDS and e.get("response") is not None]
    deliberation = None
    if listen and submit_ms is not None:
        last = listen[-1]
        if last["kind"] == "play":
            deliberation = 0.0
        else:
            deliberation = round(max(0.0, (submit_ms - last["t"]) / 1000.0), 3)
    out.update(
        deliberation_time_s=deliberation,
        replays_0=replays[0],
        replays_1=replays[1],
        relistened_first=replays[int(first_clip)] > 0,
    )
    return out
