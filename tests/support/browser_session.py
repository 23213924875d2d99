"""One participant's full session in chromium (consent, demographics, the attention check, the trials with
their sliders and listens, the end), driven through Playwright's page (tests/app/test_app_browser.py,
tests/app/test_app_proxy.py)."""

from __future__ import annotations

import re
import time

from support.app_study import ATTENTION, ROOT
from support.browser_kit import data_of, events_of, wait_until

SHOTS = ROOT / "results" / "app_screenshots"


def set_slider(page, selector: str, frac: float) -> None:
    loc = page.locator(selector)
    loc.scroll_into_view_if_needed()
    box = loc.bounding_box()
    page.mouse.click(box["x"] + box["width"] * frac, box["y"] + box["height"] / 2)
    assert "unset" not in (loc.get_attribute("class") or "")


def ended_count(page, pos: str) -> int:
    return sum(e["kind"] == "ended" and e["pos"] == pos for e in events_of(page))


def listen(page, pos: str, timeout: float = 15000) -> None:
    page.click(f"#play-{pos}")
    page.wait_for_selector(f"#rating_{pos}:enabled", timeout=timeout)


def coherent_position(page, condition: str) -> str:
    if condition == "audio":
        src_a = page.locator("#audio-A").get_attribute("src")
        return "B" if src_a.endswith("/attn_1.wav") else "A"
    text_a = page.locator("#text-A").inner_text().strip()
    return "A" if text_a == ATTENTION["responses"][0]["text"].strip() else "B"


def run_session(page, base: str, pid: str, shots: dict) -> dict:
    page.goto(f"{base}/start?PROLIFIC_PID={pid}&STUDY_ID=browser&SESSION_ID=s-{pid}")
    assert "Information and consent" in page.content()
    page.click("button[value=yes]")
    page.wait_for_selector("#demographics-form")
    assert page.input_value("#timezone") != ""  # filled from the browser's time zone
    page.fill("#age", "29")
    page.select_option("#gender", "Woman")
    page.select_option("#education", "Master's degree")
    page.check("input[name=native_english][value=no]")
    assert page.is_visible("#english_proficiency")
    page.select_option("#english_proficiency", "Fluent")
    page.fill("#other_languages", "German; French")
    with page.expect_navigation():
        page.click("#demographics-form button[type=submit]")
    info = {"condition": data_of(page)["condition"], "replayed": None}
    cond = info["condition"]
    while data_of(page)["page"] == "trial":
        wait_until(page, "window.__modprefs.claimed === true")  # the page holds the session (its tab claimed it)
        d = data_of(page)
        trial = d["trial"]
        if trial == 1:
            page.screenshot(path=str(SHOTS / f"trial_{cond}_start.png"), full_page=True)
        # sliders: no number, no handle, not submitted until touched
        assert not re.search(r"\d", page.locator("#response-A .scale").first.inner_text())
        assert "unset" in page.locator("#rating_A").get_attribute("class")
        assert page.locator("#rating_A").get_attribute("name") is None
        assert page.is_disabled("#submit")
        if cond == "text":
            # sequential presentation: Response B (and its slider) only after A was read
            assert not page.is_visible("#response-B") and page.is_disabled("#rating_B")
            assert page.is_disabled("#reveal-B")
            page.wait_for_selector("#reveal-B:enabled", timeout=15000)
            page.click("#reveal-B")
            assert page.is_visible("#response-B") and page.is_enabled("#rating_B")
        if cond == "audio":
            assert page.is_disabled("#rating_A") and page.is_disabled("#audio_quality_A")
            assert page.is_disabled("#play-B") and page.is_disabled("#rating_B")
            page.click("#play-A")
            wait_until(page, "!document.getElementById('audio-A').paused")
            assert page.is_disabled("#rating_A"), "the slider must stay disabled until the clip has ended"
            if trial == 0:
                # seeking ahead on the first listen is refused (reverted, logged)
                dur = page.evaluate("document.getElementById('audio-A').duration")
                page.evaluate("(a => { a.currentTime = a.duration - 0.05; })(document.getElementById('audio-A'))")
                time.sleep(0.15)
                pos = page.evaluate("document.getElementById('audio-A').currentTime")
                assert pos < dur - 0.4, f"seek on first listen was not refused ({pos} of {dur})"
                assert any(e["kind"] == "seek_refused" for e in events_of(page))
                page.evaluate("document.getElementById('audio-A').playbackRate = 4")
                time.sleep(0.05)
                assert page.evaluate("document.getElementById('audio-A').playbackRate") == 1
                assert page.is_disabled("#rating_A")
            page.wait_for_selector("#rating_A:enabled", timeout=15000)
            kinds = [e["kind"] for e in events_of(page) if e["pos"] == "A"]
            assert "ended" in kinds  # unlocked by the clip's `ended` event
            assert page.is_enabled("#play-B") and page.is_disabled("#rating_B")
            if trial == 1:
                # a reload resumes the trial: A stays heard, B is playable, nothing else is unlocked
                wait_until(page, "window.__modprefs.pending() === 0")
                page.reload()  # the same tab (sessionStorage): it claims the session back, with its state
                wait_until(page, "window.__modprefs.claimed === true")
                assert data_of(page)["trial"] == 1 and page.evaluate("window.__modprefs.heard") == {
                    "A": True,
                    "B": False,
                }
                assert page.is_enabled("#rating_A") and page.is_enabled("#play-B") and page.is_disabled("#rating_B")
            listen(page, "B")
            if trial == 1:
                # after its first full listen a clip can be replayed at will (and seeked)
                before = ended_count(page, "A")
                page.click("#play-A")
                wait_until(
                    page, f"window.__modprefs.events.filter(e => e.kind === 'ended' && e.pos === 'A').length > {before}"
                )
                info["replayed"] = d["trial"]
        for i, sel in enumerate(
            ["#rating_A", "#rating_B"] + (["#audio_quality_A", "#audio_quality_B"] if cond == "audio" else [])
        ):
            set_slider(page, sel, [0.8, 0.3, 0.6, 0.7][i])
        set_slider(page, "#rating_B", 0.9)  # a change of mind: B now above A (a reversal)
        if trial == 0:
            choice = coherent_position(page, cond)
        else:
            choice = "B"
        page.check(f"input[name=preference][value={choice}]")
        if trial == 1:
            page.fill("#justification", "<script>window.__pwned = 1</script> B was clearer")
            page.locator("#trial-form").scroll_into_view_if_needed()
            path = SHOTS / f"trial_{cond}.png"
            page.screenshot(path=str(path), full_page=True)
            shots[cond] = path
        assert page.is_enabled("#submit")
        with page.expect_navigation():
            page.click("#submit")
        assert page.evaluate("window.__pwned === undefined")
    assert data_of(page)["page"] == "difficulty"
    page.check("input[name=difficulty][value='2']")
    with page.expect_navigation():
        page.click("button[type=submit]")
    info["code"] = page.locator("#completion-code").inner_text()
    info["return_url"] = page.locator("a.button").get_attribute("href")
    return info
