"""API judges fail fast at workflow start: missing key, unreachable base_url or unknown model stop
`snakemake` before any job is scheduled (the fault server here only answers GET /models)."""

from __future__ import annotations

import socket

from fault_server import FaultServer
from workflow_runner import planned_jobs, run_workflow, write_config

KEY_ENV = "MODPREFS_TEST_STARTUP_KEY"


def _dry_run(tmp_path, monkeypatch, key: str | None, **judges):
    if key is None:
        monkeypatch.delenv(KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(KEY_ENV, key)
    cfg = write_config(tmp_path / "wd", {"judges": {"backend": "openai", "api_key_env": KEY_ENV,
                                                    "preflight_timeout_s": 2.0, **judges}})
    return run_workflow(tmp_path / "wd", "-n", configfile=cfg, timeout=300)


def _assert_stopped(proc, message: str) -> None:
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-2000:]
    assert planned_jobs(proc) == {}


def test_missing_api_key_stops_before_scheduling(tmp_path, monkeypatch):
    _assert_stopped(_dry_run(tmp_path, monkeypatch, None), f"{KEY_ENV!r}, but it is not set")


def test_unreachable_base_url_stops_before_scheduling(tmp_path, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = _dry_run(tmp_path, monkeypatch, "k", base_url=f"http://127.0.0.1:{port}/v1")
    _assert_stopped(proc, "is unreachable")


def test_unknown_model_stops_before_scheduling(tmp_path, monkeypatch):
    with FaultServer(api_key="k") as srv:
        proc = _dry_run(tmp_path, monkeypatch, "k", base_url=srv.url, models={"text": "gpt-4o-nope"})
        _assert_stopped(proc, "unknown model(s) ['gpt-4o-nope']")
        assert srv.chat_log() == []


def test_reachable_endpoint_with_known_models_plans_the_run(tmp_path, monkeypatch):
    with FaultServer(api_key="k") as srv:
        proc = _dry_run(tmp_path, monkeypatch, "k", base_url=srv.url)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "judge_modality" in planned_jobs(proc)
