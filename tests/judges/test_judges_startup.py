"""API judges fail fast at workflow start: a missing key, an unreachable base_url or an unknown model stop a
real `snakemake` run at onstart, before any job runs; `snakemake -n` does not check (no network for a plan);
`modprefs check-judges` checks on demand. (The fault server here only answers GET /models.)"""

from __future__ import annotations

import socket

import pytest

from modprefs.cli import main as modprefs_main
from support.fault_server import FaultServer
from support.workflow_runner import planned_jobs, run_workflow, write_config

pytestmark = pytest.mark.integration  # runs snakemake, a server or a browser: not in `make test-fast`

KEY_ENV = "MODPREFS_TEST_STARTUP_KEY"
CHEAP_TARGET = "results/data/conversations.parquet"  # one short job: the check must stop the run before it


def _config(tmp_path, monkeypatch, key: str | None, **judges):
    if key is None:
        monkeypatch.delenv(KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(KEY_ENV, key)
    return write_config(
        tmp_path / "wd", {"judges": {"backend": "openai", "api_key_env": KEY_ENV, "preflight_timeout_s": 2.0, **judges}}
    )


def _run(tmp_path, monkeypatch, key: str | None, **judges):
    cfg = _config(tmp_path, monkeypatch, key, **judges)
    return run_workflow(tmp_path / "wd", CHEAP_TARGET, configfile=cfg, timeout=300)


def _assert_stopped(proc, workdir, message: str) -> None:
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-2000:]
    assert "Finished jobid" not in proc.stdout + proc.stderr and not (workdir / CHEAP_TARGET).exists()
    assert "Traceback" not in proc.stdout + proc.stderr


def test_missing_api_key_stops_before_scheduling(tmp_path, monkeypatch):
    _assert_stopped(_run(tmp_path, monkeypatch, None), tmp_path / "wd", f"{KEY_ENV!r}, but it is not set")


def test_unreachable_base_url_stops_before_scheduling(tmp_path, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = _run(tmp_path, monkeypatch, "k", base_url=f"http://127.0.0.1:{port}/v1")
    _assert_stopped(proc, tmp_path / "wd", "is unreachable")


def test_unknown_model_stops_before_scheduling(tmp_path, monkeypatch):
    with FaultServer(api_key="k") as srv:
        proc = _run(tmp_path, monkeypatch, "k", base_url=srv.url, models={"text": "gpt-4o-nope"})
        _assert_stopped(proc, tmp_path / "wd", "unknown model(s) ['gpt-4o-nope']")
        assert srv.chat_log() == []


def test_reachable_endpoint_with_known_models_runs(tmp_path, monkeypatch):
    with FaultServer(api_key="k") as srv:
        proc = _run(tmp_path, monkeypatch, "k", base_url=srv.url)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert (tmp_path / "wd" / CHEAP_TARGET).is_file()


def test_dry_run_plans_without_the_network_check(tmp_path, monkeypatch):
    cfg = _config(tmp_path, monkeypatch, None)  # no key: a real run would stop
    proc = run_workflow(tmp_path / "wd", "-n", configfile=cfg, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "judge_modality" in planned_jobs(proc)


def test_check_judges_command(tmp_path, monkeypatch, capsys):
    cfg = _config(tmp_path, monkeypatch, None)
    assert modprefs_main(["check-judges", "--configfile", str(cfg)]) == 2
    assert f"{KEY_ENV!r}, but it is not set" in capsys.readouterr().err
    with FaultServer(api_key="k") as srv:
        cfg = _config(tmp_path, monkeypatch, "k", base_url=srv.url, models={"audio": "gpt-4o-nope"})
        assert modprefs_main(["check-judges", "--configfile", str(cfg)]) == 2
        assert "unknown model(s) ['gpt-4o-nope']" in capsys.readouterr().err
        cfg = _config(tmp_path, monkeypatch, "k", base_url=srv.url)
        assert modprefs_main(["check-judges", "--configfile", str(cfg)]) == 0
        assert "key, endpoint and models ok" in capsys.readouterr().out
    assert modprefs_main(["check-judges"]) == 0  # config.yaml alone: the offline judges
    assert "offline" in capsys.readouterr().out
