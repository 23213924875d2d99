"""The reward: config section: defaults without a section, deep merge, per-run settings, GPU resource."""

from __future__ import annotations

import pytest

from modprefs.reward.config import DEFAULTS, judge_ratings_path, needs_gpu, reward_config, run_settings
from modprefs.reward.model import DEFAULT_CRITERIA
from modprefs.reward.train import TrainConfig


def test_defaults_without_a_section() -> None:
    cfg = reward_config({})
    assert cfg == DEFAULTS
    model, train = run_settings(cfg, "main", seed=7)
    assert model["backbone"]["name"] == "minilm-logmel" and model["pooling"] == "mean"
    assert model["criteria"] == DEFAULT_CRITERIA
    assert train["center_coef"] == 0.01 and train["seed"] == 7
    TrainConfig.from_dict(train)  # every default train key is a TrainConfig field
    assert run_settings(cfg, "no_centering", 0)[1]["center_coef"] == 0.0
    assert run_settings(cfg, "text_labels", 0)[1]["train_on"] == ["human_text"]


def test_merge_runs_and_errors() -> None:
    cfg = reward_config(
        {
            "reward": {
                "train": {"epochs": 3},
                "pairs": {"min_gap": {"audio": 20}},
                "criteria": {"quality": "Be picky."},
                "runs": {
                    "big": {
                        "model": {"backbone": {"name": "qwen2.5-omni", "model_id": "Qwen/Qwen2.5-Omni-7B"}},
                        "lr": 1e-5,
                    }
                },
            }
        }
    )
    assert cfg["pairs"]["min_gap"] == {"text": 0.0, "audio": 20}
    assert list(cfg["runs"]) == ["big"]
    model, train = run_settings(cfg, "big", 0)
    assert model["backbone"] == {"name": "qwen2.5-omni", "model_id": "Qwen/Qwen2.5-Omni-7B"}
    assert train["epochs"] == 3 and train["lr"] == 1e-5 and model["criteria"]["quality"] == "Be picky."
    assert needs_gpu(cfg, "big") == 1 and needs_gpu(reward_config({}), "main") == 0
    with pytest.raises(ValueError, match="no run 'nope'"):
        run_settings(cfg, "nope", 0)
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['bogus'\]"):
        reward_config({"reward": {"bogus": 1}})
    with pytest.raises(ValueError, match=r"reward.train: unknown key\(s\) \[.epoch.\]"):
        TrainConfig.from_dict({"epoch": 3})


def test_judge_table_only_when_configured() -> None:
    assert judge_ratings_path({}) is None
    assert judge_ratings_path({"judges": {"enabled": True}}) == "results/judges/ratings.csv"
    assert judge_ratings_path({"reward": {"pairs": {"judge_ratings": "x.csv"}}}) == "x.csv"
    assert judge_ratings_path({"judges": {}, "reward": {"pairs": {"sources": ["human"]}}}) is None


# ---------------------------------------------------------------- the documented section and its schema

import copy  # noqa: E402
import dataclasses  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import yaml  # noqa: E402

from modprefs.config_checks import ConfigError, validate_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"


def _config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def test_config_yaml_documents_every_default() -> None:
    cfg = _config()
    assert "reward" in cfg and reward_config(cfg) == DEFAULTS
    validate_config(cfg, SCHEMA)
    schema = yaml.safe_load(SCHEMA.read_text())["properties"]["reward"]
    train_keys = set(schema["properties"]["train"]["properties"])
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    assert fields == train_keys, fields ^ train_keys
    doc = (ROOT / "docs/reward.md").read_text()
    missing = [f for f in fields if f"`{f}`" not in doc]
    assert not missing, missing
    backbone_keys = set(schema["$defs"]["backbone"]["properties"]) - {"name", "project", "dim", "thinker_config"}
    assert not [k for k in backbone_keys if f"`{k}`" not in doc]


@pytest.mark.parametrize(
    "path,value,expected",
    [
        ("pairs.degradaton", {"kinds": ["noise"]}, "reward.pairs.degradaton: unknown key"),
        ("pairs.colloquial.rewritter", "llm", "reward.pairs.colloquial.rewritter: unknown key"),
        ("pairs.colloquial.rewriter", "gpt", "reward.pairs.colloquial.rewriter"),
        ("pairs.corpus.voice", [], "reward.pairs.corpus.voice: unknown key"),
        ("train.epoch", 3, "reward.train.epoch: unknown key"),
        ("train.lr", "fast", "reward.train.lr"),
        ("runs.main", {"epoch": 3}, "reward.runs.main.epoch: unknown key"),
        (
            "runs.big",
            {"model": {"backbone": {"name": "qwen2.5-omni", "lora": {"rank": 8}}}},
            "reward.runs.big.model.backbone.lora.rank: unknown key",
        ),
        ("model.backbone.nme", "x", "reward.model.backbone.nme: unknown key"),
        ("model.pooling", "max", "reward.model.pooling"),
        ("colour", 1, "reward.colour: unknown key"),
    ],
)
def test_unknown_or_bad_nested_keys_are_named(path: str, value, expected: str) -> None:
    cfg = _config()
    node = cfg["reward"]
    *parents, last = path.split(".")
    for p in parents:
        node = node[p]
    node[last] = value
    with pytest.raises(ConfigError) as info:
        validate_config(cfg, SCHEMA)
    assert expected in str(info.value)


def test_valid_gpu_settings_pass_the_schema() -> None:
    cfg = _config()
    cfg["reward"]["runs"]["omni"] = {
        "model": {
            "backbone": {
                "name": "qwen2.5-omni",
                "model_id": "Qwen/Qwen2.5-Omni-3B",
                "revision": "abc123",
                "local_files_only": True,
                "lora": {"r": 16, "alpha": 32},
            }
        },
        "lr": "auto",
        "batch_size": 1,
        "grad_accum": 16,
        "device": "cuda",
    }
    cfg["reward"]["pairs"]["colloquial"] = None
    validate_config(copy.deepcopy(cfg), SCHEMA)
    model, train = run_settings(reward_config(cfg), "omni", 0)
    assert model["backbone"]["lora"] == {"r": 16, "alpha": 32} and train["grad_accum"] == 16


@pytest.mark.integration
def test_a_nested_typo_stops_snakemake_before_any_job(tmp_path: Path) -> None:
    from support.bad_inputs import assert_clean_failure

    cfg = _config()
    cfg["reward"]["pairs"]["degradaton"] = {"kinds": ["noise"]}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    result = assert_clean_failure(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--cores",
            "1",
            "--configfile",
            str(path),
            "--directory",
            str(tmp_path),
        ],
        cwd=ROOT,
        watch=[tmp_path / "results"],
        must_mention=["reward.pairs.degradaton"],
        timeout=300,
    )
    assert "Job stats" not in result.output
