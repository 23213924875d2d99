"""docs/app.md's deployment recipe, run: Debian's nginx serving the study under /study in front of the app.

nginx gets the doc's ``location`` blocks (``deploy:nginx``), the app is started with the doc's systemd
``ExecStart`` and environment file (``deploy:systemd``, ``deploy:env``: ``--root-path /study``,
``FORWARDED_ALLOW_IPS``), on loopback with SQLite (tests/support/proxy_kit.py says what is swapped). Then,
through http://127.0.0.1:PORT/study/ only: a full participant session in each condition in chromium
(tests/support/browser_session.py's session: consent, demographics, the attention check, the trials with
their listening and reading checks, a reload, difficulty, the completion code and the Prolific link),
every request the browser makes under the prefix and none refused; an invitation link
(``app invite --base-url .../study``) and its stylesheet; the bare prefix redirected; the admin export
over HTTP; the app also answering a proxy that passes the prefix on. What the sessions left is
exported with ``modprefs app export --validate`` and analysed by ``modprefs stats``.

Skipped without chromium (unless MODPREFS_REQUIRE_BROWSER=1) or nginx (unless MODPREFS_REQUIRE_PROXY=1);
tests/app/install_deps.sh installs both.
"""

from __future__ import annotations

import io
import re
import time
import zipfile
from pathlib import Path

import pytest

from support import browser_session
from support.app_services import free_port
from support.app_study import load, make_study
from support.proxy_kit import doc_block, doc_unit, nginx_proxy, require_nginx, unit_command, unit_server

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # nginx, a server and a browser: not in `make test-fast`

PREFIX = "/study"
SECRET = "s3cret-behind-the-proxy"


def _stats(export: Path, clips: Path, out: Path) -> None:
    """``modprefs stats`` on the export (one rater per condition: the ICC rows are there, labelled)."""
    import pandas as pd

    from modprefs.cli import main as modprefs_main

    argv = ["stats", "--ratings", str(export), "--clips", str(clips), "--out", str(out), "--n-boot", "10"]
    rc = modprefs_main([*argv, "--n-perm", "0", "--n-boot-alpha", "0", "--n-perm-alpha", "0"])
    assert rc == 0
    icc = pd.read_csv(out / "tables/icc.csv")
    assert set(icc["condition"]) == {"audio", "text"} and (icc["n_participants"] == 1).all()
    assert (out / "report.html").is_file()


def _side_doors(site: str, app_port: int, db_url: str, capsys) -> str:
    """An invitation link, the bare prefix, relative redirects, the admin export through the proxy; the app behind
    a proxy that passes the prefix on (what it then receives: /study/p/...). Returns the invitation's token."""
    import httpx

    from modprefs.cli import main as modprefs_main

    assert modprefs_main(["app", "invite", "--db", db_url, "-n", "1", "--base-url", site]) == 0
    link = [line for line in capsys.readouterr().out.splitlines() if line.startswith("http")][-1]
    assert link.startswith(f"{site}/p/"), link
    r = httpx.get(link)
    assert r.status_code == 200 and "Information and consent" in r.text
    css = re.search(r'<link rel="stylesheet" href="([^"]+)"', r.text).group(1)
    assert css == f"{PREFIX}/static/style.css"
    assert httpx.get(site.removesuffix(PREFIX) + css).headers["content-type"].startswith("text/css")
    bare = httpx.get(site, follow_redirects=True)
    assert bare.status_code == 200 and bare.url.path == f"{PREFIX}/" and "personal link" in bare.text
    # redirects are relative (a path): they keep the host, port and scheme the browser used
    assert httpx.get(site).headers["location"] == f"{PREFIX}/"  # nginx's (absolute_redirect off)
    token = link.rsplit("/", 1)[-1]
    slash = httpx.get(f"{site}/p/{token}/?x=1")
    assert slash.status_code == 308 and slash.headers["location"] == f"{PREFIX}/p/{token}?x=1"  # the app's
    auth = {"Authorization": f"Bearer {SECRET}"}
    z = httpx.get(f"{site}/admin/export.zip", headers=auth)
    assert z.status_code == 200 and "ratings.csv" in zipfile.ZipFile(io.BytesIO(z.content)).namelist()
    direct = f"http://127.0.0.1:{app_port}"
    for path in (f"{PREFIX}/p/{token}", f"/p/{token}"):  # the prefix passed on, or stripped
        r = httpx.get(direct + path)
        assert r.status_code == 200 and f'action="{PREFIX}/p/{token}/consent"' in r.text, path
    return token


def test_full_sessions_through_nginx_under_a_prefix(browser, tmp_path, monkeypatch, capsys):
    nginx = require_nginx()
    monkeypatch.setattr(browser_session, "SHOTS", tmp_path / "shots")  # not over test_app_browser's screenshots
    (tmp_path / "shots").mkdir()
    study = make_study(tmp_path / "study", n_prompts=4, raters_per_condition=1, trials=2, seed=11, durations=(1.0, 1.5))
    db_url = f"sqlite:///{tmp_path}/proxy.db"
    load(study, db_url).dispose()
    unit = doc_unit()
    assert unit.argv[unit.argv.index("--root-path") + 1] == PREFIX
    assert unit.env["FORWARDED_ALLOW_IPS"] == "127.0.0.1"
    app_port, proxy_port = free_port(), free_port()
    cmd = unit_command(unit, app_port, "--text-min-read", "1", "--log-level", "warning")
    env = {**unit.env, "MODPREFS_APP_DB": db_url, "MODPREFS_ADMIN_SECRET": SECRET}
    site = f"http://127.0.0.1:{proxy_port}{PREFIX}"
    t0 = time.monotonic()
    with unit_server(cmd, env, app_port), nginx_proxy(nginx, doc_block("nginx"), app_port, proxy_port) as work:
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        page = context.new_page()
        urls: list[str] = []
        refused: list[str] = []
        errors: list[str] = []
        page.on("request", lambda r: urls.append(r.url))
        page.on("response", lambda r: refused.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        sessions = [browser_session.run_session(page, site, f"proxy{i}", {}) for i in range(2)]
        token = _side_doors(site, app_port, db_url, capsys)
        page.goto(f"{site}/p/{token}/")  # a trailing slash: redirected to the link, on the proxy's port
        assert page.url == f"{site}/p/{token}" and page.inner_text("h1") == "Information and consent"
        context.close()
        access = (work / "access.log").read_text()
    assert not errors and not refused, (errors, refused)
    assert {s["condition"] for s in sessions} == {"text", "audio"}
    assert all(s["code"] == "DONE1234" and s["return_url"].endswith("cc=DONE1234") for s in sessions)
    outside = [u for u in urls if not (u.startswith(site + "/") or u.startswith("data:"))]
    assert not outside and len(urls) > 20, outside
    for kind in ("/static/app.js", "/events", "/audio/", "/trial/", "/difficulty"):
        assert any(kind in u for u in urls), kind
    logged = re.findall(r'"(?:GET|POST|HEAD) (\S+) HTTP', access)
    assert {p for p in logged if not p.startswith(PREFIX)} <= {"/healthz"}  # nginx's own startup probe
    assert sum(p.startswith(f"{PREFIX}/p/") and p.endswith(".wav") for p in logged) >= 6  # the clips, via nginx

    export = tmp_path / "export"
    from modprefs.cli import main as modprefs_main

    argv = ["app", "export", "--db", db_url, "--out", str(export), "--validate", str(study.files.stimuli)]
    assert modprefs_main(argv) == 0
    import pandas as pd

    parts = pd.read_csv(export / "participants.csv")
    assert len(parts) == 2 and set(parts.condition) == {"text", "audio"} and parts.completed.all()
    assert len(pd.read_csv(export / "trials.csv")) == 6
    study.stimuli.to_csv(tmp_path / "clips.csv", index=False)
    _stats(export, tmp_path / "clips.csv", tmp_path / "stats")
    print(f"two sessions through nginx under {PREFIX}: {time.monotonic() - t0:.1f} s")
