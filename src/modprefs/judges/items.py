"""What the judges rate in the workflow: the final study clips and the attention check, per modality."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import pandas as pd

from modprefs.judges.api_config import build_items
from modprefs.judges.types import JudgeItem
from modprefs.speech.clips import read_attention_check
from modprefs.study.terms import ATTENTION_PROMPT

MODALITY_KINDS = {"text": ("response_quality",), "audio": ("response_quality", "audio_quality")}


def _check_modality(modality: str) -> None:
    if modality not in MODALITY_KINDS:
        raise ValueError(f"modality must be one of {sorted(MODALITY_KINDS)}, got {modality!r}")


def study_items(
    conversations: pd.DataFrame, prompts: pd.DataFrame, manifest: pd.DataFrame | None, modality: str
) -> list[JudgeItem]:
    """Items for responses 0 and 1 of every prompt (final_prompts.csv order) in one modality.

    Args:
        conversations: conversations.parquet (history, prompt, text_0/1).
        prompts: final_prompts.csv (prompt_id, conversation_id).
        manifest: audio manifest.csv (clip_id, path); required for ``audio``.
        modality: ``text`` (response quality of the text) or ``audio`` (response quality and
            audio quality of the clip).
    """
    _check_modality(modality)
    if modality == "audio" and manifest is None:
        raise ValueError("audio judge items need the audio manifest (clip_id, path)")
    return build_items(conversations, prompts, manifest, modalities=(modality,))


def attention_check_items(
    attention_check: Mapping[str, Any], manifest: pd.DataFrame | None, modality: str
) -> list[JudgeItem]:
    """Items for the attention check's two responses (``attn_0`` coherent, ``attn_1`` nonsensical).

    The judges rate them like any prompt; their ratings are a sanity check of the judge (a judge
    that cannot rate ``attn_0`` above ``attn_1`` is not judging content) and are left out of the
    AI-human analyses.
    """
    _check_modality(modality)
    prompt_id = str(attention_check.get("prompt_id", ATTENTION_PROMPT))
    responses = attention_check.get("responses") or []
    if len(responses) != 2:
        raise ValueError(f"attention check {prompt_id!r}: needs exactly two responses")
    paths = {} if manifest is None else dict(zip(manifest["clip_id"].astype(str), manifest["path"]))
    history = [dict(t) for t in attention_check.get("history") or []]
    items = []
    for r, response in enumerate(responses):
        clip_id = f"{prompt_id}_{r}"
        if modality == "text":
            items.append(
                JudgeItem(
                    prompt_id,
                    clip_id,
                    "text",
                    "response_quality",
                    history,
                    attention_check.get("prompt", ""),
                    response_text=response["text"],
                )
            )
            continue
        if clip_id not in paths:
            raise KeyError(f"attention-check clip {clip_id} is missing from the audio manifest")
        for kind in MODALITY_KINDS["audio"]:
            items.append(
                JudgeItem(
                    prompt_id,
                    clip_id,
                    "audio",
                    kind,
                    history,
                    attention_check.get("prompt", ""),
                    audio_path=str(paths[clip_id]),
                )
            )
    return items


def read_modality_items(
    modality: str,
    prompts_csv: str | os.PathLike[str],
    manifest_csv: str | os.PathLike[str] | None,
    attention_check_json: str | os.PathLike[str],
    conversations_parquet: str | os.PathLike[str],
) -> list[JudgeItem]:
    """One modality's judge items from the workflow's files: the attention check's, then every final prompt's.

    ``manifest_csv``: the audio manifest (audio modality), or None (text).
    """
    ids = dict.fromkeys(("prompt_id", "conversation_id", "clip_id"), str)
    prompts = pd.read_csv(prompts_csv, dtype=ids, keep_default_na=False)
    manifest = pd.read_csv(manifest_csv, dtype=ids, keep_default_na=False) if manifest_csv is not None else None
    return attention_check_items(read_attention_check(attention_check_json), manifest, modality) + study_items(
        pd.read_parquet(conversations_parquet), prompts, manifest, modality
    )
