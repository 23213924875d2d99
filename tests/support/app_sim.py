"""A simulated participant that drives the app over HTTP (httpx.AsyncClient), as a browser would.

It parses the CSRF token and the page data from the HTML, logs the events the page's script
would (onset, play/ended per clip in the audio condition, the reveal of Response B in the text
condition, slider changes), each with a unique id, then submits each trial's form. Like the page it
sends `onset`, `play`, `ended` and `reveal` at once and really waits: a clip's duration between
`play` and `ended` (after fetching the audio), the reading time before `reveal`, since the server
checks those times on its own clock. It answers the headphone check (when the study has one) from
the stimuli as a listener with stereo headphones or with a mono downmix would (listener.py).
Every request's status is checked.
"""

from __future__ import annotations

import asyncio
import html
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from support.app_study import ATTENTION
from support.listener import headphone_answers

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
    receipts: list[dict[str, Any]] = field(default_factory=list)  # the answers of POST /events


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

    def __init__(self, client: httpx.AsyncClient, out: Outcome, headers: dict[str, str] | None = None):
        self.client, self.out, self.headers = client, out, headers or {}

    async def request(self, method: str, url: str, **kw: Any) -> httpx.Response:
        if self.headers:
            kw["headers"] = {**self.headers, **(kw.get("headers") or {})}
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


async def run_participant(
    client: httpx.AsyncClient,
    *,
    prolific: dict[str, str] | None = None,
    age: int = 34,
    fail_attention: bool = False,
    double_submit: bool = False,
    stop_after: int | None = None,
    justification: str | None = None,
    seed: int = 0,
    fetch_audio: bool = True,
    durations: dict[str, float] | None = None,
    headphones: str = "stereo",
    client_ip: str | None = None,
    prefix: str = "",
    rate: Callable[[str, str], float] | None = None,
) -> Outcome:
    """One participant's session. ``client_ip``: sent as X-Forwarded-For (a server behind a proxy
    sees one address per participant); ``headphones``: ``stereo`` or ``mono`` listener; ``prefix``: the
    path the site is served under (``/study`` for ``serve --root-path /study``); ``rate``: the rating of the
    response at a position (``rate(trial page HTML, "A" or "B")``; default uniform 1..100)."""
    rng = random.Random(seed)
    out = Outcome()
    client = RetryingClient(client, out, {"X-Forwarded-For": client_ip} if client_ip else {})  # type: ignore[assignment]
    r = _check(await client.get(f"{prefix}/start", params=prolific or {}, follow_redirects=True))
    out.token = r.url.path.rsplit("/", 1)[-1]
    base = f"{prefix}/p/{out.token}"
    csrf = CSRF_RE.search(r.text).group(1)
    _check(await client.post(f"{base}/consent", data={"csrf": csrf, "agree": "yes"}), 303)
    demo = {
        "csrf": csrf,
        "age": str(age),
        "gender": rng.choice(["Woman", "Man"]),
        "race": "White",
        "hispanic_latino": "no",
        "birthplace": "United States",
        "education": "Bachelor's degree",
        "employment": "Full-time",
        "country": "United States",
        "primary_language": "English",
        "native_english": "yes",
        "other_languages": "Spanish; French",
        "timezone": "America/New_York",
    }
    _check(await client.post(f"{base}/demographics", data=demo), 303)
    clock = 1_700_000_000_000 + seed * 10_000_000
    n_ids = 0
    while True:
        r = _check(await client.get(base))
        data = page_data(r.text)
        page = data["page"]
        if page == "headphones":
            srcs = re.findall(r'id="hp-audio-(\d+)" preload="auto" src="([^"]+)"', r.text)
            wavs = [(await client.get(src)).content for _, src in sorted(srcs, key=lambda x: int(x[0]))]
            answers = headphone_answers(wavs, headphones)
            form = {"csrf": data["csrf"], **{f"q{i}": str(a) for i, a in enumerate(answers)}}
            _check(await client.post(f"{base}/headphones", data=form), 303)
            continue
        if page == "calibration":  # the level-setting step: confirmed
            _check(await client.post(f"{base}/calibration", data={"csrf": data["csrf"], "confirm": "yes"}), 303)
            continue
        if page == "instructions":  # on to the practice trial
            _check(await client.post(f"{base}/instructions", data={"csrf": data["csrf"]}), 303)
            continue
        if page != "trial":
            break
        trial, cond = data["trial"], data["condition"]
        if stop_after is not None and trial > stop_after:
            out.final = "stopped"
            return out
        events: list[dict[str, Any]] = []

        def ev(
            kind: str, pos: str | None = None, x: float | None = None, fld: str | None = None, gap_ms: int | None = None
        ) -> dict[str, Any]:
            nonlocal clock, n_ids
            clock += rng.randint(200, 2500) if gap_ms is None else gap_ms
            e = {"id": f"sim{seed}-{n_ids}", "kind": kind, "pos": pos, "t": clock, "x": x, "field": fld}
            n_ids += 1
            events.append(e)  # noqa: B023 (called in this iteration)
            return e

        async def send_now(e: dict[str, Any]) -> dict[str, Any]:
            """Post one event at once (as the page does for onset, play, ended, reveal)."""
            events.remove(e)  # noqa: B023 (called in this iteration)
            res = _check(
                await client.post(
                    f"{base}/events",
                    json={"trial": trial, "events": [e]},  # noqa: B023 (called in this iteration)
                    headers={"X-CSRF-Token": data["csrf"]},  # noqa: B023 (called in this iteration)
                )
            ).json()
            out.receipts.append(res)
            return res

        await send_now(ev("onset"))
        srcs = dict((pos, src) for src, pos in AUDIO_RE.findall(r.text))
        if cond == "audio":
            for pos in "AB":
                if fetch_audio:
                    a = _check(await client.get(srcs[pos], headers={"Range": "bytes=0-1023"}), 206)
                    assert len(a.content) == 1024
                clip = srcs[pos].rsplit("/", 1)[-1][:-4]
                dur = (durations or {}).get(clip, 1.2)
                await send_now(ev("play", pos, 0.0))
                await asyncio.sleep(dur)
                await send_now(ev("ended", pos, dur, gap_ms=int(dur * 1000)))
            if rng.random() < 0.3:
                ev("play", "A", 0.0)
                ev("ended", "A", 1.0)
        elif data["reveal"]["mode"] != "off" and not data["revealed"]:
            wait = float(data["reveal"]["min_read_s"])
            await asyncio.sleep(wait)
            await send_now(ev("reveal", "B", gap_ms=int(wait * 1000)))
        ratings: dict[str, float] = {p: rng.randint(1, 100) for p in "AB"}
        if rate is not None:
            ratings = {p: rate(r.text, p) for p in "AB"}
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
        # half of the other events go through /events, the rest travel with the submission
        half = len(events) // 2
        res = _check(
            await client.post(
                f"{base}/events", json={"trial": trial, "events": events[:half]}, headers={"X-CSRF-Token": data["csrf"]}
            )
        ).json()
        out.receipts.append(res)
        ev("submit")
        form = {
            "csrf": data["csrf"],
            "rating_A": str(ratings["A"]),
            "rating_B": str(ratings["B"]),
            "preference": choice,
            "justification": justification or f"because {rng.random():.3f}",
            "submit_t": str(clock),
            "events": json.dumps(events[half:]),
        }
        if cond == "audio":
            form.update(audio_quality_A=str(rng.randint(40, 90)), audio_quality_B=str(rng.randint(40, 90)))
        if double_submit:
            rs = await asyncio.gather(
                *[
                    client.post(f"{base}/trial/{trial}", data=form, headers={"Accept": "application/json"})
                    for _ in range(2)
                ]
            )
            outcomes = [_check(x).json()["outcome"] for x in rs]
            out.duplicates += outcomes.count("duplicate")
            if outcomes.count("duplicate") != 1:
                raise SimError(f"double submission of trial {trial}: {outcomes}")
        else:
            _check(await client.post(f"{base}/trial/{trial}", data=form), 303)
        out.submitted.append(trial)
    if page == "difficulty":
        _check(
            await client.post(f"{base}/difficulty", data={"csrf": data["csrf"], "difficulty": str(rng.randint(1, 5))}),
            303,
        )
        r = _check(await client.get(base))
        m = re.search(r'id="completion-code">([^<]+)<', r.text)
        out.code = m.group(1) if m else None
    out.final = page_data(r.text)["state"]
    return out
