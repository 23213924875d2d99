"""Scores do not depend on the batch: a pair side scores the same alone, in any batch, in any order (<= 1e-5),
for every backbone and pooling; frozen text features do not depend on what they were encoded with; and a run's
checkpoint, reloaded in a fresh process with a cold feature cache, reproduces the run's eval/scores.csv.

Examples mix audio of very different lengths (0.3-2.3 s: heavy padding in the conv stack), contexts of 0-3 turns
(with and without context audio) and text-only sides, so padding reaches every masked path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
import torch

from modprefs.reward.backbones import build_backbone
from modprefs.reward.evaluate import evaluate_run, score_pairs
from modprefs.reward.examples import Example, FeatureCache, Turn
from modprefs.reward.model import DEFAULT_CRITERIA, RewardModel
from modprefs.reward.pooling import POOLINGS
from modprefs.reward.synthetic import SR, TINY_THINKER, fidelity_pairs, speechlike
from modprefs.reward.train import TrainConfig, train_reward_model

torch.set_num_threads(2)
ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-5
BACKBONES = {
    "minilm-logmel": {"name": "minilm-logmel", "dim": 32},
    "minilm-logmel-none-mixer": {"name": "minilm-logmel", "dim": 32, "condition": "none", "mixer_layers": 1},
    "qwen2.5-omni-tiny": {"name": "qwen2.5-omni", "thinker_config": TINY_THINKER},
    "features": {"name": "features", "dim": 6, "project": 5},
}


@pytest.fixture(scope="module")
def examples(tmp_path_factory) -> list[Example]:
    d = tmp_path_factory.mktemp("inv_clips")
    paths = []
    for i, seconds in enumerate([0.3, 0.7, 1.1, 2.3, 0.5, 1.9]):
        paths.append(str(d / f"v{i}.wav"))
        sf.write(paths[-1], speechlike(i, seconds), SR)
    c = DEFAULT_CRITERIA
    rng = np.random.default_rng(0)
    feats = [rng.normal(size=(n, 6)) for n in (1, 3, 7, 2, 5, 4)]
    noise = json.dumps({"kind": "noise", "seed": 1, "snr_db": 10.0})
    raw = [
        (c["quality"], (Turn("user", "Where is the station?"),), "Left, then right.", paths[0], None),
        (c["fidelity"], (), "Hello there, how are you today, my friend?", paths[3], noise),
        (
            c["modality"],
            (Turn("user", "How was your weekend?", paths[1]), Turn("assistant", "Quiet.")),
            "I went hiking.",
            paths[2],
            None,
        ),
        (c["quality"], (), "text only", None, None),
        (c["colloquialness"], (Turn("user", "Tell me about " + "rivers " * 20),), "So, um, yeah.", paths[5], None),
        (
            c["quality"],
            (
                Turn("user", "Tell me a joke."),
                Turn("model", "Why did the chicken cross the road?"),
                Turn("user", "Why?"),
            ),
            "To get to the other side, obviously.",
            paths[4],
            None,
        ),
    ]
    return [Example(i, ctx, t, a, tr, f) for (i, ctx, t, a, tr), f in zip(raw, feats)]


def _model(backbone: str, pooling: str) -> RewardModel:
    torch.manual_seed(0)
    model = RewardModel(build_backbone(BACKBONES[backbone]), pooling)
    for name, p in model.named_parameters():  # non-trivial weights everywhere that trains (the head starts at 0)
        if p.requires_grad and not name.startswith("backbone.model."):
            torch.nn.init.normal_(p, std=0.2)
    return model.eval()


@pytest.mark.parametrize("pooling", POOLINGS)
@pytest.mark.parametrize("backbone", list(BACKBONES))
def test_score_is_the_same_alone_in_any_batch_and_order(examples: list[Example], backbone: str, pooling: str) -> None:
    model = _model(backbone, pooling)
    alone = np.array([model.score([ex])[0] for ex in examples])
    assert np.ptp(alone) > 1e-2, alone  # the scores differ: the comparison below is not between constants
    together = model.score(examples, batch_size=16)
    reversed_ = model.score(examples[::-1], batch_size=4)[::-1]
    perm = np.random.default_rng(1).permutation(len(examples))
    shuffled = np.empty(len(examples), dtype=np.float32)
    shuffled[perm] = model.score([examples[i] for i in perm], batch_size=3)
    for name, got in (
        ("one batch", together),
        ("reversed, batches of 4", reversed_),
        ("shuffled, batches of 3", shuffled),
    ):
        assert np.max(np.abs(got - alone)) <= TOL, (name, got - alone)


def test_padding_would_leak_without_the_conv_mask(examples: list[Example]) -> None:
    """The check above can fail: the same conv stack without its per-layer length mask lets padding into the
    shorter clips' last frames, and their scores move well beyond the tolerance."""
    model = _model("minilm-logmel", "mean")
    alone = np.array([model.score([ex])[0] for ex in examples])
    bb = model.backbone

    def unmasked(audio, lengths):  # the same stack and frame pooling, without the per-layer length mask
        x = audio
        for conv in bb.audio_conv:
            x = torch.nn.functional.gelu(conv(x))
        x = x.transpose(1, 2)
        pad = (-x.shape[1]) % bb.frame_pool
        x = torch.nn.functional.pad(x, (0, 0, 0, pad))
        return x.view(x.shape[0], -1, bb.frame_pool, x.shape[2]).mean(2)

    bb._conv = unmasked
    together = model.score(examples, batch_size=16)
    assert np.max(np.abs(together - alone)) > 10 * TOL


def test_text_features_do_not_depend_on_what_else_is_encoded() -> None:
    bb = build_backbone({"name": "minilm-logmel", "dim": 16})
    text = "How do I get to the station from here?"
    others = ["Hi.", "A much longer sentence that pads everything else in a batch by quite a few tokens indeed."]
    bb.cache = FeatureCache()
    alone = bb._encode_texts([text])[text]
    bb.cache = FeatureCache()
    mixed = bb._encode_texts(others + [text])[text]
    np.testing.assert_array_equal(alone, mixed)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    d = tmp_path_factory.mktemp("inv_run")
    pairs = fidelity_pairs(d / "clips", 10, per_clip=2, seed=4)
    pairs["context"] = [[{"role": "user", "text": f"Say sentence {i % 4}.", "audio": None}] for i in range(len(pairs))]
    cfg = TrainConfig(epochs=3, batch_size=6, progress=False, seed=0)
    train_reward_model(pairs, d / "run", {"backbone": {"name": "minilm-logmel", "dim": 32}}, cfg, cache_dir=d / "cache")
    evaluate_run(d / "run", pairs, out_dir=d / "run" / "eval", cache_dir=d / "cache", batch_size=5)
    pairs.to_parquet(d / "pairs.parquet")
    return d, pairs


def test_training_scores_equal_evaluation_scores(run_dir: tuple[Path, pd.DataFrame]) -> None:
    d, _ = run_dir
    own = pd.read_csv(d / "run" / "scores.csv").set_index("pair_id")
    ev = pd.read_csv(d / "run" / "eval" / "scores.csv").set_index("pair_id").loc[own.index]
    assert np.ptp(own["r_chosen"]) > 1e-3
    for col in ("r_chosen", "r_rejected"):
        assert np.max(np.abs(own[col] - ev[col])) <= TOL, col


@pytest.mark.slow  # over 10 s on 2 cores: not in `make test-fast`
def test_reloaded_checkpoint_reproduces_eval_scores_in_a_fresh_process(run_dir: tuple[Path, pd.DataFrame]) -> None:
    """A new process, a cold feature cache, the pairs in reverse order and another batch size."""
    d, _ = run_dir
    code = (
        "import sys, pandas as pd, torch; torch.set_num_threads(1)\n"
        "from modprefs.reward.model import load_reward_model\n"
        "from modprefs.reward.evaluate import score_pairs\n"
        "pairs = pd.read_parquet(sys.argv[2]).iloc[::-1]\n"
        "score_pairs(load_reward_model(sys.argv[1]), pairs, batch_size=7).to_csv(sys.argv[3], index=False)\n"
    )
    out = d / "rescored.csv"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(d / "run"), str(d / "pairs.parquet"), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "OPENBLAS_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = pd.read_csv(out).set_index("pair_id")
    ev = pd.read_csv(d / "run" / "eval" / "scores.csv").set_index("pair_id").loc[again.index]
    for col in ("r_chosen", "r_rejected"):
        assert np.max(np.abs(again[col] - ev[col])) <= TOL, col


def test_score_pairs_does_not_depend_on_the_order_of_the_pair_files(run_dir: tuple[Path, pd.DataFrame]) -> None:
    from modprefs.reward.model import load_reward_model

    d, pairs = run_dir
    model = load_reward_model(d / "run")
    a = score_pairs(model, pairs).set_index("pair_id")
    half = len(pairs) // 2
    b = score_pairs(model, pd.concat([pairs.iloc[half:], pairs.iloc[:half]]), batch_size=3).set_index("pair_id")
    b = b.loc[a.index]
    assert np.max(np.abs(a["r_chosen"] - b["r_chosen"])) <= TOL
    assert np.max(np.abs(a["r_rejected"] - b["r_rejected"])) <= TOL
