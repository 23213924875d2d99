"""The API judge's configuration (:class:`JudgeConfig`, from a ``judges.*`` mapping) and its items
(:func:`build_items`, from the stage tables), without the ``openai`` client: the run is :mod:`modprefs.judges.client`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from modprefs.judges.prompts import DEFAULT_PROMPTS, DEFAULT_REASK
from modprefs.judges.types import MODALITIES, JudgeItem, JudgeSetupError

#: USD per 1M tokens (OpenAI list prices when this was written; override with ``judges.prices``).
#: ``audio_input`` prices the audio part of the prompt (``prompt_tokens_details.audio_tokens``).
DEFAULT_PRICES = {
    "gpt-4o": {"input": 2.50, "output": 10.00},
    "gpt-4o-audio-preview": {"input": 2.50, "audio_input": 40.00, "output": 10.00},
}


@dataclass
class JudgeConfig:
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str = "OPENAI_API_KEY"
    models: dict = field(default_factory=lambda: {"text": "gpt-4o", "audio": "gpt-4o-audio-preview"})
    samples_per_item: int = 10
    #: extra chat-completions parameters (temperature, top_p, seed, ...); empty = API defaults (paper)
    params: dict = field(default_factory=dict)
    #: send ``response_format`` (json_schema) per modality; a bool applies to both
    response_format: Any = field(default_factory=lambda: {"text": True, "audio": False})
    max_concurrency: int = 8
    rpm: float | None = 500
    tpm: float | None = 30_000
    burst_s: float = 10.0  # limiter bucket size, in seconds of the per-minute allowance
    timeout_s: float = 60.0
    max_retries: int = 6
    max_reasks: int = 2
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    preflight: bool = True
    preflight_timeout_s: float = 10.0
    #: "<modality>/<kind>" -> prompt file stem (or path); defaults in prompts.DEFAULT_PROMPTS
    prompts: dict = field(default_factory=dict)
    reask_prompt: str = DEFAULT_REASK
    prompts_dir: str | None = None
    prices: dict = field(default_factory=lambda: json.loads(json.dumps(DEFAULT_PRICES)))
    retry_transport_failures: bool = True
    send_request_hash_header: bool = True
    progress: bool = True
    backend: str = "openai"
    judge: str | None = None  # label for the table's `judge` column; default "<backend>:<model>"
    seed: int | None = None  # seeds the backoff jitter only

    @classmethod
    def from_dict(cls, d: dict | None) -> JudgeConfig:
        """Build from a ``judges.*`` mapping. Keys this backend does not use are ignored (other judge
        backends share the block); ``model`` is accepted as an alias of ``models``."""
        d = dict(d or {})
        if "model" in d and "models" not in d:
            d["models"] = d.pop("model")
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in d.items() if k in names}
        cfg = cls(**kwargs)
        if isinstance(d.get("models"), dict):
            cfg.models = {**cls().models, **d["models"]}
        if isinstance(d.get("prices"), dict):
            cfg.prices = {**json.loads(json.dumps(DEFAULT_PRICES)), **d["prices"]}
        cfg.validate()
        return cfg

    def validate(self) -> None:
        problems = []
        if int(self.samples_per_item) < 1:
            problems.append("samples_per_item must be >= 1")
        if int(self.max_concurrency) < 1:
            problems.append("max_concurrency must be >= 1")
        if int(self.max_retries) < 0 or int(self.max_reasks) < 0:
            problems.append("max_retries and max_reasks must be >= 0")
        if float(self.timeout_s) <= 0:
            problems.append("timeout_s must be > 0")
        if not self.api_key_env or not str(self.api_key_env).replace("_", "").isalnum():
            problems.append(f"api_key_env must name an environment variable, got {self.api_key_env!r}")
        for m in MODALITIES:
            if not self.models.get(m):
                problems.append(f"models.{m} is missing")
        if problems:
            raise JudgeSetupError("invalid judges config: " + "; ".join(problems))

    def use_response_format(self, modality: str) -> bool:
        if isinstance(self.response_format, dict):
            return bool(self.response_format.get(modality, False))
        return bool(self.response_format)

    def prompt_name(self, modality: str, kind: str) -> str:
        return self.prompts.get(f"{modality}/{kind}") or DEFAULT_PROMPTS[(modality, kind)]

    def judge_label(self, model: str) -> str:
        return self.judge or f"{self.backend}:{model}"


def build_items(conversations, prompts, manifest=None, modalities=MODALITIES) -> list[JudgeItem]:
    """Items for the study prompts from the stage tables (docs/CONTRACTS.md): ``conversations``
    (results/data/conversations.parquet), ``prompts`` (results/sampling/prompts.csv) and, for audio,
    ``manifest`` (results/audio/manifest.csv). Text: response_quality; audio: response_quality and
    audio_quality; responses 0 and 1 of every prompt, in prompts.csv order."""
    conv = conversations.set_index("conversation_id")
    paths = {} if manifest is None else dict(zip(manifest["clip_id"], manifest["path"]))
    items = []
    for _, p in prompts.iterrows():
        row = conv.loc[p["conversation_id"]]
        history = [dict(t) for t in (row["history"] if row["history"] is not None else [])]
        for r in (0, 1):
            clip_id = f"{p['prompt_id']}_{r}"
            if "text" in modalities:
                items.append(
                    JudgeItem(
                        p["prompt_id"],
                        clip_id,
                        "text",
                        "response_quality",
                        history,
                        row["prompt"],
                        response_text=row[f"text_{r}"],
                    )
                )
            if "audio" in modalities:
                if clip_id not in paths:
                    raise KeyError(f"clip {clip_id} missing from the audio manifest")
                for kind in ("response_quality", "audio_quality"):
                    items.append(
                        JudgeItem(
                            p["prompt_id"],
                            clip_id,
                            "audio",
                            kind,
                            history,
                            row["prompt"],
                            audio_path=str(paths[clip_id]),
                        )
                    )
    return items
