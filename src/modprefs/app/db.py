"""Engine and transactions: SQLite by default, PostgreSQL (psycopg 3) by URL.

Every unit of work runs in :func:`transaction`, one database transaction that commits or rolls back
as a whole. On SQLite the transaction starts with ``BEGIN IMMEDIATE`` (the write lock is taken up
front, so two writers never deadlock on a lock upgrade; a 30 s busy timeout queues them) and the
database runs in WAL mode so readers do not block the writer. On PostgreSQL the default READ
COMMITTED isolation is enough: the few contended writes (slot claims, trial submissions) are
conditional updates and unique constraints, which stay correct under it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import Session, sessionmaker

DEFAULT_DB = "sqlite:///study.db"
DB_ENV = "MODPREFS_APP_DB"


def normalise_url(url: str) -> str:
    """``postgres://`` / ``postgresql://`` -> ``postgresql+psycopg://`` (psycopg 3, the app's driver)."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def default_url() -> str:
    return os.environ.get(DB_ENV, DEFAULT_DB)


def make_engine(url: str | None = None, *, echo: bool = False) -> Engine:
    url = normalise_url(url or default_url())
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, echo=echo, connect_args={"check_same_thread": False, "timeout": 30},
                               pool_size=20, max_overflow=40)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn, _record):  # noqa: ANN001
            dbapi_conn.isolation_level = None  # let SQLAlchemy's begin event issue BEGIN itself
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn):  # noqa: ANN001
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return create_engine(url, echo=echo, pool_size=20, max_overflow=20, pool_pre_ping=True)


class Database:
    """An engine, its session factory and the schema."""

    def __init__(self, url: str | None = None):
        self.url = normalise_url(url or default_url())
        self.engine = make_engine(self.url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def create_all(self) -> None:
        from modprefs.app.models import Base

        Base.metadata.create_all(self.engine)

    def drop_all(self) -> None:
        from modprefs.app.models import Base

        Base.metadata.drop_all(self.engine)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Session]:
        """One transaction: commit on success, roll back on any exception."""
        with self._sessions() as session, session.begin():
            yield session

    def dispose(self) -> None:
        self.engine.dispose()

    def redacted_url(self) -> str:
        return make_url(self.url).render_as_string(hide_password=True)
