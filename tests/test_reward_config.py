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
    cfg = reward_config({"reward": {"train": {"epochs": 3}, "pairs": {"min_gap": {"audio": 20}},
                                    "criteria": {"quality": "Be picky."},
                                    "runs": {"big": {"model": {"backbone": {"name": "qwen2.5-omni",
                                                                            "model_id": "Qwen/Qwen2.5-Omni-7B"}},
                                                     "lr": 1e-5}}}})
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
