"""The annotation app in-process (ASGI transport): protocol, slots, security, export -> ingest -> stats."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import sys
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("starlette")
pytest.importorskip("sqlalchemy")
httpx = pytest.importorskip("httpx")


from sqlalchemy import text as sa_text
from starlette.testclient import TestClient

from modprefs.app import service
from modprefs.app.db import Database
from modprefs.app.export import export_dir
from modprefs.app.loader import StudyLoadError, load_study
from modprefs.app.protocol import derive_measures
from modprefs.app.server import create_app
from modprefs.ratings.ingest import validate_ratings_dir
from modprefs.scale import PAPER_SCALE
from support.app_sim import CSRF_RE, nonsensical_position, page_data, run_participant
from support.app_study import ROOT, load, make_study

SECRET = "s3cret-for-tests"
FAST = {"text_min_read_s": 0.3}  # a short reading time: the text trials of these tests wait for it for real


@pytest.fixture
def study(tmp_path):
    return make_study(tmp_path / "study", n_prompts=6, raters_per_condition=3, trials=2)


@pytest.fixture
def served(study, tmp_path, monkeypatch):
    monkeypatch.setenv("MODPREFS_ADMIN_SECRET", SECRET)
    url = f"sqlite:///{tmp_path}/app.db"
    db = load(study, url)
    app = create_app(url, settings_overrides=FAST)
    with TestClient(app, base_url="http://testserver") as client:
        yield client, db, study


def run_sims(app, n, **kw):
    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            return await asyncio.gather(
                *[
                    run_participant(c, seed=i, **{k: (v(i) if callable(v) else v) for k, v in kw.items()})
                    for i in range(n)
                ]
            )

    return asyncio.run(go())


def enter(client, age="30", native="yes", **params):
    r = client.get("/start", params=params)
    assert r.status_code == 200, r.text
    token = str(r.url).rsplit("/", 1)[-1]
    csrf = CSRF_RE.search(r.text).group(1)
    assert (
        client.post(f"/p/{token}/consent", data={"csrf": csrf, "agree": "yes"}, follow_redirects=False).status_code
        == 303
    )
    demo = {"csrf": csrf, "age": age, "native_english": native, "timezone": "Europe/London"}
    if native == "no":
        demo["english_proficiency"] = params.pop("_prof", "None")
    r = client.post(f"/p/{token}/demographics", data=demo, follow_redirects=False)
    assert r.status_code == 303, r.text
    return token, csrf


def trial_page(client, token):
    r = client.get(f"/p/{token}")
    assert r.status_code == 200
    return r, page_data(r.text)


def audio_events(prefix="e", t0=1_000_000):
    """play/ended of A then B (client times only: posted together, the server refuses the listens)."""
    return [
        {"id": f"{prefix}0", "kind": "play", "pos": "A", "t": t0, "x": 0},
        {"id": f"{prefix}1", "kind": "ended", "pos": "A", "t": t0 + 1500, "x": 1.5},
        {"id": f"{prefix}2", "kind": "play", "pos": "B", "t": t0 + 1600, "x": 0},
        {"id": f"{prefix}3", "kind": "ended", "pos": "B", "t": t0 + 3000, "x": 1.4},
    ]


def post_events(client, token, csrf, trial, events):
    r = client.post(f"/p/{token}/events", json={"trial": trial, "events": events}, headers={"X-CSRF-Token": csrf})
    assert r.status_code == 200, r.text
    return r.json()


def clip_srcs(client, token):
    r, _ = trial_page(client, token)
    return dict((pos, src) for src, pos in re.findall(r'<audio [^>]*src="([^"]+)"[^>]*id="audio-([AB])"', r.text))


def listen(client, token, csrf, trial, durations, positions="AB", prefix="L", t0=1_000_000, fetch=True):
    """A real listen over HTTP: fetch each clip, post `play`, wait its duration, post `ended`."""
    srcs = clip_srcs(client, token)
    res = None
    for k, pos in enumerate(positions):
        if fetch:
            assert client.get(srcs[pos]).status_code == 200
        dur = durations[srcs[pos].rsplit("/", 1)[-1][:-4]]
        post_events(
            client, token, csrf, trial, [{"id": f"{prefix}{pos}p", "kind": "play", "pos": pos, "t": t0, "x": 0}]
        )
        time.sleep(dur)
        res = post_events(
            client,
            token,
            csrf,
            trial,
            [{"id": f"{prefix}{pos}e", "kind": "ended", "pos": pos, "t": t0 + int(1000 * dur) + k, "x": dur}],
        )
    return res


def read_text(client, token, csrf, trial, wait=FAST["text_min_read_s"], prefix="R"):
    """The text condition: onset, wait the reading time, reveal Response B."""
    post_events(client, token, csrf, trial, [{"id": f"{prefix}o", "kind": "onset", "pos": None, "t": 1}])
    time.sleep(wait)
    return post_events(client, token, csrf, trial, [{"id": f"{prefix}r", "kind": "reveal", "pos": "B", "t": 2}])


def submit_form(csrf, audio=True, **kw):
    form = {
        "csrf": csrf,
        "rating_A": "60",
        "rating_B": "40",
        "preference": "A",
        "justification": "ok",
        "submit_t": "1010000",
        "events": "[]",
    }
    if audio:
        form.update(audio_quality_A="70", audio_quality_B="80")
    form.update(kw)
    return form


def enter_condition(client, condition):
    """Enter until a participant lands in ``condition`` (slots alternate); returns (token, csrf)."""
    for _ in range(6):
        token, csrf = enter(client)
        _, data = trial_page(client, token)
        if data["condition"] == condition:
            return token, csrf
    raise AssertionError(f"no {condition} slot")


# ---- protocol measures ---------------------------------------------------------------------------------------


def test_measures_from_event_log():
    E = [
        dict(kind="onset", response=None, t=0),
        dict(kind="play", response=1, t=1000, value=0.0),
        dict(kind="pause", response=1, t=1500, value=0.5),
        dict(kind="play", response=1, t=2000, value=0.5),
        dict(kind="ended", response=1, t=3000, value=1.5),
        dict(kind="play", response=0, t=3100, value=0.0),
        dict(kind="ended", response=0, t=4500, value=1.4),
        dict(kind="slider", response=1, field="rating", value=70, t=5000),
        dict(kind="slider", response=0, field="rating", value=50, t=6000),
        dict(kind="slider", response=0, field="rating", value=80, t=7000),  # reversal 1
        dict(kind="slider", response=0, field="audio_quality", value=10, t=7100),
        dict(kind="play", response=1, t=8000, value=0.0),
        dict(kind="pause", response=1, t=8500, value=0.5),
        dict(kind="play", response=1, t=9000, value=0.5),  # resumed: same replay
        dict(kind="ended", response=1, t=10000, value=1.5),
        dict(kind="slider", response=1, field="rating", value=90, t=11000),  # reversal 2
        dict(kind="slider", response=1, field="rating", value=90, t=11500),
    ]
    m = derive_measures(E, "audio", first_clip=1, submit_ms=13000)
    assert m["decision_time_s"] == 13.0
    assert m["deliberation_time_s"] == 3.0  # last listen ended at 10 s
    assert (m["replays_0"], m["replays_1"]) == (0, 1)  # the first play of 1 resumed after a pause is no replay
    assert m["relistened_first"] is True
    assert m["rating_changes"] == 2 and m["slider_moves"] == 6
    t = derive_measures([e for e in E if e["kind"] in ("onset", "slider")], "text", first_clip=0, submit_ms=13000)
    assert t["deliberation_time_s"] is None and t["replays_0"] is None and t["relistened_first"] is None
    assert t["rating_changes"] == 2
    # still playing at submission: deliberation 0
    assert (
        derive_measures(E + [dict(kind="play", response=0, t=12000, value=0.0)], "audio", 1, 13000)[
            "deliberation_time_s"
        ]
        == 0.0
    )


# ---- whole sessions, export, ingest, statistics -----------------------------------------------------------------


@pytest.mark.slow  # over 10 s on 2 cores: not in `make test-fast`
def test_sessions_export_ingest_and_stats(tmp_path):
    st = make_study(tmp_path / "study", n_prompts=6, raters_per_condition=5, trials=4)
    url = f"sqlite:///{tmp_path}/app.db"
    db = load(st, url)
    app = create_app(url, settings_overrides=FAST)
    outs = run_sims(app, 10, durations=st.durations, double_submit=lambda i: i == 3)
    assert all(o.final == "done" and o.code == "DONE1234" for o in outs), outs
    # two more arrive: one fails the attention check, the next takes the slot it frees
    extra = run_sims(app, 1, fail_attention=True, durations=st.durations)
    assert extra[0].final == "full"  # every slot is done: nobody else gets in
    counts = export_dir(db, tmp_path / "export")
    assert counts["participants"] == 10 and counts["trials"] == 50 and counts["ratings"] == 100
    tables = validate_ratings_dir(tmp_path / "export", st.stimuli, scale=PAPER_SCALE)
    trials = tables["trials"]
    parts = tables["participants"].set_index("participant_id")
    audio_ids = set(parts.index[parts.condition == "audio"])
    at = trials[trials.participant_id.isin(audio_ids)]
    assert at.deliberation_time_s.notna().all() and at.replays_0.notna().all()
    assert trials[~trials.participant_id.isin(audio_ids)].replays_0.isna().all()
    assert parts.completed.all() and parts.passed_attention.all() and parts.difficulty.notna().all()
    # the assignments were followed: prompt and presentation order per participant and trial
    r = tables["ratings"]
    first = r[r.presented_first.astype(bool)].assign(first_clip=lambda d: d.clip_id.str[-1].astype(int))
    merged = first.merge(
        st.assignments, on=["participant_id", "trial", "prompt_id", "first_clip"], how="left", indicator=True
    )
    assert (merged["_merge"] == "both").all()
    # statistics on the export (the `modprefs stats` command)
    from modprefs.cli import main

    st.stimuli.to_csv(tmp_path / "clips.csv", index=False)
    rc = main(
        [
            "stats",
            "--ratings",
            str(tmp_path / "export"),
            "--clips",
            str(tmp_path / "clips.csv"),
            "--out",
            str(tmp_path / "stats"),
            "--n-boot",
            "20",
            "--n-perm",
            "20",
            "--n-boot-alpha",
            "20",
            "--n-perm-alpha",
            "20",
        ]
    )
    assert rc == 0
    icc = pd.read_csv(tmp_path / "stats/tables/icc.csv")
    assert set(icc["condition"]) >= {"text", "audio"}
    assert (tmp_path / "stats/report.html").is_file()


def test_attention_failure_reissues_slot_and_is_recorded(served):
    client, db, st = served
    app = client.app
    outs = run_sims(app, 1, fail_attention=True, durations=st.durations)
    assert outs[0].final == "failed_attention"
    tok = outs[0].token
    page = client.get(f"/p/{tok}")
    assert "did not meet the study" in page.text
    # the same slot goes to the next arrival, under a new participant id
    nxt = run_sims(app, 1, durations=st.durations)
    assert nxt[0].final == "done"
    export_dir(db, Path(st.dir) / "export")
    p = pd.read_csv(Path(st.dir) / "export/participants.csv")
    assert list(p.participant_id) == ["P0001", "P0001_r2"]
    assert p.passed_attention.tolist() == [False, True]
    assert p.completed.tolist() == [False, True]
    validate_ratings_dir(Path(st.dir) / "export", st.stimuli, scale=PAPER_SCALE)


# ---- slots, resume, idempotence ------------------------------------------------------------------------------


def test_slots_fill_in_balanced_order(served):
    client, db, st = served
    conds = [trial_page(client, enter(client)[0])[1]["condition"] for _ in range(6)]
    assert conds in (["text", "audio"] * 3, ["audio", "text"] * 3)
    token, _ = enter(client)  # 7th arrival: the study is full
    assert "The study is full" in client.get(f"/p/{token}").text


def test_reload_resumes_and_double_submission_is_idempotent(served):
    client, db, st = served
    token, csrf = enter_condition(client, "audio")
    _, data = trial_page(client, token)
    assert data["trial"] == 0 and data["heard"] == [] and data["restore"] == {"sliders": {}, "preference": None}
    res = listen(client, token, csrf, 0, st.durations, positions="A")
    assert res["stored"] == 1 and res["heard"] == ["A"] and res["refused"] == []
    slider = {"id": "s1", "kind": "slider", "pos": "A", "field": "rating", "x": 63, "t": 1_000_500}
    assert post_events(client, token, csrf, 0, [slider])["stored"] == 1
    # re-sent events are stored once (here as a page-leave beacon sends them: the CSRF token in the body)
    r = client.post(f"/p/{token}/events", json={"trial": 0, "csrf": csrf, "events": [slider]})
    assert r.json()["stored"] == 0 and r.json()["duplicates"] == 1 and r.json()["conflicts"] == []
    _, data = trial_page(client, token)  # a reload: same trial, A already heard, its slider value back
    assert data["trial"] == 0 and data["heard"] == ["A"] and data["restore"]["sliders"] == {"rating_A": 63}
    # submitting before hearing B is refused, with a message, and logged
    r = client.post(f"/p/{token}/trial/0", data=submit_form(csrf), follow_redirects=False)
    assert r.status_code == 422 and "listen to both" in r.text and "Response B" in r.text
    listen(client, token, csrf, 0, st.durations, positions="B")
    form = submit_form(csrf, events=json.dumps([{"id": "o1", "kind": "onset", "pos": None, "t": 999_000}]))
    r1 = client.post(f"/p/{token}/trial/0", data=form, headers={"Accept": "application/json"})
    r2 = client.post(f"/p/{token}/trial/0", data=form, headers={"Accept": "application/json"})
    assert r1.json()["outcome"] in ("stored", "failed_attention") and r2.json()["outcome"] == "duplicate"
    from sqlalchemy import func, select

    from modprefs.app.models import Event, Incident, TrialResult

    with db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(TrialResult)) == 1
        row = s.scalars(select(TrialResult)).one()
        seqs = [e.seq for e in s.scalars(select(Event).order_by(Event.seq))]
        kinds = [i.kind for i in s.scalars(select(Incident))]
    assert row.decision_time_s == pytest.approx(11.0)  # onset 999 s -> submit 1010 s
    assert seqs == list(range(len(seqs)))  # numbered by the server on receipt: no gap, no reuse
    assert kinds == ["trial_refused"]


def test_abandoned_slot_is_reissued(served, monkeypatch):
    client, db, st = served
    token, csrf = enter(client)
    _, data = trial_page(client, token)
    clock = [service.now()]
    monkeypatch.setattr(service, "now", lambda: clock[0])
    clock[0] += 31 * 60  # silent past the 30-minute default
    token2, _ = enter(client)
    r2, data2 = trial_page(client, token2)
    assert data2["condition"] == data["condition"] and data2["page"] == "trial"
    assert "expired" in client.get(f"/p/{token}").text
    # a submission after the expiry goes to the expired page (its code), and is an incident beside the expiry
    r = client.post(
        f"/p/{token}/trial/0", data=submit_form(csrf, audio=data["condition"] == "audio"), follow_redirects=False
    )
    assert r.status_code == 303 and r.headers["location"] == f"/p/{token}"
    with db.transaction() as s:
        from sqlalchemy import select

        from modprefs.app.models import Incident, Participant

        ids = {p.token: p.participant_id for p in s.scalars(select(Participant))}
        incidents = [(i.kind, i.detail) for i in s.scalars(select(Incident))]
    assert ids[token2] == ids[token] + "_r2"
    assert incidents == [
        ("session_expired", "no request for 30 minutes"),
        ("submission_refused", "trial 0 submitted after the session expired"),
    ]


def test_leave_beacon_releases_the_slot(served, monkeypatch):
    """The trial page's pagehide beacon (POST /leave, CSRF in the JSON body): the slot is released after
    LEAVE_GRACE_S unless the participant comes back; a forged or cross-site beacon changes nothing; the
    abandon timeout still applies."""
    client, db, st = served
    token, csrf = enter(client)
    _, data = trial_page(client, token)
    assert data["leave_url"].endswith(f"/p/{token}/leave")
    assert "<noscript>" in client.get(f"/p/{token}").text  # no JavaScript: the page says so
    clock = [service.now()]
    monkeypatch.setattr(service, "now", lambda: clock[0])
    assert client.post(f"/p/{token}/leave", content=json.dumps({"csrf": "forged"})).status_code == 403
    r = client.post(f"/p/{token}/leave", content=json.dumps({"csrf": csrf}), headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    # a reload within the grace keeps the slot
    assert client.post(f"/p/{token}/leave", content=json.dumps({"csrf": csrf})).status_code == 204
    clock[0] += service.LEAVE_GRACE_S / 2
    assert trial_page(client, token)[1]["page"] == "trial"
    clock[0] += service.LEAVE_GRACE_S + 1
    assert trial_page(client, token)[1]["page"] == "trial"  # back: the ordinary timeout applies again
    # gone: released after the grace, reissued to the next arrival
    assert client.post(f"/p/{token}/leave", content=json.dumps({"csrf": csrf})).status_code == 204
    clock[0] += service.LEAVE_GRACE_S + 1
    token2, _ = enter(client)
    assert trial_page(client, token2)[1]["condition"] == data["condition"]
    assert "expired" in client.get(f"/p/{token}").text
    assert client.post(f"/p/{token}/leave", content=json.dumps({"csrf": csrf})).status_code == 204  # no-op now


def test_screening_and_prolific_ids(served):
    client, db, st = served
    token, _ = enter(client, age="17", PROLIFIC_PID="kid1", STUDY_ID="S1", SESSION_ID="x1")
    assert "18 or older" in client.get(f"/p/{token}").text
    token, _ = enter(client, native="no", _prof="None")
    assert "understand English" in client.get(f"/p/{token}").text
    token, _ = enter(client, native="no", _prof="Advanced", PROLIFIC_PID="adult1", STUDY_ID="S1", SESSION_ID="x2")
    assert trial_page(client, token)[1]["page"] == "trial"
    # the same Prolific id and session resumes; another session of the same id is refused
    r = client.get(
        "/start", params={"PROLIFIC_PID": "adult1", "STUDY_ID": "S1", "SESSION_ID": "x2"}, follow_redirects=False
    )
    assert r.status_code == 303 and r.headers["location"] == f"/p/{token}"
    r = client.get("/start", params={"PROLIFIC_PID": "adult1", "STUDY_ID": "S1", "SESSION_ID": "other"})
    assert r.status_code == 403
    assert client.get("/start", params={"PROLIFIC_PID": "<bad id>"}).status_code == 422
    export_dir(db, Path(st.dir) / "x")
    sessions = pd.read_csv(Path(st.dir) / "x/sessions.csv")
    assert {"under_18", "no_english"} <= set(sessions.screen_reason.dropna())
    row = sessions[sessions.prolific_pid == "adult1"].iloc[0]
    assert (row.study_id, row.session_id, row.state) == ("S1", "x2", "trials")
    assert len(sessions) == 3 and sessions.slot_id.notna().sum() == 1  # screened-out people take no slot


# ---- security ------------------------------------------------------------------------------------------------------


def pass_attention(client, token, csrf, durations):
    """Listen (audio), rate and prefer the coherent response of the attention check."""
    r, data = trial_page(client, token)
    assert data["trial"] == 0
    bad = nonsensical_position(r.text, data["condition"])
    audio = data["condition"] == "audio"
    if audio:
        listen(client, token, csrf, 0, durations)
    else:
        read_text(client, token, csrf, 0)
    form = submit_form(csrf, audio=audio, preference="B" if bad == "A" else "A")
    assert client.post(f"/p/{token}/trial/0", data=form, follow_redirects=False).status_code == 303
    return trial_page(client, token)


def test_token_gives_access_to_own_assignment_only(served):
    client, db, st = served
    tok_a, csrf_a = enter_condition(client, "audio")
    tok_b, csrf_b = enter_condition(client, "audio")
    rb, data_b = pass_attention(client, tok_b, csrf_b, st.durations)
    assert data_b["trial"] == 1
    ra, _ = trial_page(client, tok_a)
    src_a = re.findall(r'src="(/p/[^"]+\.wav)"', ra.text)
    src_b = re.findall(r'src="(/p/[^"]+\.wav)"', rb.text)
    assert all(client.get(s).status_code == 200 for s in src_a + src_b)
    # B's current clips under A's token (A is still at the attention check): refused
    for src in src_b:
        assert client.get(f"/p/{tok_a}/audio/" + src.rsplit("/", 1)[-1]).status_code == 403
    # B's past clips (the attention check) under B's token: refused too (current trial only)
    assert client.get(f"/p/{tok_b}/audio/attn_0.wav").status_code == 403
    assert client.get(f"/p/{tok_a}/audio/..%2F..%2Fetc%2Fpasswd.wav").status_code in (403, 404)
    # A's token with B's CSRF token: refused, nothing written
    r = client.post(f"/p/{tok_a}/events", json={"trial": 0, "events": audio_events()}, headers={"X-CSRF-Token": csrf_b})
    assert r.status_code == 403
    r = client.post(f"/p/{tok_a}/trial/0", data=submit_form(csrf_b), follow_redirects=False)
    assert r.status_code == 403
    assert trial_page(client, tok_a)[1]["heard"] == []
    # B's trial cannot be written through A's link: A's link acts on A's own assignment only
    r = client.post(f"/p/{tok_a}/trial/1", data=submit_form(csrf_a), follow_redirects=False)
    assert r.status_code == 409
    # unknown and malformed tokens
    assert client.get("/p/not-a-token").status_code == 404
    assert client.get("/p/" + "x" * 500).status_code == 404


def test_forged_posts_without_csrf_are_refused(served):
    client, db, st = served
    r = client.get("/start")
    token = str(r.url).rsplit("/", 1)[-1]
    assert client.post(f"/p/{token}/consent", data={"agree": "yes"}).status_code == 403
    assert client.post(f"/p/{token}/consent", data={"agree": "yes", "csrf": "forged"}).status_code == 403
    assert "Information and consent" in client.get(f"/p/{token}").text  # nothing changed
    token, csrf = enter(client)
    assert client.post(f"/p/{token}/events", json={"trial": 0, "events": []}).status_code == 403
    assert client.post(f"/p/{token}/trial/0", data={**submit_form(""), "csrf": ""}).status_code == 403
    assert client.post(f"/p/{token}/difficulty", data={"difficulty": "3"}).status_code == 403
    # a cross-site request is refused even with the token
    r = client.post(
        f"/p/{token}/events",
        json={"trial": 0, "events": []},
        headers={"X-CSRF-Token": csrf, "Sec-Fetch-Site": "cross-site"},
    )
    assert r.status_code == 403


@pytest.mark.slow  # over 5 s on 2 cores: not in `make test-fast`
def test_admin_export_needs_the_secret(served, monkeypatch):
    client, db, st = served
    run_sims(client.app, 2, durations=st.durations)
    for path in ("/admin/export.zip", "/admin/export/ratings.csv", "/admin/status.json", "/admin/responses"):
        assert client.get(path).status_code == 401
        assert client.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
    ok = client.get("/admin/export.zip", headers={"Authorization": f"Bearer {SECRET}"})
    assert ok.status_code == 200
    names = zipfile.ZipFile(io.BytesIO(ok.content)).namelist()
    assert {"ratings.csv", "trials.csv", "participants.csv"} <= set(names)
    basic = base64.b64encode(f"admin:{SECRET}".encode()).decode()
    assert client.get("/admin/status.json", headers={"Authorization": f"Basic {basic}"}).json()["trials_submitted"] == 6
    monkeypatch.delenv("MODPREFS_ADMIN_SECRET")
    assert client.get("/admin/export.zip", headers={"Authorization": f"Bearer {SECRET}"}).status_code == 403


def test_script_justification_is_inert(served):
    client, db, st = served
    payload = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    outs = run_sims(client.app, 1, justification=payload, durations=st.durations)
    assert outs[0].final == "done"
    page = client.get("/admin/responses", headers={"Authorization": f"Bearer {SECRET}"})
    assert page.status_code == 200
    assert payload not in page.text and "<img src=x" not in page.text
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    # exported verbatim (the data is not altered)
    export_dir(db, Path(st.dir) / "x")
    trials = pd.read_csv(Path(st.dir) / "x/trials.csv", dtype=str, keep_default_na=False)
    assert (trials.justification == payload).all()


def test_oversized_and_malformed_input_is_rejected(served):
    client, db, st = served
    token, csrf = enter_condition(client, "text")
    assert (
        client.post(
            f"/p/{token}/trial/0", content=b"x" * 200_000, headers={"Content-Type": "application/x-www-form-urlencoded"}
        ).status_code
        == 413
    )
    chunked = iter([b"x" * 40_000] * 5)  # no Content-Length: counted while it streams
    assert (
        client.post(
            f"/p/{token}/events", content=chunked, headers={"X-CSRF-Token": csrf, "Content-Type": "application/json"}
        ).status_code
        == 413
    )
    r = client.post(f"/p/{token}/trial/0", data=submit_form(csrf, audio=False, justification="x" * 2001))
    assert r.status_code == 413
    many = [{"id": f"m{i}", "kind": "onset", "pos": None, "t": 1} for i in range(301)]
    assert (
        client.post(f"/p/{token}/events", json={"trial": 0, "events": many}, headers={"X-CSRF-Token": csrf}).status_code
        == 413
    )
    bad = [{"id": "b0", "kind": "slider", "pos": "A", "t": 1, "x": 101, "field": "rating"}]
    assert (
        client.post(f"/p/{token}/events", json={"trial": 0, "events": bad}, headers={"X-CSRF-Token": csrf}).status_code
        == 422
    )
    assert (
        client.post(
            f"/p/{token}/events",
            content=b"{not json",
            headers={"X-CSRF-Token": csrf, "Content-Type": "application/json"},
        ).status_code
        == 422
    )
    for field, value in (("rating_A", "0"), ("rating_B", "101"), ("rating_A", ""), ("preference", "C")):
        assert (
            client.post(f"/p/{token}/trial/0", data=submit_form(csrf, audio=False, **{field: value})).status_code == 422
        )
    # the demographics form bounds its text fields
    r = client.get("/start")
    t2 = str(r.url).rsplit("/", 1)[-1]
    c2 = CSRF_RE.search(r.text).group(1)
    client.post(f"/p/{t2}/consent", data={"csrf": c2, "agree": "yes"})
    r = client.post(
        f"/p/{t2}/demographics", data={"csrf": c2, "age": "40", "native_english": "yes", "birthplace": "y" * 101}
    )
    assert r.status_code == 422 and "at most 100 characters" in r.text
    # still a valid trial afterwards (once Response B has been revealed)
    read_text(client, token, csrf, 0)
    assert (
        client.post(f"/p/{token}/trial/0", data=submit_form(csrf, audio=False), follow_redirects=False).status_code
        == 303
    )


def test_audio_is_served_with_range_support(served):
    client, db, st = served
    token, _ = enter_condition(client, "audio")
    r, _ = trial_page(client, token)
    src = re.findall(r'src="(/p/[^"]+\.wav)"', r.text)[0]
    full = client.get(src)
    assert full.status_code == 200 and full.headers["accept-ranges"] == "bytes"
    size = len(full.content)
    assert full.content[:4] == b"RIFF" and int(full.headers["content-length"]) == size
    part = client.get(src, headers={"Range": "bytes=0-99"})
    assert part.status_code == 206 and part.headers["content-range"] == f"bytes 0-99/{size}"
    assert part.content == full.content[:100]
    tail = client.get(src, headers={"Range": "bytes=-100"})
    assert tail.status_code == 206 and tail.content == full.content[-100:]
    mid = client.get(src, headers={"Range": "bytes=1000-"})
    assert mid.status_code == 206 and mid.content == full.content[1000:]
    assert client.get(src, headers={"Range": f"bytes={size + 10}-"}).status_code == 416
    assert client.head(src).status_code == 200


# ---- CLI, loader, rules --------------------------------------------------------------------------------------------


def test_cli_load_serve_args_and_export(study, tmp_path, capsys):
    from modprefs.cli import main

    url = f"sqlite:///{tmp_path}/cli.db"
    f = study.files
    args = [
        "app",
        "load",
        "--db",
        url,
        "--assignments",
        str(f.assignments),
        "--stimuli",
        str(f.stimuli),
        "--conversations",
        str(f.conversations),
        "--prompts",
        str(f.prompts),
        "--manifest",
        str(f.manifest),
        "--base-dir",
        str(f.base_dir),
        "--completion-code",
        "XYZ",
    ]
    assert main(args) == 0
    assert main(args) == 2  # a second load is refused without --replace
    assert "already holds a study" in capsys.readouterr().err
    assert main(args + ["--replace"]) == 0
    assert main(["app", "invite", "--db", url, "-n", "2", "--base-url", "https://study.example"]) == 0
    links = [x for x in capsys.readouterr().out.splitlines() if x.startswith("https://study.example/p/")]
    assert len(links) == 2
    assert main(["app", "export", "--db", url, "--out", str(tmp_path / "ex"), "--validate", str(f.stimuli)]) == 0
    assert "passes the ingest validation" in capsys.readouterr().out
    assert main(["app", "status", "--db", url]) == 0
    assert json.loads(capsys.readouterr().out)["slots"] == {"open": 6}


def test_loader_lists_every_problem(study, tmp_path):
    from modprefs.app.db import Database

    asg = study.assignments.copy()
    asg.loc[1, "prompt_id"] = "nope"
    asg.to_csv(tmp_path / "bad.csv", index=False)
    (study.dir / "clips" / "pr00_0.wav").unlink()
    study.files.assignments = tmp_path / "bad.csv"
    with pytest.raises(StudyLoadError) as exc:
        load_study(Database(f"sqlite:///{tmp_path}/x.db"), study.files)
    msg = str(exc.value)
    assert "'nope' is not in stimuli.csv" in msg
    used = set(asg.prompt_id)
    assert ("clip pr00_0: audio file" in msg) == ("pr00" in used)


@pytest.mark.integration
def test_snakemake_app_rules(tmp_path):
    """rules/app.smk with the workflow: app_load then app_export on an existing study design."""
    import shutil
    import subprocess

    from support.workflow_runner import write_config

    st = make_study(tmp_path / "study", n_prompts=6, raters_per_condition=2, trials=2)
    wd = tmp_path / "wd"
    stopping = {"rule": "half_width", "half_width": 0.15, "min_participants": 4, "look_every": 3}
    cfg = write_config(wd, {"study": {"scale": {"min": 1, "max": 7}, "stopping": stopping}, "seed": 11})
    for src, dst in [
        ("assignments.csv", "results/study/assignments.csv"),
        ("stimuli.csv", "results/study/stimuli.csv"),
        ("prompts.csv", "results/sampling/final_prompts.csv"),
        ("conversations.parquet", "results/data/conversations.parquet"),
        ("manifest.csv", "results/audio/manifest.csv"),
    ]:
        (wd / dst).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(st.dir / src, wd / dst)
    shutil.copytree(st.dir / "clips", wd / "clips")  # the manifest's relative paths, from the workdir
    # the repository's Snakefile with rules/app.smk included (if it is not already), beside links to
    # the folders it reads (workflow.basedir must look like the repository)
    base = tmp_path / "repo"
    base.mkdir()
    for name in ("rules", "workflow", "src", "resources"):
        (base / name).symlink_to(ROOT / name)
    text = (ROOT / "Snakefile").read_text()
    if "rules/app.smk" not in text:
        text = text.replace('include: "rules/common.smk"\n', 'include: "rules/common.smk"\ninclude: "rules/app.smk"\n')
    (base / "Snakefile").write_text(text)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(base / "Snakefile"),
            "-d",
            str(wd),
            "--configfile",
            str(cfg),
            "--cores",
            "1",
            "--allowed-rules",
            "run_config",
            "app_load",
            "app_export",
            "--",
            "app_export",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "MODPREFS_APP_DB": f"sqlite:///{tmp_path}/smk.db"},
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert json.loads((wd / "results/app/loaded.json").read_text())["slots"] == 4
    # the run's merged config reached the database: the scale, and the stopping rule with its interval settings
    with Database(f"sqlite:///{tmp_path}/smk.db").engine.connect() as conn:
        meta = dict(conn.execute(sa_text("SELECT key, value FROM app_meta")).all())
    live = json.loads(meta["live_config"])
    assert {k: live["stopping"][k] for k in stopping} == stopping and live["params"]["seed"] == 11
    assert json.loads(meta["rating_scale"])["max"] == 7
    export = wd / "results/app/export"
    assert sorted(p.name for p in export.glob("*.csv")) == [
        "events.csv",
        "incidents.csv",
        "participants.csv",
        "ratings.csv",
        "sessions.csv",
        "trials.csv",
    ]
    assert "passes the ingest validation" in (wd / "results/logs/app/app_export.log").read_text()
