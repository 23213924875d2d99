"""The app records what happened (issue #14), in-process: event ids and conflicts, the plausibility
rules, rate limits, the headphone check (stimuli, scoring, require/record modes, export and exclusion)
and the study settings. The browser-level checks are in tests/app/test_app_browser_integrity.py."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")


from starlette.testclient import TestClient

from modprefs.app import headphones, plausibility
from modprefs.app.export import export_dir
from modprefs.app.ratelimit import RateLimiter
from modprefs.app.server import create_app
from modprefs.app.service import Settings, SettingsError
from modprefs.ratings.ingest import validate_ratings_dir
from modprefs.scale import PAPER_SCALE
from support.app_sim import CSRF_RE, page_data, run_participant
from support.app_study import load, make_study
from support.listener import answer, tone_levels

FAST = {"text_min_read_s": 0.3}


# ---- pure rules ------------------------------------------------------------------------------------------


def ev(kind, response=None, ts=0.0, refused=None):
    return {"kind": kind, "response": response, "server_ts": ts, "refused": refused}


def test_listen_plausibility_rules():
    check = plausibility.check_listen
    play = [ev("play", 0, 100.0)]
    assert check(play, 0, 102.0, 2.0, fetched_ts=99.0, tolerance_s=0.5) is None
    assert check(play, 0, 101.6, 2.0, 99.0, 0.5) is None  # within the tolerance
    assert check(play, 0, 101.4, 2.0, 99.0, 0.5) == plausibility.TOO_EARLY
    assert check(play, 0, 102.0, 2.0, None, 0.5) == plausibility.NOT_FETCHED
    assert check(play, 0, 102.0, 2.0, 102.5, 0.5) == plausibility.NOT_FETCHED  # fetched after it "ended"
    assert check(play, 1, 102.0, 2.0, 99.0, 0.5) == plausibility.NO_PLAY  # the other clip's play
    assert check(play, 0, 102.0, None, 99.0, 0.5) == plausibility.UNKNOWN_DURATION
    # pauses lengthen a listen: it starts at its first play
    paused = [ev("play", 0, 100.0), ev("pause", 0, 100.5), ev("play", 0, 110.0)]
    assert check(paused, 0, 111.0, 2.0, 99.0, 0.0) is None
    # any ended (a refused one too) ends a listen: the next one starts at the next play
    retry = [ev("play", 0, 100.0), ev("ended", 0, 100.1, refused="too_early"), ev("play", 0, 105.0)]
    assert check(retry, 0, 105.2, 2.0, 99.0, 0.5) == plausibility.TOO_EARLY
    assert check(retry, 0, 107.0, 2.0, 99.0, 0.5) is None
    assert plausibility.heard_clips(retry + [ev("ended", 1, 1.0)]) == {1}
    # reveals: after the reading time since the first onset
    onsets = [ev("onset", None, 50.0), ev("onset", None, 70.0)]
    assert plausibility.check_reveal(onsets, 52.9, 3.0, 0.0) == plausibility.REVEAL_TOO_EARLY
    assert plausibility.check_reveal(onsets, 53.0, 3.0, 0.0) is None
    assert plausibility.check_reveal([], 53.0, 3.0, 0.0) == plausibility.NO_ONSET
    assert not plausibility.revealed([ev("reveal", 1, 1.0, refused="reveal_too_early")])


def test_rate_limiter_token_bucket():
    t = [0.0]
    r = RateLimiter(clock=lambda: t[0])
    assert [r.hit("a", 3, 60) for _ in range(3)] == [0, 0, 0]
    assert r.hit("a", 3, 60) == 20  # one request per 20 s refills
    assert r.hit("b", 3, 60) == 0  # keys are independent
    t[0] = 19.0
    assert r.hit("a", 3, 60) == 1
    t[0] = 20.5
    assert r.hit("a", 3, 60) == 0 and r.hit("a", 3, 60) > 0
    assert all(r.hit("c", 0, 60) == 0 for _ in range(100))  # 0 disables
    small = RateLimiter(clock=lambda: t[0], max_keys=4)
    for k in range(10):
        small.hit(f"k{k}", 1, 1)
        t[0] += 2
    assert len(small._buckets) <= 4


def test_headphone_stimuli_and_scoring():
    orders = headphones.trial_orders(1, 7)
    assert orders == headphones.trial_orders(1, 7) and orders != headphones.trial_orders(1, 8)
    assert len(orders) == headphones.N_TRIALS and all(sorted(o) == sorted(headphones.KINDS) for o in orders)
    for order in {tuple(o) for o in orders} | {("antiphase", "target", "standard")}:
        x = headphones.stimulus(order)
        assert x.shape == (int(round((3 * headphones.TONE_S + 2 * headphones.GAP_S) * headphones.SR)), 2)
        sr = headphones.SR
        levels = {}
        for kind, (a, b) in zip(order, headphones.intervals()):
            seg = x[int(a * sr) : int(b * sr)]
            levels[kind] = float(np.sqrt(np.mean(seg[:, 0] ** 2)))
            if kind == "antiphase":
                assert np.allclose(seg[:, 1], -seg[:, 0])
            else:
                assert np.allclose(seg[:, 1], seg[:, 0])
        assert 20 * math.log10(levels["target"] / levels["standard"]) == pytest.approx(-6.0, abs=0.01)
        assert levels["antiphase"] == pytest.approx(levels["standard"], rel=1e-6)
        # a listener with headphones finds the target; a mono rendering makes the antiphase tone silent
        assert answer(x, sr, "stereo") == headphones.correct_answer(order)
        assert answer(x, sr, "mono") == order.index("antiphase") + 1
        assert min(tone_levels(x, sr, "mono")) < 1e-6
    right = [headphones.correct_answer(o) for o in orders]
    assert headphones.score(orders, right) == (6, True)
    assert headphones.score(orders, right[:5] + [right[5] % 3 + 1]) == (5, True)
    assert headphones.score(orders, right[:4] + [r % 3 + 1 for r in right[4:]]) == (4, False)
    with pytest.raises(ValueError):
        headphones.score(orders, right[:3])
    assert headphones.wav_bytes(orders[0])[:4] == b"RIFF"


def test_settings_are_typed_and_checked():
    s = Settings.from_meta(
        {"abandon_minutes": "12", "rate_start_ip": "5", "headphone_check": "record", "unknown_key": "x"},
        text_min_read_s=1.5,
    )
    assert (s.abandon_minutes, s.rate_start_ip, s.headphone_check, s.text_min_read_s) == (12.0, 5, "record", 1.5)
    assert s.extra == {"unknown_key": "x"}
    for meta, key in (
        ({"abandon_minutes": "soon"}, "abandon_minutes"),
        ({"rate_start_ip": "-1"}, "rate_start_ip"),
        ({"text_reveal": "sideways"}, "text_reveal"),
        ({"headphone_check": "maybe"}, "headphone_check"),
        ({"timing_tolerance_s": "nan"}, "timing_tolerance_s"),
        ({"abandon_minutes": "0"}, "abandon_minutes"),
        ({"rate_session_token": "1.5"}, "rate_session_token"),
    ):
        with pytest.raises(SettingsError, match=key):
            Settings.from_meta(meta)


# ---- over HTTP (ASGI, in-process) ------------------------------------------------------------------------


@pytest.fixture
def study(tmp_path):
    return make_study(tmp_path / "study", n_prompts=6, raters_per_condition=3, trials=1)


def client_for(study, tmp_path, **overrides):
    url = f"sqlite:///{tmp_path}/app.db"
    db = load(study, url)
    return TestClient(create_app(url, settings_overrides={**FAST, **overrides}), base_url="http://testserver"), db


def enter(client):
    r = client.get("/start")
    token, csrf = str(r.url).rsplit("/", 1)[-1], CSRF_RE.search(r.text).group(1)
    client.post(f"/p/{token}/consent", data={"csrf": csrf, "agree": "yes"})
    client.post(f"/p/{token}/demographics", data={"csrf": csrf, "age": "30", "native_english": "yes"})
    return token, csrf


def test_event_ids_duplicates_and_conflicts(study, tmp_path):
    client, db = client_for(study, tmp_path)
    with client:
        token, csrf = enter(client)

        def post(events):
            r = client.post(f"/p/{token}/events", json={"trial": 0, "events": events}, headers={"X-CSRF-Token": csrf})
            assert r.status_code == 200, r.text
            return r.json()

        a = {"id": "pg1-0", "kind": "onset", "pos": None, "t": 1000}
        b = {"id": "pg1-1", "kind": "preference", "pos": "A", "t": 1200}
        assert post([a, b]) | {"heard": [], "revealed": False} == {
            "state": "trials",
            "stored": 2,
            "duplicates": 0,
            "ignored": 0,
            "conflicts": [],
            "refused": [],
            "heard": [],
            "revealed": False,
        }
        res = post([a, b, {"id": "pg2-0", "kind": "onset", "pos": None, "t": 5000}])  # a reload re-sends a and b
        assert (res["stored"], res["duplicates"], res["conflicts"]) == (1, 2, [])
        res = post([{**b, "pos": "B"}])  # the same id with other content: reported, the stored one kept
        assert res["conflicts"] == ["pg1-1"] and res["stored"] == 0
        bad = client.post(
            f"/p/{token}/events",
            json={"trial": 0, "events": [{"kind": "onset", "t": 1, "seq": 3}]},
            headers={"X-CSRF-Token": csrf},
        )
        assert bad.status_code == 422 and "event id" in bad.json()["error"]
        export_dir(db, tmp_path / "x")
    events = pd.read_csv(tmp_path / "x/events.csv")
    assert list(events.event_id) == ["pg1-0", "pg1-1", "pg2-0"] and list(events.seq) == [0, 1, 2]
    kept = events.set_index("event_id").loc["pg1-1"]
    incidents = pd.read_csv(tmp_path / "x/incidents.csv")
    assert list(incidents.kind) == ["event_conflict"] and "pg1-1" in incidents.detail[0]
    assert kept.kind == "preference"


def test_rate_limits_answer_429_with_retry_after(study, tmp_path):
    client, db = client_for(study, tmp_path, rate_start_ip=3, rate_start_pid=1, rate_session_token=4, rate_window_s=30)
    with client:
        assert client.get("/start", params={"PROLIFIC_PID": "p1"}, follow_redirects=False).status_code == 303
        r = client.get("/start", params={"PROLIFIC_PID": "p1"}, follow_redirects=False)
        assert r.status_code == 429 and 1 <= int(r.headers["retry-after"]) <= 30
        assert "Too many requests" in r.text and r.headers["content-security-policy"]
        assert client.get("/start", follow_redirects=False).status_code == 303  # IP: 3rd of 3 (refused ones count)
        assert client.get("/start", follow_redirects=False).status_code == 429  # IP: 4th
        token = client.get("/start", follow_redirects=False, headers={"X-Forwarded-For": "x"})  # no proxy here
        assert token.status_code == 429  # the in-process client has one address; XFF is not trusted
        with db.transaction() as s:
            from sqlalchemy import select

            from modprefs.app.models import Participant

            tok = s.scalars(select(Participant.token)).first()
        codes = [client.get(f"/p/{tok}").status_code for _ in range(5)]
        assert codes == [200, 200, 200, 200, 429]
        r = client.post(f"/p/{tok}/events", json={"trial": 0, "events": []})
        assert r.status_code == 429 and r.json()["retry_after"] >= 1 and r.headers["retry-after"]
        assert client.get("/healthz").status_code == 200  # not limited


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


@pytest.mark.slow  # over 5 s on 2 cores: not in `make test-fast`
def test_headphone_check_required_screens_out_a_mono_listener(study, tmp_path):
    client, db = client_for(study, tmp_path, headphone_check="require")
    with client:
        outs = run_sims(client.app, 2, durations=study.durations, headphones="mono")
        assert sorted(o.final for o in outs) == ["done", "screened_out"]  # the text participant has no check
        gone = next(o for o in outs if o.final == "screened_out")
        assert "headphone check" in client.get(f"/p/{gone.token}").text
        nxt = run_sims(client.app, 1, durations=study.durations, headphones="stereo")  # takes the reopened slot
        assert nxt[0].final == "done"
        export_dir(db, tmp_path / "x")
    sessions = pd.read_csv(tmp_path / "x/sessions.csv", dtype=str, keep_default_na=False)
    audio = sessions[sessions.condition == "audio"].set_index("participant_id")
    assert audio.loc[audio.index[0], "screen_reason"] == "headphone_check"
    assert dict(zip(audio.headphone_check, audio.headphone_correct)) == {"failed": "0", "passed": "6"}
    assert sorted(audio.index) == sorted([audio.index[0], audio.index[0] + "_r2"])


@pytest.mark.slow  # over 10 s on 2 cores: not in `make test-fast`
def test_headphone_check_recorded_exported_and_excludable(study, tmp_path):
    client, db = client_for(study, tmp_path, headphone_check="record")
    with client:
        # two arrivals take one slot of each condition: one mono, then one stereo audio listener
        outs = run_sims(client.app, 2, durations=study.durations, headphones="mono")
        outs += run_sims(client.app, 2, durations=study.durations, headphones="stereo")
        assert [o.final for o in outs] == ["done"] * 4
        export_dir(db, tmp_path / "all")
        export_dir(db, tmp_path / "kept", exclude_headphone_failed=True)
    parts = validate_ratings_dir(tmp_path / "all", study.stimuli, scale=PAPER_SCALE)["participants"].set_index(
        "participant_id"
    )
    checks = pd.read_csv(tmp_path / "all/participants.csv").set_index("participant_id").headphone_check
    assert set(checks[parts.condition == "text"]) == {"not_run"}
    assert sorted(checks[parts.condition == "audio"]) == ["failed", "passed"]
    failed = checks.index[checks == "failed"][0]
    kept = validate_ratings_dir(tmp_path / "kept", study.stimuli, scale=PAPER_SCALE)
    assert failed not in set(kept["participants"].participant_id) and failed not in set(kept["ratings"].participant_id)
    assert len(kept["participants"]) == 3
    assert failed in set(pd.read_csv(tmp_path / "kept/sessions.csv").participant_id)


def test_sim_without_fetching_audio_is_refused(study, tmp_path):
    """The simulated participant that posts play/ended but never fetches a clip gets its trial refused."""
    client, db = client_for(study, tmp_path)
    with client:
        from support.app_sim import SimError

        outs = []
        for _ in range(2):  # the first arrival may be in the text condition
            try:
                outs.append(run_sims(client.app, 1, durations=study.durations, fetch_audio=False)[0])
            except SimError as exc:
                assert "-> 422" in str(exc)
                break
        else:
            pytest.fail(f"no audio participant was refused: {outs}")
        status = client.get("/admin/status.json")
        assert status.status_code in (401, 403)
    from modprefs.app.service import status_counts

    counts = status_counts(db)
    assert counts["incidents"]["listen_refused"] == 2 and counts["incidents"]["trial_refused"] == 1


def test_page_data_restores_values_and_hides_b(study, tmp_path):
    client, db = client_for(study, tmp_path, text_min_read_s=5)
    with client:
        for _ in range(2):
            token, csrf = enter(client)
            data = page_data(client.get(f"/p/{token}").text)
            if data["condition"] == "text":
                break
        page = client.get(f"/p/{token}").text
        assert 'id="response-B" data-pos="B" hidden' in page and 'id="reveal-B" disabled' in page
        assert data["reveal"] == {"mode": "next", "min_read_s": 5.0} and data["revealed"] is False
        evs = [
            {"id": "x0", "kind": "slider", "pos": "A", "field": "rating", "x": 12, "t": 1},
            {"id": "x1", "kind": "slider", "pos": "A", "field": "rating", "x": 34, "t": 2},
            {"id": "x2", "kind": "preference", "pos": None, "t": 3},
        ]
        client.post(f"/p/{token}/events", json={"trial": 0, "events": evs}, headers={"X-CSRF-Token": csrf})
        data = page_data(client.get(f"/p/{token}").text)
        assert data["restore"] == {"sliders": {"rating_A": 34}, "preference": "tie"}
        r = client.post(
            f"/p/{token}/trial/0", data={"csrf": csrf, "rating_A": "34", "rating_B": "50", "preference": "tie"}
        )
        assert r.status_code == 422 and "show Response B" in r.text
