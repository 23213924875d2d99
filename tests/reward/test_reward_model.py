"""Checkpoints (save -> load -> identical scores for every pooling), the run folder, and evaluation
(accuracy with ties, macro, OOD by TTS engine, drift, length bias, cross-modal transfer)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
import torch

from modprefs.reward.backbones import build_backbone, known_backbones
from modprefs.reward.evaluate import (
    accuracy_table,
    drift_table,
    evaluate_run,
    length_bias,
    read_eval,
    summary_tables,
    transfer_table,
    write_summary_files,
)
from modprefs.reward.examples import Example, Turn
from modprefs.reward.model import DEFAULT_CRITERIA, RewardModel, load_reward_model
from modprefs.reward.pooling import POOLINGS
from modprefs.reward.synthetic import SR, fidelity_pairs, speechlike
from modprefs.reward.train import TrainConfig, metrics_message, run_message, train_reward_model

torch.set_num_threads(2)
BACKBONE = {"name": "minilm-logmel", "dim": 32, "max_audio_s": 2.0, "mixer_layers": 1}


@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> pd.DataFrame:
    p = fidelity_pairs(tmp_path_factory.mktemp("model_clips"), 12, per_clip=2, seed=5)
    p["split"] = ["train" if int(g[1:]) < 8 else "val" for g in p["group"]]
    return p


def test_registry_names() -> None:
    assert {"minilm-logmel", "qwen2.5-omni", "features"} <= set(known_backbones())
    with pytest.raises(ValueError, match="unknown reward backbone 'nope'"):
        build_backbone({"name": "nope"})


@pytest.mark.parametrize("pooling", POOLINGS)
def test_save_load_identical_scores_default_backbone(pairs: pd.DataFrame, pooling: str, tmp_path: Path) -> None:
    torch.manual_seed(1)
    model = RewardModel(build_backbone(BACKBONE), pooling)
    for p in model.parameters():  # any non-trivial weights (the head starts at 0)
        if p.requires_grad:
            torch.nn.init.normal_(p, std=0.2)
    ctx = (Turn("user", "Which way to the station?", pairs.loc[0, "chosen_audio"]),)
    examples = [
        Example(DEFAULT_CRITERIA["quality"], ctx, "Left, then straight on.", pairs.loc[1, "chosen_audio"]),
        Example(
            DEFAULT_CRITERIA["fidelity"],
            (),
            pairs.loc[2, "chosen_text"],
            pairs.loc[2, "rejected_audio"],
            pairs.loc[2, "rejected_transform"],
        ),
        Example(DEFAULT_CRITERIA["modality"], (), "text only"),
    ]
    before = model.score(examples)
    model.save(tmp_path / "ckpt", center_coef=0.01, training_data_sha256="abc")
    cfg = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert cfg["backbone"]["name"] == "minilm-logmel" and cfg["pooling"] == pooling
    assert set(cfg["criteria"]) == set(DEFAULT_CRITERIA) and cfg["center_coef"] == 0.01
    from safetensors import safe_open

    with safe_open(str(tmp_path / "ckpt" / "model.safetensors"), "pt") as fh:
        keys = list(fh.keys())
    assert "head.weight" in keys and not any(k.startswith("backbone.text_encoder.") for k in keys)
    again = load_reward_model(tmp_path / "ckpt")
    np.testing.assert_allclose(again.score(examples), before, atol=1e-6)
    assert np.ptp(before) > 1e-3


@pytest.mark.parametrize("pooling", POOLINGS)
def test_save_load_identical_scores_features_backbone(pooling: str, tmp_path: Path) -> None:
    torch.manual_seed(2)
    model = RewardModel(build_backbone({"name": "features", "dim": 4, "project": 3}), pooling)
    torch.nn.init.normal_(model.head.weight)
    examples = [Example(features=np.random.default_rng(i).normal(size=(i + 1, 4))) for i in range(4)]
    before = model.score(examples)
    model.save(tmp_path / "ckpt")
    np.testing.assert_allclose(load_reward_model(tmp_path / "ckpt").score(examples), before, atol=1e-6)


def test_accuracy_table_counts_ties_separately() -> None:
    scores = pd.DataFrame(
        {
            "pair_id": list("abcdef"),
            "category": ["x", "x", "x", "y", "y", "y"],
            "source": ["s"] * 6,
            "criterion": ["q"] * 6,
            "split": ["val"] * 6,
            "r_chosen": [1.0, 2.0, 0.5, 1.0, 0.0, 3.0],
            "r_rejected": [0.0, 3.0, 0.5, 0.0, 1.0, 3.0],
        }
    )
    acc = accuracy_table(scores).set_index(["level", "key"])
    assert acc.loc[("micro", "all"), ["correct", "wrong", "ties"]].tolist() == [2, 2, 2]
    assert acc.loc[("micro", "all"), "accuracy"] == 0.5
    assert acc.loc[("category", "x"), "accuracy"] == 0.5 and acc.loc[("category", "x"), "ties"] == 1
    assert acc.loc[("category", "x"), "accuracy_ties_half"] == pytest.approx(0.5)
    assert acc.loc[("macro", "category"), "accuracy"] == 0.5


def test_length_bias_and_transfer_tables() -> None:
    n = 40
    rng = np.random.default_rng(0)
    cc, rc = rng.integers(50, 500, n), rng.integers(50, 500, n)
    scores = pd.DataFrame(
        {
            "pair_id": range(n),
            "source": "human",
            "category": ["human_text", "human_audio"] * (n // 2),
            "split": "val",
            "chosen_chars": cc,
            "rejected_chars": rc,
            "r_chosen": cc / 100.0,
            "r_rejected": rc / 100.0,
        }
    )  # a pure length scorer
    lb = length_bias(scores).set_index("source")
    assert lb.loc["all", "pearson_r"] == pytest.approx(1.0)
    assert lb.loc["all", "accuracy_longer_rejected"] == 0.0 and lb.loc["all", "accuracy_longer_chosen"] == 1.0
    t = transfer_table({"text_labels": (["human_text"], scores), "audio_labels": (["human_audio"], scores)})
    assert t["trained_on"].tolist() == ["human_text", "human_audio"]
    assert t.loc[0, "human_text_n"] == n // 2 and np.isnan(t.loc[0, "judge_text_accuracy"])
    # n per cell, and a caveat naming the cells under 20 pairs
    assert "judge_text (0)" in t.loc[0, "caveat"] and "human_text (" not in t.loc[0, "caveat"]
    small = transfer_table({"r": (None, scores.iloc[:10])})
    assert "human_text (5)" in small.loc[0, "caveat"] and "indicative only" in small.loc[0, "caveat"]
    d = drift_table(scores.assign(r_chosen=scores["r_chosen"] + 10, r_rejected=scores["r_rejected"] + 10), 0.0)
    assert (
        d.loc[0, "mean_reward"] > 10
        and abs(d.loc[0, "mean_chosen_centered"] + d.loc[0, "mean_rejected_centered"]) < 1e-9
    )


def test_train_run_folder_and_evaluation_with_ood_engines(pairs: pd.DataFrame, tmp_path: Path) -> None:
    run = tmp_path / "run"
    cfg = TrainConfig(epochs=6, batch_size=8, lr=3e-3, center_coef=0.01, progress=False, seed=0)
    model, metrics = train_reward_model(
        pairs, run, {"backbone": BACKBONE, "pooling": "mean"}, cfg, cache_dir=tmp_path / "cache"
    )
    saved = json.loads((run / "metrics.json").read_text())
    for key in ("train", "val", "all", "history", "timing", "training_data_sha256", "center_coef"):
        assert key in saved
    assert saved["val"]["accuracy"] >= 0.9 and abs(saved["all"]["mean_reward"]) < 1.0
    assert {"accuracy", "mean_reward"} <= {k.split("_", 1)[1] for k in saved["history"][0] if "_" in k}
    conf = json.loads((run / "config.json").read_text())
    assert conf["training_data_sha256"] == saved["training_data_sha256"] and conf["center_coef"] == 0.01
    # other engines: piper renders identical audio here (OOD = same), espeak-ng is missing one clip
    engines = tmp_path / "engines"
    for backend in ("piper", "espeak-ng"):
        (engines / backend).mkdir(parents=True)
    for i, r in enumerate(pairs.drop_duplicates("chosen_clip_id").itertuples()):
        x, _ = sf.read(r.chosen_audio)
        sf.write(engines / "piper" / f"{r.chosen_clip_id}.wav", x, SR)
        if i:
            sf.write(engines / "espeak-ng" / f"{r.chosen_clip_id}.wav", speechlike(100 + i, 1.0), SR)
    out = evaluate_run(
        run, pairs, engines, ["piper", "espeak-ng"], out_dir=tmp_path / "eval", cache_dir=tmp_path / "cache"
    )
    ood = out["ood"]
    micro = ood[(ood["level"] == "micro") & (ood["split"] == "all")].set_index("engine")
    assert list(micro.index) == ["study", "piper", "espeak-ng"]
    assert micro.loc["piper", "accuracy"] == micro.loc["study", "accuracy"]
    assert micro.loc["espeak-ng", "n"] == len(pairs) - 2  # the clip without a rendition (2 pairs) is left out
    assert micro.loc["study", "n"] == 24 and micro.loc["study", "caveat"] == ""
    val = ood[(ood["split"] == "val") & (ood["level"] == "micro")]
    assert (val["n"] < 20).all() and val["caveat"].str.contains("indicative only").all()
    assert all((n >= 20) == (c == "") for n, c in zip(ood["n"], ood["caveat"]))
    assert out["summary"]["val_micro"] >= 0.9
    again = read_eval(tmp_path / "eval")
    for name in ("accuracy", "ood", "drift", "length_bias", "scores"):
        assert (tmp_path / "eval" / f"{name}.csv").is_file()
    tables = summary_tables({"main": again}, {"skipped": {"modality": "no human-speech corpus configured"}})
    assert tables["runs"].loc[0, "run"] == "main" and "mean_reward" in tables["drift"]
    types = tables["pair_types"].set_index("pair_type")
    assert set(types.index) == {"noise", "clipping", "lowpass", "modality"}
    assert types.loc["noise", "label"].startswith("clean vs degraded") and types.loc["noise", "all_n"] > 0
    assert types.loc["modality", "caveat"] == "no human-speech corpus configured"
    (tmp_path / "pairs_summary.json").write_text(json.dumps({"skipped": {"modality": "none"}}))
    write_summary_files(["main"], [tmp_path / "eval" / "eval.json"], tmp_path / "pairs_summary.json", tmp_path / "sum")
    assert (
        pd.read_csv(tmp_path / "sum" / "runs.csv").loc[0, "run"] == "main" and (tmp_path / "sum" / "runs.md").is_file()
    )
    # the evaluation reproduces the run's own scores
    own = pd.read_csv(run / "scores.csv")
    np.testing.assert_allclose(again["scores"]["r_chosen"], own["r_chosen"], atol=1e-5)


def test_run_log_lines():
    pairs = pd.DataFrame({"category": ["noise", "noise", "modality"]})
    train = TrainConfig()
    assert run_message("r1", pairs, "m", train) == (
        f"run r1: 3 pairs ({{'noise': 2, 'modality': 1}}), model m, train {train}"
    )
    metrics = {"train": {"accuracy": 0.91234}, "val": {"accuracy": 0.66666}, "timing": {"total_s": 12.34}}
    assert metrics_message("r1", metrics) == "run r1: train acc 0.912, val 0.667, 12.3 s"
    assert metrics_message("r1", {**metrics, "val": None}) == "run r1: train acc 0.912, val None, 12.3 s"
