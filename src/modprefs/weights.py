"""The hub downloads a config's jobs make, staged once where the network is (``modprefs fetch-weights``).

On a cluster the jobs run on compute nodes that often have no internet, and each would otherwise download into its
own ``$HOME`` cache. :func:`hub_items` lists what the config's jobs ask the Hugging Face hub for:

- ``data.source: prism``: the PRISM dataset (``data.hf_dataset``, config ``data.hf_config``) through ``datasets``;
- ``tts.backend: kokoro`` (the study voice and any ``tts.engines`` entry): ``config.json``, the weights and
  ``voices/<voice>.pt`` of ``tts.repo_id``, except the files given as local paths;
- a ``qwen2.5-omni`` reward run: a snapshot of ``model_id`` at ``revision`` (unless ``model_id`` is a local folder).

:func:`stage` downloads them into the hub cache at ``$HF_HOME`` (a folder the compute nodes see); the jobs then find
them there, with ``HF_HUB_OFFLINE=1`` on offline nodes. The SLURM run stages at its start on the submitting host
(rules/common.smk, ``onstart``), before any job; ``modprefs fetch-weights --configfile F`` does it by hand
(docs/cluster.md, "Weights").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the kokoro backend's defaults (modprefs.speech.kokoro_torch; repeated here so listing needs no torch)
KOKORO_REPO_ID = "hexgrad/Kokoro-82M"
KOKORO_MODEL_FILE = "kokoro-v1_0.pth"


@dataclass(frozen=True)
class HubItem:
    """One download: a file of a model repo, a whole model snapshot, or a dataset (config, split)."""

    kind: str  # "file", "snapshot" or "dataset"
    repo: str
    filename: str | None = None
    revision: str | None = None
    dataset_config: str | None = None
    split: str | None = None
    why: str = ""

    def describe(self) -> str:
        what = {"file": f"{self.repo}/{self.filename}", "snapshot": f"{self.repo} (all files)"}.get(
            self.kind, f"dataset {self.repo} ({self.dataset_config}, {self.split})"
        )
        return f"{what}{f' @ {self.revision}' if self.revision else ''}  [{self.why}]"


def _kokoro_files(tts: Mapping[str, Any], key: str) -> list[HubItem]:
    repo = str(tts.get("repo_id") or KOKORO_REPO_ID)
    wanted = [
        ("config_path", "config.json"),
        ("model_path", KOKORO_MODEL_FILE),
        ("voice_path", f"voices/{tts.get('voice')}.pt"),
    ]
    return [HubItem("file", repo, name, why=f"{key} (backend kokoro)") for local, name in wanted if not tts.get(local)]


def _reward_snapshots(config: Mapping[str, Any]) -> list[HubItem]:
    from modprefs.reward.config import reward_config, run_settings

    rcfg = reward_config(config)
    items = []
    for run in rcfg["runs"]:
        backbone = run_settings(rcfg, run, int(config.get("seed", 0)))[0]["backbone"]
        model_id = backbone.get("model_id")
        if backbone.get("name") != "qwen2.5-omni" or not model_id or Path(str(model_id)).is_dir():
            continue
        items.append(
            HubItem("snapshot", str(model_id), revision=backbone.get("revision"), why=f"reward.runs.{run} (qwen)")
        )
    return items


def hub_items(config: Mapping[str, Any]) -> list[HubItem]:
    """What the config's jobs download from the hub (module docstring), each once."""
    items: list[HubItem] = []
    data = config.get("data") or {}
    if data.get("source") == "prism":
        items.append(
            HubItem(
                "dataset",
                str(data.get("hf_dataset", "HannahRoseKirk/prism-alignment")),
                dataset_config=str(data.get("hf_config", "conversations")),
                split=str(data.get("hf_split", "train")),
                why="data.source prism",
            )
        )
    tts = config.get("tts") or {}
    if tts.get("backend") == "kokoro":
        items += _kokoro_files(tts, "tts")
    for i, engine in enumerate(tts.get("engines") or []):
        if engine.get("backend") == "kokoro":
            items += _kokoro_files(engine, f"tts.engines[{i}]")
    items += _reward_snapshots(config)
    unique: dict[tuple, HubItem] = {}
    for item in items:
        unique.setdefault((item.kind, item.repo, item.filename, item.revision, item.dataset_config), item)
    return list(unique.values())


def _fetch(item: HubItem) -> str:
    if item.kind == "dataset":
        import datasets

        datasets.load_dataset(item.repo, item.dataset_config, split=item.split)
        return str(datasets.config.HF_DATASETS_CACHE)
    import huggingface_hub

    if item.kind == "snapshot":
        return str(huggingface_hub.snapshot_download(item.repo, revision=item.revision))
    return str(huggingface_hub.hf_hub_download(item.repo, str(item.filename), revision=item.revision))


def cache_location() -> str:
    """Where the downloads go: ``$HF_HOME`` (say so when it is unset: other hosts see it only via a shared $HOME)."""
    if os.environ.get("HF_HOME"):
        return str(os.environ["HF_HOME"])
    return "~/.cache/huggingface (HF_HOME is not set: compute nodes see it only if $HOME is shared)"


def stage(items: Iterable[HubItem], log: Callable[[str], object] = print) -> list[tuple[HubItem, str]]:
    """Download every item into the hub cache (:func:`cache_location`); returns (item, local path). Raises
    RuntimeError on the first failure, naming the item and what needs it."""
    done = []
    log(f"fetch-weights: staging into {cache_location()}")
    for item in items:
        try:
            path = _fetch(item)
        except Exception as exc:  # network, auth, a gated repo, a missing file: all stop the run the same way
            raise RuntimeError(
                f"could not download {item.describe()}: {type(exc).__name__}: {exc}. Run where the hub is reachable "
                "(`huggingface-cli login` for gated repos), or give the config local files instead"
            ) from exc
        log(f"  {item.describe()} -> {path}")
        done.append((item, path))
    return done


def merged_config(files: Iterable[Path], base: Path | None = None) -> dict[str, Any]:
    """The workflow's config.yaml overlaid by each file, nested mappings merged (as Snakemake merges --configfile)."""
    from snakemake.utils import update_config

    from modprefs.config_files import load_config_file

    config: dict[str, Any] = {}
    for path in [base or Path(__file__).resolve().parents[2] / "config.yaml", *files]:
        update_config(config, load_config_file(path))
    return config


def fetch_weights(files: list[Path], dry_run: bool = False, log: Callable[[str], object] = print) -> int:
    """``modprefs fetch-weights``: list (``--dry-run``) or download what the config's jobs need; 0 on success, 2
    with the problem printed otherwise."""
    import sys

    try:
        items = hub_items(merged_config(files))
        if not items:
            log("fetch-weights: nothing to download (local files and offline backends only)")
            return 0
        if dry_run:
            log(f"fetch-weights: would download into {cache_location()}:")
            for item in items:
                log(f"  {item.describe()}")
            return 0
        stage(items, log)
    except Exception as exc:
        print(f"modprefs fetch-weights: error: {exc}", file=sys.stderr)
        return 2
    return 0


def stage_in_subprocess(items: list[HubItem], python: str) -> int:
    """Stage ``items`` in a fresh Python process with the hub reachable (``HF_HUB_OFFLINE``/``HF_DATASETS_OFFLINE``
    set to 0 for it alone: a cluster that runs its jobs offline exports them); returns its exit status."""
    import json
    import subprocess

    src = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0"}
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    payload = json.dumps([item.__dict__ for item in items])
    return subprocess.call([python, "-m", "modprefs.weights", payload], env=env)


if __name__ == "__main__":
    import json
    import sys

    try:
        stage([HubItem(**d) for d in json.loads(sys.argv[1])])
    except RuntimeError as err:
        print(f"modprefs fetch-weights: error: {err}", file=sys.stderr)
        sys.exit(2)
