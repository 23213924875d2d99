"""What a participant does is what the app records (issue #14), checked in headless chromium.

Each test drives `modprefs app serve` on loopback through Playwright with Debian's chromium (see
tests/support/browser_kit.py; skipped without them unless MODPREFS_REQUIRE_BROWSER=1). Participants are
created over HTTP (consent + demographics, each from its own X-Forwarded-For address as behind a
proxy) and their personal link is then opened in the browser. Studies hold one condition each
(audio or text), 1-1.5 s clips.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from modprefs.app import headphones
from modprefs.app.models import Event, Incident, Participant, TrialResult
from support.app_services import app_server
from support.app_study import ATTENTION, load, make_study
from support.browser_kit import data_of, events_of, wait_until
from support.listener import headphone_answers

pytestmark = pytest.mark.integration  # runs snakemake, a server or a browser: not in `make test-fast`

CSRF_RE = re.compile(r'name="csrf" value="([^"]+)"')
_ips = iter(range(10, 250))


def one_condition(directory: Path, condition: str, slots: int = 6, **kw):
    """A study whose assignments are all in ``condition``."""
    st = make_study(directory, n_prompts=4, raters_per_condition=slots, trials=1, seed=5, durations=(1.0, 1.5), **kw)
    st.assignments = st.assignments[st.assignments.condition == condition]
    st.assignments.to_csv(st.files.assignments, index=False)
    return st


def enter(base: str, pid: str | None = None) -> tuple[str, str]:
    """A participant past consent and demographics (over HTTP); returns (token, csrf)."""
    headers = {"X-Forwarded-For": f"10.0.0.{next(_ips)}"}
    with httpx.Client(base_url=base, follow_redirects=True, headers=headers) as c:
        r = c.get("/start", params={"PROLIFIC_PID": pid} if pid else {})
        assert r.status_code == 200, r.text
        token, csrf = str(r.url).rsplit("/", 1)[-1], CSRF_RE.search(r.text).group(1)
        assert c.post(f"/p/{token}/consent", data={"csrf": csrf, "agree": "yes"}).status_code == 200
        r = c.post(f"/p/{token}/demographics", data={"csrf": csrf, "age": "30", "native_english": "yes"})
        assert r.status_code == 200, r.text
    return token, csrf


def slider_point(page, selector: str, value: float | None = None, frac: float | None = None) -> tuple[float, float]:
    """Page coordinates on a range input: at ``value`` (1-100; the thumb's travel is the track minus
    the thumb, 20 px + 2 x 2 px border) or at ``frac`` of its width."""
    loc = page.locator(selector)
    loc.scroll_into_view_if_needed()
    box = loc.bounding_box()
    y = box["y"] + box["height"] / 2
    if value is not None:
        return box["x"] + 12 + (value - 1) / 99 * (box["width"] - 24), y
    return box["x"] + box["width"] * frac, y


def slider_events(page) -> list[dict]:
    return [e for e in events_of(page) if e["kind"] == "slider"]


def server_events(db, token: str) -> list[Event]:
    with db.transaction() as s:
        pid = s.scalars(select(Participant.id).where(Participant.token == token)).one()
        return list(s.scalars(select(Event).where(Event.participant == pid).order_by(Event.trial, Event.seq)))


def settled(page) -> None:
    """The page holds the session (its claim answered) and the server has acknowledged every event."""
    wait_until(page, "window.__modprefs.claimed === true && window.__modprefs.pending() === 0")


def listen(page, pos: str) -> None:
    page.click(f"#play-{pos}")
    page.wait_for_selector(f"#rating_{pos}:enabled", timeout=15000)


def coherent(page) -> str:
    return "B" if page.locator("#audio-A").get_attribute("src").endswith("/attn_1.wav") else "A"


@pytest.fixture(scope="module")
def audio_app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("audio")
    st = one_condition(tmp / "study", "audio", slots=8)
    url = f"sqlite:///{tmp}/audio.db"
    db = load(st, url)
    with app_server(url, "--timing-tolerance", "0.5") as base:
        yield base, db, st


@pytest.fixture
def context(browser):
    ctx = browser.new_context(viewport={"width": 1100, "height": 900}, has_touch=True)
    errors: list[str] = []
    ctx.on("weberror", lambda e: errors.append(str(e.error)))
    yield ctx
    ctx.close()
    assert not errors, errors


# ---- sliders -----------------------------------------------------------------------------------------


def test_locked_sliders_change_nothing_and_the_midpoint_counts(audio_app, context):
    """Clicks, drags, taps and keys on locked sliders change nothing and log nothing (chromium sends
    pointer events to disabled inputs); a click on exactly 50 rates 50; Enter sets the current value."""
    base, db, st = audio_app
    token, _ = enter(base)
    page = context.new_page()
    page.goto(f"{base}/p/{token}")
    settled(page)
    sliders = ["#rating_A", "#audio_quality_A", "#rating_B", "#audio_quality_B"]

    def attack(selectors, tab=True):
        for sel in selectors:
            for frac in (0.2, 0.5, 0.9):
                page.mouse.click(*slider_point(page, sel, frac=frac))
            page.mouse.move(*slider_point(page, sel, frac=0.1))
            page.mouse.down()
            page.mouse.move(*slider_point(page, sel, frac=0.95), steps=6)
            page.mouse.up()
            for frac in (0.3, 0.5, 0.8):
                page.touchscreen.tap(*slider_point(page, sel, frac=frac))
            page.evaluate(f"document.querySelector('{sel}').focus()")
            for key in ("ArrowRight", "ArrowLeft", "End", "Home", "PageUp", "Enter", " "):
                page.keyboard.press(key)
        for _ in range(8 if tab else 0):  # Tab skips disabled inputs: keys reach no locked slider
            page.keyboard.press("Tab")
            page.keyboard.press("ArrowRight")
        time.sleep(0.3)  # past the pointerup grace period and the batching delay
        for sel in selectors:
            loc = page.locator(sel)
            assert loc.is_disabled() and loc.input_value() == "50", sel
            assert "unset" in loc.get_attribute("class") and loc.get_attribute("name") is None, sel

    attack(sliders)
    assert slider_events(page) == []
    listen(page, "A")
    attack(["#rating_B", "#audio_quality_B"], tab=False)  # B is still locked (Tab would reach A's)
    assert slider_events(page) == []
    # the midpoint: the unset slider sits (invisibly) at 50, so this click changes no value
    page.mouse.click(*slider_point(page, "#rating_A", value=50))
    wait_until(page, "window.__modprefs.events.some(e => e.kind === 'slider')", timeout=3)
    loc = page.locator("#rating_A")
    assert loc.input_value() == "50" and "unset" not in loc.get_attribute("class")
    assert loc.get_attribute("name") == "rating_A"
    assert [(e["pos"], e["field"], e["x"]) for e in slider_events(page)] == [("A", "rating", 50)]
    # the keyboard: Enter on the focused slider sets it where it is (50 here)
    page.evaluate("document.getElementById('audio_quality_A').focus()")
    page.keyboard.press("Enter")
    assert [(e["field"], e["x"]) for e in slider_events(page)][-1] == ("audio_quality", 50)
    listen(page, "B")
    page.mouse.move(*slider_point(page, "#rating_B", frac=0.2))  # a drag sets the value it ends at
    page.mouse.down()
    page.mouse.move(*slider_point(page, "#rating_B", value=77), steps=8)
    page.mouse.up()
    page.touchscreen.tap(*slider_point(page, "#audio_quality_B", value=20))  # a tap on the touch screen
    wait_until(page, "window.__modprefs.events.filter(e => e.kind === 'slider').length >= 4", timeout=3)
    rated_b = int(page.locator("#rating_B").input_value())
    aq_b = int(page.locator("#audio_quality_B").input_value())
    assert abs(rated_b - 77) <= 3 and abs(aq_b - 20) <= 3
    page.check(f"input[name=preference][value={coherent(page)}]")
    assert page.is_enabled("#submit")
    with page.expect_navigation():
        page.click("#submit")
    evs = server_events(db, token)
    first_ended = min(e.seq for e in evs if e.kind == "ended" and not e.refused)
    assert all(e.seq > first_ended for e in evs if e.kind == "slider")  # nothing logged while locked
    assert sorted((e.field, e.value) for e in evs if e.kind == "slider") == sorted(
        [("rating", 50.0), ("audio_quality", 50.0), ("rating", float(rated_b)), ("audio_quality", float(aq_b))]
    )
    with db.transaction() as s:
        pid = s.scalars(select(Participant.id).where(Participant.token == token)).one()
        row = s.scalars(select(TrialResult).where(TrialResult.participant == pid)).one()
    first = row.first_clip  # the clip shown as Response A
    assert getattr(row, f"rating_{first}") == 50 and getattr(row, f"audio_quality_{first}") == 50
    assert getattr(row, f"rating_{1 - first}") == rated_b and getattr(row, f"audio_quality_{1 - first}") == aq_b


# ---- reloads and flaky networks ------------------------------------------------------------------------


def test_reload_mid_trial_loses_no_event_and_restores_the_entered_values(audio_app, context):
    """Events queued while offline (and the typed reason) survive a reload whose unload flush (a
    beacon) races the new page re-sending them from storage: every event id is stored exactly once,
    the server's sequence has no gap, and the sliders, the preference and the reason come back."""
    base, db, st = audio_app
    token, _ = enter(base)
    page = context.new_page()
    page.goto(f"{base}/p/{token}")
    listen(page, "A")
    listen(page, "B")
    settled(page)
    ids = [e["id"] for e in events_of(page)]
    context.set_offline(True)
    page.mouse.click(*slider_point(page, "#rating_A", value=80))
    page.mouse.click(*slider_point(page, "#rating_B", value=30))
    page.mouse.click(*slider_point(page, "#audio_quality_A", value=50))  # the midpoint, unchanged value
    page.mouse.click(*slider_point(page, "#audio_quality_B", value=65))
    choice = coherent(page)
    page.check(f"input[name=preference][value={choice}]")
    page.fill("#justification", "Clearer & kinder <b>answer</b>")
    time.sleep(0.8)  # the page tries to send, the network is down
    assert page.evaluate("window.__modprefs.pending()") >= 5
    values = {
        s: page.locator(s).input_value() for s in ("#rating_A", "#rating_B", "#audio_quality_A", "#audio_quality_B")
    }
    ids += [e["id"] for e in events_of(page)][len(ids) :]
    context.set_offline(False)
    page.reload()  # the old page's beacon and the new page's re-send race
    settled(page)
    ids += [e["id"] for e in events_of(page)]
    race = page.evaluate("window.__modprefs.responses.map(r => [r.stored, r.duplicates])")
    for sel, v in values.items():
        loc = page.locator(sel)
        assert loc.input_value() == v and "unset" not in loc.get_attribute("class") and loc.is_enabled(), sel
    assert page.is_checked(f"input[name=preference][value={choice}]")
    assert page.input_value("#justification") == "Clearer & kinder <b>answer</b>"
    assert page.is_enabled("#submit")
    # a second reload straight after a change (before the batch is sent): the beacon against the re-send
    page.mouse.click(*slider_point(page, "#rating_A", value=90))
    values["#rating_A"] = page.locator("#rating_A").input_value()
    ids += [e["id"] for e in events_of(page)][-1:]
    page.reload()
    settled(page)
    ids += [e["id"] for e in events_of(page)]
    assert page.locator("#rating_A").input_value() == values["#rating_A"]
    evs = server_events(db, token)
    stored = [e.eid for e in evs]
    assert sorted(stored) == sorted(ids) and len(set(stored)) == len(stored)  # all there, each once
    assert [e.seq for e in evs] == list(range(len(evs)))  # numbered on receipt: no gap, no reuse
    with db.transaction() as s:
        assert s.scalars(select(Incident).where(Incident.kind == "event_conflict")).all() == []
    # which side won the race: re-sent events the beacon had already delivered come back as duplicates
    print(f"after the reload, the new page's batches (stored, duplicates): {race}")
    with page.expect_navigation():
        page.click("#submit")
    with db.transaction() as s:
        pid = s.scalars(select(Participant.id).where(Participant.token == token)).one()
        row = s.scalars(select(TrialResult).where(TrialResult.participant == pid)).one()
    first = row.first_clip
    assert getattr(row, f"rating_{first}") == int(values["#rating_A"])
    assert getattr(row, f"rating_{1 - first}") == int(values["#rating_B"])
    assert getattr(row, f"audio_quality_{first}") == 50
    assert row.justification == "Clearer & kinder <b>answer</b>"
    assert row.rating_changes is not None and row.decision_time_s > 2


# ---- the server checks the listening ---------------------------------------------------------------------

FORGE = """async ([events, trial]) => {
  const D = JSON.parse(document.getElementById('page-data').textContent);
  const r = await fetch(D.events_url, {method: 'POST', headers: {'Content-Type': 'application/json',
    'X-CSRF-Token': D.csrf}, body: JSON.stringify({trial: trial, tab: window.__modprefs.tab, events: events})});
  return await r.json();
}"""
SUBMIT = """async () => {
  const D = JSON.parse(document.getElementById('page-data').textContent);
  const body = new URLSearchParams({csrf: D.csrf, rating_A: '60', rating_B: '40', audio_quality_A: '50',
    audio_quality_B: '50', preference: 'A', events: '[]'});
  const r = await fetch('/p/' + D.token + '/trial/' + D.trial, {method: 'POST', body: body});
  return [r.status, await r.text()];
}"""


def test_forged_listens_are_refused_and_a_real_listen_passes(audio_app, context):
    base, db, st = audio_app
    token, _ = enter(base)
    page = context.new_page()
    # this page never fetches its audio: its requests are held unanswered (no error, so the player does not retry)
    page.route("**/*.wav*", lambda route: None)
    page.goto(f"{base}/p/{token}")
    settled(page)
    now = int(time.time() * 1000)
    src = page.locator("#audio-A").get_attribute("src")
    dur = st.durations[src.rsplit("/", 1)[-1][:-4]]
    # 1. play + ended for audio never fetched, the ended a full duration later: refused
    page.evaluate(FORGE, [[{"id": "f1", "kind": "play", "pos": "A", "t": now}], 0])
    time.sleep(dur + 0.1)
    res = page.evaluate(FORGE, [[{"id": "f2", "kind": "ended", "pos": "A", "t": now + 5000}], 0])
    assert [r["reason"] for r in res["refused"]] == ["audio_not_fetched"] and res["heard"] == []
    # 2. the audio fetched, then ended right after play: too early
    assert httpx.get(base + src).status_code == 200  # this session fetches A's audio (B's stays unfetched)
    page.evaluate(FORGE, [[{"id": "f3", "kind": "play", "pos": "A", "t": now + 6000}], 0])
    res = page.evaluate(FORGE, [[{"id": "f4", "kind": "ended", "pos": "A", "t": now + 9000}], 0])
    assert [r["reason"] for r in res["refused"]] == ["too_early"] and res["heard"] == []
    # 3. both in one batch (a client clock saying 30 s passed does not count)
    res = page.evaluate(
        FORGE,
        [
            [
                {"id": "f5", "kind": "play", "pos": "B", "t": now},
                {"id": "f6", "kind": "ended", "pos": "B", "t": now + 30000},
            ],
            0,
        ],
    )
    assert [r["reason"] for r in res["refused"]] == ["audio_not_fetched"]
    # the trial is refused with a message, and logged
    status, text = page.evaluate(SUBMIT)
    assert status == 422 and "listen to both responses" in text and "Responses A and B have not been heard" in text
    with db.transaction() as s:
        pid = s.scalars(select(Participant.id).where(Participant.token == token)).one()
        kinds = [i.kind for i in s.scalars(select(Incident).where(Incident.participant == pid))]
        assert s.scalars(select(TrialResult).where(TrialResult.participant == pid)).all() == []
    assert kinds.count("listen_refused") == 3 and kinds.count("trial_refused") == 1
    # a real listen in the page passes
    page.unroute("**/*.wav*")
    page.reload()
    settled(page)
    assert page.is_disabled("#rating_A") and page.evaluate("window.__modprefs.heard") == {"A": False, "B": False}
    listen(page, "A")
    listen(page, "B")
    settled(page)
    assert page.evaluate("window.__modprefs.responses.flatMap(r => r.refused)") == []
    assert sorted(page.evaluate("window.__modprefs.responses.filter(r => r.heard.length).at(-1).heard")) == ["A", "B"]
    for sel, v in (("#rating_A", 70), ("#rating_B", 30), ("#audio_quality_A", 60), ("#audio_quality_B", 80)):
        page.mouse.click(*slider_point(page, sel, value=v))
    page.check(f"input[name=preference][value={coherent(page)}]")
    with page.expect_navigation():
        page.click("#submit")
    assert data_of(page)["trial"] == 1
    refused = sorted(e.refused for e in server_events(db, token) if e.refused)
    assert refused == ["audio_not_fetched", "audio_not_fetched", "too_early"]


# ---- text condition: sequential presentation ------------------------------------------------------------


@pytest.fixture(scope="module")
def text_app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("text")
    st = one_condition(tmp / "study", "text", slots=6)
    url = f"sqlite:///{tmp}/text.db"
    db = load(st, url)
    with app_server(url, "--text-min-read", "2", "--timing-tolerance", "0.3") as base:
        yield base, db, st


def test_text_condition_reveals_b_only_after_a(text_app, context):
    base, db, st = text_app
    token, _ = enter(base)
    page = context.new_page()
    t0 = time.monotonic()
    page.goto(f"{base}/p/{token}")
    settled(page)
    assert page.is_visible("#text-A") and not page.is_visible("#response-B") and not page.is_visible("#text-B")
    assert page.is_disabled("#reveal-B") and page.is_disabled("#rating_B")
    # a reveal posted from the page before the reading time: refused by the server
    res = page.evaluate(FORGE, [[{"id": "r-early", "kind": "reveal", "pos": "B", "t": 1}], 0])
    assert [r["reason"] for r in res["refused"]] == ["reveal_too_early"] and res["revealed"] is False
    page.locator("#reveal-B").click(force=True)  # too early: the button does nothing
    page.mouse.click(*slider_point(page, "#rating_A", value=64))  # A can be rated while reading
    assert not page.is_visible("#response-B")
    settled(page)
    page.wait_for_selector("#reveal-B:enabled", timeout=5000)
    assert time.monotonic() - t0 >= 1.9
    page.click("#reveal-B")
    assert page.is_visible("#text-B") and page.is_enabled("#rating_B") and not page.is_visible("#reveal-box")
    settled(page)
    assert page.evaluate("window.__modprefs.responses.at(-1).revealed") is True
    page.reload()  # B stays revealed after a reload
    settled(page)
    assert page.is_visible("#text-B") and page.locator("#rating_A").input_value() == "64"
    page.mouse.click(*slider_point(page, "#rating_B", value=20))
    text_a = page.locator("#text-A").inner_text().strip()
    page.check(
        "input[name=preference][value=" + ("A" if text_a == ATTENTION["responses"][0]["text"].strip() else "B") + "]"
    )
    with page.expect_navigation():
        page.click("#submit")
    assert data_of(page)["trial"] == 1
    evs = server_events(db, token)
    onset = min(e.server_ts for e in evs if e.kind == "onset")
    reveals = [(e.refused, e.server_ts - onset) for e in evs if e.kind == "reveal"]
    assert reveals[0][0] == "reveal_too_early" and reveals[1][0] is None and reveals[1][1] >= 1.7


def test_text_reveal_auto_mode(tmp_path, context):
    st = one_condition(tmp_path / "study", "text", slots=2)
    url = f"sqlite:///{tmp_path}/auto.db"
    load(st, url)
    with app_server(url, "--text-reveal", "auto", "--text-min-read", "1") as base:
        token, _ = enter(base)
        page = context.new_page()
        page.goto(f"{base}/p/{token}")
        assert not page.is_visible("#response-B") and page.locator("#reveal-B").count() == 0
        page.wait_for_selector("#text-B", state="visible", timeout=5000)
        settled(page)
        assert [e["kind"] for e in events_of(page)].count("reveal") == 1
        assert page.evaluate("window.__modprefs.responses.at(-1).revealed") is True


# ---- rate limits -------------------------------------------------------------------------------------------


def test_start_beyond_the_limit_gets_429_with_retry_after(tmp_path, context, browser):
    st = one_condition(tmp_path / "study", "text", slots=4)
    url = f"sqlite:///{tmp_path}/rate.db"
    load(st, url)
    with app_server(
        url, "--rate-start-ip", "3", "--rate-start-pid", "2", "--rate-session-token", "6", "--rate-window", "60"
    ) as base:
        page = context.new_page()
        # per Prolific id: 2 entries, the third is refused
        statuses = [page.goto(f"{base}/start?PROLIFIC_PID=flood1&STUDY_ID=S&SESSION_ID=x").status for _ in range(3)]
        assert statuses == [200, 200, 429]
        last = page.goto(f"{base}/start?PROLIFIC_PID=flood1&STUDY_ID=S&SESSION_ID=x")
        assert last.status == 429 and 1 <= int(last.headers["retry-after"]) <= 60
        assert "Too many requests" in page.content()
        # per IP: 3 entries from this address (the two above used it too), then 429
        other = browser.new_context(extra_http_headers={"X-Forwarded-For": "10.77.0.1"})
        p2 = other.new_page()
        got = [p2.goto(f"{base}/start").status for _ in range(4)]
        assert got == [200, 200, 200, 429]
        # a session's own requests (pages, events, audio): per token
        fresh = browser.new_context(extra_http_headers={"X-Forwarded-For": "10.77.0.2"})
        fresh.route("**/ping", lambda route: route.abort())  # page loads only (the pages' heartbeats not counted)
        p3 = fresh.new_page()
        assert p3.goto(f"{base}/start").status == 200
        token = p3.url.rsplit("/", 1)[-1]
        codes = [p3.goto(f"{base}/p/{token}").status for _ in range(7)]
        assert codes[:5] == [200] * 5 and codes[-1] == 429  # the redirect to /p/ counted once
        other.close()
        fresh.close()


# ---- headphone screening --------------------------------------------------------------------------------------

RENDER = """async ([src, rendering, intervals]) => {
  // decode the check's sound and render it as a listener's device would: stereo (each ear one
  // channel) or mono (Web Audio down-mixes stereo to one channel as (L + R) / 2); return the
  // quietest tone (1-based) by RMS level averaged over the ears
  const data = await (await fetch(src)).arrayBuffer();
  const probe = new OfflineAudioContext(2, 1, 22050);
  const decoded = await probe.decodeAudioData(data);
  const channels = rendering === 'mono' ? 1 : 2;
  const ctx = new OfflineAudioContext(channels, decoded.length, decoded.sampleRate);
  const node = ctx.createBufferSource();
  node.buffer = decoded;
  node.connect(ctx.destination);
  node.start();
  const out = await ctx.startRendering();
  const ears = channels === 2 ? [out.getChannelData(0), out.getChannelData(1)]
                              : [out.getChannelData(0), out.getChannelData(0)];
  const levels = intervals.map(([a, b]) => {
    const i0 = Math.floor(a * out.sampleRate), i1 = Math.floor(b * out.sampleRate);
    return ears.reduce((acc, x) => { let s = 0; for (let i = i0; i < i1; i++) s += x[i] * x[i];
      return acc + Math.sqrt(s / (i1 - i0)) / ears.length; }, 0);
  });
  return 1 + levels.indexOf(Math.min(...levels));
}"""


def cli_load(st, url: str, *extra: str) -> None:
    """``modprefs app load`` with its defaults (the headphone check, the calibration, the practice trial on)."""
    from modprefs.cli import main

    f = st.files
    args = ["app", "load", "--db", url, "--assignments", str(f.assignments), "--stimuli", str(f.stimuli)]
    args += ["--conversations", str(f.conversations), "--prompts", str(f.prompts), "--manifest", str(f.manifest)]
    assert main([*args, "--base-dir", str(f.base_dir), "--completion-code", "DONE1234", *extra]) == 0


def calibrate(page) -> None:
    """The level-setting step: play the sample (elapsed / total time shown), confirm, continue."""
    assert data_of(page)["page"] == "calibration" and page.is_disabled("#cal-submit")
    page.click("#cal-play")
    wait_until(page, "window.__modprefs.calPlayed === true", timeout=15)
    assert re.fullmatch(r"0:0\d / 0:0[1-9]", page.inner_text("#cal-time")), page.inner_text("#cal-time")
    with page.expect_navigation():
        page.click("#cal-submit")


def test_headphone_check_passes_stereo_and_fails_mono(tmp_path, browser):
    """By default (``app load`` without options, ``serve`` without --headphone-check) an audio participant
    sets the volume (the calibration step), then takes the headphone check. Two audio participants take
    the antiphase check in the browser. Their answers come from the
    check's own sounds rendered by chromium's Web Audio (decodeAudioData + an OfflineAudioContext)
    as they would reach the ears: a listener with stereo headphones (left channel to the left ear,
    right to the right) and one with a mono rendering (one loudspeaker or a mono downmix; (L+R)/2
    to both ears). Each answers the tone that is quietest at their ears. With stereo the -6 dB
    tone is quietest and the check passes (6/6); in mono the antiphase tone cancels to silence, is
    chosen, and the check fails (0/6). The Python model (tests/support/listener.py) gives the same
    answers from the same WAVs. Each sound is played in the page (once, as the check allows)
    before its answer can be given. Both go on (``record``): to the instructions, then the practice trial,
    whose players show the elapsed and the total time."""
    from modprefs.app.db import Database

    st = one_condition(tmp_path / "study", "audio", slots=3)
    url = f"sqlite:///{tmp_path}/hp.db"
    cli_load(st, url)
    db = Database(url, create=False)
    with app_server(url) as base:
        pages = {}
        for rendering in ("stereo", "mono"):
            token, _ = enter(base)
            ctx = browser.new_context(viewport={"width": 1000, "height": 900})
            page = ctx.new_page()
            page.goto(f"{base}/p/{token}")
            calibrate(page)
            assert data_of(page)["page"] == "headphones" and page.is_disabled("#hp-submit")
            pages[rendering] = (token, page)
        answers = {r: [] for r in pages}
        for i in range(headphones.N_TRIALS):
            for _, page in pages.values():
                assert page.is_disabled(f"input[name=q{i}][value='1']")  # no answer before listening
                page.click(f"#hp-play-{i}")
            for rendering, (_, page) in pages.items():
                src = page.locator(f"#hp-audio-{i}").get_attribute("src")
                answers[rendering].append(page.evaluate(RENDER, [src, rendering, headphones.intervals()]))
                wait_until(page, f"window.__modprefs.hpEnded['{i}'] === true", timeout=15)
                page.check(f"input[name=q{i}][value='{answers[rendering][-1]}']")
        for rendering, (_, page) in pages.items():
            wavs = [
                httpx.get(base + page.locator(f"#hp-audio-{i}").get_attribute("src")).content
                for i in range(headphones.N_TRIALS)
            ]
            assert headphone_answers(wavs, rendering) == answers[rendering]
            with page.expect_navigation():
                page.click("#hp-submit")
            assert data_of(page)["page"] == "instructions"  # recorded, not required: the session goes on
            with page.expect_navigation():
                page.click("#start-practice")
            assert data_of(page)["page"] == "trial" and data_of(page)["trial"] == -1
            assert "Practice task" in page.inner_text("header")
        page = pages["stereo"][1]  # elapsed / total on each player
        wait_until(page, "document.getElementById('time-A').textContent !== '0:00 / 0:00'", timeout=10)
        assert re.fullmatch(r"0:00 / 0:0[1-9]", page.inner_text("#time-A")), page.inner_text("#time-A")
        page.click("#play-A")
        page.wait_for_selector("#rating_A:enabled", timeout=15000)
        total = page.inner_text("#time-A").split(" / ")[1]
        assert page.inner_text("#time-A") == f"{total} / {total}" and total != "0:00"
        with db.transaction() as s:
            got = {p.token: (p.headphone_check, p.headphone_correct) for p in s.scalars(select(Participant))}
            calibrated = {p.token: p.calibrated_at for p in s.scalars(select(Participant))}
        assert got[pages["stereo"][0]] == ("passed", 6)
        assert got[pages["mono"][0]] == ("failed", 0)
        assert all(calibrated[tok] is not None for tok, _ in pages.values())
