"""The participant pages in a real browser: Playwright driving Debian's chromium, headless.

One full session per condition (consent -> demographics -> attention check -> trials -> difficulty ->
completion code) against `modprefs app serve` on loopback, with 1-2 s clips. In the audio condition
it checks that a response's sliders stay disabled until its clip's `ended` event, that Response B
cannot be played before A has been heard, that seeking and rate changes are refused on the first
listen, and that a reload resumes the trial; in the text condition, that Response B appears only
after Response A has been read (the "Show Response B" button). tests/app/test_app_browser_integrity.py
checks locked sliders, the midpoint, reloads racing the unload flush, forged listens, rate limits
and the headphone check. Screenshots of a trial page in each condition go to
results/app_screenshots/. Without chromium or Playwright the test is skipped, unless
MODPREFS_REQUIRE_BROWSER=1 (CI), which makes their absence a failure (tests/support/browser_kit.py).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from modprefs.scale import PAPER_SCALE
from support.app_services import app_server
from support.app_study import load, make_study
from support.browser_session import SHOTS, run_session

pytestmark = pytest.mark.integration  # runs snakemake, a server or a browser: not in `make test-fast`


def test_full_sessions_in_both_conditions(browser, tmp_path):
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
