"""The deployment recipe of docs/app.md, run by the tests: Debian's nginx in front of ``modprefs app serve``.

The nginx ``location`` blocks, the systemd unit and its environment file are read from docs/app.md
(the fenced block after each ``<!-- deploy:NAME -->`` marker), so the documentation is what is
tested. Only what a test on loopback cannot use is swapped: the app's port (the doc's 8000), the
venv's ``modprefs`` (this interpreter) and the database URL (a SQLite file); the TLS server block
around the locations is the test's own plain-HTTP one on a free loopback port.

Without nginx the proxy tests are skipped, unless MODPREFS_REQUIRE_PROXY=1 (CI), which makes its
absence a failure (tests/app/install_deps.sh installs it).
"""

from __future__ import annotations

import configparser
import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "app.md"
NGINX = os.environ.get("MODPREFS_NGINX", "/usr/sbin/nginx")
DOC_APP_PORT = 8000  # the app's port in the doc's nginx config and systemd unit


def require_nginx() -> str:
    """The nginx binary; skips (or fails with MODPREFS_REQUIRE_PROXY=1) when there is none."""
    found = NGINX if Path(NGINX).is_file() else shutil.which(NGINX) or shutil.which("nginx")
    if not found:
        msg = f"nginx not found at {NGINX} (tests/app/install_deps.sh installs it)"
        if os.environ.get("MODPREFS_REQUIRE_PROXY") == "1":
            pytest.fail("MODPREFS_REQUIRE_PROXY=1 but " + msg)
        pytest.skip(msg)
    return str(found)


def doc_block(name: str, doc: Path = DOC) -> str:
    """The fenced code block that follows ``<!-- deploy:NAME -->`` in the doc."""
    m = re.search(
        rf"<!-- deploy:{re.escape(name)} -->\s*\n```[^\n]*\n(.*?)\n```", doc.read_text(encoding="utf-8"), re.S
    )
    if m is None:
        raise AssertionError(f"{doc}: no fenced block after <!-- deploy:{name} -->")
    return m.group(1) + "\n"


@dataclass
class Unit:
    """The doc's systemd unit: its ExecStart argv and its environment (the EnvironmentFile's lines)."""

    argv: list[str]
    env: dict[str, str]
    sections: configparser.ConfigParser


def doc_unit() -> Unit:
    """Parse the doc's unit (``deploy:systemd``) and environment file (``deploy:env``)."""
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case-sensitive
    unit.read_string(doc_block("systemd"))
    assert {"Unit", "Service", "Install"} <= set(unit.sections()), unit.sections()
    env: dict[str, str] = {}
    for line in doc_block("env").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key.strip()] = value.strip()
    return Unit(shlex.split(unit["Service"]["ExecStart"]), env, unit)


def unit_command(unit: Unit, port: int, *extra: str) -> list[str]:
    """The unit's ExecStart on this machine: this interpreter's modprefs, the test's port, ``extra`` appended."""
    argv = list(unit.argv)
    assert Path(argv[0]).name == "modprefs", argv
    assert argv[argv.index("--port") + 1] == str(DOC_APP_PORT), argv
    argv[argv.index("--port") + 1] = str(port)
    return [sys.executable, "-m", "modprefs.cli", *argv[1:], *extra]


def nginx_conf(locations: str, app_port: int, listen_port: int, work: Path) -> str:
    """A complete nginx.conf around the doc's ``location`` blocks: plain HTTP on loopback, every path in ``work``."""
    body = locations.replace(f"127.0.0.1:{DOC_APP_PORT}", f"127.0.0.1:{app_port}")
    assert f":{app_port}" in body, "the doc's nginx config does not proxy to 127.0.0.1:8000"
    temp = "\n".join(
        f"    {kind}_temp_path {work / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    indented = "\n".join("        " + line if line.strip() else "" for line in body.splitlines())
    return f"""# written by tests/support/proxy_kit.py around docs/app.md's deploy:nginx block
{"user root;" if os.geteuid() == 0 else ""}
worker_processes 1;
pid {work / "nginx.pid"};
error_log {work / "error.log"} warn;
events {{ worker_connections 256; }}
http {{
    access_log {work / "access.log"};
{temp}
    server {{
        listen 127.0.0.1:{listen_port};
        server_name localhost;
{indented}
    }}
}}
"""


def _wait_http(url: str, proc: subprocess.Popen, log: Path, what: str, ok: tuple[int, ...] = (200,)) -> None:
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode}): {log.read_text() if log.exists() else ''}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=1).status_code in ok:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start: {log.read_text() if log.exists() else ''}")
        time.sleep(0.1)


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def nginx_proxy(nginx: str, locations: str, app_port: int, listen_port: int) -> Iterator[Path]:
    """nginx in the foreground with :func:`nginx_conf`; yields its work dir (access.log, error.log)."""
    work = Path(tempfile.mkdtemp(prefix="modprefs-nginx-"))
    for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (work / kind).mkdir()
    conf = work / "nginx.conf"
    conf.write_text(nginx_conf(locations, app_port, listen_port, work))
    base = [nginx, "-p", str(work), "-c", str(conf), "-e", str(work / "error.log")]
    check = subprocess.run([*base, "-t"], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, f"nginx -t refused the doc's config:\n{check.stderr}\n{conf.read_text()}"
    proc = subprocess.Popen([*base, "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # /healthz is outside the prefix: nginx's own 404 once it listens
        _wait_http(f"http://127.0.0.1:{listen_port}/healthz", proc, work / "error.log", "nginx", ok=(404,))
        yield work
    finally:
        _stop(proc, signal.SIGQUIT)  # graceful: finishes the log lines
        if not os.environ.get("MODPREFS_KEEP_APP_LOG"):
            shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def unit_server(cmd: list[str], env: dict[str, str], port: int) -> Iterator[Path]:
    """The app as the doc's unit starts it (``cmd``, ``env`` over this environment); yields its log file."""
    log = Path(tempfile.mkstemp(prefix="modprefs-app-", suffix=".log")[1])
    full_env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "OPENBLAS_NUM_THREADS": "1",
        **env,
    }
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=full_env, cwd=ROOT)
    try:
        _wait_http(f"http://127.0.0.1:{port}/healthz", proc, log, "modprefs app serve")
        yield log
    finally:
        _stop(proc)
        if not os.environ.get("MODPREFS_KEEP_APP_LOG"):
            log.unlink(missing_ok=True)
