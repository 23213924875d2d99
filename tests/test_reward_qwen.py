"""The qwen2.5-omni backbone: a tiny randomly initialised thinker (built from a config here) runs
forward and backward on an interleaved audio+text batch with every pooling, and saves/reloads to
identical scores. Real weights are hub-only: that test skips, saying why, when the hub is unreachable.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from modprefs.reward.synthetic import TINY_THINKER, write_clips
from modprefs.reward.backbones import QwenOmniBackbone, build_backbone
from modprefs.reward.examples import Example, Turn
from modprefs.reward.loss import bradley_terry_loss
from modprefs.reward.model import DEFAULT_CRITERIA, RewardModel, load_reward_model
from modprefs.reward.pooling import POOLINGS

torch.set_num_threads(2)

REAL_MODEL = os.environ.get("MODPREFS_QWEN_MODEL", "Qwen/Qwen2.5-Omni-3B")


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> list[str]:
    manifest = write_clips(tmp_path_factory.mktemp("qwen_clips"), 4, seed=3, seconds=1.0)
    return manifest["path"].tolist()


def _examples(clips: list[str]) -> list[Example]:
    inst = DEFAULT_CRITERIA["modality"]
    ctx = (Turn("user", "How was your weekend?", clips[0]), Turn("assistant", "Quiet, mostly."))
    return [Example(inst, ctx, "I went hiking.", clips[1]),
            Example(inst, ctx, "I went hiking.", clips[2]),
            Example(inst, (), "No context, only audio.", clips[3])]


def _model(pooling: str) -> RewardModel:
    torch.manual_seed(0)
    model = RewardModel(build_backbone({"name": "qwen2.5-omni", "thinker_config": TINY_THINKER}), pooling)
    torch.nn.init.normal_(model.head.weight, std=0.5)  # the head starts at 0; gradients need it non-zero
    return model


def test_featurize_interleaves_audio_placeholders(clips: list[str]) -> None:
    model = _model("mean")
    bb: QwenOmniBackbone = model.backbone
    feats = bb.featurize(_examples(clips))
    ids = feats[0]["ids"]
    assert len(feats[0]["mels"]) == 2  # context audio + candidate audio, in order
    starts = [i for i, t in enumerate(ids) if t == bb.audio_start_id]
    assert len(starts) == 2
    n_tokens = sum(1 for t in ids if t == bb.audio_token_id)
    assert n_tokens == sum(bb.n_audio_tokens(m.shape[1]) for m in feats[0]["mels"])
    assert ids.index(bb.audio_start_id) > 10  # text before the first audio (system prompt + user text)


@pytest.mark.parametrize("pooling", POOLINGS)
def test_tiny_thinker_forward_backward(clips: list[str], pooling: str) -> None:
    model = _model(pooling)
    model.train()
    ex = _examples(clips)
    batch = model.backbone.collate(model.featurize([ex[0], ex[2], ex[1], ex[2]]))
    assert batch["input_features"].shape[0] == 6  # 2 + 1 + 2 + 1 audios across the batch
    rewards = model(batch)
    assert rewards.shape == (4,) and torch.isfinite(rewards).all()
    loss, _ = bradley_terry_loss(rewards[:2], rewards[2:], center_coef=0.01)
    loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    assert "head.weight" in grads
    assert any(n.startswith("backbone.model.audio_tower.") and g.abs().sum() > 0 for n, g in grads.items())
    assert any(n.startswith("backbone.model.language_model.") and g.abs().sum() > 0 for n, g in grads.items())
    if pooling == "attention":
        assert grads["pool.score.weight"].abs().sum() > 0


def test_tiny_thinker_padding_does_not_change_scores(clips: list[str]) -> None:
    model = _model("mean").eval()
    ex = _examples(clips)
    alone = model.score([ex[2]])
    together = model.score([ex[0], ex[2]])  # ex[2] padded to ex[0]'s length
    assert alone[0] == pytest.approx(together[1], abs=1e-4)


def test_tiny_thinker_gradient_checkpointing(clips: list[str]) -> None:
    model = _model("mean")
    model.backbone.enable_gradient_checkpointing()
    model.train()
    r = model(model.backbone.collate(model.featurize(_examples(clips)[:2])))
    bradley_terry_loss(r[:1], r[1:])[0].backward()
    assert model.head.weight.grad is not None


@pytest.mark.parametrize("pooling", POOLINGS)
def test_tiny_thinker_save_load_identical(clips: list[str], pooling: str, tmp_path: Path) -> None:
    model = _model(pooling).eval()
    if pooling == "attention":
        torch.nn.init.normal_(model.pool.score.weight)
    ex = _examples(clips)
    before = model.score(ex)
    model.save(tmp_path / "ckpt", center_coef=0.01)
    again = load_reward_model(tmp_path / "ckpt")
    np.testing.assert_allclose(again.score(ex), before, atol=1e-6)
    assert again.extra_config["center_coef"] == 0.01


def _hub_reachable() -> str | None:
    """None if the hub answers, else the reason."""
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return "HF_HUB_OFFLINE=1"
    try:
        from huggingface_hub import HfApi
        HfApi().model_info(REAL_MODEL, timeout=5)
        return None
    except Exception as exc:  # no network, DNS failure, proxy refusal, ...
        return f"{type(exc).__name__}: {str(exc)[:120]}"


def _cached_locally() -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
        return isinstance(try_to_load_from_cache(REAL_MODEL, "config.json"), str)
    except Exception:
        return False


def test_real_qwen_weights_load(clips: list[str]) -> None:
    local = _cached_locally()
    if not local:
        why = _hub_reachable()
        if why is not None:
            pytest.skip(f"real Qwen2.5-Omni weights ({REAL_MODEL}) are hub-only and the Hugging Face hub is "
                        f"unreachable here ({why}); the tiny randomly initialised thinker tests cover the code path")
        if os.environ.get("MODPREFS_REWARD_REAL_WEIGHTS") != "1":
            pytest.skip(f"the hub is reachable but {REAL_MODEL} is not cached; set MODPREFS_REWARD_REAL_WEIGHTS=1 "
                        "to download it (several GB) and run this test")
    model = RewardModel(build_backbone({"name": "qwen2.5-omni", "model_id": REAL_MODEL, "torch_dtype": "bfloat16",
                                        "local_files_only": local}), "mean")
    scores = model.score(_examples(clips)[:2], batch_size=2)
    assert np.isfinite(scores).all()
