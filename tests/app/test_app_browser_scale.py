"""The annotation app on a 1..5 rating scale in a real browser (Playwright driving Debian's chromium, headless).

A study loaded with the scale 1..5: a short scale (<= 11 points) is shown as labelled, numbered category points
(radio buttons with ITU-T P.808's ACR labels Bad, Poor, Fair, Good, Excellent), not as the paper's unmarked
slider. A keyboard-only participant (Tab, Space, Enter, arrow keys; no pointer) completes the audio condition:
a burst of arrow keys is one logged change; chromium's accessibility tree names each group of points with the
response and the quality it rates, and each point with its number and label. A second participant sets the
points with the pointer on a phone-sized screen. axe-core (every rule) finds no violation on the points' trial
page at 1280 and 390 px; the export holds ratings and audio-quality ratings in 1..5 only. Skipped without
chromium or Playwright unless MODPREFS_REQUIRE_BROWSER=1 (tests/support/browser_kit.py).
"""

from __future__ import annotations

import json

import pytest

from modprefs.app import service
from modprefs.scale import RatingScale
from support.app_services import app_server
from support.app_study import load, make_study
from support.browser_kit import (
    ax_controls,
    axe_all_rules,
    data_of,
    tab_to,
    wait_until,
)

pytestmark = pytest.mark.integration  # a server and a browser: not in `make test-fast`

FIVE = RatingScale(1, 5, 1, "1", "5")  # as `app load --scale 1:5` stores it: the points get P.808's ACR labels
ACR = ["1 Bad", "2 Poor", "3 Fair", "4 Good", "5 Excellent"]
QUALITY = {
    "rating": "Response quality (the content of the answer)",
    "audio_quality": "Audio quality (clarity and naturalness of the speech)",
}


def live(page) -> None:
    wait_until(page, "window.__modprefs.claimed === true")


def coherent(page) -> str:
    return "B" if page.locator("#audio-A").get_attribute("src").endswith("/attn_1.wav") else "A"


def check_points_ax(page) -> None:
    """Chromium's accessibility tree: a group per rating named with its response and quality, five radios in it
    named by number and ACR label, none checked; no slider."""
    controls = ax_controls(page)
    assert not [c for c in controls if c["role"] == "slider" and not c["name"].startswith("Playback")], controls
    groups = [c["name"] for c in controls if c["role"] == "group" and c["name"].startswith("Response")]
    assert sorted(groups) == sorted(f"Response {r}: {q}" for r in "AB" for q in QUALITY.values()), groups
    for group in groups:
        points = [c for c in controls if c["role"] == "radio" and c["groups"][:1] == [group]]
        assert [c["name"] for c in points] == ACR, (group, points)
        assert not any(c["checked"] for c in points), points  # no point preset: no anchor
    prefs = [
        c["name"] for c in controls if c["role"] == "radio" and c["groups"][:1] == ["Which response do you prefer?"]
    ]
    assert prefs == ["Response A", "Response B", "Tie (no preference)"]


def keyboard_points(page, group: str, keys: list[str]) -> None:
    """Tab to a group of points (the focus lands on its first point, none checked), then press ``keys``."""
    tab_to(page, f"#{group} input[type=radio]")
    for key in keys:
        page.keyboard.press(key)


def keyboard_session(page, base: str) -> dict:
    """Consent, questionnaire, the attention check and a trial, difficulty: keyboard only."""
    page.goto(f"{base}/start?PROLIFIC_PID=kbfive&STUDY_ID=scale&SESSION_ID=s1")
    tab_to(page, "button[value=yes]")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    tab_to(page, "#age")
    page.keyboard.type("44")
    tab_to(page, "input[name=native_english][value=yes]")
    page.keyboard.press("Space")
    tab_to(page, "#demographics-form button[type=submit]")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    found: dict = {}
    while data_of(page)["page"] == "trial":
        live(page)
        trial = data_of(page)["trial"]
        if trial == 0:
            check_points_ax(page)
            found["desktop"] = axe_all_rules(page)
        tab_to(page, "#play-A")
        page.keyboard.press("Enter")
        page.wait_for_selector("#rating_A:enabled", timeout=15000)
        keyboard_points(page, "rating_A", ["ArrowRight", "ArrowRight"])  # 2, then 3: one change (a burst)
        assert page.is_checked("#rating_A-2")
        keyboard_points(page, "audio_quality_A", ["Space"])  # the focused point: 1
        tab_to(page, "#play-B")
        page.keyboard.press("Enter")
        page.wait_for_selector("#rating_B:enabled", timeout=15000)
        keyboard_points(page, "rating_B", ["ArrowLeft", "ArrowLeft", "Enter"])  # wraps to 5, then 4; Enter commits
        keyboard_points(page, "audio_quality_B", ["ArrowRight"])  # 2
        choice = coherent(page) if trial == 0 else "B"
        tab_to(page, "input[name=preference][value=A]")
        page.keyboard.press("Space" if choice == "A" else "ArrowRight")
        tab_to(page, "#submit")
        assert page.is_enabled("#submit")
        with page.expect_navigation():
            page.keyboard.press("Enter")
    tab_to(page, "input[name=difficulty][value='1']")
    page.keyboard.press("Space")
    tab_to(page, "form button[type=submit]")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.inner_text("#completion-code") == "DONE1234"
    return found


def pointer_session(page, base: str) -> dict:
    """The same by pointer (taps on the points' labels) on a phone-sized screen."""
    page.goto(f"{base}/start?PROLIFIC_PID=ptfive&STUDY_ID=scale&SESSION_ID=s1")
    page.click("button[value=yes]")
    page.fill("#age", "35")
    page.check("input[name=native_english][value=yes]")
    with page.expect_navigation():
        page.click("#demographics-form button[type=submit]")
    found: dict = {}
    while data_of(page)["page"] == "trial":
        live(page)
        trial = data_of(page)["trial"]
        page.click("#play-A")
        page.wait_for_selector("#rating_A:enabled", timeout=15000)
        page.click("#play-B")
        page.wait_for_selector("#rating_B:enabled", timeout=15000)
        for group, index in (("rating_A", 4), ("audio_quality_A", 3), ("rating_B", 0), ("audio_quality_B", 4)):
            page.click(f"label:has(#{group}-{index})")
        if trial == 0:
            found["mobile"] = axe_all_rules(page)
        page.check(f"input[name=preference][value={coherent(page) if trial == 0 else 'A'}]")
        with page.expect_navigation():
            page.click("#submit")
    assert data_of(page)["page"] == "difficulty"
    return found


def test_five_point_scale_keyboard_only_and_by_pointer(browser, tmp_path):
    import pandas as pd

    from modprefs.app.export import export_dir
    from modprefs.ratings.ingest import validate_ratings_dir

    st = make_study(tmp_path / "study", n_prompts=4, raters_per_condition=2, trials=1, seed=5, durations=(1.0, 1.2))
    st.assignments = st.assignments[st.assignments.condition == "audio"]
    st.assignments.to_csv(st.files.assignments, index=False)
    url = f"sqlite:///{tmp_path}/scale.db"
    db = load(st, url, **{service.SCALE_KEY: json.dumps(FIVE.as_config())})
    errors: list[str] = []
    with app_server(url) as base:
        found: dict = {}
        for viewport, session in (((1100, 900), keyboard_session), ((390, 844), pointer_session)):
            context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
            context.on("weberror", lambda e: errors.append(str(e.error)))
            found.update(session(context.new_page(), base))
            context.close()
    assert not errors, errors
    assert found == {"desktop": [], "mobile": []}, found  # axe, every rule, on the points' trial page
    export_dir(db, tmp_path / "export")
    tables = validate_ratings_dir(tmp_path / "export", st.stimuli, scale=FIVE)
    ratings = tables["ratings"].sort_values(
        ["participant_id", "trial", "presented_first"], ascending=[True, True, False]
    )
    assert len(ratings) == 8  # two participants, the attention check and one trial, two clips each
    sessions = pd.read_csv(tmp_path / "export/sessions.csv").set_index("prolific_pid").participant_id
    by = {pid: r for pid, r in ratings.groupby("participant_id")}
    keyboard, pointer = by[sessions["kbfive"]], by[sessions["ptfive"]]
    assert list(keyboard.rating) == [3, 4, 3, 4] and list(keyboard.audio_quality.astype(int)) == [1, 2, 1, 2]
    assert list(pointer.rating) == [5, 1, 5, 1] and list(pointer.audio_quality.astype(int)) == [4, 5, 4, 5]
    events = pd.read_csv(tmp_path / "export/events.csv")
    sliders = events[events.kind == "slider"]
    assert sliders.value.between(1, 5).all()
    per = sliders.groupby(["participant_id", "trial", "response", "field"]).size()
    assert (per == 1).all(), per  # one change per burst of arrow keys, one per tap
