"""Pairs built from speech (builders (b)-(d) of :mod:`modprefs.reward.pairs`): natural speech vs a TTS
re-synthesis (:func:`modality_pairs`), a spoken-style rewrite vs its written form (:func:`colloquial_pairs`,
:func:`request_rewrites`), and a clean vs a degraded clip (:func:`degradation_pairs`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from modprefs.reward.audio import DEGRADATIONS, degradation_spec
from modprefs.reward.pairs import (
    CORPUS_COLUMNS,
    REWRITE_COLUMNS,
    TIERS,
    PairDataError,
    empty_pairs,
    normalise_id,
    pair_frame,
    require_columns,
)

log = logging.getLogger(__name__)


def validate_corpus(corpus: pd.DataFrame, name: str = "corpus manifest") -> pd.DataFrame:
    """Check a user corpus manifest (:data:`CORPUS_COLUMNS`); return it typed and sorted."""
    require_columns(corpus, CORPUS_COLUMNS, name)
    if corpus.empty:
        raise PairDataError(f"{name} has no rows")
    for col in ("audio_path", "transcript", "dialogue_id", "speaker", "tier"):
        blank = corpus[col].isna() | (corpus[col].astype(str).str.strip() == "")
        if blank.any():
            raise PairDataError(f"{name} column {col} is empty in row(s) {corpus.index[blank].tolist()[:10]}")
    turn = pd.to_numeric(corpus["turn"], errors="coerce")
    if turn.isna().any():
        raise PairDataError(f"{name} column turn is not an integer in row(s) {corpus.index[turn.isna()].tolist()[:10]}")
    tiers = corpus["tier"].astype(str).str.strip().str.lower()
    bad = sorted(set(tiers) - set(TIERS))
    if bad:
        raise PairDataError(f"{name} column tier has value(s) {bad}; expected one of {list(TIERS)}")
    out = corpus.assign(turn=turn.astype(int), tier=tiers, dialogue_id=corpus["dialogue_id"].astype(str))
    dup = out.duplicated(["dialogue_id", "turn"])
    if dup.any():
        raise PairDataError(f"{name}: (dialogue_id, turn) repeated in row(s) {out.index[dup].tolist()[:10]}")
    return out.sort_values(["dialogue_id", "turn"]).reset_index(drop=True)


def read_corpus_manifest(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read and validate a corpus manifest (CSV, TSV or Parquet); relative audio paths are taken
    relative to the manifest's folder."""
    path = Path(path)
    if not path.is_file():
        raise PairDataError(f"corpus manifest not found: {path}")
    if path.suffix == ".parquet":
        df = pd.read_parquet(path)
    else:
        df = pd.read_csv(path, sep="\t" if path.suffix in (".tsv", ".tab") else ",", dtype={"dialogue_id": str})
    df = validate_corpus(df, f"corpus manifest {path}")
    df["audio_path"] = [p if os.path.isabs(p) else str(path.parent / p) for p in df["audio_path"].astype(str)]
    return df


Renderer = Callable[[str, str], str]
"""``render(text, key) -> audio path``: synthesise ``text`` once (``key`` names the output)."""


def modality_pairs(
    corpus: pd.DataFrame,
    render: Renderer,
    min_context_turns: int = 1,
    max_pairs: int | None = None,
    seed: int = 0,
    criterion: str = "modality",
    corpus_name: str = "corpus",
    voice_of: Callable[[str], str] | None = None,
) -> pd.DataFrame:
    """Natural turn (chosen) vs its TTS re-synthesis (rejected), same natural-speech context.
    ``render(text, key)`` synthesises the turn (key ``{dialogue}_{turn}``); ``voice_of(key)``, when given,
    names the voice it used (the ``tts_voice`` column)."""
    corpus = validate_corpus(corpus)
    rows = []
    candidates = []
    for did, g in corpus.groupby("dialogue_id", sort=True):
        g = g.sort_values("turn")
        for i in range(min_context_turns, len(g)):
            candidates.append((did, g.iloc[:i], g.iloc[i]))
    if max_pairs is not None and len(candidates) > max_pairs:
        pick = sorted(np.random.default_rng(seed).choice(len(candidates), size=max_pairs, replace=False))
        candidates = [candidates[i] for i in pick]
    for did, ctx, row in candidates:
        key = f"{normalise_id(did)}_{int(row.turn)}"
        synthetic = render(str(row.transcript), key)
        text = str(row.transcript)
        rows.append(
            {
                "pair_id": f"modality:{corpus_name}:{key}",
                "criterion": criterion,
                "category": row.tier,
                "source": "modality",
                "label_modality": "audio",
                "group": f"{corpus_name}:{did}",
                "prompt_id": None,
                "context": [
                    {"role": str(t.speaker), "text": str(t.transcript), "audio": str(t.audio_path)}
                    for t in ctx.itertuples(index=False)
                ],
                "chosen_audio": str(row.audio_path),
                "chosen_text": text,
                "chosen_transform": None,
                "chosen_clip_id": None,
                "chosen_chars": len(text),
                "rejected_audio": str(synthetic),
                "rejected_text": text,
                "rejected_transform": None,
                "rejected_clip_id": None,
                "rejected_chars": len(text),
                "margin": 0.0,
                "n_raters": 0,
                "tts_voice": voice_of(key) if voice_of else None,
            }
        )
    return pair_frame(rows)


REWRITE_PROMPT = (
    "Rewrite the following reply the way a person would actually say it out loud in a casual spoken "
    "conversation: shorter, with natural fragments, discourse markers and fillers where they fit "
    '("well", "so", "you know"), no lists, headings or symbols. Keep the meaning. Answer with the '
    "spoken version only.\n\nReply:\n{text}"
)


def request_rewrites(texts: Mapping[str, str], complete: Callable[[str], str]) -> pd.DataFrame:
    """Spoken-style rewrites of written texts through ``complete(prompt) -> reply`` (an LLM call)."""
    rows = []
    for item_id, text in texts.items():
        spoken = complete(REWRITE_PROMPT.format(text=text)).strip()
        if spoken:
            rows.append({"item_id": str(item_id), "written": text, "spoken": spoken})
        else:
            log.warning("rewrite of %s came back empty; skipped", item_id)
    return pd.DataFrame(rows, columns=REWRITE_COLUMNS)


def openai_completer(
    base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY", timeout_s: float = 60.0, temperature: float = 0.7
) -> Callable[[str], str]:
    """A ``complete(prompt)`` over an OpenAI-compatible chat-completions endpoint (the judge's)."""
    import openai

    key = os.environ.get(api_key_env)
    if not key:
        raise PairDataError(f"colloquial rewrites: environment variable {api_key_env} (API key) is not set")
    client = openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout_s)

    def complete(prompt: str) -> str:
        reply = client.chat.completions.create(
            model=model, temperature=temperature, messages=[{"role": "user", "content": prompt}]
        )
        return reply.choices[0].message.content or ""

    return complete


def colloquial_pairs(
    rewrites: pd.DataFrame,
    render: Renderer,
    contexts: Mapping[str, list[dict]] | None = None,
    criterion: str = "colloquialness",
    name: str = "rewrites table",
    category: str = "colloquial",
    rewriter: str | None = None,
    tts_voice: str | None = None,
    groups: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Spoken-style (chosen) vs written-style (rejected) final turn, same TTS voice, same context.
    ``category``/``rewriter`` label where the rewrites come from (``colloquial_rule_based``/``rule-based``
    for :mod:`modprefs.reward.colloquial`); ``groups``: item -> split group (default: the item's prompt,
    ``p1`` of a clip id ``p1_0``, so both responses of a prompt land on the same side)."""
    require_columns(rewrites, REWRITE_COLUMNS, name)
    rows = []
    for r in rewrites.itertuples(index=False):
        item = normalise_id(r.item_id)
        written, spoken = str(r.written), str(r.spoken)
        group = (groups or {}).get(str(r.item_id), str(r.item_id).rsplit("_", 1)[0])
        rows.append(
            {
                "pair_id": f"colloquial:{item}",
                "criterion": criterion,
                "category": category,
                "source": "colloquial",
                "label_modality": "audio",
                "group": group,
                "rewriter": rewriter,
                "tts_voice": tts_voice,
                "prompt_id": group,
                "context": (contexts or {}).get(str(r.item_id), []),
                "chosen_audio": str(render(spoken, f"{item}_spoken")),
                "chosen_text": spoken,
                "chosen_transform": None,
                "chosen_clip_id": None,
                "chosen_chars": len(spoken),
                "rejected_audio": str(render(written, f"{item}_written")),
                "rejected_text": written,
                "rejected_transform": None,
                "rejected_clip_id": None,
                "rejected_chars": len(written),
                "margin": 0.0,
                "n_raters": 0,
            }
        )
    return pair_frame(rows)


def tts_renderer(backend: Any, out_dir: str | os.PathLike[str]) -> Renderer:
    """A :data:`Renderer` over a :class:`modprefs.speech.backends.TTSBackend`, writing ``out_dir/{key}.wav``
    atomically and reusing a file that is already there."""
    import soundfile as sf

    from modprefs.io import atomic_path
    from modprefs.speech.text import speakable_text

    out_dir = Path(out_dir)

    def render(text: str, key: str) -> str:
        target = out_dir / f"{key}.wav"
        if not target.is_file():
            audio = backend.synthesize(speakable_text(text, clip_id=key))
            with atomic_path(target) as tmp:
                sf.write(str(tmp), np.asarray(audio, dtype=np.float32), int(backend.sample_rate))
        return str(target)

    return render


def degradation_pairs(
    manifest: pd.DataFrame,
    kinds: Sequence[str] = DEGRADATIONS,
    per_clip: int = 1,
    seed: int = 0,
    criterion: str = "fidelity",
    jitter: bool = True,
) -> pd.DataFrame:
    """Clean (chosen) vs degraded (rejected) rendition of the same clip; the degradation is a seeded
    spec applied on load (``rejected_transform``), so the pair needs no extra audio file."""
    require_columns(manifest, ["clip_id", "path", "spoken_text"], "audio manifest.csv")
    bad = sorted(set(kinds) - set(DEGRADATIONS))
    if bad:
        raise PairDataError(f"unknown degradation(s) {bad}; choose from {list(DEGRADATIONS)}")
    if not kinds or per_clip < 1:
        return empty_pairs()
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    offset = int(rng.integers(len(kinds)))
    per_clip = min(per_clip, len(kinds))
    for i, r in enumerate(manifest.astype({"clip_id": str}).itertuples(index=False)):
        # round robin from a seeded offset: every kind equally often (± 1)
        picked = [(offset + i * per_clip + j) % len(kinds) for j in range(per_clip)]
        prompt_id = str(getattr(r, "prompt_id", "") or str(r.clip_id).rsplit("_", 1)[0])
        for k in sorted(picked):
            kind = kinds[k]
            params = {}
            if jitter:
                params = {
                    "noise": {"snr_db": float(rng.uniform(5, 15))},
                    "clipping": {"level": float(rng.uniform(0.2, 0.4))},
                    "lowpass": {"cutoff_hz": float(rng.uniform(1000, 2500))},
                }[kind]
            spec = degradation_spec(kind, int(rng.integers(2**31)), **params)
            text = str(r.spoken_text)
            rows.append(
                {
                    "pair_id": f"degradation:{kind}:{r.clip_id}",
                    "criterion": criterion,
                    "category": kind,
                    "source": "degradation",
                    "label_modality": "audio",
                    "group": prompt_id,
                    "prompt_id": prompt_id,
                    "context": [],
                    "chosen_audio": str(r.path),
                    "chosen_text": text,
                    "chosen_transform": None,
                    "chosen_clip_id": str(r.clip_id),
                    "chosen_chars": len(text),
                    "rejected_audio": str(r.path),
                    "rejected_text": text,
                    "rejected_transform": spec,
                    "rejected_clip_id": str(r.clip_id),
                    "rejected_chars": len(text),
                    "margin": 0.0,
                    "n_raters": 0,
                }
            )
    return pair_frame(rows)
