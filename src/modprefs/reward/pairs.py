"""Preference pairs for the speech reward models: the table schema, its checks, splits and files; four builders.

A pair is a dialogue context (turns of text, with audio where present), a chosen and a rejected
final turn (audio path + transcript, optionally a degradation applied on load), the criterion it
teaches, where it comes from (``source``) and its stratum (``category``), and a ``margin``.

Builders:

(a) :func:`modprefs.reward.study_pairs.study_pairs` — from the study's ratings: for every prompt and labelling condition
    (human text, human audio, AI judge text, AI judge audio) the response with the higher mean
    rating is chosen; ``margin`` is the gap of the means, in units of the study's rating scale
    (config ``study.scale``; the paper's 1–100 by default: on a 1–5 scale a gap is at most 4). A pair
    is kept only if the gap reaches the condition's decisiveness threshold (``min_gap[modality]``,
    in the same scale units; default 0 = every non-tied prompt). The paper's 41.7 (text) vs 27.9
    (audio) points are *mean* gaps on decisive trials (medians 34 vs 20) on its 1–100 slider:
    descriptions of the data, not cutoffs; use them as thresholds only deliberately (and rescaled,
    x (max - min) / 99, on another scale). The AI judges rate on 1–100 whatever the study's scale:
    with ``scale`` their ratings are first mapped linearly onto it
    (:meth:`modprefs.scale.RatingScale.from_paper_units`, not rounded), so both sources share the units.
(b) :func:`modprefs.reward.speech_pairs.modality_pairs` — natural human speech (chosen) vs a TTS
    re-synthesis of the same transcript (rejected), with the same natural-speech context, from a user corpus manifest
    (:data:`CORPUS_COLUMNS`; tiers wild / semi-wild / scripted), as SDiaReward's modality pairs.
(c) :func:`modprefs.reward.speech_pairs.colloquial_pairs` — spoken-style rewrite (chosen) vs the written-style
    text (rejected), both rendered with the same TTS, from a rewrites table;
    :func:`~modprefs.reward.speech_pairs.request_rewrites` asks an OpenAI-compatible endpoint for the rewrites.
(d) :func:`modprefs.reward.speech_pairs.degradation_pairs` — clean (chosen) vs degraded (rejected) rendition of
    the same clip (noise / clipping / low-pass, seeded): a model that does not listen cannot beat 50 %.

Every builder validates its inputs and names the file and column at fault. The study builder is in
:mod:`modprefs.reward.study_pairs`, the three built from speech in :mod:`modprefs.reward.speech_pairs`; this
module holds the table every builder writes: :data:`PAIR_COLUMNS`, :func:`validate_pairs`, :func:`assign_split`,
:func:`contradictions`, :func:`pairs_hash` and the files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError
from modprefs.reward.audio import AudioReadError, check_audio

log = logging.getLogger(__name__)

PAIR_COLUMNS = [
    "pair_id",
    "criterion",
    "category",
    "source",
    "label_modality",
    "group",
    "prompt_id",
    "context",
    "chosen_audio",
    "chosen_text",
    "chosen_transform",
    "chosen_clip_id",
    "chosen_chars",
    "rejected_audio",
    "rejected_text",
    "rejected_transform",
    "rejected_clip_id",
    "rejected_chars",
    "margin",
    "n_raters",
    "rewriter",
    "tts_voice",
    "chosen_response",
    "rejected_response",
    "chosen_prism",
    "rejected_prism",
]
CORPUS_COLUMNS = ["audio_path", "transcript", "dialogue_id", "turn", "speaker", "tier"]
TIERS = ("wild", "semi-wild", "scripted")
REWRITE_COLUMNS = ["item_id", "written", "spoken"]


class PairDataError(UserInputError):
    """Bad input for pairs or training; the message names the file/column/pair at fault."""


def require_columns(df: pd.DataFrame, columns: Iterable[str], name: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise PairDataError(f"{name} lacks column(s) {missing} (has {list(df.columns)})")


def empty_pairs() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in PAIR_COLUMNS})


def pair_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    if not rows:
        return empty_pairs()
    df = pd.DataFrame(rows)
    for c in PAIR_COLUMNS:
        if c not in df.columns:
            df[c] = None
    return df[PAIR_COLUMNS]


def normalise_id(cid: Any) -> str:
    """The file-name-safe id of a conversation or dialogue: the sampling stage's prompt id
    (:func:`modprefs.sampling.draw.prompt_id_for`), so pairs find the context of any conversation id."""
    from modprefs.sampling.draw import prompt_id_for

    return prompt_id_for(str(cid))


def validate_pairs(
    pairs: pd.DataFrame, name: str = "pairs", check_files: bool = True, criteria: Iterable[str] | None = None
) -> None:
    """Raise :class:`PairDataError` for an empty pair set, missing columns, an unknown criterion,
    or a pair whose audio (chosen, rejected or context) is missing or unreadable (named)."""
    require_columns(
        pairs, ["pair_id", "criterion", "chosen_audio", "chosen_text", "rejected_audio", "rejected_text"], name
    )
    if pairs.empty:
        raise PairDataError(
            f"{name}: the pair set is empty; nothing to train on (check the pair builders' "
            "logs: ratings with ties only, a min_gap above every gap, or no sources configured)"
        )
    if criteria is not None:
        unknown = sorted(set(pairs["criterion"].astype(str)) - set(criteria))
        if unknown:
            raise PairDataError(f"{name}: criterion value(s) {unknown} have no instruction (known: {sorted(criteria)})")
    if not check_files:
        return
    checked: dict[str, str | None] = {}
    for row in pairs.itertuples(index=False):
        paths = [row.chosen_audio, row.rejected_audio]
        ctx = getattr(row, "context", None)
        if ctx is not None and not (isinstance(ctx, float) and np.isnan(ctx)):
            paths += [t.get("audio") for t in list(ctx)]
        for p in paths:
            if p is None or (isinstance(p, float) and np.isnan(p)) or p == "":
                continue
            p = str(p)
            if p not in checked:
                try:
                    check_audio(p)
                    checked[p] = None
                except AudioReadError as exc:
                    checked[p] = str(exc)
            if checked[p]:
                raise PairDataError(f"{name}: pair {row.pair_id}: {checked[p]}")


def _side_key(audio: Any, text: Any, transform: Any) -> str:
    return json.dumps([str(audio), str(text), None if transform is None else str(transform)])


def contradictions(pairs: pd.DataFrame) -> pd.DataFrame:
    """The pairs whose inputs (criterion, context, the two sides' audio, transcript and degradation) are those of
    another pair with the opposite label: the chosen side of one is the rejected side of the other. Returns the
    offending rows of ``pairs`` (empty when none; a label set a model can fit exactly)."""
    if pairs.empty:
        return pairs
    keys, flipped = [], []
    for r in pairs.itertuples(index=False):
        c = _side_key(r.chosen_audio, r.chosen_text, getattr(r, "chosen_transform", None))
        j = _side_key(r.rejected_audio, r.rejected_text, getattr(r, "rejected_transform", None))
        ctx = getattr(r, "context", None)
        ctx_key = json.dumps(list(ctx) if ctx is not None and not isinstance(ctx, float) else [], default=str)
        keys.append(json.dumps([str(r.criterion), ctx_key, *sorted((c, j))]))
        flipped.append(c > j)
    frame = pd.DataFrame({"key": keys, "flipped": flipped}, index=pairs.index)
    both = frame.groupby("key")["flipped"].transform("nunique") > 1
    return pairs[both.to_numpy()]


def write_pairs(pairs: pd.DataFrame, target: str | os.PathLike[str]) -> None:
    from modprefs.io import write_parquet

    out = pairs if len(pairs) else empty_pairs()
    write_parquet(out[PAIR_COLUMNS].reset_index(drop=True), target)


def read_pairs(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> pd.DataFrame:
    """Concatenate pair parquet files (missing optional columns filled with None)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    frames = []
    for p in paths:
        if not Path(p).is_file():
            raise PairDataError(f"pair file not found: {p}")
        df = pd.read_parquet(p)
        require_columns(df, ["pair_id", "criterion", "chosen_audio", "rejected_audio"], f"pair file {p}")
        frames.append(df)
    frames = [f for f in frames if len(f)]
    if not frames:
        return empty_pairs()
    out = pd.concat(frames, ignore_index=True)
    for c in PAIR_COLUMNS:
        if c not in out.columns:
            out[c] = None
    dup = out["pair_id"][out["pair_id"].duplicated()].unique().tolist()
    if dup:
        raise PairDataError(f"pair_id repeated across pair files: {dup[:10]}")
    return out


def _unit_draw(seed: int, key: str) -> float:
    """A seeded hash of ``key`` in [0, 1)."""
    return int(hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()[:12], 16) / 16**12


def assign_split(pairs: pd.DataFrame, val_fraction: float, seed: int = 0) -> pd.Series:
    """``train``/``val`` per pair, by ``group`` (a prompt's or dialogue's pairs stay together: no held-out prompt,
    clip or context is trained on), stratified by what a group holds and honouring ``val_fraction``.

    Groups are ordered by their sources, then their pair types (``category``), then a seeded hash, and every
    ``1 / val_fraction``-th group of that order is held out from a seeded start (systematic sampling): round(G ×
    val_fraction) groups (± 1) are held out, and within every stratum (e.g. the prompts with study and colloquial
    pairs) the same share. The same pairs and seed give the same split in every run. A ``split`` column wins."""
    if "split" in pairs.columns and pairs["split"].notna().all():
        return pairs["split"].astype(str)
    groups = pairs["group"].where(pairs["group"].notna(), pairs["pair_id"]).astype(str)

    def signature(col: str) -> pd.Series:
        if col not in pairs.columns:
            return pd.Series("", index=groups.unique())
        return pairs[col].astype(str).groupby(groups).agg(lambda v: "+".join(sorted(set(v))))

    sources, categories = signature("source"), signature("category")
    order = sorted(groups.unique(), key=lambda g: (sources[g], categories[g], _unit_draw(seed, g)))
    start = _unit_draw(seed, "systematic-start")
    f = min(max(float(val_fraction), 0.0), 1.0)
    val = {g for i, g in enumerate(order) if math.floor((i + 1) * f + start) > math.floor(i * f + start)}
    if f > 0 and len(order) >= 2:
        by_draw = sorted(order, key=lambda g: _unit_draw(seed, g))
        if not val:  # few groups: hold out at least one
            val = {by_draw[0]}
        if len(val) == len(order):  # ... and train on at least one
            val.discard(by_draw[-1])
    return groups.map(lambda g: "val" if g in val else "train")


def pairs_hash(pairs: pd.DataFrame, include_audio: bool = True) -> str:
    """sha256 of the pair table's content (sorted by pair_id) and, if asked, of the audio bytes it names."""
    h = hashlib.sha256()
    cols = [c for c in PAIR_COLUMNS if c in pairs.columns]
    table = pairs.sort_values("pair_id")[cols]
    h.update(json.dumps(table.to_dict(orient="records"), sort_keys=True, default=str).encode("utf-8"))
    if include_audio:
        paths = sorted({str(p) for c in ("chosen_audio", "rejected_audio") for p in table[c].dropna()})
        for p in paths:
            with open(p, "rb") as fh:
                h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()
