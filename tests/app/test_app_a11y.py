"""Accessibility of the participant pages and the dashboard in a real browser (Playwright driving Debian's chromium).

* axe-core (``axe-playwright-python``'s axe 4.x) with **every** rule enabled (the WCAG 2.0-2.2 A, AA and AAA rules,
  the best practices and the experimental rules: ``browser_kit.axe_all_rules``) finds no violation on any page of
  either condition (consent, demographics and its error state, headphone check, calibration, instructions, practice
  trial, trial locked / unlocked / after the reveal / ready to submit, the other-tab dialog, difficulty, done, the
  ended pages: declined, already taken part, expired, paused, closed; the problem page, the not-saved page, the
  message pages) nor on the admin dashboard and the latest responses, at 1280x800 and at 390x844;
* chromium's accessibility tree (CDP ``Accessibility.getFullAXTree``) on the trial page in both conditions: every
  control has a name, each rating's name says which response it rates (no two share one), its description says
  "Not rated yet." until it is set, then only the scale's end labels, and its value is the value set; the players,
  the playback positions, the preference radios (in their named group) and the submit button are named (the tree
  has no aria-valuetext: the announced "not rated" / "100, Perfect" is checked from the DOM);
* the dashboard's per-participant CSV, fetched by the browser from its link: its rows in the export are the
  export's participants.csv; the approve list holds the Prolific ids of those who completed;
* each page has one h1 and a title of its own; demographics errors are tied to their fields (``aria-invalid``,
  ``aria-describedby``) and the focus goes to the first; the headphone check keeps the focus on the play button
  it pressed; "Show Response B" becoming available is announced; the completion page does not leave by itself;
  the dashboard updates by fetch into a live region (no meta refresh);
* what axe cannot see: hints are live regions; the playback position can be sought with the keyboard after the
  first listen; the slider track has 3:1 against the card and between its locked and unlocked states; every touch
  target is 44 px or more at 390 px;
* a keyboard-only participant (Tab, Space, Enter, arrow keys) completes both conditions; after "Show Response B"
  the focus is on Response B; a one-way move of many arrow presses is one logged change (``rating_changes`` 0).
  tests/app/test_app_browser_scale.py: a keyboard-only session on a 1-5 scale of labelled category points.

Skipped without chromium or Playwright unless MODPREFS_REQUIRE_BROWSER=1 (tests/support/browser_kit.py).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import update

from modprefs.app import service
from modprefs.app.models import Participant
from support.app_services import app_server
from support.app_study import ATTENTION, load, make_study
from support.browser_kit import (
    ax_controls,
    axe_all_rules,
    data_of,
    headings,
    tab_to,
    wait_until,
)

pytestmark = pytest.mark.integration  # a server and a browser: not in `make test-fast`

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "mobile": {"width": 390, "height": 844}}
SECRET = "a11y-admin-secret-0123456789"
CSRF_RE = re.compile(r'name="csrf" value="([^"]+)"')
TARGETS = (
    "button, a.button, input[type=range], label.inline, label.point, select, textarea, [role=slider], "
    "input:not([type=hidden]):not([type=radio]):not([type=range])"
)


def small_targets(page) -> list[str]:
    """Visible interactive elements under 44x44 CSS px (WCAG 2.5.5's size, asked for on phones)."""
    out = []
    for loc in page.locator(TARGETS).all():
        if not loc.is_visible():
            continue
        box = loc.bounding_box()
        if box and (box["height"] < 43.5 or box["width"] < 43.5):
            out.append(f"{loc.evaluate('e => e.outerHTML.slice(0, 80)')}: {box['width']:.0f}x{box['height']:.0f}")
    return out


class Audit:
    """axe (every rule) on the page, its h1 and its title; on a phone its touch targets."""

    def __init__(self, page, mobile: bool):
        self.page, self.mobile = page, mobile
        self.found: dict[str, list] = {}
        self.pages: list[str] = []
        self.titles: dict[str, str] = {}

    def __call__(self, name: str, kind: str | None = None) -> None:
        self.pages.append(name)
        v = axe_all_rules(self.page)
        if v:
            self.found[name] = v
        h1 = [text for level, text in headings(self.page) if level == 1]
        if len(h1) != 1:
            self.found[name + " (h1)"] = h1
        self.titles[kind or name] = self.page.title()
        if self.mobile:
            small = small_targets(self.page)
            if small:
                self.found[name + " (touch targets)"] = small


def luminance(rgb: str) -> float:
    vals = [float(x) for x in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3]]
    lin = [(c / 255 / 12.92) if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in vals]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def computed(page, selector: str, prop: str) -> str:
    """A computed colour as rgb(...) (custom properties resolved through a probe element's background)."""
    return page.evaluate(
        """([sel, prop]) => {
            const el = document.querySelector(sel);
            const v = getComputedStyle(el).getPropertyValue(prop).trim();
            const probe = document.createElement('span');
            probe.style.background = v; document.body.appendChild(probe);
            const c = getComputedStyle(probe).backgroundColor; probe.remove(); return c;
        }""",
        [selector, prop],
    )


def coherent_position(page, condition: str) -> str:
    if condition == "audio":
        return "B" if page.locator("#audio-A").get_attribute("src").endswith("/attn_1.wav") else "A"
    text_a = page.locator("#text-A").inner_text().strip()
    return "A" if text_a == ATTENTION["responses"][0]["text"].strip() else "B"


def live(page) -> None:
    wait_until(page, "window.__modprefs.claimed === true")


def demographics_by_pointer(page) -> None:
    page.fill("#age", "29")
    page.check("input[name=native_english][value=yes]")
    with page.expect_navigation():
        page.click("#demographics-form button[type=submit]")


def demographics_errors(page) -> dict:
    """The questionnaire sent without the native-language answer (the browser's own check off): the server's
    error page; where the focus is and how the error is tied to its field."""
    page.fill("#age", "29")
    page.evaluate("document.getElementById('demographics-form').noValidate = true")
    with page.expect_navigation():
        page.click("#demographics-form button[type=submit]")
    return page.evaluate(
        """() => { const a = document.activeElement; const g = document.getElementById('native_english-group');
            return {focus: a.name + '=' + a.value, invalid: a.getAttribute('aria-invalid'),
                    described: g.getAttribute('aria-describedby'),
                    error: document.getElementById(g.getAttribute('aria-describedby')).textContent,
                    summary: document.getElementById('error-summary').getAttribute('role'),
                    link: document.querySelector('#error-summary a').getAttribute('href')}; }"""
    )


def headphones_by_keyboard(page) -> list[str]:
    """Press each sound's play button by keyboard: where the focus is after each press (each plays once, and the
    next press pauses it: the screening's own flow is tested in test_app_browser_integrity.py); then answer."""
    focus = []
    for i in range(page.locator(".hp-question").count()):
        page.focus(f"#hp-play-{i}")
        page.keyboard.press("Enter")
        focus.append(
            page.evaluate("document.activeElement.id + ':' + document.activeElement.getAttribute('aria-disabled')")
        )
    page.evaluate("document.querySelectorAll('#headphones-form input[type=radio]').forEach(r => r.disabled = false)")
    for i in range(page.locator(".hp-question").count()):
        page.check(f"input[name=q{i}][value='1']")
    with page.expect_navigation():
        page.click("#hp-submit")
    return focus


def axe_session(page, base: str, pid: str, audit: Audit, checks: dict) -> str:
    page.goto(f"{base}/start?PROLIFIC_PID={pid}&STUDY_ID=a11y&SESSION_ID=s-{pid}")
    audit("consent")
    page.click("button[value=yes]")
    page.wait_for_selector("#demographics-form")
    audit("demographics")
    checks["errors"] = demographics_errors(page)
    audit("demographics (errors)")
    demographics_by_pointer(page)
    if data_of(page)["page"] == "headphones":
        audit("headphones")
        checks["hp_focus"] = headphones_by_keyboard(page)
    cond = data_of(page)["condition"]
    while data_of(page)["page"] == "trial":
        live(page)
        trial = data_of(page)["trial"]
        audit(f"{cond} trial {trial}: locked", f"trial {trial}")
        sliders = ["#rating_A", "#rating_B"]
        if cond == "audio":
            sliders += ["#audio_quality_A", "#audio_quality_B"]
            page.click("#play-A")
            page.wait_for_selector("#rating_A:enabled", timeout=15000)
            audit(f"{cond} trial {trial}: A unlocked", f"trial {trial}")
            page.click("#play-B")
            page.wait_for_selector("#rating_B:enabled", timeout=15000)
            assert page.get_attribute("#play-B", "aria-label") == "Replay response B"
            if trial == 0:
                checks["seek"] = seek_by_keyboard(page)
        else:
            assert page.is_disabled("#rating_B")
            checks["track_off"] = computed(page, "#rating_B", "--track")
            page.wait_for_selector("#reveal-B:enabled", timeout=15000)
            checks["reveal_announced"] = (
                page.get_attribute("#reveal-status", "role"),
                page.inner_text("#reveal-status"),
            )
            page.click("#reveal-B")
            audit(f"{cond} trial {trial}: after reveal", f"trial {trial}")
        if trial == 0:
            checks[cond] = aria_checks(page)
            checks[cond]["ax_unset"] = ax_controls(page)
        for sel in sliders:
            page.focus(sel)
            page.keyboard.press("End")
            page.keyboard.press("Enter")
        page.check(f"input[name=preference][value={coherent_position(page, cond) if trial == 0 else 'A'}]")
        assert page.is_enabled("#submit")
        if trial == 0:
            checks[cond]["ax_set"] = ax_controls(page)
            checks[cond]["valuetext_set"] = page.get_attribute("#rating_A", "aria-valuetext")
        audit(f"{cond} trial {trial}: ready", f"trial {trial}")
        with page.expect_navigation():
            page.click("#submit")
    assert data_of(page)["page"] == "difficulty"
    audit("difficulty")
    page.check("input[name=difficulty][value='2']")
    with page.expect_navigation():
        page.click("button[type=submit]")
    audit("done")
    return cond


def seek_by_keyboard(page) -> dict:
    page.focus("#progress-A")
    page.keyboard.press("Home")
    wait_until(page, "document.getElementById('audio-A').currentTime < 0.05", timeout=5)
    page.keyboard.press("ArrowRight")  # +5 s, clamped to the clip's end
    time.sleep(0.1)
    t = page.evaluate("document.getElementById('audio-A').currentTime")
    return {"t": t, "disabled": page.get_attribute("#progress-A", "aria-disabled")}


def aria_checks(page) -> dict:
    return {
        "valuetext_unset": page.get_attribute("#rating_A", "aria-valuetext"),
        "live": page.evaluate(
            "['submit-hint', 'server-notice'].map(id => document.getElementById(id).getAttribute('role'))"
        ),
        "status_roles": page.evaluate("[...document.querySelectorAll('.status')].map(e => e.getAttribute('role'))"),
        "track_on": computed(page, "#rating_A", "--track"),
        "card": page.evaluate("getComputedStyle(document.querySelector('.response')).backgroundColor"),
    }


def check_trial_ax(controls: list[dict], condition: str, rated: bool) -> None:
    """The trial page's controls in chromium's accessibility tree (paper scale 1..100, "Terrible".."Perfect")."""
    assert all(c["name"] for c in controls if c["role"] not in ("group",)), [c for c in controls if not c["name"]]
    fields = {"Response quality (the content of the answer)"}
    if condition == "audio":
        fields.add("Audio quality (clarity and naturalness of the speech)")
    ratings = [c for c in controls if c["role"] == "slider" and not c["name"].startswith("Playback")]
    assert sorted(c["name"] for c in ratings) == sorted(f"Response {r}: {f}" for r in "AB" for f in fields), ratings
    for c in ratings:
        # the tree's value is the input's (chromium's tree has no aria-valuetext),
        # so an unset rating says "not rated" in its description, beside the scale's end labels
        assert c["description"] == ("Terrible Perfect" if rated else "Not rated yet. Terrible Perfect"), c
        assert c["value"] == ("100" if rated else "50"), c
    names = [c["name"] for c in controls if c["role"] in ("button", "slider", "textbox")]
    assert len(names) == len(set(names)), names  # no two controls share a name
    buttons = {c["name"] for c in controls if c["role"] == "button"}
    assert "Submit and continue" in buttons
    if condition == "audio":
        assert {"Replay response A", "Replay response B"} <= buttons, buttons
        positions = {c["name"] for c in controls if c["name"].startswith("Playback")}
        assert positions == {"Playback position of response A", "Playback position of response B"}
    radios = [c for c in controls if c["role"] == "radio"]
    assert [c["name"] for c in radios] == ["Response A", "Response B", "Tie (no preference)"], radios
    assert all(c["groups"][:1] == ["Which response do you prefer?"] for c in radios), radios
    assert [c["name"] for c in controls if c["role"] == "textbox"] == ["Why? (optional)"]


def other_pages(page, base: str, db, audit: Audit, tag: str) -> None:
    """The pages off the main path: declined, unknown link, the index, expired, paused, closed, the problem page,
    the other-tab dialog and the not-saved page."""
    page.goto(f"{base}/start?PROLIFIC_PID=decline{tag}&STUDY_ID=a11y&SESSION_ID=d")
    with page.expect_navigation():
        page.click("button[value=no]")
    audit("ended (declined)")
    page.goto(f"{base}/p/no-such-token")
    audit("message (unknown link)")
    page.goto(f"{base}/")
    audit("message (index)")
    # expired: a session whose page was gone past the abandon timeout
    token, csrf = enter(base, f"sleeper{tag}")
    with db.transaction() as s:
        s.execute(update(Participant).where(Participant.token == token).values(last_seen=0.0))
    page.goto(f"{base}/p/{token}")
    assert page.inner_text("h1") == "This session has expired"
    audit("ended (expired)")
    for state in ("paused", "closed"):
        service.set_intake(db, state)
        page.goto(f"{base}/start?PROLIFIC_PID=new{state}{tag}&STUDY_ID=a11y&SESSION_ID=n")
        audit(f"ended ({state})")
    service.set_intake(db, "open")
    # the problem page (a clip that did not load, as the page reports it)
    token, csrf = enter(base, f"media{tag}")
    r = httpx.post(
        f"{base}/p/{token}/problem",
        json={"csrf": csrf, "tab": "a11ytab0", "trial": 0, "what": "media", "detail": "Response A did not load"},
    )
    assert r.status_code == 200, r.text
    page.goto(f"{base}/p/{token}/problem")
    audit("problem (media)")
    # the other-tab dialog, then a submission from that tab: the not-saved page
    token, _ = enter(base, f"twotabs{tag}")
    page.goto(f"{base}/p/{token}")
    live(page)
    other = page.context.new_page()
    other.goto(f"{base}/p/{token}")
    wait_until(page, "window.__modprefs.superseded === true")
    other.close()
    audit("trial (other-tab dialog)", "trial 0")
    assert page.locator("#trial-form").count() == 1, (page.url, page.inner_text("main")[:300])
    with page.expect_navigation():
        page.evaluate(
            "(() => { const f = document.getElementById('trial-form'); f.elements.tab.value = window.__modprefs.tab;"
            " HTMLFormElement.prototype.submit.call(f); })()"
        )
    assert page.inner_text("h1") == "Not saved: the study is open in another tab"
    audit("not saved (superseded)")


def enter(base: str, pid: str) -> tuple[str, str]:
    """A participant past consent, demographics (and the headphone check), over HTTP; (token, csrf)."""
    with httpx.Client(base_url=base, follow_redirects=True) as c:
        r = c.get("/start", params={"PROLIFIC_PID": pid, "STUDY_ID": "a11y", "SESSION_ID": "x"})
        token, csrf = str(r.url).rsplit("/", 1)[-1], CSRF_RE.search(r.text).group(1)
        c.post(f"/p/{token}/consent", data={"csrf": csrf, "agree": "yes"})
        r = c.post(f"/p/{token}/demographics", data={"csrf": csrf, "age": "30", "native_english": "yes"})
        if 'id="headphones-form"' in r.text:  # answered without listening (recorded, not required)
            r = c.post(f"/p/{token}/headphones", data={"csrf": csrf, **{f"q{i}": "1" for i in range(6)}})
        assert "page-data" in r.text
    return token, csrf


def dashboard_pages(browser, base: str, viewport: str, found: dict, checks: dict, db, out: Path) -> None:
    """The dashboard and the latest responses (admin credentials); on a desktop, an update by fetch, and its
    per-participant CSV (as the dashboard's link serves it to the browser) against the export."""
    ctx = browser.new_context(viewport=VIEWPORTS[viewport], http_credentials={"username": "lab", "password": SECRET})
    page = ctx.new_page()
    audit = Audit(page, mobile=viewport == "mobile")
    page.goto(f"{base}/admin")
    assert page.locator("meta[http-equiv=refresh]").count() == 0
    audit("dashboard")
    if viewport == "desktop":
        before = page.inner_text("#states")
        enter(base, "dashboard-newcomer")  # something changes
        page.evaluate("window.__modprefsAdmin.update()")
        wait_until(page, "window.__modprefsAdmin.updates === 1")
        checks["dashboard"] = {
            "live": page.get_attribute("#refresh-status", "role"),
            "said": page.inner_text("#refresh-status"),
            "changed": page.inner_text("#states") != before,
        }
        audit("dashboard (updated)", "dashboard")
        checks["csv"] = page.evaluate(
            "async () => (await fetch(document.querySelector('a[href$=\"/admin/participants.csv\"]').href)).text()"
        )
        checks["approve"] = page.input_value("#approve-list").split()
        from modprefs.app.export import export_dir

        export_dir(db, out)
    page.goto(f"{base}/admin/responses")
    audit("latest responses")
    ctx.close()
    found.update({f"{viewport}: {k}": v for k, v in audit.found.items()})
    checks.setdefault("titles", {}).update(audit.titles)


def live_panel(db) -> None:
    """The dashboard's live reliability with every part shown (issue #54): a declared rule, an update, a look that
    stopped the study (stored values: what axe checks is their markup)."""
    from modprefs.app.live_stats import CONFIG_KEY, SNAPSHOT_KEY, store
    from modprefs.app.stopping import STATE_KEY

    row = {"n_participants": 4, "k_mean_raters": 2.5, "icc_2_1": 0.41, "icc_2_1_lo": 0.2, "icc_2_1_hi": 0.7}
    row |= {"icc_2_k": 0.63, "icc_2_k_lo": 0.33, "icc_2_k_hi": 0.88, "raters_needed": 5.0, "raters_still_needed": 2.5}
    rule = {"rule": "lower_bound", "target_icc": 0.6, "min_participants": 4, "max_participants": 8, "look_every": 2}
    store(db, CONFIG_KEY, {"stopping": rule, "params": {"n_boot": 10}})
    snap = {"tasks": 8, "seconds": 1.5, "ci_level": 0.95, "target_icc": 0.6, "updated_utc": "2026-12-06T02:00:00+00:00"}
    store(db, SNAPSHOT_KEY, {**snap, "conditions": {"audio": row, "text": row}})
    look = {"index": 0, "n_participants": 4, "level": 0.98, "at": 0, "decision": "met"}
    store(db, STATE_KEY, {"looks": [{**look, "conditions": {"audio": row, "text": row}}], "stopped": look})


@pytest.mark.parametrize("viewport", ["desktop", "mobile"])
def test_axe_all_rules_on_every_page_and_the_accessibility_tree(browser, tmp_path, viewport):
    st = make_study(tmp_path / "study", n_prompts=4, raters_per_condition=3, trials=1, seed=3, durations=(1.0, 1.2))
    url = f"sqlite:///{tmp_path}/a11y.db"
    db = load(st, url)
    live_panel(db)
    env = {"MODPREFS_ADMIN_SECRET": SECRET}
    with app_server(url, "--text-min-read", "1", "--headphone-check", "record", env=env) as base:
        context = browser.new_context(viewport=VIEWPORTS[viewport])
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        audit = Audit(page, mobile=viewport == "mobile")
        checks: dict = {}
        conds = {axe_session(page, base, f"axe{viewport}{i}", audit, checks) for i in range(2)}
        other_pages(page, base, db, audit, viewport)
        context.close()
        found = dict(audit.found)
        dashboard_pages(browser, base, viewport, found, checks, db, tmp_path / "export")
    assert not errors, errors
    assert conds == {"text", "audio"}
    assert not found, found
    assert len(audit.pages) >= 28, audit.pages
    print(f"{viewport}: axe (every rule) found 0 violations on {len(audit.pages) + 2 + (viewport == 'desktop')} pages")
    # a title of its own for every page
    titles = {**audit.titles, **checks["titles"]}
    assert len(set(titles.values())) == len(titles), titles
    for cond in ("text", "audio"):
        c = checks[cond]
        check_trial_ax(c["ax_unset"], cond, rated=False)
        check_trial_ax(c["ax_set"], cond, rated=True)
        assert (c["valuetext_unset"], c["valuetext_set"]) == ("not rated", "100, Perfect")  # as announced
        assert c["live"] == ["status", "alert"] and set(c["status_roles"]) == {"status"}
        assert contrast(c["track_on"], c["card"]) >= 3.0, (c["track_on"], c["card"])
    off = checks["track_off"]  # Response B's locked slider before the reveal
    assert contrast(checks["text"]["track_on"], off) >= 3.0, (checks["text"]["track_on"], off)
    assert checks["seek"]["disabled"] == "false" and checks["seek"]["t"] > 0.5  # sought by the keyboard
    assert checks["reveal_announced"] == ("status", "You can now show Response B.")
    assert checks["errors"] == {
        "focus": "native_english=yes",  # the first field marked (its first radio)
        "invalid": "true",
        "described": "err-native_english",
        "error": "please choose an answer",
        "summary": "alert",
        "link": "#native_english-group",
    }, checks["errors"]
    assert checks["hp_focus"] == [f"hp-play-{i}:true" for i in range(6)]  # the focus stays on each play button
    if viewport == "desktop":
        import io

        import pandas as pd

        # the dashboard's per-participant CSV: its rows in the export, in the export's columns, are participants.csv
        exported = (tmp_path / "export/participants.csv").read_text()
        dash = pd.read_csv(io.StringIO(checks["csv"]), dtype=str, keep_default_na=False)
        columns = exported.splitlines()[0].split(",")
        assert len(dash) >= 7 and list(dash.columns[: len(columns)]) == columns
        mine = dash[dash.in_export == "true"][columns].to_csv(index=False, lineterminator="\n")
        assert mine == exported and exported.count("\n") == 3, (mine, exported)  # the two who completed
        assert sorted(checks["approve"]) == [f"axe{viewport}0", f"axe{viewport}1"]
        assert checks["dashboard"]["live"] == "status" and checks["dashboard"]["changed"]
        assert re.fullmatch(r"Updated at \d\d:\d\d:\d\d: .*changed\.", checks["dashboard"]["said"]), checks


# ---- keyboard only -------------------------------------------------------------------------------------------


RECORD_VALUETEXT = """(id) => {
  window.__said = [];
  new MutationObserver(() => window.__said.push(document.getElementById(id).getAttribute('aria-valuetext')))
    .observe(document.getElementById(id), {attributes: true, attributeFilter: ['aria-valuetext']});
}"""


def keyboard_slider(page, selector: str, presses: int, key: str = "ArrowRight") -> None:
    tab_to(page, selector)
    for _ in range(presses):
        page.keyboard.press(key)


def keyboard_session(page, base: str, pid: str) -> str:
    page.goto(f"{base}/start?PROLIFIC_PID={pid}&STUDY_ID=kb&SESSION_ID=s-{pid}")
    tab_to(page, "button[value=yes]")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    tab_to(page, "#age")
    page.keyboard.type("31")
    tab_to(page, "input[name=native_english][value=yes]")
    page.keyboard.press("Space")
    tab_to(page, "#demographics-form button[type=submit]")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    cond = data_of(page)["condition"]
    while data_of(page)["page"] == "trial":
        live(page)
        trial = data_of(page)["trial"]
        if cond == "audio":
            tab_to(page, "#play-A")
            page.keyboard.press("Enter")
            page.wait_for_selector("#rating_A:enabled", timeout=15000)
        else:
            page.wait_for_selector("#reveal-B:enabled", timeout=15000)
            tab_to(page, "#reveal-B")
            page.keyboard.press("Enter")
            assert page.evaluate("document.activeElement.id") == "heading-B"  # not dropped to the body
        # keyboard users start from no value: the first ArrowRight puts an unset slider at the scale's minimum
        # (not one step above its hidden middle, 50), the next ones step on from there; so a one-way move of
        # A (none -> 1 .. 10) then of B (none -> 1 .. 20, passing A's 10) is one change each, logged once
        # with the participant's own value
        tab_to(page, "#rating_A")
        page.evaluate(RECORD_VALUETEXT, "rating_A")  # what it announces, key by key (no round trip between keys)
        for _ in range(10):
            page.keyboard.press("ArrowRight")
        said = page.evaluate("window.__said")
        assert said[0] == "1, Terrible" and page.input_value("#rating_A") == "10", said
        if cond == "audio":
            keyboard_slider(page, "#audio_quality_A", 5)
            tab_to(page, "#play-B")
            page.keyboard.press("Enter")
            page.wait_for_selector("#rating_B:enabled", timeout=15000)
        keyboard_slider(page, "#rating_B", 20)
        if cond == "audio":
            keyboard_slider(page, "#audio_quality_B", 3, "ArrowLeft")  # from no value, downwards: 100, 99, 98
        choice = coherent_position(page, cond) if trial == 0 else "B"
        tab_to(page, "input[name=preference][value=A]")
        page.keyboard.press("Space" if choice == "A" else "ArrowRight")
        assert page.is_checked(f"input[name=preference][value={choice}]")
        tab_to(page, "#submit")
        assert page.is_enabled("#submit")
        with page.expect_navigation():
            page.keyboard.press("Enter")
    tab_to(page, "input[name=difficulty][value='1']")
    page.keyboard.press("ArrowRight")  # the group's second answer
    tab_to(page, "form button[type=submit]")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.locator("#completion-code").inner_text() == "DONE1234"
    return cond


def test_keyboard_only_sessions_complete_and_count_one_change_per_burst(browser, tmp_path):
    """A one-way keyboard move logs one change, and keyboard users start from no value (no change from 50)."""
    import pandas as pd

    from modprefs.app.export import export_dir

    st = make_study(tmp_path / "study", n_prompts=4, raters_per_condition=1, trials=1, seed=4, durations=(1.0, 1.2))
    url = f"sqlite:///{tmp_path}/kb.db"
    db = load(st, url)
    with app_server(url, "--text-min-read", "1") as base:
        context = browser.new_context(viewport=VIEWPORTS["desktop"])
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        conds = {keyboard_session(page, base, f"kb{i}") for i in range(2)}
        context.close()
    assert not errors, errors
    assert conds == {"text", "audio"}
    export_dir(db, tmp_path / "export")
    trials = pd.read_csv(tmp_path / "export/trials.csv")
    events = pd.read_csv(tmp_path / "export/events.csv")
    assert len(trials) == 4
    assert (trials.rating_changes == 0).all(), trials[["participant_id", "trial", "rating_changes"]]
    sliders = events[events.kind == "slider"]
    per = sliders.groupby(["participant_id", "trial", "response", "field"]).size()
    assert (per == 1).all(), per  # one change per keyboard burst, not one per key
    assert sorted(sliders.loc[sliders.field == "rating", "value"].unique()) == [10, 20]
    quality = sliders[sliders.field == "audio_quality"].sort_values("response")
    assert set(quality.value) == {5, 98}, quality  # A: 5 x ArrowRight from none; B: 3 x ArrowLeft from none
    assert not (sliders.value == 50).any(), sliders  # nothing logged at the hidden middle


# ---- the steps before and after the trials (app load's defaults, the lab's texts, Prolific's end pages) -------


def test_axe_on_calibration_instructions_practice_and_end_pages(browser, tmp_path):
    """`app load` with its defaults (calibration, headphone check, instructions and practice trial on), the lab's
    consent file (its computed duration shown in the browser) and Prolific codes: axe (every rule) finds no violation
    on the consent, calibration, instructions, practice trial, done, declined and already-taken-part pages, at
    1280x800 and 390x844 (touch targets); the done page does not leave by itself (a minute of its timers run)."""
    from modprefs.app.texts import estimate_minutes
    from modprefs.cli import main

    st = make_study(tmp_path / "study", n_prompts=4, raters_per_condition=2, trials=1, seed=3, durations=(1.0, 1.2))
    st.assignments = st.assignments[st.assignments.condition == "audio"]  # one slot per viewport
    st.assignments.to_csv(st.files.assignments, index=False)
    lab = tmp_path / "consent.md"
    lab.write_text(
        "## About this study\n\nIt takes about **{minutes} minutes** and pays {payment}.\n", encoding="utf-8"
    )
    url = f"sqlite:///{tmp_path}/steps.db"
    f = st.files
    args = ["app", "load", "--db", url, "--assignments", str(f.assignments), "--stimuli", str(f.stimuli)]
    args += ["--conversations", str(f.conversations), "--prompts", str(f.prompts), "--manifest", str(f.manifest)]
    args += ["--base-dir", str(f.base_dir), "--completion-code", "DONE1234", "--no-consent-code", "NOCONS1"]
    assert main([*args, "--consent", str(lab), "--payment", "£2.50"]) == 0
    minutes = estimate_minutes(2 + 1)  # the attention check, one trial, the practice trial
    found: dict[str, list] = {}
    with app_server(url) as base:
        for viewport in ("desktop", "mobile"):
            context = browser.new_context(viewport=VIEWPORTS[viewport])
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))  # noqa: B023 (used in this iteration)
            audit = Audit(page, mobile=viewport == "mobile")
            page.goto(f"{base}/start?PROLIFIC_PID=steps{viewport}&STUDY_ID=a11y&SESSION_ID=s1")
            assert f"It takes about {minutes} minutes and pays £2.50." in page.inner_text("#consent-text")
            audit("consent (the lab's)")
            page.click("button[value=yes]")
            page.wait_for_selector("#demographics-form")
            demographics_by_pointer(page)
            assert data_of(page)["page"] == "calibration"
            audit("calibration")
            page.click("#cal-play")
            wait_until(page, "window.__modprefs.calPlayed === true")
            with page.expect_navigation():
                page.click("#cal-submit")
            assert data_of(page)["page"] == "headphones"  # on by default (record)
            page.evaluate(
                "document.querySelectorAll('#headphones-form input[type=radio]').forEach(r => r.disabled = false)"
            )
            for i in range(page.locator(".hp-question").count()):
                page.check(f"input[name=q{i}][value='1']")
            with page.expect_navigation():
                page.click("#hp-submit")
            assert data_of(page)["page"] == "instructions"
            audit("instructions")
            with page.expect_navigation():
                page.click("#start-practice")
            while data_of(page)["page"] == "trial":
                live(page)
                trial = data_of(page)["trial"]
                if trial == -1:
                    audit("practice trial: locked")
                page.click("#play-A")
                page.wait_for_selector("#rating_A:enabled", timeout=15000)
                page.click("#play-B")
                page.wait_for_selector("#rating_B:enabled", timeout=15000)
                for sel in ("#rating_A", "#rating_B", "#audio_quality_A", "#audio_quality_B"):
                    page.focus(sel)
                    page.keyboard.press("End")
                    page.keyboard.press("Enter")
                page.check(f"input[name=preference][value={coherent_position(page, 'audio') if trial == 0 else 'A'}]")
                with page.expect_navigation():
                    page.click("#submit")
            page.check("input[name=difficulty][value='2']")
            with page.expect_navigation():
                page.click("button[type=submit]")
            assert page.get_attribute("#return-link", "href").endswith("?cc=DONE1234")
            audit("done")
            # the page stays (the debrief is read): a minute of the page's timers run, and it has not moved on
            done = page.url
            page.clock.install()
            page.reload()
            page.clock.run_for(60_000)
            assert page.url == done and page.inner_text("h1") == "Thank you!"
            page.goto(f"{base}/start?PROLIFIC_PID=no{viewport}&STUDY_ID=a11y&SESSION_ID=d")
            with page.expect_navigation():
                page.click("button[value=no]")
            assert "NOCONS1" in page.inner_text("main")
            audit("ended (declined)")
            page.goto(f"{base}/start?PROLIFIC_PID=no{viewport}&STUDY_ID=a11y&SESSION_ID=other")
            assert page.inner_text("h1") == "You have already taken part"
            audit("ended (already taken part)")
            context.close()
            assert not errors, errors
            found.update({f"{viewport}: {k}": v for k, v in audit.found.items()})
    assert not found, found
