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

from modprefs.reward.backbones import build_backbone
from modprefs.reward.backbones.qwen import QwenOmniBackbone
from modprefs.reward.examples import Example, Turn
from modprefs.reward.loss import bradley_terry_loss
from modprefs.reward.model import DEFAULT_CRITERIA, RewardModel, load_reward_model
from modprefs.reward.pooling import POOLINGS
from modprefs.reward.synthetic import TINY_THINKER, write_clips

torch.set_num_threads(2)

REAL_MODEL = os.environ.get("MODPREFS_QWEN_MODEL", "Qwen/Qwen2.5-Omni-3B")


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> list[str]:
    manifest = write_clips(tmp_path_factory.mktemp("qwen_clips"), 4, seed=3, seconds=1.0)
    return manifest["path"].tolist()


def _examples(clips: list[str]) -> list[Example]:
    inst = DEFAULT_CRITERIA["modality"]
    ctx = (Turn("user", "How was your weekend?", clips[0]), Turn("assistant", "Quiet, mostly."))
    return [
        Example(inst, ctx, "I went hiking.", clips[1]),
        Example(inst, ctx, "I went hiking.", clips[2]),
        Example(inst, (), "No context, only audio.", clips[3]),
    ]


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
            pytest.skip(
                f"real Qwen2.5-Omni weights ({REAL_MODEL}) are hub-only and the Hugging Face hub is "
                f"unreachable here ({why}); the tiny randomly initialised thinker tests cover the code path"
            )
        if os.environ.get("MODPREFS_REWARD_REAL_WEIGHTS") != "1":
            pytest.skip(
                f"the hub is reachable but {REAL_MODEL} is not cached; set MODPREFS_REWARD_REAL_WEIGHTS=1 "
                "to download it (several GB) and run this test"
            )
    model = RewardModel(
        build_backbone(
            {"name": "qwen2.5-omni", "model_id": REAL_MODEL, "torch_dtype": "bfloat16", "local_files_only": local}
        ),
        "mean",
    )
    scores = model.score(_examples(clips)[:2], batch_size=2)
    assert np.isfinite(scores).all()


# ------------------------------------------------------------------------- the GPU path, on the tiny thinker


def _fidelity(tmp_path: Path, n: int = 4):
    from modprefs.reward.synthetic import fidelity_pairs

    return fidelity_pairs(tmp_path / "clips", n, per_clip=1, seed=0)


def test_updates_below_bf16_resolution_are_not_lost(tmp_path: Path) -> None:
    """A bf16 checkpoint (as Qwen2.5-Omni loads) trains with fp32 master weights: one AdamW step at lr 1e-5 moves
    nearly every LM weight, mostly by less than half a bf16 ulp (an update bf16 weights would round away);
    the same step applied to bf16 weights keeps only a small share of the changes."""
    import copy

    from modprefs.reward.loss import bradley_terry_loss
    from modprefs.reward.model import pair_examples
    from modprefs.reward.train import TrainConfig, train_reward_model

    pairs = _fidelity(tmp_path)
    torch.manual_seed(0)
    base = RewardModel(build_backbone({"name": "qwen2.5-omni", "thinker_config": TINY_THINKER}), "mean")
    torch.nn.init.normal_(base.head.weight, std=0.5)
    base.to(torch.bfloat16)
    start = {n: p.detach().float().clone() for n, p in base.named_parameters()}
    layers = [n for n in start if n.startswith("backbone.model.language_model.layers.")]
    cfg = TrainConfig(
        epochs=1,
        batch_size=8,
        lr=1e-5,
        lr_schedule="constant",
        val_fraction=0.0,
        max_grad_norm=0.0,
        progress=False,
        device="cpu",
    )
    model, metrics = train_reward_model(pairs, None, {}, cfg, model=copy.deepcopy(base))
    after = dict(model.named_parameters())
    assert all(after[n].dtype == torch.float32 for n in layers)
    assert metrics["parameters"]["upcast_to_fp32"] == metrics["parameters"]["total_params"]
    delta = torch.cat([(after[n].detach() - start[n]).ravel() for n in layers])
    w = torch.cat([start[n].ravel() for n in layers])
    ulp = torch.abs(w) * 2.0**-7  # bf16 spacing near w (8 significant bits)
    changed = float((delta != 0).float().mean())
    below = float(((delta != 0) & (delta.abs() < ulp / 2)).float().mean())
    assert changed > 0.95 and below > 0.5, (changed, below)
    # control: AdamW directly on bf16 weights (what training did before) loses most of those updates
    plain = copy.deepcopy(base)
    opt = torch.optim.AdamW(list(plain.parameters()), lr=1e-5)
    ec, er = pair_examples(pairs, plain.criteria)
    r = plain(plain.backbone.collate(plain.featurize(ec + er)))
    bradley_terry_loss(r[: len(ec)], r[len(ec) :], center_coef=0.01)[0].backward()
    opt.step()
    kept = float(
        torch.cat([(dict(plain.named_parameters())[n].detach().float() != start[n]).ravel() for n in layers])
        .float()
        .mean()
    )
    assert kept < 0.5 * changed, (kept, changed)


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory) -> Path:
    from modprefs.reward.synthetic import tiny_thinker_folder

    return tiny_thinker_folder(tmp_path_factory.mktemp("tiny_thinker"), seed=0, dtype="bfloat16")


def test_lora_checkpoint_is_adapter_and_head_and_reloads_identically(tiny_folder: Path, tmp_path: Path) -> None:
    import json

    from safetensors import safe_open

    from modprefs.reward.evaluate import score_pairs
    from modprefs.reward.train import TrainConfig, resolve_lr, train_reward_model

    pairs = _fidelity(tmp_path, 6)
    backbone = {
        "name": "qwen2.5-omni",
        "model_id": str(tiny_folder),
        "revision": None,
        "tokenizer": "bytes",
        "local_files_only": True,
        "lora": {"r": 4, "alpha": 8},
    }
    cfg = TrainConfig(epochs=2, batch_size=4, grad_accum=2, lr=2e-2, progress=False, device="cpu")
    model, metrics = train_reward_model(pairs, tmp_path / "run", {"backbone": backbone, "pooling": "attention"}, cfg)
    assert metrics["gradient_checkpointing"] is True  # on by default for a large backbone
    assert model.backbone.default_lr == 1e-4 and resolve_lr("auto", model.backbone) == 1e-4  # LoRA's lr: auto
    with safe_open(str(tmp_path / "run" / "model.safetensors"), "pt") as fh:
        keys = list(fh.keys())
        lora_b = [fh.get_tensor(k) for k in keys if "lora_B" in k]
    assert keys and all("lora_" in k or k in ("head.weight", "pool.score.weight") for k in keys)
    assert any(t.abs().sum() > 0 for t in lora_b)  # the adapter trained (lora_B starts at zero)
    assert not any("visual" in k for k in keys) and model.backbone.model.visual is None
    saved = json.loads((tmp_path / "run" / "config.json").read_text())["backbone"]
    assert saved["local_files_only"] is True and "revision" in saved and saved["lora"]["r"] == 4
    assert saved["thinker_config"] is None and saved["model_id"] == str(tiny_folder)
    again = load_reward_model(tmp_path / "run")
    a = score_pairs(model, pairs).set_index("pair_id")
    b = score_pairs(again, pairs.iloc[::-1], batch_size=3).set_index("pair_id").loc[a.index]
    assert np.ptp(a["r_chosen"]) > 1e-4
    np.testing.assert_allclose(b["r_chosen"], a["r_chosen"], atol=1e-5)
    np.testing.assert_allclose(b["r_rejected"], a["r_rejected"], atol=1e-5)


def test_full_fine_tune_checkpoint_leaves_out_what_the_hub_gives(tiny_folder: Path, tmp_path: Path) -> None:
    """A hub model with a frozen audio tower: the checkpoint holds the LM, not the audio tower nor the vision tower."""
    from safetensors import safe_open

    model = RewardModel(
        build_backbone(
            {
                "name": "qwen2.5-omni",
                "model_id": str(tiny_folder),
                "tokenizer": "bytes",
                "local_files_only": True,
                "freeze_audio_tower": True,
            }
        ),
        "mean",
    )
    assert model.backbone.default_lr == 1e-5
    model.save(tmp_path / "ckpt")
    with safe_open(str(tmp_path / "ckpt" / "model.safetensors"), "pt") as fh:
        keys = list(fh.keys())
    assert any(k.startswith("backbone.model.language_model.") for k in keys)
    assert not any(k.startswith(("backbone.model.audio_tower.", "backbone.model.visual.")) for k in keys)


def test_missing_weights_and_missing_gpu_say_what_they_need(tmp_path: Path, tiny_folder: Path) -> None:
    from modprefs.errors import UserInputError
    from modprefs.reward.train import TrainConfig, train_reward_model

    with pytest.raises(UserInputError, match=r"needs the weights of .*huggingface-cli download.*local_files_only"):
        build_backbone({"name": "qwen2.5-omni", "model_id": "Qwen/Not-There-0B", "local_files_only": True})
    if not torch.cuda.is_available():
        with pytest.raises(UserInputError, match=r"needs a CUDA GPU.*reward.train.device: cpu"):
            train_reward_model(
                _fidelity(tmp_path),
                None,
                {
                    "backbone": {
                        "name": "qwen2.5-omni",
                        "model_id": str(tiny_folder),
                        "tokenizer": "bytes",
                        "local_files_only": True,
                    }
                },
                TrainConfig(epochs=1, progress=False),
            )
