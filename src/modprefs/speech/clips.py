"""The ordered list of study clips, and shards of it for parallel rendering.

Order (docs/CONTRACTS.md, "Clips"): the attention check's ``attn_0`` (coherent) and ``attn_1``
(nonsensical), then the prompts in ``prompts.csv`` row order, response 0 then 1. A clip's id is
``f"{prompt_id}_{response}"``. The clips are cut into ``ceil(n / shard_size)`` contiguous shards of about equal
text length (:func:`balanced_bounds`; rendering and transcribing take time in proportion to the text), so the
shards that run side by side finish together; shard ``i`` holds ``clips[bounds[i]:bounds[i + 1]]``.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from modprefs.errors import UserInputError
from modprefs.study.terms import ATTENTION_PROMPT

__all__ = [
    "CLIP_COLUMNS",
    "AttentionCheckError",
    "clip_id",
    "read_attention_check",
    "study_clips",
    "shard",
    "balanced_bounds",
    "shard_bounds",
    "read_study_clips",
]

CLIP_COLUMNS = ["clip_id", "prompt_id", "response", "text"]
#: conversations.parquet's per-side provenance columns of a pairs source (``<name>_k``) -> the clip's column
PROVENANCE = {"transcript": "text_source", "asr_confidence": "asr_confidence", "asr_flag": "asr_flag"}


def clip_id(prompt_id: str, response: int) -> str:
    """``("p12", 1)`` -> ``"p12_1"``."""
    return f"{prompt_id}_{int(response)}"


class AttentionCheckError(UserInputError):
    """The attention-check file (config ``attention_check``) is unreadable or malformed; names the file."""


def read_attention_check(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The attention check (docs/CONTRACTS.md, ``resources/attention_check.json``), checked.

    It needs a ``prompt`` string and ``responses``, a list of two ``{"text": ...}`` objects with
    something to speak (response 0 the coherent one); ``prompt_id`` (default ``attn``) must be
    file-name safe and ``history`` (default none) a list of ``{role, content}`` turns.

    Raises:
        AttentionCheckError: naming the file, and the line and column of a JSON syntax error.
    """
    from modprefs.speech.text import speakable_text

    try:
        text = open(path, "rb").read().decode("utf-8")
    except OSError as err:
        raise AttentionCheckError(f"attention check {path}: cannot be read ({err.strerror})") from None
    except UnicodeDecodeError as err:
        raise AttentionCheckError(f"attention check {path}: not UTF-8 text (byte {err.start + 1})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise AttentionCheckError(
            f"attention check {path}, line {err.lineno}, column {err.colno}: not valid JSON ({err.msg})"
        ) from None
    if not isinstance(data, dict):
        raise AttentionCheckError(f"attention check {path}: expected a JSON object, got {type(data).__name__}")
    problems = []
    prompt_id = data.get("prompt_id", ATTENTION_PROMPT)
    if not isinstance(prompt_id, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", prompt_id):
        problems.append(f"prompt_id {prompt_id!r} must be letters, digits, '_' or '-'")
    if not isinstance(data.get("prompt"), str) or not data["prompt"].strip():
        problems.append("'prompt' must be a non-empty string")
    history = data.get("history", [])
    if not isinstance(history, list) or not all(
        isinstance(h, Mapping) and h.get("role") in ("user", "model") and isinstance(h.get("content"), str)
        for h in history
    ):
        problems.append('\'history\' must be a list of {"role": "user"|"model", "content": str} turns')
    try:
        for row in _attention_rows(data):
            speakable_text(row["text"], clip_id=row["clip_id"])
    except ValueError as err:
        problems.append(str(err))
    if problems:
        raise AttentionCheckError(f"attention check {path}: " + "; ".join(problems))
    return data


def _attention_rows(attention_check: Mapping[str, Any]) -> list[dict[str, Any]]:
    prompt_id = str(attention_check.get("prompt_id", ATTENTION_PROMPT))
    responses = attention_check.get("responses")
    if not isinstance(responses, list) or len(responses) != 2:
        raise ValueError(
            f"attention check {prompt_id!r}: 'responses' must be a list of two "
            f"{{'text': ...}} objects, got {responses!r:.80}"
        )
    rows = []
    for response, item in enumerate(responses):
        if not isinstance(item, Mapping) or not isinstance(item.get("text"), str):
            raise ValueError(f"attention check {prompt_id!r}: responses[{response}] has no 'text' string")
        rows.append(
            {
                "clip_id": clip_id(prompt_id, response),
                "prompt_id": prompt_id,
                "response": response,
                "text": item["text"],
            }
        )
    return rows


def _prompt_rows(prompts: pd.DataFrame, conversations: pd.DataFrame) -> list[dict[str, Any]]:
    for table, name, cols in [
        (prompts, "prompts", ["prompt_id", "conversation_id"]),
        (conversations, "conversations", ["conversation_id", "text_0", "text_1"]),
    ]:
        missing = [c for c in cols if c not in table.columns]
        if missing:
            raise KeyError(f"{name} table lacks column(s) {missing}")
    dup = prompts["prompt_id"][prompts["prompt_id"].duplicated()].tolist()
    if dup:
        raise ValueError(f"prompts: duplicate prompt_id {dup[:5]}")
    conv = conversations[["conversation_id", "text_0", "text_1"]].copy()
    conv["conversation_id"] = conv["conversation_id"].astype(str)
    dup = conv["conversation_id"][conv["conversation_id"].duplicated()].tolist()
    if dup:
        raise ValueError(f"conversations: duplicate conversation_id {dup[:5]}")
    has_audio = "audio_0" in conversations.columns
    if has_audio:  # a pairs source: each side's audio file (None where the side is to be synthesised)
        conv = conv.join(conversations[["audio_0", "audio_1"]])
    # a pairs source's provenance of each side (modprefs.data.pairs): what audio QC judges a given clip by
    provenance = [c for c in PROVENANCE if all(f"{c}_{k}" in conversations.columns for k in (0, 1))]
    for c in provenance:
        conv = conv.join(conversations[[f"{c}_0", f"{c}_1"]])
    if "source_row" in conversations.columns:
        conv = conv.join(conversations[["source_row"]])
    texts = conv.set_index("conversation_id")
    rows = []
    for prompt_id, conversation_id in zip(prompts["prompt_id"].astype(str), prompts["conversation_id"].astype(str)):
        if conversation_id not in texts.index:
            raise KeyError(f"prompt {prompt_id}: conversation_id {conversation_id!r} is not in conversations")
        for response in (0, 1):
            rows.append(
                {
                    "clip_id": clip_id(prompt_id, response),
                    "prompt_id": prompt_id,
                    "response": response,
                    "text": texts.at[conversation_id, f"text_{response}"],
                    **({"audio": texts.at[conversation_id, f"audio_{response}"]} if has_audio else {}),
                    **{PROVENANCE[c]: texts.at[conversation_id, f"{c}_{response}"] for c in provenance},
                    **({"source_row": texts.at[conversation_id, "source_row"]} if "source_row" in texts else {}),
                }
            )
    return rows


def study_clips(
    prompts: pd.DataFrame, conversations: pd.DataFrame, attention_check: Mapping[str, Any] | None
) -> pd.DataFrame:
    """Every clip the study renders, in the contract's order.

    Args:
        prompts: ``prompts.csv`` (prompt_id, conversation_id, ...), in draw order.
        conversations: ``conversations.parquet`` (conversation_id, text_0, text_1, ...).
        attention_check: ``attention_check.json`` (prompt_id, responses: [{text}, {text}]), or
            None for a replacement round (its prompts only).

    Returns:
        One row per clip: clip_id (str), prompt_id (str), response (int 0/1), text (str, the
        original response text), and for a pairs source ``audio`` (the side's audio file, None for the
        attention check and sides to synthesise); ``2 * len(prompts) + 2`` rows (``+ 0`` without the attention
        check), index 0..n-1.
    """
    attention = _attention_rows(attention_check) if attention_check is not None else []
    rows = attention + _prompt_rows(prompts, conversations)
    columns = [*CLIP_COLUMNS, "audio"] if "audio_0" in conversations.columns else CLIP_COLUMNS
    columns += [c for c in [*PROVENANCE.values(), "source_row"] if any(c in r for r in rows)]
    clips = pd.DataFrame(rows, columns=columns)
    dup = clips["clip_id"][clips["clip_id"].duplicated()].tolist()
    if dup:
        raise ValueError(f"duplicate clip_id {dup[:5]} (does a prompt_id collide with the attention check's?)")
    return clips.astype({"response": int})


def balanced_bounds(costs: Sequence[float], n_shards: int) -> list[int]:
    """Start indices of ``n_shards`` contiguous blocks of ``costs`` (plus ``len(costs)`` at the end) that minimise
    the largest block's total: the linear partition problem, solved exactly by a binary search on that total with
    a greedy check (integer costs; O(n log sum)). Blocks are non-empty while there are items for them; with fewer
    items than shards the last blocks are empty. Each block takes as many items as that total allows (earlier blocks
    fuller), so the bounds are a function of the costs alone.

    Args:
        costs: per-item cost, >= 0 (here a clip's characters: render and QC time grow with them).
        n_shards: number of blocks, >= 1.
    Returns:
        ``n_shards + 1`` non-decreasing indices from 0 to ``len(costs)``.
    """
    weights = [int(c) for c in costs]
    n = len(weights)
    blocks = min(n_shards, n)
    if blocks <= 1:
        return [0] + [n] * n_shards

    def cuts(cap: int) -> list[int] | None:
        """Greedy cut points with no block above ``cap`` and exactly ``blocks`` non-empty blocks, or None."""
        starts, total = [0], 0
        for i, w in enumerate(weights):
            if i > starts[-1] and (total + w > cap or n - i == blocks - len(starts)):
                if len(starts) == blocks:
                    return None
                starts.append(i)
                total = 0
            if w > cap:
                return None
            total += w
        return starts

    lo, hi = max(weights), sum(weights)
    while lo < hi:
        mid = (lo + hi) // 2
        if cuts(mid) is None:
            lo = mid + 1
        else:
            hi = mid
    starts = cuts(lo)
    assert starts is not None and len(starts) == blocks
    return starts + [n] * (n_shards - blocks + 1)


def shard(clips: pd.DataFrame, shard_index: int, shard_size: int, balanced: bool = True) -> pd.DataFrame:
    """Shard ``shard_index`` of ``ceil(len(clips) / shard_size)`` contiguous shards (same columns): of about equal
    text length (:func:`balanced_bounds` on the characters of ``clips["text"]``), or with ``balanced=False``
    ``shard_size`` clips each (rows ``shard_index * shard_size`` on; the other engines' shards: piper's and
    espeak-ng's renditions depend on the clips rendered before them in the same job, so they keep these cuts).

    A shard past the end is empty, which the last shards can be when the shard count was computed from a
    configured prompt count.
    """
    if int(shard_size) < 1:
        raise ValueError(f"tts.shard_size must be >= 1, got {shard_size}")
    if int(shard_index) < 0:
        raise ValueError(f"shard index must be >= 0, got {shard_index}")
    if not balanced:
        start = int(shard_index) * int(shard_size)
        return clips.iloc[start : start + int(shard_size)].reset_index(drop=True)
    bounds = shard_bounds(clips, shard_size)
    if int(shard_index) >= len(bounds) - 1:
        return clips.iloc[:0].reset_index(drop=True)
    return clips.iloc[bounds[int(shard_index)] : bounds[int(shard_index) + 1]].reset_index(drop=True)


def shard_bounds(clips: pd.DataFrame, shard_size: int) -> list[int]:
    """Row bounds of the ``ceil(len(clips) / shard_size)`` balanced shards of ``clips`` (:func:`shard`): shard i
    is rows ``bounds[i]`` to ``bounds[i + 1] - 1``. Compute once to cut every shard of a round."""
    n_shards = max(1, math.ceil(len(clips) / int(shard_size)))
    return balanced_bounds(clips["text"].fillna("").astype(str).str.len().tolist(), n_shards)


def read_study_clips(
    prompts_csv: str | os.PathLike[str],
    conversations_parquet: str | os.PathLike[str],
    attention_check_json: str | os.PathLike[str] | None,
) -> pd.DataFrame:
    """:func:`study_clips` from the workflow's files (ids read as strings); no attention check if None."""
    prompts = pd.read_csv(prompts_csv, dtype={"prompt_id": str, "conversation_id": str}, keep_default_na=False)
    conversations = pd.read_parquet(conversations_parquet)
    attention_check = None if attention_check_json is None else read_attention_check(attention_check_json)
    return study_clips(prompts, conversations, attention_check)


def study_shard(
    prompts_csv: str | os.PathLike[str],
    conversations_parquet: str | os.PathLike[str],
    attention_check_json: str | os.PathLike[str] | None,
    shard_index: int,
    shard_size: int,
    balanced: bool = True,
) -> tuple[pd.DataFrame, int]:
    """(shard ``shard_index`` of the study's clips (:func:`shard`), the number of the study's clips)."""
    clips = read_study_clips(prompts_csv, conversations_parquet, attention_check_json)
    return shard(clips, shard_index, shard_size, balanced), len(clips)
