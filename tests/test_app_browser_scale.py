"""The annotation app on a 1..5 rating scale in a real browser (Playwright driving Debian's chromium, headless).

A study loaded with the scale 1..5 ("Bad".."Excellent"): the trial page's sliders run 1..5 in whole steps with
those end labels, the keyboard and the pointer set them, and the export holds ratings and audio-quality ratings
in 1..5 only. Skipped without chromium or Playwright unless MODPREFS_REQUIRE_BROWSER=1 (tests/app/browser_kit.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "app"))

from app_services import app_server  # noqa: E402
from app_sim import CSRF_RE  # noqa: E402
from app_study import load, make_study  # noqa: E402
from browser_kit import browser, data_of, wait_until  # noqa: E402,F401 (browser: a fixture)

from modprefs.app import service  # noqa: E402
from modprefs.scale import RatingScale  # noqa: E402

pytestmark = pytest.mark.integration  # a server and a browser: not in `make test-fast`

FIVE = RatingScale(1, 5, 1, "Bad", "Excellent")
SLIDERS = ("rating_A", "audio_quality_A", "rating_B", "audio_quality_B")


def enter(base: str) -> str:
    with httpx.Client(base_url=base, follow_redirects=True) as c:
        r = c.get("/start")
        token, csrf = str(r.url).rsplit("/", 1)[-1], CSRF_RE.search(r.text).group(1)
        assert c.post(f"/p/{token}/consent", data={"csrf": csrf, "agree": "yes"}).status_code == 200
        r = c.post(f"/p/{token}/demographics", data={"csrf": csrf, "age": "30", "native_english": "yes"})
        assert r.status_code == 200, r.text
    return token


def slider_x(page, selector: str, value: float) -> tuple[float, float]:
    """Page coordinates of ``value`` on a 1..5 range input (the thumb travels the track minus 24 px)."""
    box = page.locator(selector).bounding_box()
    return box["x"] + 12 + (value - 1) / 4 * (box["width"] - 24), box["y"] + box["height"] / 2


def check_sliders(page) -> None:
    for name in SLIDERS:
        loc = page.locator(f"#{name}")
        attrs = [loc.get_attribute(a) for a in ("min", "max", "step")]
        assert attrs == ["1", "5", "1"], (name, attrs)
        assert "unset" in loc.get_attribute("class") and loc.get_attribute("name") is None
    ends = page.locator("#response-A .scale .end").all_inner_texts()
    assert ends[:2] == ["Bad", "Excellent"], ends


def rate_trial(page) -> None:
    """Listen to A, set its sliders with the keyboard; listen to B, set its sliders with the pointer."""
    page.click("#play-A")
    page.wait_for_selector("#rating_A:enabled", timeout=15000)
    page.focus("#rating_A")
    page.keyboard.press("ArrowRight")  # from no value (not the hidden middle step, 3): the minimum, 1
    page.keyboard.press("ArrowRight")  # then a step on: 2
    page.focus("#audio_quality_A")
    page.keyboard.press("End")  # 5
    page.click("#play-B")
    page.wait_for_selector("#rating_B:enabled", timeout=15000)
    for name, value in (("rating_B", 1), ("audio_quality_B", 2)):
        page.locator(f"#{name}").scroll_into_view_if_needed()
        page.mouse.click(*slider_x(page, f"#{name}", value))
    wait_until(page, "window.__modprefs.events.filter(e => e.kind === 'slider').length >= 4", timeout=5)
    values = {name: page.locator(f"#{name}").input_value() for name in SLIDERS}
    assert values == {"rating_A": "2", "audio_quality_A": "5", "rating_B": "1", "audio_quality_B": "2"}, values
    coherent = "B" if page.locator("#audio-A").get_attribute("src").endswith("/attn_1.wav") else "A"
    page.check(f"input[name=preference][value={coherent}]")


def test_five_point_scale_in_the_browser(browser, tmp_path):  # noqa: F811 (the browser_kit fixture)
    import pandas as pd

    from modprefs.app.export import export_dir
    from modprefs.ratings.ingest import validate_ratings_dir

    st = make_study(tmp_path / "study", n_prompts=4, raters_per_condition=2, trials=1, seed=5, durations=(1.0, 1.2))
    st.assignments = st.assignments[st.assignments.condition == "audio"]
    st.assignments.to_csv(st.files.assignments, index=False)
    url = f"sqlite:///{tmp_path}/scale.db"
    db = load(st, url, **{service.SCALE_KEY: json.dumps(FIVE.as_config())})
    with app_server(url) as base:
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        errors: list[str] = []
        context.on("weberror", lambda e: errors.append(str(e.error)))
        page = context.new_page()
        page.goto(f"{base}/p/{enter(base)}")
        while data_of(page)["page"] == "trial":
            check_sliders(page)
            rate_trial(page)
            with page.expect_navigation():
                page.click("#submit")
        assert data_of(page)["page"] == "difficulty"
        context.close()
    assert not errors, errors
    export_dir(db, tmp_path / "export")
    tables = validate_ratings_dir(tmp_path / "export", st.stimuli, scale=FIVE)
    ratings = tables["ratings"]
    assert len(ratings) == 4  # the attention check and one trial, two clips each
    assert set(ratings["rating"]) == {1, 2} and set(ratings["audio_quality"].astype(int)) == {2, 5}
    events = pd.read_csv(tmp_path / "export/events.csv")
    assert events.loc[events.kind == "slider", "value"].between(1, 5).all()
