"""The participant pages in a real browser: Playwright driving Debian's chromium, headless.

One full session per condition (consent -> demographics -> attention check -> trials -> difficulty ->
completion code) against `modprefs app serve` on loopback, with 1-2 s clips. In the audio condition
it checks that a response's sliders stay disabled until its clip's `ended` event, that Response B
cannot be played before A has been heard, that seeking and rate changes are refused on the first
listen, and that a reload resumes the trial; in the text condition, that Response B appears only
after Response A has been read (the "Show Response B" button). tests/test_app_browser_integrity.py
checks locked sliders, the midpoint, reloads racing the unload flush, forged listens, rate limits
and the headphone check. Screenshots of a trial page in each condition go to
results/app_screenshots/. Without chromium or Playwright the test is skipped, unless
MODPREFS_REQUIRE_BROWSER=1 (CI), which makes their absence a failure (tests/app/browser_kit.py).
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "app"))

from app_services import app_server  # noqa: E402
from app_study import ATTENTION, ROOT, load, make_study  # noqa: E402
from browser_kit import browser, data_of, events_of, wait_until  # noqa: E402,F401 (browser: a fixture)

from modprefs.scale import PAPER_SCALE  # noqa: E402

pytestmark = pytest.mark.integration  # runs snakemake, a server or a browser: not in `make test-fast`

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


def test_full_sessions_in_both_conditions(browser, tmp_path):  # noqa: F811 (browser_kit fixture)
    import pandas as pd

    from modprefs.app.export import export_dir
    from modprefs.ratings.ingest import validate_ratings_dir

    SHOTS.mkdir(parents=True, exist_ok=True)
    study = make_study(tmp_path / "study", n_prompts=4, raters_per_condition=1, trials=2, seed=11, durations=(1.0, 1.5))
    url = f"sqlite:///{tmp_path}/browser.db"
    db = load(study, url)
    shots: dict[str, Path] = {}
    t0 = time.monotonic()
    with app_server(url, "--text-min-read", "1") as base:
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        sessions = [run_session(page, base, f"browser{i}", shots) for i in range(2)]
        context.close()
    assert not errors, errors
    assert {s["condition"] for s in sessions} == {"text", "audio"}
    assert all(s["code"] == "DONE1234" for s in sessions)
    assert all(s["return_url"].endswith("cc=DONE1234") for s in sessions)
    for cond in ("text", "audio"):
        assert shots[cond].is_file() and shots[cond].stat().st_size > 10_000
    counts = export_dir(db, tmp_path / "export")
    assert counts["participants"] == 2 and counts["trials"] == 6
    tables = validate_ratings_dir(tmp_path / "export", study.stimuli, scale=PAPER_SCALE)
    parts = tables["participants"].set_index("participant_id")
    assert parts.completed.all() and (parts.difficulty == 2).all()
    assert set(parts.english_proficiency) == {"Fluent"} and set(parts.other_languages) == {"German;French"}
    trials = tables["trials"].merge(parts[["condition"]], left_on="participant_id", right_index=True)
    audio = trials[trials.condition == "audio"].set_index("trial")
    text = trials[trials.condition == "text"].set_index("trial")
    assert audio.loc[0, "preference"] == "0" and text.loc[0, "preference"] == "0"  # passed the attention check
    assert (trials.rating_changes >= 1).all()  # the change of mind was counted as a reversal
    assert text.deliberation_time_s.isna().all() and text.replays_0.isna().all()
    assert audio.deliberation_time_s.notna().all() and (audio.decision_time_s > 2.0).all()
    first = study.assignments.set_index(["participant_id", "trial"]).first_clip
    pid = audio.participant_id.iloc[0]
    replayed_clip = first[(pid, 1)]  # Response A of trial 1 = the first-presented clip
    assert audio.loc[1, f"replays_{replayed_clip}"] == 1 and audio.loc[1, f"replays_{1 - replayed_clip}"] == 0
    assert bool(audio.loc[1, "relistened_first"]) is True
    assert audio.loc[1, "justification"].startswith("<script>")  # stored verbatim, rendered inert
    ev = pd.read_csv(tmp_path / "export/events.csv")
    assert (ev.kind == "seek_refused").any()
    # what the browser sessions exported goes through `modprefs stats` (one rater per condition: the ICC rows
    # are there, labelled, and the analyses that need more raters say so)
    from modprefs.cli import main as modprefs_main

    study.stimuli.to_csv(tmp_path / "clips.csv", index=False)
    rc = modprefs_main(
        [
            "stats",
            "--ratings",
            str(tmp_path / "export"),
            "--clips",
            str(tmp_path / "clips.csv"),
            "--out",
            str(tmp_path / "stats"),
            "--n-boot",
            "10",
            "--n-perm",
            "0",
            "--n-boot-alpha",
            "0",
            "--n-perm-alpha",
            "0",
        ]
    )
    assert rc == 0
    icc = pd.read_csv(tmp_path / "stats/tables/icc.csv")
    assert set(icc["condition"]) == {"audio", "text"} and (icc["n_participants"] == 1).all()
    assert (tmp_path / "stats/report.html").is_file()
    print(f"browser sessions: {time.monotonic() - t0:.1f} s; screenshots: {sorted(str(p) for p in shots.values())}")
