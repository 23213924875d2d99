"""Accessibility of the participant pages (WCAG 2.1 A/AA) in a real browser (Playwright driving Debian's chromium).

* axe-core (``axe-playwright-python``) finds no violation of the WCAG 2.0/2.1 A and AA rules on any page of either
  condition (consent, demographics, headphone check, trial locked / unlocked / after the reveal / ready to submit,
  difficulty, done, the ended and message pages), at 1280x800 and at 390x844;
* what axe cannot see: unset sliders read "not rated", a set one its value with the scale's end labels; the
  players are named per response; the preference radios are a named group; hints are live regions; the
  playback position can be sought with the keyboard after the first listen; the slider track has 3:1 against
  the card and between its locked and unlocked states; every touch target is 44 px or more at 390 px;
* a keyboard-only participant (Tab, Space, Enter, arrow keys) completes both conditions; after "Show Response B"
  the focus is on Response B; a one-way move of many arrow presses is one logged change (``rating_changes`` 0).

Skipped without chromium or Playwright unless MODPREFS_REQUIRE_BROWSER=1 (tests/app/browser_kit.py).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "app"))

from app_services import app_server  # noqa: E402
from app_study import ATTENTION, load, make_study  # noqa: E402
from browser_kit import browser, data_of, wait_until  # noqa: E402,F401 (browser: a fixture)

pytestmark = pytest.mark.integration  # a server and a browser: not in `make test-fast`

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "mobile": {"width": 390, "height": 844}}
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
TARGETS = (
    "button, a.button, input[type=range], label.inline, select, textarea, [role=slider], "
    "input:not([type=hidden]):not([type=radio]):not([type=range])"
)


def axe_violations(page) -> list[dict]:
    from axe_playwright_python.sync_playwright import Axe

    res = Axe().run(page, options={"runOnly": {"type": "tag", "values": WCAG_TAGS}, "resultTypes": ["violations"]})
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in res.response["violations"]
    ]


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
    def __init__(self, page, mobile: bool):
        self.page, self.mobile = page, mobile
        self.found: dict[str, list] = {}
        self.pages: list[str] = []

    def __call__(self, name: str) -> None:
        self.pages.append(name)
        v = axe_violations(self.page)
        if v:
            self.found[name] = v
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


def demographics_by_pointer(page) -> None:
    page.fill("#age", "29")
    page.check("input[name=native_english][value=yes]")
    with page.expect_navigation():
        page.click("#demographics-form button[type=submit]")


def axe_session(page, base: str, pid: str, audit: Audit, checks: dict) -> str:
    page.goto(f"{base}/start?PROLIFIC_PID={pid}&STUDY_ID=a11y&SESSION_ID=s-{pid}")
    audit("consent")
    page.click("button[value=yes]")
    page.wait_for_selector("#demographics-form")
    audit("demographics")
    page.fill("#age", "29")
    page.evaluate("document.getElementById('demographics-form').noValidate = true")  # the server's error state
    with page.expect_navigation():
        page.click("#demographics-form button[type=submit]")
    audit("demographics (errors)")
    demographics_by_pointer(page)
    if data_of(page)["page"] == "headphones":
        audit("headphones")
        # the screening's own flow is tested in test_app_browser_integrity.py: answer it without listening
        page.evaluate(
            "document.querySelectorAll('#headphones-form input[type=radio]').forEach(r => r.disabled = false)"
        )
        for i in range(page.locator(".hp-question").count()):
            page.check(f"input[name=q{i}][value='1']")
        with page.expect_navigation():
            page.click("#hp-submit")
    cond = data_of(page)["condition"]
    while data_of(page)["page"] == "trial":
        trial = data_of(page)["trial"]
        audit(f"{cond} trial {trial}: locked")
        sliders = ["#rating_A", "#rating_B"]
        if cond == "audio":
            sliders += ["#audio_quality_A", "#audio_quality_B"]
            assert page.get_attribute("#play-A", "aria-label") == "Play response A"
            assert page.get_attribute("#play-B", "aria-label") == "Play response B"
            page.click("#play-A")
            page.wait_for_selector("#rating_A:enabled", timeout=15000)
            audit(f"{cond} trial {trial}: A unlocked")
            page.click("#play-B")
            page.wait_for_selector("#rating_B:enabled", timeout=15000)
            assert page.get_attribute("#play-B", "aria-label") == "Replay response B"
            if trial == 0:
                checks["seek"] = seek_by_keyboard(page)
        else:
            assert page.is_disabled("#rating_B")
            checks["track_off"] = computed(page, "#rating_B", "--track")
            page.wait_for_selector("#reveal-B:enabled", timeout=15000)
            page.click("#reveal-B")
            audit(f"{cond} trial {trial}: after reveal")
        if trial == 0:
            checks[cond] = aria_checks(page)
        for sel in sliders:
            page.focus(sel)
            page.keyboard.press("End")
            page.keyboard.press("Enter")
        if trial == 0:
            checks[cond]["valuetext_set"] = page.get_attribute("#rating_A", "aria-valuetext")
        page.check(f"input[name=preference][value={coherent_position(page, cond) if trial == 0 else 'A'}]")
        assert page.is_enabled("#submit")
        audit(f"{cond} trial {trial}: ready")
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
        "described": page.get_attribute("#rating_A", "aria-describedby"),
        "group": page.evaluate(
            "(() => { const g = document.querySelector('[role=radiogroup]');"
            " return g && document.getElementById(g.getAttribute('aria-labelledby')).textContent; })()"
        ),
        "live": page.evaluate(
            "['submit-hint', 'server-notice'].map(id => document.getElementById(id).getAttribute('role'))"
        ),
        "status_roles": page.evaluate("[...document.querySelectorAll('.status')].map(e => e.getAttribute('role'))"),
        "track_on": computed(page, "#rating_A", "--track"),
        "card": page.evaluate("getComputedStyle(document.querySelector('.response')).backgroundColor"),
    }


@pytest.mark.parametrize("viewport", ["desktop", "mobile"])
def test_axe_finds_no_wcag_violation_on_any_page(browser, tmp_path, viewport):  # noqa: F811
    st = make_study(tmp_path / "study", n_prompts=4, raters_per_condition=1, trials=1, seed=3, durations=(1.0, 1.2))
    url = f"sqlite:///{tmp_path}/a11y.db"
    load(st, url)
    with app_server(url, "--text-min-read", "1", "--headphone-check", "record") as base:
        context = browser.new_context(viewport=VIEWPORTS[viewport])
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        audit = Audit(page, mobile=viewport == "mobile")
        checks: dict = {}
        conds = {axe_session(page, base, f"axe{viewport}{i}", audit, checks) for i in range(2)}
        # the ended and message pages
        page.goto(f"{base}/start?PROLIFIC_PID=decline{viewport}&STUDY_ID=a11y&SESSION_ID=d")
        with page.expect_navigation():
            page.click("button[value=no]")
        audit("ended (declined)")
        page.goto(f"{base}/p/no-such-token")
        audit("message (unknown link)")
        context.close()
    assert not errors, errors
    assert conds == {"text", "audio"}
    assert not audit.found, audit.found
    assert len(audit.pages) >= 16, audit.pages
    for cond in ("text", "audio"):
        c = checks[cond]
        assert c["valuetext_unset"] == "not rated"
        assert c["valuetext_set"].startswith("100") and "Perfect" in c["valuetext_set"]
        assert c["described"] == "end-min-rating-A end-max-rating-A"
        assert c["group"] == "Which response do you prefer?"
        assert c["live"] == ["status", "alert"] and set(c["status_roles"]) == {"status"}
        assert contrast(c["track_on"], c["card"]) >= 3.0, (c["track_on"], c["card"])
    off = checks["track_off"]  # Response B's locked slider before the reveal
    assert contrast(checks["text"]["track_on"], off) >= 3.0, (checks["text"]["track_on"], off)
    assert checks["seek"]["disabled"] == "false" and checks["seek"]["t"] > 0.5  # sought by the keyboard


# ---- keyboard only -------------------------------------------------------------------------------------------


def tab_to(page, selector: str, limit: int = 80) -> None:
    """Press Tab until ``selector`` has the focus (keyboard only: no click, no programmatic focus)."""
    for _ in range(limit):
        if page.evaluate(f"document.activeElement && document.activeElement.matches({selector!r})"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector}")


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
        keyboard_slider(page, "#rating_A", 1)
        assert page.input_value("#rating_A") == "1" and page.get_attribute("#rating_A", "aria-valuetext") == (
            "1, Terrible"
        )
        for _ in range(9):
            page.keyboard.press("ArrowRight")
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


def test_keyboard_only_sessions_complete_and_count_one_change_per_burst(browser, tmp_path):  # noqa: F811
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


def test_axe_on_calibration_instructions_practice_and_end_pages(browser, tmp_path):  # noqa: F811
    """`app load` with its defaults (calibration, headphone check, instructions and practice trial on), the lab's
    consent file (its computed duration shown in the browser) and Prolific codes: axe finds no violation on the
    consent, calibration, instructions, practice trial, done (before it goes on to Prolific), declined and
    already-taken-part pages, at 1280x800 and 390x844 (touch targets)."""
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
            assert page.is_visible("#redirect-note")
            page.click("#stay")  # the automatic redirect can be stopped (WCAG 2.2.1)
            assert page.evaluate("window.__modprefs.redirecting") is False
            audit("done")
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
