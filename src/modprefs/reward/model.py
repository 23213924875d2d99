"""The reward model: backbone → pooling → linear head without bias, conditioned on a criterion.

``r(C, y, inst) = w · pool(backbone(inst ⊕ C ⊕ y))``: the criterion's instruction is the first text
segment of the sequence (SDiaReward's criterion-specific system prompt), so one backbone scores
several criteria. The head has no bias: a bias cancels in every pairwise difference and would
only let the reward scale drift.

Checkpoint (a folder): ``model.safetensors`` (every parameter except the backbone's
``frozen_prefixes``, which come back from an installed package or from the hub model named in the
config: MiniLM for the default backbone, the whole base of a Qwen2.5-Omni LoRA run, so such a
checkpoint is the adapter, the pooling and the head) and ``config.json`` (format, backbone config
with model id, revision and ``local_files_only``, pooling, criteria and their instructions,
training settings such as the centering λ, the learning rate used and the training data hash).
:func:`load_reward_model` rebuilds the same scorer from the folder. Format 2 (this one) masks the
audio conv stack and conditions the default backbone on criterion and context; format-1 folders
need retraining.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from modprefs.reward.backbones import build_backbone
from modprefs.reward.examples import Example, FeatureCache, Turn
from modprefs.reward.pooling import make_pooling
from modprefs.reward.precision import prepare_precision

CHECKPOINT_FORMAT = "modprefs.reward/2"
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"

#: criterion -> instruction (the text prefix). Overridable from config (reward.criteria).
DEFAULT_CRITERIA = {
    "quality": "Criterion: overall quality. Rate how helpful, accurate and appropriate the final spoken "
    "reply is as the next turn of this conversation.",
    "quality_text": "Criterion: overall quality as a reader judges it. Rate how helpful, accurate and appropriate "
    "the final reply is as the next turn of this conversation, read as text.",
    "quality_audio": "Criterion: overall quality as a listener judges it. Rate how helpful, accurate and "
    "appropriate the final spoken reply is as the next turn of this conversation, heard as speech.",
    "quality_judge": "Criterion: overall quality as an AI judge rates it. Rate how helpful, accurate and "
    "appropriate an automatic judge finds the final reply as the next turn of this conversation.",
    "quality_text_judge": "Criterion: overall quality as an AI judge reading the transcript rates it. Rate how "
    "helpful, accurate and appropriate an automatic judge finds the final reply, read as text.",
    "quality_audio_judge": "Criterion: overall quality as an AI judge listening to the audio rates it. Rate how "
    "helpful, accurate and appropriate an automatic judge finds the final spoken reply, heard as speech.",
    "modality": "Criterion: modality. Rate how natural the final turn sounds as human speech in this "
    "conversation: prosody, emotion and channel, not only the words.",
    "colloquialness": "Criterion: colloquialness. Rate how natural the final turn is as spoken conversation "
    "rather than written text: brevity, fragments, discourse markers.",
    "fidelity": "Criterion: audio fidelity. Rate the acoustic quality of the final spoken turn: clean, "
    "undistorted, full-band speech.",
}


class RewardModel(nn.Module):
    # backbone: an nn.Module from reward.backbones (or a test double); they share no base class, so it is typed
    # Any: hidden_size, featurize, collate, config and forward are duck-typed.
    def __init__(self, backbone: Any, pooling: str = "mean", criteria: dict[str, str] | None = None):
        super().__init__()
        self.backbone = backbone
        self.pooling_name = pooling
        self.pool = make_pooling(pooling, self.backbone.hidden_size)
        self.head = nn.Linear(self.backbone.hidden_size, 1, bias=False)
        nn.init.zeros_(self.head.weight)  # r ≡ 0 at the start: no arbitrary initial preference
        self.criteria = dict(criteria or DEFAULT_CRITERIA)
        self.extra_config: dict[str, Any] = {}

    # -- inputs
    def instruction(self, criterion: str) -> str:
        if criterion not in self.criteria:
            raise KeyError(f"unknown criterion {criterion!r}; this model knows {sorted(self.criteria)}")
        return self.criteria[criterion]

    def featurize(self, examples: Sequence[Example]) -> list[Any]:
        return self.backbone.featurize(examples)

    # -- scoring
    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        hidden, mask = self.backbone(batch)
        pooled = self.pool(hidden, mask).to(self.head.weight.device)
        return self.head(pooled.to(self.head.weight.dtype)).squeeze(-1).float()

    @torch.no_grad()
    def score_features(self, feats: Sequence[Any], batch_size: int = 16) -> np.ndarray:
        was_training = self.training
        self.eval()
        out = [
            self(self.backbone.collate(feats[i : i + batch_size])).cpu().numpy()
            for i in range(0, len(feats), batch_size)
        ]
        self.train(was_training)
        return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)

    def score(self, examples: Sequence[Example], batch_size: int = 16) -> np.ndarray:
        """Rewards of ``examples`` (float32 array)."""
        return self.score_features(self.featurize(examples), batch_size)

    # -- checkpoint
    def config(self) -> dict[str, Any]:
        return {
            "format": CHECKPOINT_FORMAT,
            "backbone": self.backbone.config(),
            "pooling": self.pooling_name,
            "criteria": self.criteria,
            "hidden_size": self.backbone.hidden_size,
            **self.extra_config,
        }

    def save(self, directory: str | os.PathLike[str], **extra: Any) -> Path:
        """Write ``model.safetensors`` + ``config.json`` (with ``extra`` keys) atomically into ``directory``."""
        from safetensors.torch import save_file

        from modprefs.io import atomic_path, write_json

        directory = Path(directory)
        self.extra_config.update(extra)
        frozen = tuple(f"backbone.{p}" for p in getattr(self.backbone, "frozen_prefixes", ()))
        state = {k: v.detach().to("cpu").contiguous() for k, v in self.state_dict().items() if not k.startswith(frozen)}
        with atomic_path(directory / WEIGHTS_FILE) as tmp:
            save_file(state, str(tmp), metadata={"format": CHECKPOINT_FORMAT})
        write_json(self.config(), directory / CONFIG_FILE)
        return directory


def load_reward_model(
    directory: str | os.PathLike[str], device: str | torch.device = "cpu", cache: FeatureCache | None = None
) -> RewardModel:
    """Rebuild the scorer saved by :meth:`RewardModel.save` (the backbone from its config, then weights)."""
    from safetensors.torch import load_file

    directory = Path(directory)
    cfg_path = directory / CONFIG_FILE
    if not cfg_path.is_file():
        raise FileNotFoundError(f"reward checkpoint: {cfg_path} not found")
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    if cfg.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(
            f"{cfg_path}: format {cfg.get('format')!r}, expected {CHECKPOINT_FORMAT!r} "
            "(a checkpoint of an older modprefs: train it again)"
        )
    backbone_cfg = dict(cfg["backbone"])
    if backbone_cfg.get("name") == "qwen2.5-omni" and backbone_cfg.get("thinker_config") is not None:
        backbone_cfg["model_id"] = None  # rebuilt from the saved config, weights below
    model = RewardModel(build_backbone(backbone_cfg, cache=cache), cfg["pooling"], cfg["criteria"])
    model.extra_config = {
        k: v for k, v in cfg.items() if k not in ("format", "backbone", "pooling", "criteria", "hidden_size")
    }
    prepare_precision(model, torch.device(device))  # the dtypes training had: the saved fp32 weights stay fp32
    state = load_file(str(directory / WEIGHTS_FILE))
    missing, unexpected = model.load_state_dict(state, strict=False)
    frozen = tuple(f"backbone.{p}" for p in getattr(model.backbone, "frozen_prefixes", ()))
    missing = [k for k in missing if not k.startswith(frozen)]
    if missing or unexpected:
        raise ValueError(
            f"{directory / WEIGHTS_FILE} does not match its config: missing {missing[:5]}, unexpected {unexpected[:5]}"
        )
    model.eval()
    return model.to(device)


# ------------------------------------------------------------------------------------ pair tables


def _context(value: Any) -> tuple[Turn, ...]:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ()
    turns = []
    for t in list(value):
        audio = t.get("audio") if isinstance(t, dict) else None
        turns.append(Turn(str(t.get("role", "user")), str(t.get("text", "") or ""), str(audio) if audio else None))
    return tuple(turns)


def _opt(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value == "":
        return None
    return str(value)


def pair_examples(
    pairs: pd.DataFrame, criteria: dict[str, str], features: tuple[Sequence[Any], Sequence[Any]] | None = None
) -> tuple[list[Example], list[Example]]:
    """(chosen, rejected) examples of a pair table (:data:`modprefs.reward.pairs.PAIR_COLUMNS`)."""
    chosen, rejected = [], []
    for i, row in enumerate(pairs.itertuples(index=False)):
        crit = str(row.criterion)
        if crit not in criteria:
            raise KeyError(f"pair {row.pair_id}: criterion {crit!r} has no instruction; known {sorted(criteria)}")
        ctx = _context(getattr(row, "context", None))
        fc = features[0][i] if features else None
        fr = features[1][i] if features else None
        chosen.append(
            Example(
                criteria[crit],
                ctx,
                str(row.chosen_text or ""),
                _opt(row.chosen_audio),
                _opt(getattr(row, "chosen_transform", None)),
                fc,
            )
        )
        rejected.append(
            Example(
                criteria[crit],
                ctx,
                str(row.rejected_text or ""),
                _opt(row.rejected_audio),
                _opt(getattr(row, "rejected_transform", None)),
                fr,
            )
        )
    return chosen, rejected
