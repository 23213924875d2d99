"""``qwen2.5-omni``: the Qwen2.5-Omni thinker over an interleaved chat of text and audio, optionally with LoRA
(the package docstring of :mod:`modprefs.reward.backbones` describes it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from modprefs.reward.audio import SAMPLE_RATE, load_audio
from modprefs.reward.backbones import RewardSetupError, audio_key
from modprefs.reward.examples import Example, FeatureCache, content_key

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

    Arguments (all saved in the checkpoint config):

    - ``model_id``: hub id or local folder of real weights (``Qwen/Qwen2.5-Omni-3B``, ``-7B``);
    - ``revision``: the hub revision (branch, tag or commit) loaded; record a commit for reproducibility;
    - ``local_files_only``: never touch the network (weights must be in the Hugging Face cache / folder);
    - ``thinker_config``: instead of ``model_id``, a randomly initialised thinker of this config (tests);
    - ``torch_dtype``: dtype the weights load in (``auto`` = the checkpoint's, bf16 for Qwen2.5-Omni).
      Training keeps every *trainable* parameter in fp32 (master weights, see
      :func:`modprefs.reward.precision.prepare_precision`); frozen weights stay in this dtype on a GPU;
    - ``lora``: ``None`` (full fine-tune) or LoRA settings through ``peft`` (``r``, ``alpha``, ``dropout``,
      ``target_modules``; :data:`DEFAULT_LORA` fills what is left out): the base stays frozen and a
      checkpoint holds only the adapter, the pooling and the head;
    - ``freeze_audio_tower``: full fine-tune of the language model only;
    - ``tokenizer``: ``None`` (the model's, from ``model_id``) or ``bytes`` (a hub-free byte tokenizer, for
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
        key = audio_key(path, transform, self.max_audio_s, f"whisper{self.feature_extractor.feature_size}")
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
