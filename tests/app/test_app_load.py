"""50 concurrent simulated participants over HTTP (loopback) against SQLite and a real PostgreSQL.

Each participant listens for real (fetches the clips, waits their durations between `play` and
`ended`) or waits the reading time before revealing Response B, since the server checks both on its
own clock; every listen must be accepted, every event id stored once.

The PostgreSQL case starts a throwaway cluster (Debian's initdb/pg_ctl, run as the `postgres` user when
the tests run as root). Without PostgreSQL it is skipped, unless MODPREFS_REQUIRE_POSTGRES=1 (CI),
which makes its absence a failure. Every request loop is bounded (one session per simulated
participant, fixed trials) and runs against 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from sqlalchemy import func, select

from modprefs.app.export import export_dir
from modprefs.app.models import Event, Participant, Slot, TrialResult
from modprefs.ratings.ingest import validate_ratings_dir
from modprefs.scale import PAPER_SCALE
from support.app_services import app_server, pg_bindir, postgres_cluster
from support.app_sim import run_participant
from support.app_study import load, make_study

N = 50
TRIALS = 4
FAIL = {5, 17, 30, 44}  # these fail the attention check: their slots are reissued
DOUBLE = {2, 11, 23, 38, 49}  # these submit every trial twice at once


@pytest.fixture(scope="module")
def pg_url():
    problems = []
    if pg_bindir() is None:
        problems.append("PostgreSQL server binaries (initdb, pg_ctl) are not installed (tests/app/install_deps.sh)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        problems.append("the psycopg driver is not installed (pip install -e '.[test]')")
    if problems:
        if os.environ.get("MODPREFS_REQUIRE_POSTGRES") == "1":
            pytest.fail("MODPREFS_REQUIRE_POSTGRES=1 but " + "; ".join(problems))
        pytest.skip("; ".join(problems))
    with postgres_cluster() as url:
        yield url


async def _wave(base: str, specs: list[dict], durations: dict[str, float]) -> list:
    limits = httpx.Limits(max_connections=len(specs) + 10, max_keepalive_connections=len(specs) + 10)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120) as client:
        return await asyncio.gather(*[run_participant(client, durations=durations, **spec) for spec in specs])


def _run_study(url: str, tmp_path: Path) -> dict:
    study = make_study(tmp_path / "study", n_prompts=10, raters_per_condition=N // 2, trials=TRIALS, seed=3)
    db = load(study, url)
    t0 = time.monotonic()
    with app_server(url) as base:
        # each participant from its own address, as the server sees them behind a proxy (X-Forwarded-For
        # from loopback is trusted): the default per-IP rate limits stay on
        specs = [
            {
                "seed": i,
                "fail_attention": i in FAIL,
                "double_submit": i in DOUBLE,
                "client_ip": f"10.1.0.{i}",
                "prolific": {"PROLIFIC_PID": f"pid{i:03d}", "STUDY_ID": "load", "SESSION_ID": f"s{i}"},
            }
            for i in range(N)
        ]
        specs += [{"seed": 100 + i, "age": 16, "client_ip": f"10.2.0.{i}"} for i in range(2)]  # screened out
        first = asyncio.run(_wave(base, specs, study.durations))
        t1 = time.monotonic()
        # the reissued slots go to the next arrivals; then the study is full
        second = asyncio.run(
            _wave(base, [{"seed": 200 + i, "client_ip": f"10.3.0.{i}"} for i in range(len(FAIL) + 1)], study.durations)
        )
        elapsed = time.monotonic() - t0
    outcomes = first + second
    finals = [o.final for o in outcomes]
    assert finals.count("done") == N, finals
    assert finals.count("failed_attention") == len(FAIL)
    assert finals.count("screened_out") == 2 and finals.count("full") == 1
    assert sum(o.duplicates for o in outcomes) == len(DOUBLE) * (TRIALS + 1)
    submitted = sum(len(o.submitted) for o in outcomes)
    assert submitted == N * (TRIALS + 1) + len(FAIL)
    with db.transaction() as s:
        n_rows = s.scalar(select(func.count()).select_from(TrialResult))
        n_distinct = s.scalar(
            select(func.count()).select_from(select(TrialResult.participant, TrialResult.trial).distinct().subquery())
        )
        n_events = s.scalar(select(func.count()).select_from(Event))
        slots = s.execute(select(Slot.status, func.count()).group_by(Slot.status)).all()
        done_people = s.scalar(select(func.count()).select_from(Participant).where(Participant.completed.is_(True)))
    # 0 lost, 0 duplicated: every accepted submission is exactly one row
    assert n_rows == submitted and n_distinct == n_rows
    assert dict(slots) == {"done": N} and done_people == N
    assert n_events > submitted * 5
    # every real listen and reveal was accepted by the server's plausibility check, no event conflicted
    receipts = [r for o in outcomes for r in o.receipts]
    assert not [r for r in receipts if r["refused"] or r["conflicts"]], "refused or conflicting events"
    counts = export_dir(db, tmp_path / "export")
    assert counts["ratings"] == 2 * submitted and counts["trials"] == submitted
    assert counts["participants"] == N + len(FAIL)
    tables = validate_ratings_dir(tmp_path / "export", study.stimuli, scale=PAPER_SCALE)
    per_clip = tables["ratings"].query("trial > 0").groupby("clip_id").size()
    assert per_clip.max() - per_clip.min() <= 4  # the design's balance survives reissued slots
    db.dispose()
    return {
        "first_wave_s": round(t1 - t0, 1),
        "total_s": round(elapsed, 1),
        "rows": n_rows,
        "connection_retries": sum(o.retries for o in outcomes),
    }


@pytest.mark.integration  # a server or the network: not in `make test-fast`
def test_concurrent_participants_sqlite(tmp_path):
    stats = _run_study(f"sqlite:///{tmp_path}/load.db", tmp_path)
    print("sqlite:", stats)


@pytest.mark.integration  # a server or the network: not in `make test-fast`
def test_concurrent_participants_postgres(pg_url, tmp_path):
    stats = _run_study(pg_url, tmp_path)
    print("postgresql:", stats)


@pytest.mark.integration
def test_a_live_update_is_claimed_by_exactly_one_of_many_workers_postgres(pg_url, tmp_path):
    """#54: under `serve --workers N` every worker's runner asks for the next live-statistics update at about the
    same moment; on PostgreSQL (READ COMMITTED, as served) exactly one claim wins each update, both when the claim
    row does not exist yet (the insert race) and when it does (the conditional update). Eight workers, each with its
    own engine and connections, released together by a barrier, 30 rounds."""
    import threading

    from sqlalchemy import create_engine, delete, text

    from modprefs.app.db import Database
    from modprefs.app.live_stats import CLAIM_KEY, claim
    from modprefs.app.models import Meta

    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text("CREATE DATABASE claims"))
    admin.dispose()
    url = pg_url.rsplit("/", 1)[0] + "/claims"
    study = make_study(tmp_path / "study", n_prompts=4, raters_per_condition=2, trials=2, seed=5)
    db = load(study, url)
    with app_server(url) as base:
        outcomes = asyncio.run(
            _wave(base, [{"seed": i, "client_ip": f"10.4.0.{i}"} for i in range(2)], study.durations)
        )
    assert [o.final for o in outcomes] == ["done", "done"]
    with db.transaction() as s:
        tasks = s.scalar(select(func.count()).select_from(TrialResult).where(TrialResult.trial >= 0))
    assert tasks == 2 * 3  # two participants: the attention check + 2 trials each

    workers = [Database(url) for _ in range(8)]
    winners_per_round = []
    for round_ in range(30):
        with db.transaction() as s:  # a fresh update to claim: no claim row yet (even rounds) or an old count
            s.execute(delete(Meta).where(Meta.key == CLAIM_KEY))
            if round_ % 2:
                s.add(Meta(key=CLAIM_KEY, value="0"))
        barrier = threading.Barrier(len(workers))
        results: list[int | None] = [None] * len(workers)

        def contend(i: int, barrier: threading.Barrier, results: list[int | None]) -> None:
            barrier.wait()
            results[i] = claim(workers[i], 1)

        threads = [threading.Thread(target=contend, args=(i, barrier, results)) for i in range(len(workers))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        winners_per_round.append([r for r in results if r is not None])
    assert all(w == [tasks] for w in winners_per_round), winners_per_round
    for w in workers:
        w.dispose()
    db.dispose()
