"""Weights staged before any cluster job (modprefs.weights, ``modprefs fetch-weights``; docs/cluster.md, "Weights").

The doc's commands are run as the doc shows them (tests/support/doc_blocks.py). Downloading is shown offline: a hub
cache filled beforehand (as one earlier download would leave it) is what ``fetch-weights`` resolves against with
``HF_HUB_OFFLINE=1``; an empty cache is an error naming the file and the config key that needs it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from modprefs.weights import KOKORO_MODEL_FILE, KOKORO_REPO_ID, hub_items, merged_config
from support.doc_blocks import fenced_blocks, section
from support.workflow_runner import ROOT

MODPREFS = ROOT / ".venv" / "bin" / "modprefs"
KOKORO_FILES = ["config.json", KOKORO_MODEL_FILE, "voices/af_heart.pt"]


def _local_data(tmp_path: Path) -> Path:
    """A config file over config/paper.yaml: PRISM from a local file, so only Kokoro is left to download."""
    path = tmp_path / "local_data.yaml"
    path.write_text(f"data:\n  source: {ROOT / 'resources' / 'sample' / 'conversations.jsonl'}\n")
    return path


def _fill_cache(hf_home: Path) -> Path:
    """Kokoro's three files in a hub cache as a download leaves them (refs/main -> snapshots/<commit>/...)."""
    repo = hf_home / "hub" / f"models--{KOKORO_REPO_ID.replace('/', '--')}"
    commit = "0" * 40
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    for name in KOKORO_FILES:
        f = repo / "snapshots" / commit / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"staged")
    return repo / "snapshots" / commit


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(MODPREFS), *args], capture_output=True, text=True, cwd=ROOT, env={**os.environ, **env}, timeout=120
    )


def test_paper_config_lists_prism_and_kokoro():
    items = hub_items(merged_config([ROOT / "config" / "paper.yaml"]))
    assert [(i.kind, i.repo, i.filename) for i in items] == [
        ("dataset", "HannahRoseKirk/prism-alignment", None),
        *[("file", KOKORO_REPO_ID, name) for name in KOKORO_FILES],
    ]
    assert hub_items(merged_config([])) == []  # the default run: kokoro-onnx from its own files, sample data


@pytest.mark.integration
def test_the_docs_weights_commands_run_as_shown(tmp_path):
    (block,) = fenced_blocks(section(ROOT / "docs" / "cluster.md", "Weights"), "bash")
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "would download into /project/my_lab/hf_cache:" in proc.stdout
    for name in KOKORO_FILES:
        assert f"{KOKORO_REPO_ID}/{name}  [tts (backend kokoro)]" in proc.stdout
    assert "dataset HannahRoseKirk/prism-alignment (conversations, train)  [data.source prism]" in proc.stdout
    assert not Path("/project/my_lab/hf_cache").exists()  # a dry run downloads nothing


@pytest.mark.integration
def test_fetch_weights_stages_into_hf_home(tmp_path):
    snapshot = _fill_cache(tmp_path / "hf")
    env = {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    proc = _run(["fetch-weights", "--configfile", "config/paper.yaml", str(_local_data(tmp_path))], env)
    assert proc.returncode == 0, proc.stderr
    for name in KOKORO_FILES:
        assert f"-> {snapshot / name}" in proc.stdout, proc.stdout


@pytest.mark.integration
def test_fetch_weights_names_what_it_could_not_download(tmp_path):
    env = {"HF_HOME": str(tmp_path / "empty"), "HF_HUB_OFFLINE": "1"}
    proc = _run(["fetch-weights", "--configfile", "config/paper.yaml", str(_local_data(tmp_path))], env)
    assert proc.returncode == 2
    assert f"could not download {KOKORO_REPO_ID}/config.json  [tts (backend kokoro)]" in proc.stderr, proc.stderr
