"""Server-side plausibility of the events that unlock a trial (pure functions, server clock).

The browser says when a clip was played and when it ended, and when Response B of a text trial was
revealed; a participant could post those events without listening or reading. The server therefore
accepts them only when its own receipt times (``server_ts``, seconds since the epoch) make them
plausible:

* an ``ended`` event of a clip not yet heard counts only if this session fetched the clip's audio
  before the event arrived, and the event arrived no earlier than the clip's duration (minus a
  tolerance) after the ``play`` that started the listen: the first ``play`` of the clip received
  after its last ``ended`` (accepted or refused: either ends a listen; pauses only lengthen one,
  and seeking ahead is refused by the page on a first listen);
* a ``reveal`` of Response B (text condition) counts only if it arrived no earlier than the minimum
  reading time (minus the tolerance) after the trial's first ``onset``.

An event here is a mapping with ``kind``, ``response`` (clip response index, or None),
``server_ts`` and ``refused`` (None for an accepted event), in receipt order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

NOT_FETCHED = "audio_not_fetched"
NO_PLAY = "no_play"
TOO_EARLY = "too_early"
UNKNOWN_DURATION = "unknown_duration"
REVEAL_TOO_EARLY = "reveal_too_early"
NO_ONSET = "no_onset"

MESSAGES = {
    NOT_FETCHED: "the clip's audio was never fetched by this session",
    NO_PLAY: "no play event started this listen",
    TOO_EARLY: "the clip ended sooner after it started than its duration",
    UNKNOWN_DURATION: "the clip's duration is unknown (reload the study with its audio manifest)",
    REVEAL_TOO_EARLY: "Response B was shown before the minimum reading time of Response A",
    NO_ONSET: "the trial page was never shown",
}


def accepted(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The events the server accepted (``refused`` empty)."""
    return [e for e in events if not e.get("refused")]


def heard_clips(events: Iterable[Mapping[str, Any]]) -> set[int]:
    """Response indices with an accepted ``ended`` event."""
    return {int(e["response"]) for e in accepted(events) if e["kind"] == "ended" and e.get("response") is not None}


def check_listen(
    events: Iterable[Mapping[str, Any]],
    response: int,
    ended_ts: float,
    duration_s: float | None,
    fetched_ts: float | None,
    tolerance_s: float,
) -> str | None:
    """None if an ``ended`` of clip ``response`` received at ``ended_ts`` completes a plausible first
    listen, else the reason (a key of :data:`MESSAGES`). ``events``: the trial's earlier events."""
    if fetched_ts is None or fetched_ts > ended_ts:
        return NOT_FETCHED
    if duration_s is None:
        return UNKNOWN_DURATION
    start: float | None = None
    for e in events:
        if e.get("response") is None or int(e["response"]) != response:
            continue
        if e["kind"] == "ended":
            start = None  # a later listen starts after this one (whether this one was accepted or not)
        elif e["kind"] == "play" and start is None and not e.get("refused"):
            start = float(e["server_ts"])
    if start is None:
        return NO_PLAY
    if ended_ts - start < duration_s - tolerance_s:
        return TOO_EARLY
    return None


def check_reveal(
    events: Iterable[Mapping[str, Any]], reveal_ts: float, min_read_s: float, tolerance_s: float
) -> str | None:
    """None if a ``reveal`` received at ``reveal_ts`` is plausible, else the reason."""
    onsets = [float(e["server_ts"]) for e in accepted(events) if e["kind"] == "onset"]
    if not onsets:
        return NO_ONSET
    if reveal_ts - min(onsets) < min_read_s - tolerance_s:
        return REVEAL_TOO_EARLY
    return None


def revealed(events: Iterable[Mapping[str, Any]]) -> bool:
    """An accepted ``reveal`` event is in the log."""
    return any(e["kind"] == "reveal" for e in accepted(events))
