"""Live reliability and the stopping rule (issue #54), with simulated participants through the app over HTTP.

The dashboard's live ICC (``/admin/live.json``, the page's table) must equal ``modprefs stats`` on the export of that
moment; a declared stopping rule must close the intake at its look, and the export must analyse as usual, its
interval at the look's corrected level equal to the look's.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")


from modprefs.app.db import Database
from modprefs.app.export import export_dir
from modprefs.app.live_stats import CONFIG_KEY, claim
from modprefs.app.server import create_app
from modprefs.stats.sequential import decide, look_due, look_level, n_looks, rule_from_config
from support.app_sim import AUDIO_RE, TEXT_RE, run_participant
from support.app_study import ROOT, load, make_study
from support.doc_blocks import commands, fenced_blocks, section

SECRET = "s3cret-for-live-tests"
AUTH = {"Authorization": f"Bearer {SECRET}"}
N_BOOT, SEED = 40, 11  # the live ICC's and `modprefs stats`' resampling (small: the test's time)
ICC_KEYS = (
    "n_participants",
    "k_mean_raters",
    "icc_2_1",
    "icc_2_1_lo",
    "icc_2_1_hi",
    "icc_2_k",
    "icc_2_k_lo",
    "icc_2_k_hi",
)
WORDS = {"zero": 0, "one": 1}


def clip_of(page: str, pos: str) -> str | None:
    """The clip shown at ``pos`` on a trial page: the audio's file name, or the text's 'Response zero to prompt 3'."""
    for src, p in AUDIO_RE.findall(page):
        if p == pos:
            return src.rsplit("/", 1)[-1][:-4]
    for p, body in TEXT_RE.findall(page):
        m = re.match(r"\s*Response (zero|one) to prompt (\d+)", html.unescape(body))
        if p == pos and m:
            return f"pr{int(m.group(2)):02d}_{WORDS[m.group(1)]}"
    return None


def rater(seed: int, clip_sd: float = 30.0, rater_sd: float = 4.0, noise_sd: float = 5.0):
    """A participant whose ratings follow clip + rater + noise (true clip means fixed by clip id), 1..100."""
    rng = np.random.default_rng([seed, 54])
    bias = rng.normal(0, rater_sd)

    def rate(page: str, pos: str) -> int:
        clip = clip_of(page, pos)
        if clip is None or not clip.startswith("pr"):  # the attention check
            return 50
        mean = 50 + clip_sd * np.random.default_rng([int(clip[2:4]), int(clip[-1]), 7]).standard_normal()
        return int(np.clip(round(mean + bias + rng.normal(0, noise_sd)), 1, 100))

    return rate


def cell(value: object) -> object:
    """A statistic for an exact comparison: NaN (null in JSON) as None, numpy numbers as Python numbers."""
    value = value.item() if hasattr(value, "item") else value
    return None if value is None or value != value else value


def live_meta(**stopping: object) -> dict[str, str]:
    return {CONFIG_KEY: json.dumps({"stopping": stopping, "params": {"n_boot": N_BOOT, "seed": SEED}})}


def run_batch(app, seeds, durations, one_at_a_time: bool = False):
    """Simulated participants ``seeds`` through the app, side by side; ``one_at_a_time``: each finishes before the
    next starts, so that who gets which slot (condition, clips) and so every statistic is the same on every run."""

    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            if one_at_a_time:
                return [await run_participant(c, seed=i, durations=durations, rate=rater(i)) for i in seeds]
            return await asyncio.gather(
                *[run_participant(c, seed=i, durations=durations, rate=rater(i)) for i in seeds]
            )

    return asyncio.run(go())


def admin_get(app: Any, path: str) -> Any:
    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            return await c.get(path, headers=AUTH)

    r = asyncio.run(go())
    assert r.status_code == 200, r.text
    return r


def settled(app, timeout: float = 240.0) -> dict:
    """/admin/live.json once no update runs and the last one saw every stored task."""
    deadline = time.monotonic() + timeout
    while True:
        live = admin_get(app, "/admin/live.json").json()
        tasks = admin_get(app, "/admin/status.json").json()["trials_submitted"]
        snap = live["snapshot"]
        if not live["updating"] and snap is not None and snap["tasks"] == tasks:
            return live
        assert time.monotonic() < deadline, f"the live statistics did not settle: {live}"
        time.sleep(0.5)


def modprefs_stats(export: Path, out: Path, *extra: str) -> pd.DataFrame:
    """``modprefs stats`` on the export (the CLI, as a lab runs it); its icc.csv."""
    cmd = [sys.executable, "-m", "modprefs.cli", "stats", "--ratings", str(export), "--out", str(out)]
    cmd += ["--n-boot", str(N_BOOT), "--seed", str(SEED), "--n-perm", "0", "--n-boot-alpha", "0", "--n-perm-alpha", "0"]
    done = subprocess.run([*cmd, *extra], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return pd.read_csv(out / "tables" / "icc.csv").set_index("condition")


@pytest.fixture
def study(tmp_path):
    return make_study(tmp_path / "study", n_prompts=6, raters_per_condition=8, trials=3, durations=(0.2, 0.3))


def serve(study, tmp_path, monkeypatch, **stopping: object):
    """The study loaded with a live configuration (``study.stopping`` keys; n_boot and seed: the test's)."""
    monkeypatch.setenv("MODPREFS_ADMIN_SECRET", SECRET)
    url = f"sqlite:///{tmp_path}/app.db"
    db = load(study, url, **live_meta(**stopping))
    return db, create_app(url, settings_overrides={"text_min_read_s": 0.05})


def test_the_dashboards_live_icc_equals_modprefs_stats_on_the_export_of_that_moment(study, tmp_path, monkeypatch):
    db, app = serve(study, tmp_path, monkeypatch, update_every_trials=1, target_icc=0.8)
    seen = []
    for batch, seeds in enumerate((range(0, 6), range(6, 10))):
        run_batch(app, seeds, study.durations)
        live = settled(app)
        snap = live["snapshot"]
        export_dir(db, tmp_path / f"export{batch}")
        icc = modprefs_stats(tmp_path / f"export{batch}", tmp_path / f"stats{batch}")
        assert set(snap["conditions"]) == set(icc.index) == {"audio", "text"}
        for cond, row in snap["conditions"].items():
            for key in ICC_KEYS:
                assert cell(row[key]) == cell(icc.loc[cond, key]), (batch, cond, key, row[key], icc.loc[cond, key])
            needed = np.ceil(0.8 * (1 - row["icc_2_1"]) / (row["icc_2_1"] * 0.2) - 1e-12) if row["icc_2_1"] < 0.8 else 1
            assert row["raters_needed"] == needed
            assert row["raters_still_needed"] == max(0.0, needed - row["k_mean_raters"])
        page = admin_get(app, "/admin").text
        for cond, row in snap["conditions"].items():
            cells = re.search(
                rf'<tr data-condition="{cond}"><th scope="row">{cond}</th><td data-k="n_participants">.*?</tr>',
                page,
                re.S,
            )
            assert cells and f'data-k="icc_2_k">{row["icc_2_k"]:.3f}<' in cells.group(0)
        assert snap["updated_utc"] in page
        seen.append({c: (r["n_participants"], round(r["icc_2_k"], 3)) for c, r in snap["conditions"].items()})
    # the second moment has more participants: the numbers moved with the ratings
    assert all(seen[1][c][0] > seen[0][c][0] for c in ("audio", "text")), seen
    # the simulated raters agree (clip SD 30 against rater SD 4 and noise 5): far from the ~0 of random ratings
    assert all(seen[1][c][1] > 0.5 for c in ("audio", "text")), seen


def test_an_update_is_claimed_once_every_n_tasks_and_not_without_a_live_configuration(study, tmp_path, monkeypatch):
    monkeypatch.setenv("MODPREFS_ADMIN_SECRET", SECRET)
    url = f"sqlite:///{tmp_path}/app.db"
    db = load(study, url)  # loaded without a live configuration (as by an earlier version): no updates
    app = create_app(url, settings_overrides={"text_min_read_s": 0.05})
    run_batch(app, range(2), study.durations)  # 2 participants x 4 tasks (the attention check + 3)
    time.sleep(1.0)
    live = admin_get(app, "/admin/live.json").json()
    assert live["snapshot"] is None and live["enabled"] is False and not live["updating"]
    assert "Not computed yet" in admin_get(app, "/admin").text
    assert claim(db, 3) == 8  # 8 tasks since none: due, claimed at 8
    assert claim(db, 3) is None and claim(db, 1) is None  # nothing new since
    run_batch(app, [2], study.durations)  # 4 more: 12
    assert claim(db, 5) is None  # 12 - 8 < 5
    assert claim(db, 4) == 12 and claim(db, 4) is None  # claimed once


def test_the_stopping_rule_closes_the_intake_when_met_and_the_export_analyses_as_usual(tmp_path, monkeypatch):
    # every participant rates all 6 prompts (k = the participants so far)
    study = make_study(tmp_path / "study", n_prompts=6, raters_per_condition=8, trials=6, durations=(0.2, 0.3))
    rule = {"rule": "lower_bound", "target_icc": 0.6, "min_participants": 6, "max_participants": 8, "look_every": 2}
    db, app = serve(study, tmp_path, monkeypatch, update_every_trials=1000, **rule)  # only the looks update
    level = look_level(rule_from_config(rule))
    assert level == pytest.approx(1 - 0.05 / 2)  # looks at 6 and 8 completed participants per condition
    # one at a time: the slots' order, and so the look's numbers, are the same on every run (side by side, who lands
    # in which condition varied, and with it whether the text condition's lower bound reached .6)
    run_batch(app, range(0, 8), study.durations, one_at_a_time=True)  # 4 per condition: no look due
    time.sleep(1.0)
    assert admin_get(app, "/admin/live.json").json()["state"]["looks"] == []
    run_batch(app, range(8, 12), study.durations, one_at_a_time=True)  # 6 per condition: the first look
    live = settled(app)
    state = live["state"]
    assert [k["n_participants"] for k in state["looks"]] == [6]
    look = state["looks"][0]
    assert look["decision"] == "met" and look["level"] == level
    assert all(c["icc_2_k_lo"] >= 0.6 for c in look["conditions"].values()), look
    assert state["stopped"]["index"] == 0 and live["intake"] == "closed"
    page = admin_get(app, "/admin").text
    assert "Target met" in page and f"--ci-level {level:.6g}" in page

    async def newcomer():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            return await c.get("/start", follow_redirects=True)

    r = asyncio.run(newcomer())
    assert "closed" in r.text.lower()
    # the export analyses as usual; at the look's level its ICC(2,k) interval is the look's (no task came after it)
    export_dir(db, tmp_path / "export")
    icc = modprefs_stats(tmp_path / "export", tmp_path / "stats", "--ci-level", f"{level!r}")
    for cond, c in look["conditions"].items():
        assert (c["icc_2_k_lo"], c["icc_2_k_hi"]) == (icc.loc[cond, "icc_2_k_lo"], icc.loc[cond, "icc_2_k_hi"])
    assert (tmp_path / "stats" / "report.html").is_file()
    # the lab overrides: reopens the intake; the rule takes no further look (its second, at 8, would be due)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)

    async def reopen():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            return await c.post("/admin/intake", data={"csrf": csrf, "intake": "open"}, headers=AUTH)

    assert asyncio.run(reopen()).status_code == 303
    run_batch(app, range(12, 16), study.durations)  # 8 per condition: no look, so no update (every 1000 tasks)
    time.sleep(2.0)
    live = admin_get(app, "/admin/live.json").json()
    assert admin_get(app, "/admin/status.json").json()["trials_submitted"] == 16 * 7
    assert live["intake"] == "open" and len(live["state"]["looks"]) == 1 and live["state"]["stopped"]["index"] == 0
    assert not live["updating"] and live["snapshot"]["completed"] == {"audio": 6, "text": 6}
    assert "the lab reopened it (override" in admin_get(app, "/admin").text


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "modprefs.cli", *args], capture_output=True, text=True, timeout=600)


def doc_command(cmd: str, db_url: str, study, config: Path) -> list[str]:
    """A command of docs/app.md's section as written, on this test's database, study files and config."""
    files = study.files
    inputs = ["--assignments", str(files.assignments), "--stimuli", str(files.stimuli)]
    inputs += ["--conversations", str(files.conversations), "--prompts", str(files.prompts)]
    inputs += ["--manifest", str(files.manifest), "--base-dir", str(files.base_dir)]
    words = shlex.split(cmd.replace("sqlite:///results/app/study.db", db_url))
    assert words[:2] == ["modprefs", "app"], cmd
    out: list[str] = []
    for w in words[1:]:
        if out and out[-1] == "--results":
            out[-1:] = inputs + ["--headphone-check", "off", "--calibration", "off", "--practice", "off"]
        elif w == "config.yaml":
            out.append(str(config))
        else:
            out.append(w)
    return out


def test_the_docs_rule_and_commands_run_as_written(study, tmp_path, monkeypatch):
    sec = section(ROOT / "docs" / "app.md", "Live reliability and the stopping rule")
    declared = yaml.safe_load(fenced_blocks(sec, "yaml")[0])
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({**declared, "seed": SEED, "stats": {"n_boot": N_BOOT}}), encoding="utf-8")
    cmds = [c for block in fenced_blocks(sec, "bash") for c in commands(block)]
    load_cmd = next(c for c in cmds if " load " in c)
    status_cmd = next(c for c in cmds if " status " in c)
    url = f"sqlite:///{tmp_path}/doc.db"
    done = cli(*doc_command(load_cmd, url, study, config))
    assert done.returncode == 0, done.stderr
    done = cli(*doc_command(status_cmd, url, study, config))
    assert done.returncode == 0, done.stderr
    live = json.loads(done.stdout)["live"]
    assert live["rule"]["rule"] == "lower_bound" and live["rule"]["look_points"] == [10, 15, 20, 25, 30]
    assert live["rule"]["look_level"] == pytest.approx(0.99)  # 1 - .05 / 5, as the section says
    assert live["snapshot"] is None and live["now"]["tasks"] == 0 and "error" in live["now"]
    # participants come: status --stats computes the numbers now, as modprefs stats on the export
    monkeypatch.setenv("MODPREFS_ADMIN_SECRET", SECRET)
    run_batch(create_app(url, settings_overrides={"text_min_read_s": 0.05}), range(6), study.durations)
    live = json.loads(cli(*doc_command(status_cmd, url, study, config)).stdout)["live"]
    export_dir(Database(url, create=False), tmp_path / "export")
    icc = modprefs_stats(tmp_path / "export", tmp_path / "stats")
    assert live["now"]["tasks"] == 24
    for cond, row in live["now"]["conditions"].items():
        assert [cell(row[k]) for k in ICC_KEYS] == [cell(icc.loc[cond, k]) for k in ICC_KEYS], cond


@pytest.mark.parametrize(
    ("stopping", "expected"),
    [
        ({"rule": "sometimes"}, "study.stopping.rule is 'sometimes', not one of off, lower_bound, half_width"),
        ({"rule": "lower_bound", "alpha": 2}, "study.stopping.alpha = 2 is not in"),
        ({"min_participants": 20, "max_participants": 10}, "max_participants (10) is below min_participants (20)"),
        ({"look_every": 2.5}, "study.stopping.look_every is 2.5, not a whole number"),
        ({"stop_early": True}, "unknown key(s) study.stopping.['stop_early']"),
    ],
)
def test_a_bad_stopping_rule_is_refused_naming_the_file_and_key(study, tmp_path, stopping, expected):
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({"study": {"stopping": stopping}}), encoding="utf-8")
    load_cmd = "modprefs app load --db sqlite:///results/app/study.db --results results --configfile config.yaml"
    done = cli(*doc_command(load_cmd, f"sqlite:///{tmp_path}/bad.db", study, config))
    assert done.returncode == 2 and f"app load --configfile {config}: " in done.stderr and expected in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "bad.db").exists()


def test_bonferroni_looks_level_and_decisions():
    rule = rule_from_config({"rule": "half_width", "half_width": 0.1, "min_participants": 10, "max_participants": 30})
    assert n_looks(rule) == 5 and look_level(rule) == pytest.approx(0.99)
    assert [look_due(rule, n, 0) for n in (9, 10)] == [False, True] and not look_due(rule, 100, 5)
    assert decide(rule, {"audio": (0.5, 0.69), "text": (0.62, 0.8)}, 10, 0) == "met"
    assert decide(rule, {"audio": (0.5, 0.71), "text": (0.6, 0.8)}, 10, 0) == "continue"
    assert decide(rule, {"audio": (0.5, 0.71)}, 30, 4) == "max" and decide(rule, {"audio": (0.5, 0.71)}, 26, 4) == "max"
    assert decide(rule, {"audio": (float("nan"), 0.7)}, 10, 0) == "continue"
    assert rule_from_config({"rule": False}).rule == "off"  # YAML 1.1 reads an unquoted off as false
