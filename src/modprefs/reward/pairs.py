"""Preference pairs for the speech reward models (one table schema, four builders).

A pair is a dialogue context (turns of text, with audio where present), a chosen and a rejected
final turn (audio path + transcript, optionally a degradation applied on load), the criterion it
teaches, where it comes from (``source``) and its stratum (``category``), and a ``margin``.

Builders:

(a) :func:`study_pairs` — from the study's ratings: for every prompt and labelling condition
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
(b) :func:`modality_pairs` — natural human speech (chosen) vs a TTS re-synthesis of the same
    transcript (rejected), with the same natural-speech context, from a user corpus manifest
    (:data:`CORPUS_COLUMNS`; tiers wild / semi-wild / scripted), as SDiaReward's modality pairs.
(c) :func:`colloquial_pairs` — spoken-style rewrite (chosen) vs the written-style text
    (rejected), both rendered with the same TTS, from a rewrites table; :func:`request_rewrites`
    asks an OpenAI-compatible endpoint for the rewrites.
(d) :func:`degradation_pairs` — clean (chosen) vs degraded (rejected) rendition of the same clip
    (noise / clipping / low-pass, seeded): a model that does not listen cannot beat 50 %.

Every builder validates its inputs and names the file and column at fault.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError
from modprefs.reward.audio import DEGRADATIONS, AudioReadError, check_audio, degradation_spec
from modprefs.scale import RatingScale
from modprefs.study.terms import PAPER_COLUMN_ORDER as MODALITIES

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


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
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


# ------------------------------------------------------------------------------------- (a) study


def study_context(conversations: pd.DataFrame, prompts: pd.DataFrame | None = None) -> dict[str, list[dict]]:
    """prompt_id -> context turns (history as {role, text, audio=None}, then the prompt as a user turn)."""
    require_columns(conversations, ["conversation_id", "history", "prompt"], "conversations.parquet")
    by_conv = {str(r.conversation_id): r for r in conversations.itertuples(index=False)}
    if prompts is not None:
        require_columns(prompts, ["prompt_id", "conversation_id"], "prompts.csv")
        mapping = {str(p): str(c) for p, c in zip(prompts["prompt_id"], prompts["conversation_id"])}
    else:
        mapping = {normalise_id(c): c for c in by_conv}
    out = {}
    for pid, cid in mapping.items():
        row = by_conv.get(cid)
        if row is None:
            continue
        history = row.history if row.history is not None else []
        turns = [{"role": str(t["role"]), "text": str(t["content"]), "audio": None} for t in list(history)]
        turns.append({"role": "user", "text": str(row.prompt), "audio": None})
        out[pid] = turns
    return out


def _mean_ratings(df: pd.DataFrame, modality_col: str) -> pd.DataFrame:
    return (
        df.groupby([modality_col, "prompt_id", "clip_id"], as_index=False)
        .agg(rating=("rating", "mean"), n=("rating", "size"))
        .rename(columns={modality_col: "modality"})
    )


def _number(value: Any) -> float | None:
    """A float, or None for a missing value (the pair tables' optional numeric columns)."""
    x = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
    return None if pd.isna(x) else float(x)


def study_criterion(criterion: str, source: str, modality: str, by_modality: bool, by_source: bool) -> str:
    """The instruction a study pair is trained under: ``quality``, ``quality_text`` / ``quality_audio`` per label
    modality, and ``quality_judge`` / ``quality_text_judge`` ... for the AI judges' labels per source (the humans'
    keep the plain name). Conditioned this way no two label sets of a prompt share an instruction."""
    name = f"{criterion}_{modality}" if by_modality else criterion
    return f"{name}_{source}" if by_source and source != "human" else name


def _pairs_from_means(
    means: pd.DataFrame,
    source: str,
    stim: pd.DataFrame,
    manifest: pd.DataFrame,
    context: Mapping[str, list[dict]],
    min_gap: Mapping[str, float],
    criterion: str,
    skipped: dict[str, int],
    by_modality: bool = False,
    by_source: bool = False,
) -> list[dict[str, Any]]:
    clip = manifest.set_index("clip_id")
    by_clip = stim.set_index("clip_id")
    chars = by_clip["n_chars"]
    response = by_clip["response"] if "response" in by_clip else pd.Series(dtype=float)
    prism = by_clip["prism_score"] if "prism_score" in by_clip else pd.Series(dtype=float)
    rows = []
    for (modality, pid), g in means.groupby(["modality", "prompt_id"], sort=True):
        key = f"{source}_{modality}"
        if len(g) != 2:
            skipped[f"{key}: prompt without two rated clips"] = (
                skipped.get(f"{key}: prompt without two rated clips", 0) + 1
            )
            continue
        g = g.sort_values("rating", ascending=False)
        hi, lo = g.iloc[0], g.iloc[1]
        gap = float(hi.rating - lo.rating)
        if gap <= 0:
            skipped[f"{key}: tie"] = skipped.get(f"{key}: tie", 0) + 1
            continue
        if gap < float(min_gap.get(modality, 0.0)):
            skipped[f"{key}: gap below min_gap"] = skipped.get(f"{key}: gap below min_gap", 0) + 1
            continue
        missing = [c for c in (hi.clip_id, lo.clip_id) if c not in clip.index]
        if missing:
            raise PairDataError(f"audio manifest.csv has no row for clip(s) {missing} (rated in the {key} labels)")
        rows.append(
            {
                "pair_id": f"{source}:{modality}:{pid}",
                "criterion": study_criterion(criterion, source, str(modality), by_modality, by_source),
                "category": key,
                "source": source,
                "label_modality": modality,
                "group": str(pid),
                "prompt_id": str(pid),
                "context": context.get(str(pid), []),
                "chosen_audio": str(clip.at[hi.clip_id, "path"]),
                "chosen_text": str(clip.at[hi.clip_id, "spoken_text"]),
                "chosen_transform": None,
                "chosen_clip_id": str(hi.clip_id),
                "chosen_chars": int(chars.get(hi.clip_id, 0)),
                "rejected_audio": str(clip.at[lo.clip_id, "path"]),
                "rejected_text": str(clip.at[lo.clip_id, "spoken_text"]),
                "rejected_transform": None,
                "rejected_clip_id": str(lo.clip_id),
                "rejected_chars": int(chars.get(lo.clip_id, 0)),
                "margin": gap,
                "n_raters": int(min(hi.n, lo.n)),
                "chosen_response": _number(response.get(hi.clip_id)),
                "rejected_response": _number(response.get(lo.clip_id)),
                "chosen_prism": _number(prism.get(hi.clip_id)),
                "rejected_prism": _number(prism.get(lo.clip_id)),
            }
        )
    return rows


def _human_ratings(ratings: pd.DataFrame, stim: pd.DataFrame) -> pd.DataFrame:
    """The human ratings of the study's clips (conditions checked; no attention check, no missing rating)."""
    require_columns(ratings, ["participant_id", "condition", "prompt_id", "clip_id", "rating"], "ratings.csv")
    r = ratings.astype({"prompt_id": str, "clip_id": str})
    bad = sorted(set(r["condition"].dropna().astype(str)) - set(MODALITIES))
    if bad:
        raise PairDataError(f"ratings.csv column condition has value(s) {bad}; expected text/audio")
    r = r[r["clip_id"].isin(stim["clip_id"]) & r["rating"].notna()]
    if "trial" in r.columns:
        r = r[r["trial"] != 0]
    return r


def _judge_ratings(judges: pd.DataFrame, stim: pd.DataFrame, scale: RatingScale | None = None) -> pd.DataFrame:
    """The AI judges' successful numeric response-quality ratings of the study's clips (1–100; on ``scale``
    when one other than the paper's is given)."""
    require_columns(
        judges, ["modality", "kind", "prompt_id", "clip_id", "sample", "rating", "status"], "judges ratings.csv"
    )
    j = judges.astype({"prompt_id": str, "clip_id": str})
    j = j[
        (j["kind"] == "response_quality")
        & (j["status"] == "ok")
        & j["rating"].notna()
        & j["clip_id"].isin(stim["clip_id"])
    ]
    j = j.assign(rating=pd.to_numeric(j["rating"], errors="coerce")).dropna(subset=["rating"])
    if scale is not None and not scale.is_paper:
        j = j.assign(rating=scale.from_paper_units(j["rating"].to_numpy(float), snap=False))
    return j


def study_pairs(
    ratings: pd.DataFrame | None,
    stimuli: pd.DataFrame,
    manifest: pd.DataFrame,
    conversations: pd.DataFrame,
    prompts: pd.DataFrame | None = None,
    judges: pd.DataFrame | None = None,
    min_gap: Mapping[str, float] | None = None,
    criterion: str = "quality",
    sources: Sequence[str] = ("human", "judge"),
    criterion_by_modality: bool = False,
    report: dict[str, Any] | None = None,
    scale: RatingScale | None = None,
    criterion_by_source: bool = False,
) -> pd.DataFrame:
    """Pairs from human text/audio ratings and AI judge ratings (see the module docs).

    ``min_gap``: {"text": x, "audio": y} decisiveness thresholds on the mean-rating gap, in units of the
    study's rating scale (``margin`` is in them too). ``scale``: the study's rating scale (``study.scale``); on
    another scale than the paper's 1–100 the judges' 1–100 ratings are mapped onto it (None: ratings as given).
    ``criterion_by_modality``: label pairs ``{criterion}_text`` / ``{criterion}_audio`` (a reader's vs a
    listener's judgement, two instructions) instead of one shared criterion. Text and audio labels of
    the same prompt often disagree (the study's point); under one instruction they are contradictory
    pairs on identical inputs. ``criterion_by_source``: the AI judges' pairs get their own instruction
    (``{criterion}[_{modality}]_judge``), since judges and humans disagree on some prompts (the workflow's
    defaults turn both on: :func:`contradictions` finds no pair set of them on identical inputs).
    ``report`` (optional dict) receives counts of pairs made and prompts skipped, by reason.
    """
    min_gap = {"text": 0.0, "audio": 0.0, **(min_gap or {})}
    require_columns(stimuli, ["prompt_id", "clip_id", "response", "n_chars"], "stimuli.csv")
    require_columns(manifest, ["clip_id", "path", "spoken_text"], "audio manifest.csv")
    stim = stimuli.astype({"prompt_id": str, "clip_id": str})
    manifest = manifest.astype({"clip_id": str})
    context = study_context(conversations, prompts)
    skipped: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    if "human" in sources and ratings is not None:
        rows += _pairs_from_means(
            _mean_ratings(_human_ratings(ratings, stim), "condition"),
            "human",
            stim,
            manifest,
            context,
            min_gap,
            criterion,
            skipped,
            criterion_by_modality,
            criterion_by_source,
        )
    if "judge" in sources and judges is not None:
        rows += _pairs_from_means(
            _mean_ratings(_judge_ratings(judges, stim, scale), "modality"),
            "judge",
            stim,
            manifest,
            context,
            min_gap,
            criterion,
            skipped,
            criterion_by_modality,
            criterion_by_source,
        )
    out = _frame(rows)
    if report is not None:
        report.update(
            {
                "pairs": int(len(out)),
                "by_category": out["category"].value_counts().to_dict(),
                "skipped": skipped,
                "min_gap": dict(min_gap),
            }
        )
    return out


# ---------------------------------------------------------------------------------- (b) modality


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
    return _frame(rows)


# ------------------------------------------------------------------------------ (c) colloquialness

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
    return _frame(rows)


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


# ------------------------------------------------------------------------------- (d) degradation


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
    return _frame(rows)


# -------------------------------------------------------------------------------- checks and I/O


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
