"""A simulated participant that drives the app over HTTP (httpx.AsyncClient), as a browser would.

It parses the CSRF token and the page data from the HTML, logs the events the page's script
would (onset, play/ended per clip in the audio condition, slider changes), posts them, then
submits each trial's form. Every request's status is checked.
"""

from __future__ import annotations

import asyncio
import html
import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

import httpx

from app_study import ATTENTION

CSRF_RE = re.compile(r'name="csrf" value="([^"]+)"')
DATA_RE = re.compile(r'<script type="application/json" id="page-data">(.*?)</script>', re.S)
AUDIO_RE = re.compile(r'<audio [^>]*src="([^"]+)"[^>]*id="audio-([AB])"')
TEXT_RE = re.compile(r'<div class="response-text" id="text-([AB])">(.*?)</div>', re.S)


class SimError(AssertionError):
    pass


@dataclass
class Outcome:
    token: str = ""
    final: str = ""
    submitted: list[int] = field(default_factory=list)
    duplicates: int = 0
    code: str | None = None
    retries: int = 0


def page_data(text: str) -> dict[str, Any]:
    m = DATA_RE.search(text)
    if not m:
        raise SimError("no page data in the page")
    return json.loads(m.group(1))


def _check(r: httpx.Response, *ok: int) -> httpx.Response:
    if r.status_code not in (ok or (200,)):
        raise SimError(f"{r.request.method} {r.request.url.path} -> {r.status_code}: {r.text[:300]}")
    return r


class RetryingClient:
    """Re-sends a request once when a reused keep-alive connection turns out closed (as browsers do).

    Safe because every state-changing request of the app is idempotent (events by sequence number,
    trials by participant and trial, consent/demographics/difficulty by state).
    """

    def __init__(self, client: httpx.AsyncClient, out: Outcome):
        self.client, self.out = client, out

    async def request(self, method: str, url: str, **kw: Any) -> httpx.Response:
        try:
            return await self.client.request(method, url, **kw)
        except (httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError):
            self.out.retries += 1
            return await self.client.request(method, url, **kw)

    async def get(self, url: str, **kw: Any) -> httpx.Response:
        return await self.request("GET", url, **kw)

    async def post(self, url: str, **kw: Any) -> httpx.Response:
        return await self.request("POST", url, **kw)


def nonsensical_position(text: str, condition: str) -> str:
    """Which position (A/B) shows the attention check's nonsensical response (response 1)."""
    if condition == "audio":
        for src, pos in AUDIO_RE.findall(text):
            if src.endswith("/attn_1.wav"):
                return pos
    else:
        for pos, body in TEXT_RE.findall(text):
            if html.unescape(body).strip() == ATTENTION["responses"][1]["text"].strip():
                return pos
    raise SimError("could not find the attention check's nonsensical response")


async def run_participant(client: httpx.AsyncClient, *, prolific: dict[str, str] | None = None, age: int = 34,
                          fail_attention: bool = False, double_submit: bool = False, stop_after: int | None = None,
                          justification: str | None = None, seed: int = 0, fetch_audio: bool = True,
                          durations: dict[str, float] | None = None) -> Outcome:
    rng = random.Random(seed)
    out = Outcome()
    client = RetryingClient(client, out)  # type: ignore[assignment]
    r = _check(await client.get("/start", params=prolific or {}, follow_redirects=True))
    out.token = r.url.path.rsplit("/", 1)[-1]
    base = f"/p/{out.token}"
    csrf = CSRF_RE.search(r.text).group(1)
    _check(await client.post(f"{base}/consent", data={"csrf": csrf, "agree": "yes"}), 303)
    demo = {"csrf": csrf, "age": str(age), "gender": rng.choice(["Woman", "Man"]), "race": "White",
            "hispanic_latino": "no", "birthplace": "United States", "education": "Bachelor's degree",
            "employment": "Full-time", "country": "United States", "primary_language": "English",
            "native_english": "yes", "other_languages": "Spanish; French", "timezone": "America/New_York"}
    _check(await client.post(f"{base}/demographics", data=demo), 303)
    clock = 1_700_000_000_000 + seed * 10_000_000
    while True:
        r = _check(await client.get(base))
        data = page_data(r.text)
        page = data["page"]
        if page != "trial":
            break
        trial, cond, seq = data["trial"], data["condition"], data["next_seq"]
        if stop_after is not None and trial > stop_after:
            out.final = "stopped"
            return out
        events: list[dict[str, Any]] = []

        def ev(kind: str, pos: str | None = None, x: float | None = None, fld: str | None = None) -> None:
            nonlocal seq, clock
            clock += rng.randint(200, 2500)
            events.append({"seq": seq, "kind": kind, "pos": pos, "t": clock, "x": x, "field": fld})
            seq += 1

        ev("onset")
        srcs = dict((pos, src) for src, pos in AUDIO_RE.findall(r.text))
        if cond == "audio":
            for pos in "AB":
                if fetch_audio and pos == "A":
                    a = _check(await client.get(srcs[pos], headers={"Range": "bytes=0-1023"}), 206)
                    assert len(a.content) == 1024
                ev("play", pos, 0.0)
                clip = srcs[pos].rsplit("/", 1)[-1][:-4]
                dur = (durations or {}).get(clip, 1.2)
                clock += int(dur * 1000)
                ev("ended", pos, dur)
            if rng.random() < 0.3:
                ev("play", "A", 0.0)
                ev("ended", "A", 1.0)
        ratings = {p: rng.randint(1, 100) for p in "AB"}
        for pos in "AB":
            ev("slider", pos, float(rng.randint(1, 100)), "rating")
            ev("slider", pos, float(ratings[pos]), "rating")
            if cond == "audio":
                ev("slider", pos, float(rng.randint(40, 90)), "audio_quality")
        if trial == 0:
            bad = nonsensical_position(r.text, cond)
            choice = bad if fail_attention else ("B" if bad == "A" else "A")
        else:
            choice = rng.choice(["A", "B", "tie"])
        ev("preference", None if choice == "tie" else choice)
        # half of the events go through /events, the rest travel with the submission
        half = len(events) // 2
        _check(await client.post(f"{base}/events", json={"trial": trial, "events": events[:half]},
                                 headers={"X-CSRF-Token": data["csrf"]}))
        ev("submit")
        form = {"csrf": data["csrf"], "rating_A": str(ratings["A"]), "rating_B": str(ratings["B"]),
                "preference": choice, "justification": justification or f"because {rng.random():.3f}",
                "submit_t": str(clock), "events": json.dumps(events[half:])}
        if cond == "audio":
            form.update(audio_quality_A=str(rng.randint(40, 90)), audio_quality_B=str(rng.randint(40, 90)))
        if double_submit:
            rs = await asyncio.gather(*[client.post(f"{base}/trial/{trial}", data=form,
                                                    headers={"Accept": "application/json"}) for _ in range(2)])
            outcomes = [_check(x).json()["outcome"] for x in rs]
            out.duplicates += outcomes.count("duplicate")
            if outcomes.count("duplicate") != 1:
                raise SimError(f"double submission of trial {trial}: {outcomes}")
        else:
            _check(await client.post(f"{base}/trial/{trial}", data=form), 303)
        out.submitted.append(trial)
    if page == "difficulty":
        _check(await client.post(f"{base}/difficulty", data={"csrf": data["csrf"], "difficulty": str(rng.randint(1, 5))}),
               303)
        r = _check(await client.get(base))
        m = re.search(r'id="completion-code">([^<]+)<', r.text)
        out.code = m.group(1) if m else None
    out.final = page_data(r.text)["state"]
    return out
