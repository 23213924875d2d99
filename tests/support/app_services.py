"""Services the app tests start themselves: a throwaway PostgreSQL cluster, the app under uvicorn.

Both bind to loopback only and are stopped by the tests that start them.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_bindir() -> Path | None:
    """Debian's PostgreSQL server binaries (initdb, pg_ctl), newest version first."""
    for path in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True):
        if Path(path, "initdb").is_file() and Path(path, "pg_ctl").is_file():
            return Path(path)
    found = shutil.which("initdb")
    return Path(found).parent if found and shutil.which("pg_ctl") else None


def _as_user() -> tuple[list[str], str | None]:
    """PostgreSQL refuses to run as root: run its tools as the `postgres` (or `nobody`) user then."""
    if os.geteuid() != 0:
        return [], None
    for user in ("postgres", "nobody"):
        try:
            pwd.getpwnam(user)
        except KeyError:
            continue
        runuser = shutil.which("runuser")
        return ([runuser, "-u", user, "--"] if runuser else ["su", user, "-s", "/bin/sh", "-c"]), user
    raise RuntimeError("running as root and no unprivileged user to run PostgreSQL")


@contextlib.contextmanager
def postgres_cluster() -> Iterator[str]:
    """A fresh cluster in a temp dir (initdb + pg_ctl, trust auth, loopback); yields its SQLAlchemy URL."""
    bindir = pg_bindir()
    if bindir is None:
        raise FileNotFoundError("PostgreSQL server binaries (initdb, pg_ctl) not found")
    prefix, user = _as_user()
    tmp = Path(tempfile.mkdtemp(prefix="modprefs-pg-"))
    data, sock, log = tmp / "data", tmp / "sock", tmp / "postgres.log"
    sock.mkdir()
    if user is not None:
        info = pwd.getpwnam(user)
        for p in (tmp, sock):
            os.chown(p, info.pw_uid, info.pw_gid)
    port = free_port()

    def run(*cmd: str, timeout: float = 60) -> None:
        full = [*prefix, *cmd] if prefix[:1] != ["su"] else [*prefix, " ".join(cmd)]
        r = subprocess.run(full, capture_output=True, text=True, timeout=timeout, cwd=tmp)
        if r.returncode != 0:
            raise RuntimeError(
                f"{cmd[0]} failed ({r.returncode}): {r.stdout}{r.stderr}{log.read_text() if log.exists() else ''}"
            )

    try:
        run(
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        )
        opts = (
            f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c shared_buffers=64MB"
        )
        run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", opts, "-w", "-t", "60", "start", timeout=90)
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        with contextlib.suppress(Exception):
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def app_server(db_url: str, *extra: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``modprefs app serve`` in a subprocess on a free loopback port; yields its base URL."""
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="modprefs-app-", suffix=".log", delete=False)
    cmd = [
        sys.executable,
        "-m",
        "modprefs.cli",
        "app",
        "serve",
        "--db",
        db_url,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        *extra,
    ]
    full_env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "OPENBLAS_NUM_THREADS": "1",
        **(env or {}),
    }
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=full_env, cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the app server exited ({proc.returncode}): {Path(log.name).read_text()}")
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the app server did not start: {Path(log.name).read_text()}")
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if not os.environ.get("MODPREFS_KEEP_APP_LOG"):
            Path(log.name).unlink(missing_ok=True)
