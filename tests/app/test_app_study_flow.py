"""The study's flow around the trials (in-process, over HTTP): `app load`'s defaults and the lab's texts, the
practice trial, Prolific's end states, and the admin dashboard.

* `app load` turns the headphone check (record), the calibration and the practice trial on by default; the
  consent, instructions and debrief are the lab's Markdown files (or the packaged ones) with placeholders:
  ``{minutes}`` is computed from the design; an unknown placeholder, one without a value, an unclosed one, an
  empty or a missing file is refused naming the file and the placeholder, and nothing is written;
* the practice trial (trial -1) is exported with ``practice`` 1 and dropped when the ratings are read;
* each end state (completed, declined, screened out, attention failed, already taken part, full) has its own
  page and heading; declining shows the no-consent code; the completion page stays until the participant goes
  on to Prolific; a Prolific id that only opened the consent page comes back with a new session;
* ``/admin``'s per-condition progress matches the export, its per-participant CSV is the export's participants
  table (the rows in the export), with the Prolific approve/reject lists; ``/admin/responses`` shows A/B as seen;
  `app invite --csv` writes the links; refused submissions are incidents.
"""

from __future__ import annotations

import asyncio
import csv
import io
import re

import httpx
import pandas as pd
import pytest
from sqlalchemy import update
from starlette.testclient import TestClient

from modprefs.app import service
from modprefs.app.db import open_database
from modprefs.app.export import export_dir
from modprefs.app.models import Participant, Slot
from modprefs.app.server import create_app
from modprefs.app.texts import estimate_minutes
from modprefs.cli import main
from modprefs.ratings.ingest import ingest_ratings, validate_ratings_dir
from modprefs.scale import PAPER_SCALE
from support.app_sim import CSRF_RE, page_data, run_participant
from support.app_study import load, make_study

SECRET = "flow-secret-16chars"
FAST = {"text_min_read_s": 0.3}
H1 = re.compile(r"<h1>(.*?)</h1>", re.S)


@pytest.fixture
def study(tmp_path):
    return make_study(tmp_path / "study", n_prompts=6, raters_per_condition=3, trials=2, durations=(0.3, 0.5))


def load_args(study, url: str) -> list[str]:
    f = study.files
    args = ["app", "load", "--db", url, "--assignments", str(f.assignments), "--stimuli", str(f.stimuli)]
    args += ["--conversations", str(f.conversations), "--prompts", str(f.prompts), "--manifest", str(f.manifest)]
    return [*args, "--base-dir", str(f.base_dir), "--completion-code", "DONE1234"]


def heading(html: str) -> str:
    return H1.search(html).group(1).strip()


def run_sims(app, specs: list[dict]) -> list:
    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            return await asyncio.gather(*[run_participant(c, seed=i, **kw) for i, kw in enumerate(specs)])

    return asyncio.run(go())


# ---- app load: defaults and the lab's texts ---------------------------------------------------------------


def test_load_defaults_and_the_labs_texts(study, tmp_path, capsys):
    url = f"sqlite:///{tmp_path}/a.db"
    assert main(load_args(study, url)) == 0
    st = service.read_settings(open_database(url, "status"))
    assert (st.headphone_check, st.calibration, st.practice) == ("record", "on", "on")
    tasks = int(study.assignments.groupby("participant_id").size().max())  # attention check + 2 trials
    minutes = estimate_minutes(tasks + 1)  # + the practice trial
    with TestClient(create_app(url), base_url="http://testserver") as client:
        html = client.get("/start", follow_redirects=True).text
    assert f"about <strong>{minutes} minutes</strong>" in html
    assert "20–40" not in html and "headphones or speakers" not in html and "<strong>headphones</strong>" in html

    lab = tmp_path / "consent.md"
    lab.write_text(
        "# Our study\n\nIt takes **{minutes} minutes** ({trials} tasks) and pays {payment}.\n\n"
        "Questions: {contact}. Approved by {ethics}. Braces: {{literal}}.\n\n<script>alert(1)</script>\n",
        encoding="utf-8",
    )
    url = f"sqlite:///{tmp_path}/b.db"
    extra = ["--consent", str(lab), "--payment", "£3", "--contact", "lab@example.org", "--ethics", "IRB-42"]
    assert main([*load_args(study, url), *extra, "--minutes-per-trial", "4"]) == 0
    with TestClient(create_app(url), base_url="http://testserver") as client:
        html = client.get("/start", follow_redirects=True).text
    want = estimate_minutes(tasks + 1, per_trial=4)
    assert f"<strong>{want} minutes</strong> ({tasks} tasks) and pays £3" in html
    assert "lab@example.org" in html and "IRB-42" in html and "{literal}" in html
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # no raw HTML

    bad = tmp_path / "bad.md"
    bad.write_text("Paid {wage} per hour.\n", encoding="utf-8")
    unset = tmp_path / "unset.md"
    unset.write_text("We pay {payment}.\n", encoding="utf-8")
    unclosed = tmp_path / "unclosed.md"
    unclosed.write_text("# Consent\n\nQuestions? Write to {contact before you start.\n", encoding="utf-8")
    empty = tmp_path / "empty.md"
    empty.write_text(" \n\n", encoding="utf-8")
    for i, (option, path, words) in enumerate(
        [
            ("--consent", bad, ["{wage}", str(bad), "unknown placeholder"]),
            ("--debrief", unset, ["{payment}", str(unset), "--payment"]),
            ("--instructions", tmp_path / "missing.md", [str(tmp_path / "missing.md"), "cannot read"]),
            ("--consent", unclosed, [str(unclosed), "unclosed placeholder '{contact before you", "line 3"]),
            ("--debrief", empty, [str(empty), "the file is empty"]),
        ]
    ):
        capsys.readouterr()
        refused = tmp_path / f"refused{i}.db"
        assert main([*load_args(study, f"sqlite:///{refused}"), option, str(path)]) == 2
        err = capsys.readouterr().err
        assert all(w in err for w in words), err
        assert not refused.exists()  # nothing written


def test_invite_writes_csv(study, tmp_path, capsys):
    url = f"sqlite:///{tmp_path}/i.db"
    load(study, url).dispose()
    capsys.readouterr()
    out = tmp_path / "links.csv"
    assert main(["app", "invite", "--db", url, "-n", "3", "--base-url", "https://x.org/study", "--csv", str(out)]) == 0
    printed = capsys.readouterr().out.split()
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [r["url"] for r in rows] == printed and len(rows) == 3
    assert all(r["url"] == f"https://x.org/study/p/{r['token']}" for r in rows) and rows[2]["n"] == "3"


# ---- the practice trial -------------------------------------------------------------------------------------


def test_practice_trial_is_marked_in_the_export_and_never_analysed(study, tmp_path):
    url = f"sqlite:///{tmp_path}/p.db"
    db = load(study, url, practice="on")
    app = create_app(url, settings_overrides=FAST)
    outs = run_sims(app, [{"durations": study.durations}, {"durations": study.durations}])
    assert all(o.final == "done" for o in outs), [o.final for o in outs]
    export_dir(db, tmp_path / "export")
    trials = pd.read_csv(tmp_path / "export/trials.csv")
    ratings = pd.read_csv(tmp_path / "export/ratings.csv")
    practice = trials[trials.practice == 1]
    assert len(practice) == 2 and (practice.trial == -1).all()  # one per participant, before the attention check
    assert set(trials.loc[trials.practice == 0, "trial"]) == {0, 1, 2}
    assert (ratings.loc[ratings.trial == -1, "practice"] == 1).all() and (ratings.practice == 1).sum() == 4
    assert set(pd.read_csv(tmp_path / "export/participants.csv").condition) == {"text", "audio"}
    tables = validate_ratings_dir(tmp_path / "export", study.stimuli, scale=PAPER_SCALE)
    assert (tables["ratings"]["trial"] >= 0).all() and len(tables["ratings"]) == len(ratings) - 4
    valid = ingest_ratings(tmp_path / "export", study.stimuli, scale=PAPER_SCALE)
    assert len(valid.tables["trials"]) == len(trials) - 2
    assert any("practice" in n for n in valid.notes), valid.notes


# ---- Prolific's end states ----------------------------------------------------------------------------------


def test_every_end_state_has_its_own_page(study, tmp_path):
    url = f"sqlite:///{tmp_path}/e.db"
    codes = {"no_consent_code": "NOCONS1", "screenout_code": "SCREEN1", "attention_fail_code": "ATT1"}
    db = load(study, url, expired_code="TIMEOUT1", **codes)
    app = create_app(url, settings_overrides=FAST)
    headings = {}
    with TestClient(app, base_url="http://testserver") as client:

        def start(pid: str, session: str = "s1"):
            r = client.get("/start", params={"PROLIFIC_PID": pid, "STUDY_ID": "st", "SESSION_ID": session})
            return r, str(r.url).rsplit("/", 1)[-1], (CSRF_RE.search(r.text).group(1) if r.status_code == 200 else "")

        r, token, csrf = start("decliner")
        r = client.post(f"/p/{token}/consent", data={"csrf": csrf, "agree": "no"})
        headings["declined"] = heading(r.text)
        assert "return your submission" in r.text and "NOCONS1" in r.text
        assert "https://app.prolific.com/submissions/complete?cc=NOCONS1" in r.text
        r, _, _ = start("decliner", "another-session")
        assert r.status_code == 403 and "Something went wrong" not in r.text
        headings["already"] = heading(r.text)
        r, token, csrf = start("young")
        client.post(f"/p/{token}/consent", data={"csrf": csrf, "agree": "yes"})
        r = client.post(f"/p/{token}/demographics", data={"csrf": csrf, "age": "17", "native_english": "yes"})
        headings["screened_out"] = heading(r.text)
        assert "SCREEN1" in r.text
        # a Prolific id that only opened the consent page comes back with another session: the same session goes on
        r, token, _ = start("looker")
        r2, token2, _ = start("looker", "second-session")
        assert r2.status_code == 200 and token2 == token and heading(r2.text) == "Information and consent"
        # a session whose page was gone past the abandon timeout: expired, with the lab's "timed out" code
        r, token, csrf = start("sleeper")
        client.post(f"/p/{token}/consent", data={"csrf": csrf, "agree": "yes"})
        client.post(f"/p/{token}/demographics", data={"csrf": csrf, "age": "40", "native_english": "yes"})
        with db.transaction() as s:
            s.execute(update(Participant).where(Participant.token == token).values(last_seen=0.0))
        r = client.get(f"/p/{token}")
        headings["expired"] = heading(r.text)
        assert "TIMEOUT1" in r.text and "https://app.prolific.com/submissions/complete?cc=TIMEOUT1" in r.text
        # the lab paused, then closed the intake (the dashboard): new arrivals are told so, and take nothing
        for state, status in (("paused", 503), ("closed", 403)):
            service.set_intake(db, state)
            r, _, _ = start(f"new-{state}")
            assert r.status_code == status
            headings[state] = heading(r.text)
        service.set_intake(db, "open")
    prolific = [{"PROLIFIC_PID": f"p{i}", "STUDY_ID": "st", "SESSION_ID": f"s{i}"} for i in range(2)]
    done, failed = run_sims(
        app,
        [
            {"prolific": prolific[0], "durations": study.durations},
            {"prolific": prolific[1], "durations": study.durations, "fail_attention": True},
        ],
    )
    assert (done.final, failed.final) == ("done", "failed_attention")
    with TestClient(app, base_url="http://testserver") as client:
        r = client.get(f"/p/{done.token}")
        headings["completed"] = heading(r.text)
        cc = "https://app.prolific.com/submissions/complete?cc=DONE1234"
        data = page_data(r.text)  # no automatic redirect: the debrief stays until the participant goes on
        assert "redirect_url" not in data and "ping_url" not in data
        assert f'href="{cc}"' in r.text and "this page stays open until you do" in r.text
        assert "Thank you for taking part" in r.text  # the debrief
        r = client.get(f"/p/{failed.token}")
        headings["failed_attention"] = heading(r.text)
        assert "ATT1" in r.text
        with db.transaction() as s:
            s.execute(update(Slot).where(Slot.status == "open").values(status="taken"))
        r, token, csrf = start("late")
        client.post(f"/p/{token}/consent", data={"csrf": csrf, "agree": "yes"})
        r = client.post(f"/p/{token}/demographics", data={"csrf": csrf, "age": "40", "native_english": "yes"})
        headings["full"] = heading(r.text)
    assert len(set(headings.values())) == len(headings) == 9, headings
    assert "Something went wrong" not in headings.values()


# ---- the admin dashboard ------------------------------------------------------------------------------------


def dashboard_cells(html: str) -> dict[str, dict[str, str]]:
    rows = re.findall(r'<tr data-condition="(\w+)">(.*?)</tr>', html, re.S)
    return {cond: dict(re.findall(r'<td data-k="(\w+)">([^<]*)</td>', body)) for cond, body in rows}


def test_admin_dashboard_matches_the_export(study, tmp_path, monkeypatch):
    monkeypatch.setenv("MODPREFS_ADMIN_SECRET", SECRET)
    url = f"sqlite:///{tmp_path}/d.db"
    db = load(study, url, practice="on", calibration="on", headphone_check="record")
    app = create_app(url, settings_overrides=FAST)
    d = study.durations
    specs = [  # mono listeners fail the headphone check (recorded) in the audio condition; 2+ of 5 are there
        {"durations": d, "headphones": "mono"},
        {"durations": d, "headphones": "mono"},
        {"durations": d, "fail_attention": True, "headphones": "mono"},
        {"durations": d, "stop_after": 0, "headphones": "mono"},
        {"durations": d},
    ]
    for i, spec in enumerate(specs):
        spec["prolific"] = {"PROLIFIC_PID": f"dash{i}", "STUDY_ID": "st", "SESSION_ID": f"s{i}"}
    outs = run_sims(app, specs)
    auth = {"Authorization": f"Bearer {SECRET}"}
    with TestClient(app, base_url="http://testserver") as client:
        # a refused submission (no sliders) of a participant at a trial: an incident
        r = client.get(f"/p/{outs[3].token}")
        data = page_data(r.text)
        r = client.post(f"/p/{outs[3].token}/trial/{data['trial']}", data={"csrf": data["csrf"], "preference": "A"})
        assert r.status_code == 422
        assert client.get("/admin").status_code == 401
        html = client.get("/admin", headers=auth).text
        responses = client.get("/admin/responses", headers=auth).text
        dash_csv = client.get("/admin/participants.csv", headers=auth).text
        clips_csv = client.get("/admin/clips.csv", headers=auth).text
        approve = client.get("/admin/prolific/approve.txt", headers=auth).text.split()
        reject = client.get("/admin/prolific/reject.txt", headers=auth).text.split()
    assert 'http-equiv="refresh"' not in html and "/static/admin.js" in html  # updated by fetch, not reloaded
    cells = dashboard_cells(html)
    export_dir(db, tmp_path / "export")
    export_text = (tmp_path / "export/participants.csv").read_text()
    parts = pd.read_csv(tmp_path / "export/participants.csv")
    # the dashboard's per-participant CSV: one row per session; its rows in the export, in the export's columns,
    # are the export's participants table, byte for byte
    dash = pd.read_csv(io.StringIO(dash_csv), dtype=str, keep_default_na=False)
    assert len(dash) == len(outs) and list(dash.columns[: len(parts.columns)]) == list(parts.columns)
    mine = dash[dash.in_export == "true"][list(parts.columns)]
    assert mine.to_csv(index=False, lineterminator="\n") == export_text
    assert set(dash.prolific) == {"approve", "reject", ""}  # the one who stopped is still in a trial
    assert sorted(approve) == sorted(dash.prolific_pid[dash.prolific == "approve"]) and len(approve) == 3
    assert reject == list(dash.prolific_pid[dash.prolific == "reject"]) and len(reject) == 1
    # raters per clip so far: the export's ratings per clip and condition (practice left out), against the design's
    clips = pd.read_csv(io.StringIO(clips_csv)).set_index("clip_id")
    ratings = pd.read_csv(tmp_path / "export/ratings.csv")
    got = ratings[ratings.practice == 0].groupby(["clip_id", "condition"]).size()
    for (clip, cond), n in got.items():
        assert clips.loc[clip, f"{cond}_rated"] == n, (clip, cond)
    assert clips[["text_rated", "audio_rated"]].to_numpy().sum() == got.sum()
    design = study.assignments.assign(clip_id=study.assignments.prompt_id + "_0").groupby(["clip_id", "condition"])
    for (clip, cond), n in design.size().items():
        assert clips.loc[clip, f"{cond}_planned"] == n, (clip, cond)
    trials = pd.read_csv(tmp_path / "export/trials.csv").merge(parts[["participant_id", "condition"]])
    incidents = pd.read_csv(tmp_path / "export/incidents.csv")
    assert "submission_refused" in set(incidents.kind)
    assert "submission_refused" in html
    assert set(cells) == {"text", "audio"}
    for cond, c in cells.items():
        mine = parts[parts.condition == cond]
        assert int(c["started"]) == len(mine), (cond, c)
        assert int(c["completed"]) == int(mine.completed.sum()), (cond, c)
        assert int(c["attention_failed"]) == int((~mine.passed_attention).sum()), (cond, c)
        assert int(c["headphone_failed"]) == int((mine.headphone_check == "failed").sum()), (cond, c)
        done = trials[(trials.condition == cond) & (trials.practice == 0)]
        assert int(c["trials_done"]) == len(done), (cond, c)
        planned = study.assignments[study.assignments.condition == cond]
        assert int(c["trials_planned"]) == len(planned) and int(c["slots"]) == planned.participant_id.nunique()
        assert float(c["median_trial_s"]) == pytest.approx(done.decision_time_s.median(), abs=0.06)
    assert int(cells["audio"]["headphone_failed"]) >= 1
    # /admin/responses: the preference as the participant saw it, and the condition
    rows = re.findall(r"<tr><td>([^<]*)</td><td>(\w+)</td><td>([^<]*)</td><td>([^<]*)</td><td>(\w+)</td>", responses)
    assert rows and {r[1] for r in rows} == {"text", "audio"}
    assert {r[4] for r in rows} <= {"A", "B", "tie"} and "practice" in {r[2] for r in rows}


def test_refused_page_forms_are_incidents(study, tmp_path):
    """A consent form with a wrong CSRF token and a difficulty rating posted before the end are refused, and each
    refusal is an incident (submission_refused, naming the form) in the export."""
    url = f"sqlite:///{tmp_path}/r.db"
    db = load(study, url)
    app = create_app(url, settings_overrides=FAST)
    with TestClient(app, base_url="http://testserver") as client:
        r = client.get("/start", params={"PROLIFIC_PID": "p1", "STUDY_ID": "st", "SESSION_ID": "s1"})
        token, csrf = str(r.url).rsplit("/", 1)[-1], CSRF_RE.search(r.text).group(1)
        r = client.post(f"/p/{token}/consent", data={"csrf": "forged", "agree": "yes"})
        assert r.status_code >= 400
        r = client.post(f"/p/{token}/difficulty", data={"csrf": csrf, "difficulty": "3"})
        assert r.status_code >= 400
    export_dir(db, tmp_path / "export")
    incidents = pd.read_csv(tmp_path / "export/incidents.csv")
    refused = incidents[incidents.kind == "submission_refused"]
    assert len(refused) == 2
    assert refused.detail.str.startswith("consent: ").sum() == 1
    assert refused.detail.str.startswith("difficulty: ").sum() == 1


def test_admin_secret_length_throttled_logins_and_the_intake_form(study, tmp_path, monkeypatch, capsys):
    """An admin secret under 16 characters stops `app serve` before it serves (and the app factory); wrong secrets
    are throttled per client IP (5, then 429 with Retry-After, the right secret included); the dashboard's intake
    form needs its CSRF token and a same-site request, and pauses the intake."""
    url = f"sqlite:///{tmp_path}/a.db"
    db = load(study, url)
    monkeypatch.setenv("MODPREFS_ADMIN_SECRET", "x")
    assert main(["app", "serve", "--db", url, "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert "MODPREFS_ADMIN_SECRET is 1 characters long: the admin secret needs at least 16" in err, err
    with pytest.raises(service.SettingsError, match="at least 16"):
        create_app(url)
    monkeypatch.setenv("MODPREFS_ADMIN_SECRET", SECRET)
    app = create_app(url, settings_overrides=FAST)
    with TestClient(app, base_url="http://testserver") as client:
        assert client.get("/admin").status_code == 401  # no secret sent: a browser's first try, not a failure
        wrong = [client.get("/admin", headers={"Authorization": f"Bearer wrong-{i}"}) for i in range(7)]
        assert [r.status_code for r in wrong] == [401] * 5 + [429] * 2
        assert 1 <= int(wrong[-1].headers["retry-after"]) <= 60
        right = client.get("/admin", headers={"Authorization": f"Bearer {SECRET}"})
        assert right.status_code == 429  # throttled until the wait is over, whatever the secret
    app = create_app(url, settings_overrides=FAST)  # a fresh process: no failures counted
    auth = {"Authorization": f"Bearer {SECRET}"}
    with TestClient(app, base_url="http://testserver") as client:
        html = client.get("/admin", headers=auth).text
        token = re.search(r'action="/admin/intake".*?name="csrf" value="([^"]+)"', html, re.S).group(1)
        r = client.post("/admin/intake", data={"csrf": "forged", "intake": "paused"}, headers=auth)
        assert r.status_code == 403
        cross = {**auth, "Sec-Fetch-Site": "cross-site"}
        assert client.post("/admin/intake", data={"csrf": token, "intake": "paused"}, headers=cross).status_code == 403
        r = client.post("/admin/intake", data={"csrf": token, "intake": "paused"}, headers=auth, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/admin"
        assert "Now: <strong>paused</strong>" in client.get("/admin", headers=auth).text
        assert client.get("/start").status_code == 503
        client.post("/admin/intake", data={"csrf": token, "intake": "open"}, headers=auth)
        assert client.get("/start").status_code == 200
    with db.transaction() as s:
        assert service.intake(s) == "open"
