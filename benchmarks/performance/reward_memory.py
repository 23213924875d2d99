"""Training memory of the qwen2.5-omni reward backbone per setting: measured on tiny thinkers, scaled to 3B / 7B.

No GPU and no hub weights here, so this is an ESTIMATE. What is measured and what is scaled:

* **parameter counts** of Qwen2.5-Omni-3B and -7B (thinker: LM + audio tower; the vision tower and LM head are
  dropped by the backbone) from their architectures instantiated on the ``meta`` device (no weights), and
  the LoRA adapter size for r = 16 on every attention/MLP projection (``DEFAULT_LORA``);
* **bytes per parameter** of weights, gradients and AdamW state, per setting: measured on a tiny thinker after
  :func:`modprefs.reward.precision.prepare_precision` with the CUDA dtype layout (fp32 master weights; a bf16
  frozen base under LoRA), from the tensors that exist after one optimizer step;
* **activations**: the bytes saved for backward (``torch.autograd.graph.saved_tensors_hooks``, parameters and
  their bf16 copies excluded) on tiny thinkers of two LM widths and two audio-tower widths, fitted as
  ``tokens x layers x (a*hidden + b*intermediate)`` (LM) and ``frames x layers x (c*d_model + d*ffn)`` (audio
  tower), with bf16 autocast as on a GPU; then evaluated for the real sizes at one training pair per micro-batch
  (2 sequences, each 512 text tokens + 30 s of audio: 1500 audio-tower frames, 750 LM audio tokens). With
  gradient checkpointing the layers keep only their inputs (``tokens x hidden`` per layer, bf16) plus one
  layer's activations during its recomputation. Attention is assumed to run in a memory-efficient kernel
  (SDPA / FlashAttention: no ``tokens^2`` matrices kept).

Not included: the CUDA context and allocator slack (typically 1-3 GB), the feature cache, and batch sizes
above one pair (activations scale linearly with pairs per micro-batch; use ``grad_accum``).

    .venv/bin/python benchmarks/performance/reward_memory.py

Writes benchmarks/out/reward_memory.json and prints the table (GiB).
"""

from __future__ import annotations

import copy
import json
import platform
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
OUT = ROOT / "benchmarks" / "out" / "reward_memory.json"
GIB = 2**30
TEXT_TOKENS, AUDIO_S = 512, 30.0

SETTINGS = {
    "full fine-tune, fp32 master weights, bf16 autocast": {"lora": None, "gc": False},
    "full fine-tune, fp32 master weights, bf16 autocast, gradient checkpointing": {"lora": None, "gc": True},
    "LoRA r=16 (bf16 frozen base), bf16 autocast": {"lora": {"r": 16}, "gc": False},
    "LoRA r=16 (bf16 frozen base), bf16 autocast, gradient checkpointing": {"lora": {"r": 16}, "gc": True},
}


def real_configs() -> dict[str, dict]:
    """Thinker configs of Qwen2.5-Omni-7B (transformers' defaults) and -3B (its published text config)."""
    return {
        "Qwen2.5-Omni-3B": {
            "text_config": {
                "vocab_size": 151936,
                "hidden_size": 2048,
                "intermediate_size": 11008,
                "num_hidden_layers": 36,
                "num_attention_heads": 16,
                "num_key_value_heads": 2,
            },
            "audio_config": {"output_dim": 2048},
            "vision_config": {"out_hidden_size": 2048},
        },
        "Qwen2.5-Omni-7B": {},
    }


def count_real(cfg: dict, lora_r: int = 16) -> dict:
    from transformers import Qwen2_5OmniThinkerConfig, Qwen2_5OmniThinkerForConditionalGeneration

    from modprefs.reward.backbones.qwen import DEFAULT_LORA

    with torch.device("meta"):
        thinker = Qwen2_5OmniThinkerForConditionalGeneration(Qwen2_5OmniThinkerConfig(**cfg))
    m = thinker.model
    parts = {
        "language_model": m.language_model,
        "audio_tower": m.audio_tower,
        "vision_tower (dropped)": m.visual,
        "lm_head (dropped)": thinker.lm_head,
    }
    counts = {k: sum(p.numel() for p in v.parameters()) for k, v in parts.items()}
    lora = 0
    for module in (m.language_model, m.audio_tower):
        for name, sub in module.named_modules():
            if isinstance(sub, torch.nn.Linear) and name.rsplit(".", 1)[-1] in DEFAULT_LORA["target_modules"]:
                lora += lora_r * (sub.in_features + sub.out_features)
    t, a = thinker.config.text_config, thinker.config.audio_config
    return {
        "params": counts,
        "kept_params": counts["language_model"] + counts["audio_tower"],
        "lora_params": lora,
        "lm": {"hidden": t.hidden_size, "intermediate": t.intermediate_size, "layers": t.num_hidden_layers},
        "audio": {"d_model": a.d_model, "ffn": a.encoder_ffn_dim, "layers": a.encoder_layers},
    }


def tiny_model(lm_h: int, lm_i: int, a_d: int, a_f: int, lora: dict | None):
    from modprefs.reward.backbones import build_backbone
    from modprefs.reward.model import RewardModel
    from modprefs.reward.synthetic import TINY_THINKER

    cfg = copy.deepcopy(TINY_THINKER)
    heads = lm_h // 16  # head_dim 16 as in TINY_THINKER (its mrope sections sum to 8 = head_dim / 2)
    cfg["text_config"].update(
        {
            "hidden_size": lm_h,
            "intermediate_size": lm_i,
            "num_attention_heads": heads,
            "num_key_value_heads": max(1, heads // 2),
        }
    )
    cfg["audio_config"].update(
        {"d_model": a_d, "encoder_ffn_dim": a_f, "output_dim": lm_h, "encoder_attention_heads": max(1, a_d // 16)}
    )
    cfg["vision_config"]["out_hidden_size"] = lm_h
    torch.manual_seed(0)
    model = RewardModel(build_backbone({"name": "qwen2.5-omni", "thinker_config": cfg, "lora": lora}), "mean")
    torch.nn.init.normal_(model.head.weight, std=0.1)
    model.to(torch.bfloat16)  # as a bf16 checkpoint loads
    from modprefs.reward.precision import prepare_precision

    prepare_precision(model, torch.device("cuda"))  # the dtype layout training has on a GPU
    return model


def measure(model, examples, gc: bool) -> dict:
    """Bytes of weights (by dtype), grads, AdamW state and saved activations for one step on ``examples``."""
    from modprefs.reward.loss import bradley_terry_loss

    if gc:
        model.backbone.enable_gradient_checkpointing()
    model.train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    shapes = {tuple(p.shape) for p in model.parameters()}
    saved: dict[int, int] = {}
    weight_copies: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        if st.data_ptr() in params:
            return t
        is_copy = tuple(t.shape) in shapes and t.dtype == torch.bfloat16
        (weight_copies if is_copy else saved)[st.data_ptr()] = st.nbytes()
        return t

    batch = model.backbone.collate(model.featurize(examples))
    n = len(examples) // 2
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            r = model(batch)
        loss, _ = bradley_terry_loss(r[:n].float(), r[n:].float(), center_coef=0.01)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-5)
    loss.backward()
    opt.step()
    weights: dict[str, int] = {}
    for p in model.parameters():
        key = f"{'trainable' if p.requires_grad else 'frozen'}_{str(p.dtype).replace('torch.', '')}"
        weights[key] = weights.get(key, 0) + p.numel() * p.element_size()
    grads = sum(p.grad.numel() * p.grad.element_size() for p in trainable if p.grad is not None)
    state = sum(
        v.numel() * v.element_size()
        for s in opt.state.values()
        for v in s.values()
        if torch.is_tensor(v) and v.dim() > 0
    )
    n_tokens = int(batch["attention_mask"].sum())
    n_frames = int(sum(QwenFrames.tower_frames(int(m)) for m in batch["feature_attention_mask"].sum(1)))
    return {
        "weights": weights,
        "grads": grads,
        "optimizer": state,
        "activations": sum(saved.values()),
        "weight_copies": sum(weight_copies.values()),
        "n_trainable": sum(p.numel() for p in trainable),
        "tokens": n_tokens,
        "audio_tower_frames": n_frames,
    }


class QwenFrames:
    @staticmethod
    def tower_frames(mel_frames: int) -> int:
        """Audio-tower sequence positions of ``mel_frames`` mel frames (after its stride-2 conv)."""
        return (mel_frames - 1) // 2 + 1


def main() -> None:
    from modprefs.reward.examples import Example
    from modprefs.reward.model import DEFAULT_CRITERIA
    from modprefs.reward.synthetic import write_clips

    torch.set_num_threads(2)
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="reward_mem_"))
    clips = write_clips(tmp, 2, seed=0, seconds=4.0)["path"].tolist()
    inst = DEFAULT_CRITERIA["quality"]
    text = "A reply of moderate length that the reward model reads as text before it hears the audio. " * 3
    examples = [Example(inst, (), text, clips[0]), Example(inst, (), text[::-1], clips[1])]
    real = {name: count_real(cfg) for name, cfg in real_configs().items()}

    # per-setting bytes per parameter and activation fits on tiny thinkers
    widths = [(64, 128, 32, 64), (64, 512, 32, 64), (128, 256, 32, 64), (64, 128, 64, 256)]
    results = {}
    for setting, s in SETTINGS.items():
        runs = [dict(measure(tiny_model(*w, s["lora"]), examples, s["gc"]), widths=w) for w in widths]
        base = runs[0]
        total_params = sum(p // 1 for p in base["weights"].values())
        # activations: LM part (tokens x layers x (a h + b i)) and audio part (frames x layers x (c d + e f))
        layers = 2
        rows, ys = [], []
        for r in runs:
            h, i, d, f = r["widths"]
            rows.append(
                [
                    r["tokens"] * layers * h,
                    r["tokens"] * layers * i,
                    r["audio_tower_frames"] * 1 * d,
                    r["audio_tower_frames"] * 1 * f,
                ]
            )
            ys.append(r["activations"])
        coef, *_ = np.linalg.lstsq(np.array(rows, dtype=float), np.array(ys, dtype=float), rcond=None)
        coef = np.clip(coef, 0, None)
        results[setting] = {
            "tiny": runs,
            "activation_coefficients_bytes": coef.tolist(),
            "weight_bytes_per_param": {k: v / max(1, total_params) for k, v in base["weights"].items()},
        }

    seq_tokens = TEXT_TOKENS + int(AUDIO_S * 25) + 2  # 25 LM audio tokens per second
    seq_frames = int(AUDIO_S * 50)  # 50 audio-tower frames per second (100 mel frames / 2)
    table = []
    for model_name, rc in real.items():
        n_kept, n_lora = rc["kept_params"], rc["lora_params"]
        lm, au = rc["lm"], rc["audio"]
        for setting, s in SETTINGS.items():
            lora = s["lora"] is not None
            trainable = n_lora if lora else n_kept
            weights = (n_kept * 2 + n_lora * 4) if lora else n_kept * 4
            copies = 0 if lora else n_kept * 2  # bf16 weight copies autocast keeps during the step
            grads, optim = trainable * 4, trainable * 8
            a, b, c, d = results[setting]["activation_coefficients_bytes"]
            per_seq_lm = seq_tokens * lm["layers"] * (a * lm["hidden"] + b * lm["intermediate"])
            per_seq_audio = seq_frames * au["layers"] * (c * au["d_model"] + d * au["ffn"])
            if s["gc"]:  # measured non-checkpointed parts + analytic layer inputs + one layer recomputed
                full = results[setting.replace(", gradient checkpointing", "")]["activation_coefficients_bytes"]
                one_layer = seq_tokens * (full[0] * lm["hidden"] + full[1] * lm["intermediate"])
                inputs = seq_tokens * lm["hidden"] * lm["layers"] * 2 + seq_frames * au["d_model"] * au["layers"] * 2
                per_seq = per_seq_lm + per_seq_audio + inputs + one_layer
            else:
                per_seq = per_seq_lm + per_seq_audio
            acts = 2 * per_seq  # one pair = two sequences
            total = weights + copies + grads + optim + acts
            table.append(
                {
                    "model": model_name,
                    "setting": setting,
                    "trainable_params": trainable,
                    "weights_gib": round(weights / GIB, 1),
                    "autocast_copies_gib": round(copies / GIB, 1),
                    "grads_gib": round(grads / GIB, 1),
                    "adamw_gib": round(optim / GIB, 1),
                    "activations_gib": round(acts / GIB, 1),
                    "total_gib": round(total / GIB, 1),
                }
            )
    out = {
        "what": "ESTIMATED GPU memory to train a Qwen2.5-Omni reward model (modprefs qwen2.5-omni backbone): "
        "bytes per parameter measured on tiny randomly initialised thinkers with the CUDA dtype layout, "
        "activations fitted on tiny thinkers and scaled (see the script's docstring); no GPU was used",
        "workload": {
            "pairs_per_micro_batch": 1,
            "text_tokens_per_side": TEXT_TOKENS,
            "audio_s_per_side": AUDIO_S,
            "lm_tokens_per_side": seq_tokens,
            "audio_tower_frames_per_side": seq_frames,
        },
        "excluded": "CUDA context and allocator slack (1-3 GB), larger micro-batches (activations x pairs)",
        "real_models": real,
        "table": table,
        "tiny_measurements": {k: {kk: vv for kk, vv in v.items()} for k, v in results.items()},
        "machine": {"python": platform.python_version(), "torch": torch.__version__, "platform": platform.platform()},
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2) + "\n")
    print(f"{'model':16} {'setting':78} {'total GiB':>9}")
    for row in table:
        print(f"{row['model']:16} {row['setting']:78} {row['total_gib']:9.1f}")


if __name__ == "__main__":
    main()
