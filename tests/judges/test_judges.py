"""The API judges (modprefs.judges) driven with the real ``openai`` client against
tests/support/fault_server.py (a local fault-injecting server on 127.0.0.1, random free port)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

pytest.importorskip("openai")

from modprefs.judges import JudgeItem, JudgeSetupError, parse_rating, run_judges  # noqa: E402
from modprefs.judges.prompts import PROMPTS_DIR  # noqa: E402
from modprefs.judges.ratelimit import TokenBucket  # noqa: E402
from modprefs.judges.records import TABLE_COLUMNS, iter_records  # noqa: E402
from support.fault_server import FaultServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "MODPREFS_TEST_JUDGE_KEY"
HISTORY = [
    {"role": "user", "content": "Hi, can you help me plan a trip?"},
    {"role": "model", "content": "Of course. Where would you like to go?"},
]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-key")


def server_rating(request_hash: str) -> int:
    """What fault_server answers for an un-faulted request."""
    return 1 + int(hashlib.sha256(request_hash.encode()).hexdigest()[:8], 16) % 100


def write_clip(path: Path, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    sf.write(path, (0.1 * rng.standard_normal(4000)).astype("float32"), 16000, subtype="PCM_16")
    return path


def make_items(tmp: Path, n_text: int = 6, n_audio: int = 2, bad: bool = True) -> list[JudgeItem]:
    items = [
        JudgeItem(
            f"p{i}",
            f"p{i}_{i % 2}",
            "text",
            "response_quality",
            HISTORY,
            f"Question {i}?",
            response_text=f"Answer number {i}.",
        )
        for i in range(n_text)
    ]
    if bad:
        items.append(
            JudgeItem(
                "pbad", "pbad_0", "text", "response_quality", [], "ALWAYS_EIGHTY please", response_text="whatever"
            )
        )
    for i in range(n_audio):
        clip = write_clip(tmp / f"a{i}_0.wav", i)
        for kind in ("response_quality", "audio_quality"):
            items.append(
                JudgeItem(f"a{i}", f"a{i}_0", "audio", kind, HISTORY, f"Spoken question {i}?", audio_path=str(clip))
            )
    return items


def config(srv: FaultServer, **over) -> dict:
    cfg = dict(
        base_url=srv.url,
        api_key_env=KEY_ENV,
        samples_per_item=3,
        timeout_s=0.4,
        max_retries=8,
        max_reasks=3,
        backoff_base_s=0.02,
        backoff_max_s=0.2,
        max_concurrency=8,
        rpm=None,
        tpm=None,
        preflight_timeout_s=1.0,
        progress=False,
        seed=1,
    )
    cfg.update(over)
    return cfg


# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply,rating,reason",
    [
        ('{"rating": 80}', 80, None),
        ('```json\n{"rating": 7}\n```', 7, None),
        ('Here you go: {"rating": 55}.', 55, None),
        ("42", 42, None),
        ('{"rating": 0}', None, "out of range"),
        ('{"rating": 101}', None, "out of range"),
        ('{"rating": "eighty"}', None, "non-numeric"),
        ("eighty", None, "no JSON rating"),
        ('{"rating": 8', None, "malformed JSON"),
        ("I'm sorry, but I can't help with rating this.", None, "refusal"),
        ('{"rating": 3} or {"rating": 4}', None, "ambiguous"),
        ('{"rating": 72.5}', None, "non-integer"),
        ("", None, "empty"),
    ],
)
def test_parse(reply, rating, reason):
    r = parse_rating(reply)
    assert r.rating == rating
    assert (r.reason is None) if reason is None else (reason in r.reason)


def test_token_bucket_paces_requests():
    async def go():
        b = TokenBucket(600, capacity=1)  # 10 per second, no burst
        t = time.monotonic()
        for _ in range(5):
            await b.acquire(1)
        return time.monotonic() - t

    assert 0.35 <= asyncio.run(go()) < 1.0


def test_faults_every_item_rated_or_failed(tmp_path):
    items = make_items(tmp_path)
    with FaultServer(fault_rate=0.3, hang_s=0.7, retry_after_s=0.2, save_audio_dir=tmp_path / "recv", seed=3) as srv:
        result = run_judges(items, config(srv), tmp_path / "out", tmp_path / "ratings.csv")
        log = srv.chat_log()
        # a rerun makes zero calls
        n_before = len(srv.log)
        again = run_judges(items, config(srv), tmp_path / "out")
        assert again.stats.cached == again.stats.units and again.stats.http_calls == 0
        assert len(srv.log) == n_before

    table = result.table
    n_units = len(items) * 3
    assert list(table.columns) == TABLE_COLUMNS and len(table) == n_units
    faults = {e["fault"] for e in log if e.get("fault")}
    assert {"429", "500", "timeout"} <= faults and len(faults - {"always_eighty"}) >= 6, faults
    assert result.stats.retries > 0 and result.stats.reasks > 0

    recs = {r["request_hash"]: r for r in iter_records(tmp_path / "out")}
    assert len(recs) == n_units
    for h, r in recs.items():
        assert r["status"] in ("ok", "failed")
        if r["clip_id"] == "pbad_0":  # never answerable: failed with the reason, no rating
            assert r["status"] == "failed" and r["rating"] is None and "non-numeric" in r["reason"]
            assert r["asks"] == 4 and r["error_kind"] == "parse"
        elif r["status"] == "ok":  # the server's rating, untouched (never clipped/defaulted)
            assert r["rating"] == server_rating(h)
        else:
            assert r["reason"]
        assert r["prompt_version"].split("@")[0] in {
            "response_quality_text_v1",
            "response_quality_audio_v1",
            "audio_quality_v1",
        }
        assert len(r["prompt_version"].split("@")[1]) == 12
        assert r["tokens"]["total_tokens"] > 0 and r["cost_usd"] > 0 and r["latency_s"] > 0
    assert sum(r["status"] == "ok" for r in recs.values()) >= n_units - 3 - 1  # pbad + rare exhaustion
    csv = (tmp_path / "ratings.csv").read_text().splitlines()
    assert csv[0] == ",".join(TABLE_COLUMNS) and len(csv) == n_units + 1

    # Retry-After honoured: the retry of a 429'd request comes >= 0.2 s later
    by_hash: dict[str, list[dict]] = {}
    for e in log:
        by_hash.setdefault(e["request_hash"], []).append(e)
    gaps = [seq[i + 1]["t"] - e["t"] for seq in by_hash.values() for i, e in enumerate(seq[:-1]) if e["fault"] == "429"]
    assert gaps and min(gaps) >= 0.2

    # API defaults: nothing but response_format (text only) is sent besides model/messages
    for e in log:
        assert e["params"] == (["response_format"] if e["model"] == "gpt-4o" else [])

    # audio requests carry the real WAV bytes
    for item in items:
        if item.modality == "audio":
            data = Path(item.audio_path).read_bytes()
            sha = hashlib.sha256(data).hexdigest()
            assert (tmp_path / "recv" / f"{sha}.wav").read_bytes() == data
    audio_entries = [e for e in log if e["model"] == "gpt-4o-audio-preview"]
    assert audio_entries and all(e["audio_format"] == ["wav"] for e in audio_entries)
    assert all(e["audio_sha256"] == [] for e in log if e["model"] == "gpt-4o")


def test_transport_failure_recorded_then_retried(tmp_path):
    items = make_items(tmp_path, n_text=2, n_audio=0, bad=False)
    with FaultServer(fault_rate=1.0, faults=["500"]) as srv:
        res = run_judges(items, config(srv, samples_per_item=1, max_retries=2), tmp_path / "out")
        assert len(srv.chat_log()) == 2 * 3  # 1 try + 2 retries each
    assert (res.table["status"] == "failed").all() and res.table["rating"].isna().all()
    assert res.table["reason"].str.contains("HTTP 500").all()
    with FaultServer(fault_rate=0.0) as srv:  # transport failures are not final
        res = run_judges(items, config(srv, samples_per_item=1), tmp_path / "out")
        assert len(srv.chat_log()) == 2
    assert (res.table["status"] == "ok").all()


def test_prompt_edit_changes_version_and_cache(tmp_path):
    items = make_items(tmp_path, n_text=1, n_audio=0, bad=False)
    pdir = tmp_path / "prompts"
    shutil.copytree(PROMPTS_DIR, pdir)
    with FaultServer() as srv:
        a = run_judges(items, config(srv, samples_per_item=2, prompts_dir=str(pdir)), tmp_path / "out")
        (pdir / "response_quality_text_v1.txt").write_text(
            (pdir / "response_quality_text_v1.txt").read_text() + "\nBe fair.\n"
        )
        b = run_judges(items, config(srv, samples_per_item=2, prompts_dir=str(pdir)), tmp_path / "out")
        assert len(srv.chat_log()) == 4
    assert set(a.table["prompt_version"]).isdisjoint(set(b.table["prompt_version"]))


@pytest.mark.slow  # over 5 s on 2 cores: not in `make test-fast`
def test_killed_run_resumes_without_repeats(tmp_path):
    items = make_items(tmp_path, n_text=8, n_audio=1, bad=False)  # 10 items x 4 samples
    (tmp_path / "items.json").write_text(json.dumps([i.__dict__ for i in items]))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OPENBLAS_NUM_THREADS": "1"}
    with FaultServer(fault_rate=0.3, faults=["429", "500", "zero", "eighty"], latency_s=0.05, seed=5) as srv:
        (tmp_path / "cfg.json").write_text(json.dumps(config(srv, samples_per_item=4, max_concurrency=2)))
        cmd = [
            sys.executable,
            "-m",
            "modprefs.judges.dispatch",
            "--items",
            str(tmp_path / "items.json"),
            "--config",
            str(tmp_path / "cfg.json"),
            "--out",
            str(out),
        ]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while len([p for p in out.rglob("*.json") if not p.name.startswith(".")]) < 8:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        finished = {p.stem for p in out.rglob("*.json") if not p.name.startswith(".")}
        assert 8 <= len(finished) < 40
        mark = len(srv.chat_log())

        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        stats = json.loads(done.stdout.strip().splitlines()[-1])
        assert stats["cached"] == len(finished) and stats["pending"] == 40 - len(finished)
        after = {e["request_hash"] for e in srv.chat_log()[mark:]}

    recs = list(iter_records(out))
    keys = [(r["modality"], r["kind"], r["clip_id"], r["sample"]) for r in recs]
    assert len(recs) == 40 and len(set(keys)) == 40  # exactly one per (item, sample)
    assert not (after & finished)  # nothing finished was re-sent
    assert after == {r["request_hash"] for r in recs} - finished  # only the missing ones were


# --- fail fast: before any request -----------------------------------------------------------


def test_fail_fast_missing_api_key(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    with FaultServer() as srv:
        with pytest.raises(JudgeSetupError, match=f"{KEY_ENV}.*not set"):
            run_judges(make_items(tmp_path, 1, 0, False), config(srv), tmp_path / "out")
        assert srv.log == []
    assert not (tmp_path / "out").exists()


def test_fail_fast_unreachable_base_url(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = dict(base_url=f"http://127.0.0.1:{port}/v1", api_key_env=KEY_ENV, preflight_timeout_s=1.0, progress=False)
    t = time.monotonic()
    with pytest.raises(JudgeSetupError, match="unreachable"):
        run_judges(make_items(tmp_path, 1, 0, False), cfg, tmp_path / "out")
    assert time.monotonic() - t < 5
    assert not (tmp_path / "out").exists()


def test_fail_fast_unknown_model(tmp_path):
    with FaultServer() as srv:
        with pytest.raises(JudgeSetupError, match="unknown model.*gpt-4o-nope"):
            run_judges(make_items(tmp_path, 1, 1, False), config(srv, models={"text": "gpt-4o-nope"}), tmp_path / "out")
        assert srv.chat_log() == [] and len(srv.log) == 1  # just GET /models


def test_fail_fast_rejected_key(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "wrong-key")
    with FaultServer() as srv:
        with pytest.raises(JudgeSetupError, match="rejected"):
            run_judges(make_items(tmp_path, 1, 0, False), config(srv), tmp_path / "out")
        assert srv.chat_log() == []


def test_cli_yaml_config_and_table(tmp_path):
    items = make_items(tmp_path, n_text=2, n_audio=1, bad=False)
    (tmp_path / "items.json").write_text(json.dumps([i.__dict__ for i in items]))
    with FaultServer() as srv:
        cfg = config(srv, samples_per_item=2)
        (tmp_path / "config.yaml").write_text(
            "judges:\n" + "".join(f"  {k}: {json.dumps(v)}\n" for k, v in cfg.items())
        )
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "modprefs.judges.dispatch",
                "--items",
                str(tmp_path / "items.json"),
                "--config",
                str(tmp_path / "config.yaml"),
                "--out",
                str(tmp_path / "out"),
                "--table",
                str(tmp_path / "ratings.csv"),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    import pandas as pd

    table = pd.read_csv(tmp_path / "ratings.csv")
    assert list(table.columns) == TABLE_COLUMNS and len(table) == 4 * 2
    assert set(zip(table["modality"], table["kind"])) == {
        ("text", "response_quality"),
        ("audio", "response_quality"),
        ("audio", "audio_quality"),
    }
    assert (table["status"] == "ok").all() and table["rating"].between(1, 100).all()
    assert set(table["judge"]) == {"openai:gpt-4o", "openai:gpt-4o-audio-preview"}


def test_build_items_from_stage_tables(tmp_path):
    import pandas as pd

    from modprefs.judges import build_items

    conv = pd.DataFrame([{"conversation_id": "c1", "history": HISTORY, "prompt": "Q?", "text_0": "A0", "text_1": "A1"}])
    prompts = pd.DataFrame([{"prompt_id": "c1", "conversation_id": "c1"}])
    manifest = pd.DataFrame(
        [{"clip_id": f"c1_{r}", "path": str(write_clip(tmp_path / f"c1_{r}.wav", r))} for r in (0, 1)]
    )
    items = build_items(conv, prompts, manifest)
    assert [(i.clip_id, i.modality, i.kind) for i in items] == [
        ("c1_0", "text", "response_quality"),
        ("c1_0", "audio", "response_quality"),
        ("c1_0", "audio", "audio_quality"),
        ("c1_1", "text", "response_quality"),
        ("c1_1", "audio", "response_quality"),
        ("c1_1", "audio", "audio_quality"),
    ]
    assert items[3].response_text == "A1" and items[4].audio_path.endswith("c1_1.wav")
