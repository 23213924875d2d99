"""The server's background updates of the live statistics (:mod:`.live_stats`) and the stopping rule's looks.

Never on a participant's request path: a stored task only pokes the :class:`LiveRunner` (after the response was
sent), whose thread checks whether an update is due (a few small queries) and runs it in a child process
(``python -m modprefs.app.live_runner``, the database URL in ``$MODPREFS_LIVE_DB``), so the computation never holds
the server's interpreter; pokes during an update are folded into one more check after it. An update is due every
``study.stopping.update_every_trials`` stored tasks, or when the rule's next look is due
(:func:`modprefs.app.stopping.look_pending`). With several server workers (PostgreSQL) each worker has a runner and
one claims each update (:func:`modprefs.app.live_stats.claim`), so the work is done once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from modprefs.app import stopping
from modprefs.app.db import Database
from modprefs.app.live_stats import SNAPSHOT_KEY, claim, read_config, read_snapshot, snapshot, store
from modprefs.app.service import intake

log = logging.getLogger("modprefs.app")


def refresh(db: Database, look: bool = True) -> dict[str, Any]:
    """One update: the snapshot, stored; with ``look`` the stopping rule's look when one is due (:mod:`.stopping`)."""
    with db.transaction() as s:
        config = read_config(s)
    with tempfile.TemporaryDirectory(prefix="modprefs-live-") as tmp:
        snap = snapshot(db, config, Path(tmp) / "export")
        store(db, SNAPSHOT_KEY, snap)
        if look:
            stopping.maybe_look(db, config, Path(tmp) / "export", snap)
    return snap


LIVE_DB_ENV = "MODPREFS_LIVE_DB"  # the child process's database URL (in the environment, not in its arguments)
UPDATE_TIMEOUT_S = 3600.0  # an update that takes longer is stopped (and logged); the next poke tries again


def update_due(db: Database) -> bool:
    """Whether an update is due, claiming it (:func:`modprefs.app.live_stats.claim`): ``update_every_trials`` tasks
    since the last claim, or the rule's next look (False for a study without a live configuration)."""
    with db.transaction() as s:
        config = read_config(s)
    if not config.enabled:
        return False
    return claim(db, config.rule.update_every_trials) is not None or stopping.look_pending(db, config)


class LiveRunner:
    """The server's background updater: :meth:`poke` after each stored task; each check runs in a child process
    started from one background thread."""

    def __init__(self, db: Database):
        self.db = db
        self._lock = threading.Lock()
        self._running = False
        self._again = False

    @property
    def busy(self) -> bool:
        with self._lock:
            return self._running

    def poke(self) -> None:
        """Ask for an update check (never blocks: a check already running runs once more when it ends)."""
        with self._lock:
            if self._running:
                self._again = True
                return
            self._running = True
        # a daemon thread: the server's shutdown never waits for an update (the child dies with the server)
        threading.Thread(target=self._work, name="modprefs-live", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                self._check_once()
            except Exception:  # noqa: BLE001 (a failed update must not stop the next ones; it is logged)
                log.exception("live statistics: the update failed")
            with self._lock:
                if not self._again:
                    self._running = False
                    return
                self._again = False

    def _check_once(self) -> None:
        """Check (in this thread: a few small queries) and, when an update is due, run it in a child process."""
        if not update_due(self.db):
            return
        env = {**os.environ, LIVE_DB_ENV: self.db.url}
        done = subprocess.run(
            [sys.executable, "-m", "modprefs.app.live_runner"],
            env=env,
            capture_output=True,
            text=True,
            timeout=UPDATE_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            log.error("live statistics: the update exited %d: %s", done.returncode, done.stderr[-2000:])


def live_view(db: Database, updating: bool = False) -> dict[str, Any]:
    """What the dashboard, ``/admin/live.json`` and ``modprefs app status --stats`` show of the live statistics:
    ``snapshot`` (the last update, None before the first), ``rule`` (the declared stopping rule and its derived
    looks and level), ``state`` (its looks and whether it stopped the study), ``intake``, ``updating`` (an update
    is running now) and ``enabled`` (the study has a live configuration: updates run)."""
    with db.transaction() as s:
        config = read_config(s)
        now_intake = intake(s)
    return {
        "snapshot": read_snapshot(db),
        "rule": stopping.rule_summary(config.rule),
        "state": stopping.read_state(db),
        "intake": now_intake,
        "updating": updating,
        "enabled": config.enabled,
    }


def live_now(db: Database) -> dict[str, Any]:
    """``modprefs app status --stats``: :func:`live_view` (the dashboard's last update as ``snapshot``) plus ``now``,
    the live numbers computed at this moment (:func:`modprefs.app.live_stats.snapshot`, not stored: no look taken)."""
    view = live_view(db)
    with db.transaction() as s:
        config = read_config(s)
    with tempfile.TemporaryDirectory(prefix="modprefs-status-") as tmp:
        view["now"] = snapshot(db, config, Path(tmp) / "export")
    return view


def _die_with_parent() -> None:
    """Linux: this process gets SIGTERM when the server that started it exits (prctl PR_SET_PDEATHSIG), so an
    update never outlives its server; elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # noqa: PLC0415
    import signal  # noqa: PLC0415

    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the server exited before the signal was set
        raise SystemExit(0)


def main() -> int:
    """``python -m modprefs.app.live_runner``: one update (:func:`refresh`) of the study in ``$MODPREFS_LIVE_DB``."""
    from modprefs.app.db import open_database  # noqa: PLC0415

    _die_with_parent()
    with contextlib.suppress(OSError):
        os.nice(10)  # below the server's priority: its requests come first
    db = open_database(os.environ[LIVE_DB_ENV], "live statistics")
    try:
        refresh(db)
    finally:
        db.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
