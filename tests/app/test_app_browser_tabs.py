"""No participant loses work (issue #48), in headless chromium: one live tab per session, an open page never
expires, an expired session ends with a code, media that fail to load end on a page with a code.

One server for the module (`modprefs app serve` on loopback, an audio study with 1-1.2 s clips) with short
timeouts, so that what takes a minute in a real study takes seconds here: ``--leave-grace 4`` (a closed page's
slot is kept 4 s instead of 60), ``--abandon-minutes 0.1`` (6 s instead of 30 minutes; the pages' heartbeat is then
every 1.33 s), and the lab's codes ``--expired-code TIMEOUT1 --error-code MEDIA503``. Participants enter over HTTP
(consent and demographics) and their personal link is then opened in chromium (tests/support/browser_kit.py; skipped
without it unless MODPREFS_REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import re
import time

import httpx
import pytest
from sqlalchemy import select

from modprefs.app.models import Event, Incident, Participant, TrialResult
from modprefs.app.protocol import derive_measures
from support.app_services import app_server
from support.app_study import load, make_study
from support.browser_kit import data_of, wait_until

pytestmark = pytest.mark.integration  # a server and a browser: not in `make test-fast`

CSRF_RE = re.compile(r'name="csrf" value="([^"]+)"')
GRACE_S, ABANDON_S = 4.0, 6.0
_ips = iter(range(10, 250))


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tabs")
    st = make_study(tmp / "study", n_prompts=4, raters_per_condition=12, trials=1, seed=9, durations=(1.0, 1.2))
    st.assignments = st.assignments[st.assignments.condition == "audio"]
    st.assignments.to_csv(st.files.assignments, index=False)
    url = f"sqlite:///{tmp}/tabs.db"
    db = load(st, url, expired_code="TIMEOUT1", error_code="MEDIA503")
    args = ["--leave-grace", str(GRACE_S), "--abandon-minutes", str(ABANDON_S / 60)]
    with app_server(url, *args) as base:
        yield base, db


@pytest.fixture
def context(browser):
    ctx = browser.new_context(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    ctx.on("weberror", lambda e: errors.append(str(e.error)))
    yield ctx
    ctx.close()
    assert not errors, errors


def enter(base: str) -> str:
    """A participant past consent and demographics (over HTTP, from an address of their own); their token."""
    with httpx.Client(base_url=base, follow_redirects=True, headers={"X-Forwarded-For": f"10.1.0.{next(_ips)}"}) as c:
        r = c.get("/start")
        token, csrf = str(r.url).rsplit("/", 1)[-1], CSRF_RE.search(r.text).group(1)
        assert c.post(f"/p/{token}/consent", data={"csrf": csrf, "agree": "yes"}).status_code == 200
        r = c.post(f"/p/{token}/demographics", data={"csrf": csrf, "age": "30", "native_english": "yes"})
        assert r.status_code == 200 and "page-data" in r.text, r.text
    return token


def participant(db, token: str) -> Participant:
    with db.transaction() as s:
        p = s.scalars(select(Participant).where(Participant.token == token)).one()
        s.expunge(p)
        return p


def incidents(db, token: str) -> list[tuple[str, str]]:
    with db.transaction() as s:
        pid = s.scalars(select(Participant.id).where(Participant.token == token)).one()
        return [(i.kind, i.detail) for i in s.scalars(select(Incident).where(Incident.participant == pid))]


def live(page) -> None:
    wait_until(page, "window.__modprefs.claimed === true")


def listen(page, pos: str) -> None:
    page.click(f"#play-{pos}")
    page.wait_for_selector(f"#rating_{pos}:enabled", timeout=15000)


def rate(page, keys: dict[str, str]) -> None:
    """Set each slider by keyboard (``{"#rating_A": "End", ...}``: the key from no value), committed by Enter."""
    for sel, key in keys.items():
        page.focus(sel)
        page.keyboard.press(key)
        page.keyboard.press("Enter")


def coherent(page) -> str:
    return "B" if page.locator("#audio-A").get_attribute("src").endswith("/attn_1.wav") else "A"


def finish_trial(page, keys: dict[str, str] | None = None) -> None:
    """Listen to what is not heard yet, rate, prefer and submit the current trial."""
    live(page)
    for pos in "AB":
        if not page.evaluate(f"window.__modprefs.heard['{pos}']"):
            listen(page, pos)
    default = {"#rating_A": "End", "#rating_B": "Home", "#audio_quality_A": "End", "#audio_quality_B": "End"}
    rate(page, keys or default)
    page.check(f"input[name=preference][value={coherent(page) if data_of(page)['trial'] == 0 else 'A'}]")
    with page.expect_navigation():
        page.click("#submit")


def test_two_tabs_one_closed_the_other_idle_past_the_grace_while_another_starts(app, context):
    """The same link in two tabs: the tab opened last holds the session (the other is told at once); the holder
    is closed and the first tab stays open, idle longer than the leave grace, while another participant starts
    (whose page load sweeps abandoned sessions): the open tab's heartbeat keeps the session, "Continue in this tab"
    takes it back with its own state (Response A heard), and the session completes with its code."""
    base, db = app
    token = enter(base)
    first = context.new_page()
    first.goto(f"{base}/p/{token}")
    live(first)
    listen(first, "A")
    second = context.new_page()
    second.goto(f"{base}/p/{token}")
    live(second)
    # the first tab is told at once (BroadcastChannel), the second says the task starts afresh there
    wait_until(first, "window.__modprefs.superseded === true", timeout=5)
    assert first.locator("#tab-dialog").is_visible()
    assert "This study is open in another tab" in first.inner_text("#tab-dialog")
    assert "started in another tab" in second.inner_text("#tab-notice")
    assert second.is_disabled("#rating_A") and second.evaluate("window.__modprefs.heard") == {"A": False, "B": False}
    # the open tab's heartbeat clears the leave mark it finds: held back until the beacon is seen (under load a
    # heartbeat could land between the beacon and the next look, and the mark would never be seen)
    first.route("**/ping", lambda route: route.abort())
    second.close(run_before_unload=True)  # the live tab leaves (its pagehide beacon)
    deadline = time.monotonic() + 20
    while participant(db, token).left_at is None:
        assert time.monotonic() < deadline, "the leave beacon never arrived"
        time.sleep(0.1)
    first.unroute("**/ping")
    time.sleep(GRACE_S + 2)  # idle (the dialog open) past the grace
    newcomer = enter(base)  # another participant starts: their page load sweeps
    with httpx.Client(base_url=base) as c:
        assert 'id="page-data"' in c.get(f"/p/{newcomer}").text
    p = participant(db, token)
    assert p.state == "trials" and p.left_at is None, (p.state, p.screen_reason)
    assert participant(db, newcomer).slot_id != p.slot_id
    with first.expect_navigation():
        first.click("#tab-continue")  # the first tab takes the session back: a reload claims it
    live(first)
    assert first.evaluate("window.__modprefs.heard") == {"A": True, "B": False}  # its own listen kept
    while data_of(first)["page"] == "trial":
        finish_trial(first)
    first.check("input[name=difficulty][value='3']")
    with first.expect_navigation():
        first.click("button[type=submit]")
    assert first.inner_text("#completion-code") == "DONE1234"
    p = participant(db, token)
    assert p.state == "done" and p.completed
    kinds = [k for k, _ in incidents(db, token)]
    assert kinds == ["tab_takeover", "tab_takeover"], kinds  # the second tab's takeover, and taking it back


def test_two_tabs_on_one_trial_store_the_submitting_tabs_measures(app, browser):
    """The same link on two devices (two browser contexts, so no BroadcastChannel between them), both on the
    attention check: the laptop listens (replaying A), rates and prefers; the phone opens the link (it now holds
    the session), listens once each and rates differently; the laptop, whose heartbeat cannot reach the server,
    submits: refused, an incident, and the page tells the participant it was not saved; the phone submits: the
    stored ratings and measures are the phone's alone (its events)."""
    base, db = app
    token = enter(base)
    laptop_ctx = browser.new_context(viewport={"width": 1100, "height": 900})
    phone_ctx = browser.new_context(viewport={"width": 390, "height": 844})
    laptop, phone = laptop_ctx.new_page(), phone_ctx.new_page()
    laptop.goto(f"{base}/p/{token}")
    live(laptop)
    listen(laptop, "A")
    listen(laptop, "B")
    before = laptop.evaluate("window.__modprefs.events.filter(e => e.kind === 'ended' && e.pos === 'A').length")
    laptop.click("#play-A")  # a replay of Response A
    wait_until(laptop, f"window.__modprefs.events.filter(e => e.kind === 'ended' && e.pos === 'A').length > {before}")
    rate(laptop, {"#rating_A": "Home", "#rating_B": "End", "#audio_quality_A": "Home", "#audio_quality_B": "Home"})
    laptop.check(f"input[name=preference][value={coherent(laptop)}]")
    wait_until(laptop, "window.__modprefs.pending() === 0")
    laptop_ctx.route("**/ping", lambda route: route.abort())  # its heartbeat no longer gets through
    laptop_tab = laptop.evaluate("window.__modprefs.tab")
    phone.goto(f"{base}/p/{token}")
    live(phone)
    phone_tab = phone.evaluate("window.__modprefs.tab")
    assert phone_tab != laptop_tab and phone.is_visible("#tab-notice")
    t0 = time.time()
    listen(phone, "A")
    listen(phone, "B")
    rate(phone, {"#rating_A": "End", "#rating_B": "Home", "#audio_quality_A": "End", "#audio_quality_B": "End"})
    phone.check(f"input[name=preference][value={coherent(phone)}]")
    with laptop.expect_navigation():
        laptop.click("#submit")  # from the tab that no longer holds the session
    assert laptop.inner_text("h1") == "Not saved: the study is open in another tab"
    assert "only the answers given there are used" in laptop.inner_text("main")
    with phone.expect_navigation():
        phone.click("#submit")
    assert data_of(phone)["trial"] == 1  # the phone's submission is stored
    laptop_ctx.close()
    phone_ctx.close()
    with db.transaction() as s:
        p = s.scalars(select(Participant).where(Participant.token == token)).one()
        row = s.scalars(select(TrialResult).where(TrialResult.participant == p.id, TrialResult.trial == 0)).one()
        events = s.scalars(select(Event).where(Event.participant == p.id, Event.trial == 0).order_by(Event.seq)).all()
        log = [
            {"kind": e.kind, "response": e.response, "field": e.field, "value": e.value, "t": e.client_ms, "seq": e.seq}
            for e in events
            if e.tab == phone_tab and not e.refused
        ]
    assert {e.tab for e in events} == {laptop_tab, phone_tab}  # each event attributed to the tab that sent it
    first = row.first_clip
    assert row.tab == phone_tab
    # the phone's values: A (the first-presented clip) at the top, B at the bottom
    assert (getattr(row, f"rating_{first}"), getattr(row, f"rating_{1 - first}")) == (100, 1)
    assert getattr(row, f"audio_quality_{first}") == 100 and getattr(row, f"audio_quality_{1 - first}") == 100
    submit_ms = next(e["t"] for e in log if e["kind"] == "submit")
    assert row.decision_time_s == derive_measures(log, "audio", first, submit_ms)["decision_time_s"]
    assert row.decision_time_s <= time.time() - t0 + 1.0  # the phone's own time, not the laptop's longer one
    assert (row.replays_0, row.replays_1, row.relistened_first) == (0, 0, False)  # the laptop's replay not counted
    assert row.rating_changes == 0 and row.slider_moves == 4
    kinds = incidents(db, token)
    superseded = [d for k, d in kinds if k == "superseded_submission"]
    assert [k for k, _ in kinds] == ["tab_takeover", "superseded_submission"], kinds
    assert f"from tab {laptop_tab}, superseded by tab {phone_tab}: not stored" in superseded[0]


def test_a_page_open_past_the_abandon_timeout_submits_and_an_expired_session_ends_with_its_code(app, context):
    """A trial page left open (nothing clicked) longer than --abandon-minutes while another participant starts:
    its heartbeat kept the session, and the submission is stored. Then the connection drops for longer than the
    timeout while another participant starts: the session expires (an incident); when the connection is back the
    open page goes to the expired page, with the lab's "timed out" code."""
    base, db = app
    token = enter(base)
    page = context.new_page()
    page.goto(f"{base}/p/{token}")
    live(page)
    listen(page, "A")
    listen(page, "B")
    time.sleep(ABANDON_S + 2)  # reading, with the page open
    enter(base)  # a newcomer's arrival sweeps abandoned sessions
    finish_trial(page)
    assert data_of(page)["trial"] == 1 and participant(db, token).state == "trials"
    context.set_offline(True)  # the connection drops: no heartbeat gets through
    time.sleep(ABANDON_S + 1)
    enter(base)
    assert participant(db, token).state == "abandoned"
    context.set_offline(False)
    page.wait_for_selector("#end-code", timeout=10000)  # the next heartbeat finds the session ended: the end page
    assert page.inner_text("h1") == "This session has expired" and page.inner_text("#end-code") == "TIMEOUT1"
    assert page.locator("#return-link").count() == 0  # entered without a Prolific id: no return link
    assert [k for k, _ in incidents(db, token)] == ["session_expired"]


def test_a_clip_answering_503_is_retried_then_the_error_page_with_a_code(app, context):
    """Every request for the trial's audio answers 503 (an overloaded proxy): the player shows that the audio is
    loading, then that it is trying again; after the retries (1, 2, 4 s) the page reports the failure (an
    incident with what the server answered) and shows the problem page with the lab's error code."""
    base, db = app
    token = enter(base)
    page = context.new_page()
    hits: dict[str, int] = {}

    def unavailable(route) -> None:
        path = route.request.url.split("?")[0]
        hits[path] = hits.get(path, 0) + 1
        route.fulfill(status=503, body="Service Unavailable", headers={"Retry-After": "5"})

    page.route("**/audio/*.wav*", unavailable)
    page.goto(f"{base}/p/{token}")
    seen = set()
    deadline = time.monotonic() + 20
    while "/problem" not in page.url:
        assert time.monotonic() < deadline, f"no problem page: {page.url} {hits}"
        try:
            seen.add(page.inner_text("#load-A", timeout=200))
        except Exception:  # the page is navigating
            pass
        time.sleep(0.1)
    page.wait_for_load_state()
    assert "Loading the audio…" in seen or any("trying again (1 of 3)" in s for s in seen), seen
    assert any("trying again" in s for s in seen), seen
    assert page.inner_text("h1") == "The audio could not be loaded"
    assert page.inner_text("#error-code") == "MEDIA503"
    detail = page.inner_text("#problem-detail")
    assert "did not load after 4 attempts" in detail and "HTTP 503" in detail, detail
    assert max(hits.values()) >= 4, hits  # the first load and three retries (plus the status probe)
    (kind, logged), *rest = incidents(db, token)
    assert kind == "media_failed" and "HTTP 503" in logged and not rest
    page.unroute("**/audio/*.wav*")
    with page.expect_navigation():
        page.click("#try-again")  # the connection is back: the task goes on
    live(page)
    listen(page, "A")


HIDE = """(state) => {
  // headless chromium keeps every tab visible: the tab's visibility is set as a browser would, and the event sent
  Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => state});
  document.dispatchEvent(new Event('visibilitychange'));
}"""


def test_tab_visibility_and_window_blur_are_logged_exported_and_counted(app, context, tmp_path):
    """The participant switches to another tab and back (the window's focus lost and regained: real chromium events,
    with Playwright's focus emulation off) and hides the page for a while (the visibility events): each is logged
    with the page's tab, exported in events.csv, and counted per trial in trials.csv (hidden_count, hidden_s,
    blur_count)."""
    import pandas as pd

    from modprefs.app.export import export_dir

    base, db = app
    token = enter(base)
    page = context.new_page()
    page.goto(f"{base}/p/{token}")
    live(page)
    cdp = context.new_cdp_session(page)
    cdp.send("Emulation.setFocusEmulationEnabled", {"enabled": False})  # the page's focus follows the front tab
    listen(page, "A")
    elsewhere = context.new_page()
    elsewhere.bring_to_front()  # another tab in front: the study's window loses the focus
    time.sleep(0.5)
    page.bring_to_front()
    elsewhere.close()
    page.evaluate(HIDE, "hidden")
    time.sleep(1.0)
    page.evaluate(HIDE, "visible")
    tab = page.evaluate("window.__modprefs.tab")
    finish_trial(page)
    export_dir(db, tmp_path / "export")
    pid = participant(db, token).participant_id
    events = pd.read_csv(tmp_path / "export/events.csv")
    mine = events[(events.participant_id == pid) & (events.trial == 0)]
    assert set(mine.tab) == {tab}, mine[["kind", "tab"]]
    kinds = [k for k in mine.kind if k in ("blur", "focus", "hidden", "visible")]
    assert kinds == ["blur", "focus", "hidden", "visible"], list(mine.kind)
    trials = pd.read_csv(tmp_path / "export/trials.csv")
    row = trials[(trials.participant_id == pid) & (trials.trial == 0)].iloc[0]
    assert (row.hidden_count, row.blur_count) == (1, 1)
    assert 0.9 <= row.hidden_s <= 3.0, row.hidden_s
