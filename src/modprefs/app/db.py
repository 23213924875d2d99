"""Engine and transactions: SQLite by default, PostgreSQL (psycopg 3) by URL.

Every unit of work runs in :func:`transaction`, one database transaction that commits or rolls back
as a whole. On SQLite the transaction starts with ``BEGIN IMMEDIATE`` (the write lock is taken up
front, so two writers never deadlock on a lock upgrade; a 30 s busy timeout queues them) and the
database runs in WAL mode so readers do not block the writer. On PostgreSQL the default READ
COMMITTED isolation is enough: the few contended writes (slot claims, trial submissions) are
conditional updates and unique constraints, which stay correct under it; one participant's event
writes are serialised by locking the participant row.

Only ``modprefs app load`` creates a database; :func:`open_database` (serve, export, status, invite)
opens an existing one and refuses, with a message naming the database and what to run first, a
missing file, an unreachable server, a file that is not a database, or a database without a loaded study.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import create_engine, event, inspect, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from modprefs.errors import UserInputError

DEFAULT_DB = "sqlite:///study.db"
DB_ENV = "MODPREFS_APP_DB"


def normalise_url(url: str) -> str:
    """``postgres://`` / ``postgresql://`` -> ``postgresql+psycopg://`` (psycopg 3, the app's driver)."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def default_url() -> str:
    return os.environ.get(DB_ENV, DEFAULT_DB)


class StudyDatabaseError(UserInputError):
    """The database is missing, unreachable, not a database, or holds no (current) loaded study."""


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (None for other databases and in-memory SQLite)."""
    parsed = make_url(normalise_url(url))
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def make_sqlite_folder(path: Path) -> None:
    """Create the folder of a SQLite database file; a folder that cannot be made or written is a
    :class:`StudyDatabaseError` naming it (not an OSError from deep in SQLAlchemy)."""
    from modprefs.output_folder import output_folder_problem  # noqa: PLC0415

    problem = output_folder_problem(path.parent, "--db folder")
    if problem is None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            problem = f"--db folder {path.parent}: cannot create it ({err.strerror or err})"
    if problem:
        raise StudyDatabaseError(f"app load: cannot create the database {path}: {problem}")


def make_engine(url: str | None = None, *, echo: bool = False, create: bool = True) -> Engine:
    """An engine for ``url``; ``create`` makes a SQLite file's folder (``app load`` only)."""
    url = normalise_url(url or default_url())
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = sqlite_path(url)
        if path is not None and create:
            make_sqlite_folder(path)
        engine = create_engine(
            url, echo=echo, connect_args={"check_same_thread": False, "timeout": 30}, pool_size=20, max_overflow=40
        )

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

    def __init__(self, url: str | None = None, *, create: bool = True):
        self.url = normalise_url(url or default_url())
        self.engine = make_engine(self.url, create=create)
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


def _load_hint(db_url: str) -> str:
    return f"load a study into it first: modprefs app load --db {db_url} --results results"


def require_study(db: Database, command: str) -> None:
    """Raise :class:`StudyDatabaseError` unless ``db`` holds a study loaded by this version of ``app load``."""
    from modprefs.app.models import SCHEMA_VERSION

    shown = db.redacted_url()
    try:
        tables = set(inspect(db.engine).get_table_names())
        if not {"app_meta", "app_slots", "app_participants"} <= tables:
            raise StudyDatabaseError(
                f"app {command}: the database {shown} holds no study (no app tables); " + _load_hint(shown)
            )
        with db.engine.connect() as conn:
            n_slots = conn.execute(text("SELECT count(*) FROM app_slots")).scalar()
            version = conn.execute(text("SELECT value FROM app_meta WHERE key = 'schema_version'")).scalar()
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise StudyDatabaseError(f"app {command}: cannot open the database {shown}: {reason}") from None
    if not n_slots:
        raise StudyDatabaseError(f"app {command}: the database {shown} holds no study (no slots); " + _load_hint(shown))
    if version != SCHEMA_VERSION:
        raise StudyDatabaseError(
            f"app {command}: the database {shown} was loaded by another version of modprefs (app schema "
            f"{version or 1}, this version reads {SCHEMA_VERSION}); export it with that version, then reload it "
            f"with: modprefs app load --db {shown} --results results --replace --force"
        )


def open_database(url: str | None, command: str) -> Database:
    """The existing database of a loaded study for ``command`` (serve, export, status, invite); never
    creates one. Raises :class:`StudyDatabaseError` with a message naming the database."""
    url = normalise_url(url or default_url())
    try:
        path = sqlite_path(url)
        shown = make_url(url).render_as_string(hide_password=True)
    except SQLAlchemyError:
        raise StudyDatabaseError(
            f"app {command}: --db {url!r} is not a database URL (sqlite:///path/study.db or postgresql://user@host/db)"
        ) from None
    if path is not None and not path.is_file():
        raise StudyDatabaseError(f"app {command}: the database {path} does not exist; " + _load_hint(shown))
    try:
        db = Database(url, create=False)
    except (SQLAlchemyError, ImportError, ValueError) as exc:
        raise StudyDatabaseError(f"app {command}: cannot open the database {shown}: {exc}") from None
    try:
        require_study(db, command)
    except StudyDatabaseError:
        db.dispose()
        raise
    return db
