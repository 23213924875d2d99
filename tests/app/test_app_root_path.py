"""The app under a path prefix (``modprefs app serve --root-path /study`` behind a reverse proxy), in-process.

Every URL a page writes (stylesheet, script, form actions, audio and headphone-check sounds, the page
script's event URL, the link back to the study), every redirect and the ``next`` of a JSON submission
start with the prefix, in every page of both conditions (consent, demographics, headphone check, text and
audio trials, difficulty, the end pages, messages, the admin page); the only other URLs are Prolific's
completion link and the empty icon. The simulated participants ask for /study/... only, as through a
proxy that serves nothing else, and complete their sessions. Whether the proxy strips the prefix or
passes it on, the app answers, and its per-path rules (no-store, rate limits) apply under the prefix.
tests/app/test_app_proxy.py runs the same behind a real nginx in chromium.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import re

import pytest

pytest.importorskip("starlette")
pytest.importorskip("sqlalchemy")
httpx = pytest.importorskip("httpx")


from starlette.testclient import TestClient

from modprefs.app.cli import root_path_arg
from modprefs.app.server import create_app
from support.app_sim import CSRF_RE, DATA_RE, run_participant
from support.app_study import load, make_study

PREFIX = "/study"
SECRET = "s3cret-for-root-path"
PROLIFIC = "https://app.prolific.com/"
URL_RE = re.compile(r'\b(?:href|src|action)="([^"]*)"')
ACTION_RE = re.compile(r'<form method="post" action="([^"]+)"')


def page_urls(text: str) -> list[str]:
    """Every URL in a page: its href/src/action attributes and the ``*_url`` fields of its page data."""
    urls = [html.unescape(u) for u in URL_RE.findall(text)]
    m = DATA_RE.search(text)
    if m:
        urls += [v for k, v in json.loads(m.group(1)).items() if k.endswith("_url") and v]
    return urls


def page_kind(text: str) -> str:
    m = DATA_RE.search(text)
    if m is None:
        return "admin" if "Latest responses" in text else "message"
    data = json.loads(m.group(1))
    return f"trial-{data['condition']}" if data["page"] == "trial" else data["page"]


class Recorder:
    """httpx hooks: every request must go to the prefix; every page, redirect and JSON answer is kept."""

    def __init__(self) -> None:
        self.pages: dict[str, list[str]] = {}  # kind -> URLs found in pages of that kind
        self.locations: list[str] = []
        self.nexts: list[str] = []
        self.uncached: list[str] = []  # /p/ pages without Cache-Control: no-store

    async def on_request(self, request: httpx.Request) -> None:
        assert request.url.path.startswith(PREFIX + "/"), f"a request outside the prefix: {request.url}"

    async def on_response(self, response: httpx.Response) -> None:
        await response.aread()
        if "location" in response.headers:
            self.locations.append(response.headers["location"])
        kind = response.headers.get("content-type", "")
        if kind.startswith("text/html"):
            self.pages.setdefault(page_kind(response.text), []).extend(page_urls(response.text))
            if "/p/" in response.request.url.path and "no-store" not in response.headers.get("cache-control", ""):
                self.uncached.append(response.request.url.path)
        elif kind.startswith("application/json") and "next" in response.text:
            self.nexts.append(response.json().get("next", ""))


async def _manual_visits(c: httpx.AsyncClient) -> None:
    """The pages the simulated sessions do not reach: index, unknown link, declined, under 18, a refused
    trial (the message links back to the task), the study full, the admin page."""
    await c.get(f"{PREFIX}/")
    assert (await c.get(f"{PREFIX}/p/no-such-token")).status_code == 404
    arrivals = [("declines", "no", None), ("kid", "yes", "16"), ("third", "yes", "40"), ("fourth", "yes", "41")]
    for pid, agree, age in [*arrivals, ("fifth", "yes", "42")]:  # 4 slots: 2 simulated sessions, 2 here, 1 too many
        r = await c.get(f"{PREFIX}/start", params={"PROLIFIC_PID": pid}, follow_redirects=True)
        csrf = CSRF_RE.search(r.text).group(1)
        r = await c.post(ACTION_RE.search(r.text).group(1), data={"csrf": csrf, "agree": agree}, follow_redirects=True)
        if age is None:
            continue
        demo = {"csrf": csrf, "age": age, "native_english": "yes", "timezone": "Europe/London"}
        r = await c.post(ACTION_RE.search(r.text).group(1), data=demo, follow_redirects=True)
        if "trial-form" in r.text:  # submitted without listening or reading: refused, with a link back to the task
            refused = await c.post(ACTION_RE.search(r.text).group(1), data={"csrf": csrf})
            assert refused.status_code == 422 and f'href="{PREFIX}/p/' in refused.text
            json_refused = await c.post(
                ACTION_RE.search(r.text).group(1), data={"csrf": csrf}, headers={"Accept": "application/json"}
            )
            assert json_refused.status_code == 422
    admin = await c.get(f"{PREFIX}/admin/responses", headers={"Authorization": f"Bearer {SECRET}"})
    assert admin.status_code == 200


def test_every_url_carries_the_root_path(tmp_path, monkeypatch):
    monkeypatch.setenv("MODPREFS_ADMIN_SECRET", SECRET)
    study = make_study(tmp_path / "study", n_prompts=4, raters_per_condition=2, trials=1, durations=(0.1, 0.2))
    url = f"sqlite:///{tmp_path}/app.db"
    load(study, url, screenout_code="SCREEN1", study_title="Root path study")
    app = create_app(url, settings_overrides={"text_min_read_s": 0.3, "headphone_check": "record"})
    rec = Recorder()

    async def go():
        transport = httpx.ASGITransport(app=app, root_path=PREFIX)
        hooks = {"request": [rec.on_request], "response": [rec.on_response]}
        async with httpx.AsyncClient(transport=transport, base_url="http://proxy", event_hooks=hooks) as c:
            outs = [
                await run_participant(
                    c,
                    prolific={"PROLIFIC_PID": f"pp{i}", "STUDY_ID": "S", "SESSION_ID": f"s{i}"},
                    seed=i,
                    durations=study.durations,
                    prefix=PREFIX,
                )
                for i in range(2)
            ]
            await _manual_visits(c)
            return outs

    outs = asyncio.run(go())
    assert [o.final for o in outs] == ["done", "done"] and all(o.code == "DONE1234" for o in outs)
    expected = {"consent", "demographics", "headphones", "trial-text", "trial-audio", "difficulty", "done", "ended"}
    assert expected | {"message", "admin"} <= set(rec.pages), sorted(rec.pages)
    outside = {
        kind: [u for u in urls if not (u.startswith(PREFIX + "/") or u.startswith(PROLIFIC) or u == "data:,")]
        for kind, urls in rec.pages.items()
    }
    assert not any(outside.values()), outside
    found = [u for urls in rec.pages.values() for u in urls]
    for wanted in ("/static/style.css", "/static/app.js", "/events", "/audio/", "/headphones/0.wav", "/trial/"):
        assert any(u.startswith(PREFIX) and wanted in u for u in found), wanted
    assert any(u.startswith(PROLIFIC + "submissions/complete?cc=DONE1234") for u in rec.pages["done"])
    assert any(u.endswith("cc=SCREEN1") for u in rec.pages["ended"])  # the study was full for the late arrival
    assert rec.locations and all(loc.startswith(f"{PREFIX}/p/") for loc in rec.locations), rec.locations
    assert not rec.uncached, rec.uncached


def test_prefix_stripped_or_passed_on(tmp_path):
    """uvicorn puts the root path in front of the path it receives: a stripping proxy gives the app
    /study/p/..., one that passes the prefix on gives /study/study/p/...; both are served, and the
    per-path rules (no-store, the per-session rate limit) apply."""
    study = make_study(tmp_path / "study", n_prompts=4, raters_per_condition=1, trials=1)
    url = f"sqlite:///{tmp_path}/app.db"
    load(study, url)
    app = create_app(url, settings_overrides={"rate_session_token": 4})
    with TestClient(app, base_url="http://proxy", root_path=PREFIX) as client:
        r = client.get(f"{PREFIX}/start", follow_redirects=False)
        assert r.status_code == 303
        home = r.headers["location"]
        assert home.startswith(f"{PREFIX}/p/")
        stripped = client.get(home)  # as uvicorn sees a stripping proxy's request
        passed_on = client.get(PREFIX + home)  # a proxy that passes /study/... on
        for resp in (stripped, passed_on):
            assert resp.status_code == 200 and "Information and consent" in resp.text
            assert "no-store" in resp.headers["cache-control"]
            assert f'action="{home}/consent"' in resp.text
        assert client.get(f"{PREFIX}{PREFIX}/static/app.js").status_code == 200
        statuses = [client.get(home).status_code for _ in range(3)]  # the 4-request budget of this session
        assert statuses[-1] == 429, statuses


def test_root_path_option():
    assert root_path_arg("/study/") == "/study" and root_path_arg("") == "" and root_path_arg("/a/b-c") == "/a/b-c"
    for bad in ("study", "/p", "/static/x", "/start", "/a b", "/a?b", "/../x"):
        with pytest.raises(argparse.ArgumentTypeError):
            root_path_arg(bad)
