"""The workflow's pair sets from its artifacts (rule ``reward_pairs``): study, degradation, modality,
colloquial; each builder's count, or the reason it made nothing, in a summary.

- **study**: human and judge labels (:func:`modprefs.reward.study_pairs.study_pairs`);
- **degradation**: clean vs degraded study clips (:func:`modprefs.reward.speech_pairs.degradation_pairs`);
- **modality** (needs a human-speech corpus, ``reward.pairs.corpus.manifest``): natural turn vs TTS
  re-synthesis, the TTS voice drawn per turn from a pool of voices and engines (``corpus.voices``),
  matched to the speaker's gender where the manifest has a ``gender`` column, so that no single
  voice is the cue (:func:`voice_for`). Without a corpus none are made and the summary says so;
- **colloquial**: spoken-style rewrite vs written excerpt of study responses, both rendered with one
  voice (``colloquial.tts``: piper by default, ``null`` = the study's). ``rewriter``: ``rule-based`` (default, offline,
  :mod:`modprefs.reward.colloquial`; category ``colloquial_rule_based``), ``llm`` (any
  OpenAI-compatible endpoint; category ``colloquial``) or ``table`` (a user CSV of rewrites).

Rendering goes through :func:`modprefs.reward.speech_pairs.tts_renderer` (one file per text, reused).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from modprefs.reward import pairs as rp
from modprefs.reward import speech_pairs as sp
from modprefs.reward import study_pairs as stp
from modprefs.reward.baselines import agreement_ceiling

log = logging.getLogger(__name__)

#: TTS voices for the modality pairs' negatives, by engine, with the gender each voice sounds
DEFAULT_VOICES: list[dict[str, Any]] = [
    {"backend": "kokoro-onnx", "voice": "jf_alpha", "lang": "en-us", "gender": "female"},
    {"backend": "kokoro-onnx", "voice": "jf_nezumi", "lang": "en-us", "gender": "female"},
    {"backend": "kokoro-onnx", "voice": "jm_kumo", "lang": "en-us", "gender": "male"},
    {"backend": "piper", "voice": "en_US-joe-medium", "gender": "male"},
    {"backend": "espeak-ng", "voice": "en-us+f3", "gender": "female"},
    {"backend": "espeak-ng", "voice": "en-us+m3", "gender": "male"},
]
GENDERS = {
    "f": "female",
    "female": "female",
    "w": "female",
    "woman": "female",
    "m": "male",
    "male": "male",
    "man": "male",
}
REWRITERS = ("rule-based", "llm", "table")


def normalise_gender(value: Any) -> str | None:
    """``female``/``male`` from the usual spellings; None for unknown, empty or other values."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return GENDERS.get(str(value).strip().lower())


def voice_for(voices: Sequence[Mapping[str, Any]], key: str, gender: str | None, seed: int) -> dict[str, Any]:
    """The voice that re-synthesises one turn: drawn by a seeded hash of ``key`` among the voices of the
    speaker's ``gender`` (all voices when it is unknown or none matches)."""
    if not voices:
        raise rp.PairDataError("reward.pairs.corpus.voices is empty: the modality pairs need at least one TTS voice")
    pool = [dict(v) for v in voices if gender and v.get("gender") == gender] or [dict(v) for v in voices]
    h = int(hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()[:12], 16)
    return pool[h % len(pool)]


class Renderers:
    """TTS renderers built on first use and kept: one per voice, writing ``audio_dir/{kind}/{voice}/``."""

    def __init__(
        self, audio_dir: str | Path, threads: int = 1, factory: Callable[[Mapping[str, Any], int], Any] | None = None
    ):
        from modprefs.speech.backends import get_backend

        self.audio_dir, self.threads = Path(audio_dir), int(threads)
        self.factory = factory or get_backend
        self._backends: dict[str, Any] = {}

    @staticmethod
    def voice_name(tts: Mapping[str, Any]) -> str:
        """``backend/voice`` (the ``tts_voice`` column)."""
        return f"{tts['backend']}/{tts.get('voice', 'default')}"

    @staticmethod
    def folder(tts: Mapping[str, Any]) -> str:
        """A file-name-safe folder for a voice's renditions."""
        return rp.normalise_id(f"{tts['backend']}-{tts.get('voice', 'default')}")

    def __call__(self, kind: str, tts: Mapping[str, Any]) -> sp.Renderer:
        name = self.voice_name(tts)
        if name not in self._backends:
            settings = {k: v for k, v in tts.items() if k != "gender"}
            self._backends[name] = self.factory(settings, self.threads)
        return sp.tts_renderer(self._backends[name], self.audio_dir / kind / self.folder(tts))


def modality_set(
    cfg: Mapping[str, Any] | None, renderers: Renderers, seed: int, summary: dict[str, Any]
) -> pd.DataFrame:
    """Modality pairs from the configured corpus (empty, with the reason in ``summary``, without one)."""
    if not cfg or not cfg.get("manifest"):
        summary["skipped"]["modality"] = (
            "no human-speech corpus configured (reward.pairs.corpus.manifest): natural-vs-TTS pairs need real "
            "recorded dialogue; the default run cannot show whether the model prefers human speech"
        )
        return rp.empty_pairs()
    corpus = sp.read_corpus_manifest(cfg["manifest"])
    voices = cfg.get("voices") or DEFAULT_VOICES
    genders = (
        {f"{rp.normalise_id(r.dialogue_id)}_{int(r.turn)}": normalise_gender(r.gender) for r in corpus.itertuples()}
        if "gender" in corpus.columns
        else {}
    )
    used: dict[str, int] = {}

    def voice(key: str) -> dict[str, Any]:
        return voice_for(voices, key, genders.get(key), seed)

    def render(text: str, key: str) -> str:
        name = Renderers.voice_name(voice(key))
        used[name] = used.get(name, 0) + 1
        return renderers("tts_resynthesis", voice(key))(text, key)

    out = sp.modality_pairs(
        corpus,
        render,
        min_context_turns=int(cfg.get("min_context_turns", 1)),
        max_pairs=cfg.get("max_pairs"),
        seed=seed,
        corpus_name=str(cfg.get("name", "corpus")),
        voice_of=lambda key: Renderers.voice_name(voice(key)),
    )
    summary["modality"] = {
        "pairs": len(out),
        "by_tier": out["category"].value_counts().to_dict(),
        "tts_voices": used,
        "gender_matched": bool(genders),
    }
    return out


def colloquial_items(stimuli: pd.DataFrame, conversations: pd.DataFrame, n: int) -> dict[str, str]:
    """item (clip id) -> the written response text of the first ``n`` study clips (stimuli order)."""
    by_prompt = {
        rp.normalise_id(c): row
        for c, row in zip(conversations["conversation_id"], conversations.itertuples(index=False))
    }
    items = {}
    for r in stimuli.itertuples(index=False):
        conv = by_prompt.get(str(r.prompt_id))
        text = getattr(conv, f"text_{int(r.response)}", None) if conv is not None else None
        if text and str(text).strip() and str(text) != "EMPTY STRING":
            items[str(r.clip_id)] = str(text)
        if len(items) >= n:
            break
    return items


def balanced_written(items: Mapping[str, str], spoken: Mapping[str, str], written: Mapping[str, str]) -> dict[str, str]:
    """The written sides of rule-based colloquial pairs with length balanced: the rewrite of an excerpt is a few
    characters longer than it (a discourse marker, fillers), so half the items (those whose reply goes on, in
    stimuli order) take the shortest whole-sentence opening of the reply that is longer than the rewrite
    (:func:`modprefs.reward.colloquial.written_opening`); the others keep the excerpt. Lengths as spoken."""
    from modprefs.reward.colloquial import written_opening
    from modprefs.speech.text import speakable_text

    out = dict(written)
    flipped = 0
    for k, reply in items.items():
        if flipped >= len(items) // 2:
            break

        def spoken_len(t: str, key: str = k) -> int:
            return len(speakable_text(t, clip_id=key))

        longer = written_opening(reply, len(spoken[k]), True, spoken_len)
        if spoken_len(longer) > len(spoken[k]):
            out[k] = speakable_text(longer, clip_id=k)
            flipped += 1
    return out


def rewrites_for(cfg: Mapping[str, Any], items: Mapping[str, str], seed: int) -> pd.DataFrame:
    """The (item_id, written, spoken) table of the configured rewriter."""
    from modprefs.reward.colloquial import markdown_excerpt, spoken_style
    from modprefs.speech.text import speakable_text

    rewriter = cfg.get("rewriter", "rule-based")
    if rewriter == "table":
        if not cfg.get("rewrites"):
            raise rp.PairDataError(
                "reward.pairs.colloquial.rewriter is 'table' but colloquial.rewrites (a CSV) is not set"
            )
        return pd.read_csv(cfg["rewrites"], dtype={"item_id": str})
    excerpts = {k: markdown_excerpt(v, int(cfg.get("max_chars", 160))) for k, v in items.items()}
    written = {k: speakable_text(v, clip_id=k) for k, v in excerpts.items()}
    if rewriter == "rule-based":
        spoken = {k: spoken_style(v, seed=seed) for k, v in excerpts.items()}
        if cfg.get("length_balanced", True):
            written = balanced_written(items, spoken, written)
        rows = [{"item_id": k, "written": written[k], "spoken": spoken[k]} for k in excerpts]
        return pd.DataFrame(rows, columns=rp.REWRITE_COLUMNS)
    if rewriter == "llm":
        ep = cfg.get("endpoint") or {}
        if not ep.get("base_url") or not ep.get("model"):
            raise rp.PairDataError(
                "reward.pairs.colloquial.rewriter is 'llm' but colloquial.endpoint lacks base_url and model"
            )
        complete = sp.openai_completer(ep["base_url"], ep["model"], ep.get("api_key_env", "OPENAI_API_KEY"))
        return sp.request_rewrites(written, complete)
    raise rp.PairDataError(f"reward.pairs.colloquial.rewriter {rewriter!r}; choose one of {', '.join(REWRITERS)}")


def colloquial_set(
    cfg: Mapping[str, Any] | None,
    stimuli: pd.DataFrame,
    conversations: pd.DataFrame,
    renderers: Renderers,
    study_tts: Mapping[str, Any],
    seed: int,
    summary: dict[str, Any],
) -> pd.DataFrame:
    """Colloquial pairs (empty, with the reason in ``summary``, when ``reward.pairs.colloquial`` is null)."""
    if not cfg:
        summary["skipped"]["colloquial"] = "reward.pairs.colloquial is null"
        return rp.empty_pairs()
    rewriter = cfg.get("rewriter", "rule-based")
    items = colloquial_items(stimuli, conversations, int(cfg.get("n", 12)))
    rewrites = rewrites_for(cfg, items, seed)
    contexts = stp.study_context(conversations)
    item_context = {clip: contexts.get(clip.rsplit("_", 1)[0], []) for clip in rewrites["item_id"].astype(str)}
    tts = dict(cfg.get("tts") or study_tts)
    out = sp.colloquial_pairs(
        rewrites,
        renderers("colloquial", tts),
        contexts=item_context,
        category="colloquial_rule_based" if rewriter == "rule-based" else "colloquial",
        rewriter=rewriter,
        tts_voice=Renderers.voice_name(tts),
    )
    longer = (out["chosen_chars"].astype(float) > out["rejected_chars"].astype(float)).sum() if len(out) else 0
    summary["colloquial"] = {
        "pairs": len(out),
        "spoken_longer": int(longer),  # pairs whose chosen (spoken) side is the longer one
        "length_balanced": rewriter == "rule-based" and bool(cfg.get("length_balanced", True)),
        "rewriter": rewriter,
        "tts_voice": Renderers.voice_name(tts),
        "note": (
            "rule-based rewrites (modprefs.reward.colloquial): contractions, markers, "
            "fillers, shorter clauses, lists and numbers as speech; not an LLM's or a "
            "person's rewrite"
        )
        if rewriter == "rule-based"
        else rewriter,
    }
    return out


def build_pair_sets(
    cfg: Mapping[str, Any],
    ratings: pd.DataFrame,
    stimuli: pd.DataFrame,
    manifest: pd.DataFrame,
    conversations: pd.DataFrame,
    judges: pd.DataFrame | None,
    study_tts: Mapping[str, Any],
    audio_dir: str | Path,
    seed: int,
    threads: int = 1,
    renderers: Renderers | None = None,
    scale: Any = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """Every pair set of the ``reward.pairs`` config ``cfg`` and a summary (counts, skipped builders and why).

    ``scale``: the study's :class:`~modprefs.scale.RatingScale` (None: the paper's 1..100): the judges' 1..100
    ratings are mapped onto it, so human and judge margins share the study's units."""
    summary: dict[str, Any] = {"skipped": {}}
    if judges is None and "judge" in cfg.get("sources", []):
        summary["skipped"]["judge"] = "no judge ratings configured (reward.pairs.judge_ratings / judges stage)"
    report: dict[str, Any] = {}
    sets = {
        "study": stp.study_pairs(
            ratings,
            stimuli,
            manifest,
            conversations,
            judges=judges,
            min_gap=cfg["min_gap"],
            sources=cfg["sources"],
            report=report,
            criterion_by_modality=bool(cfg.get("criterion_by_modality")),
            scale=scale,
            criterion_by_source=bool(cfg.get("criterion_by_source")),
        )
    }
    summary["study"] = report
    if ratings is not None and "response" in stimuli.columns:
        summary["ceiling"] = agreement_ceiling(ratings, stimuli, judges)
    deg = cfg.get("degradation") or {}
    study_clips = manifest[manifest["clip_id"].isin(stimuli["clip_id"])]
    sets["degradation"] = sp.degradation_pairs(
        study_clips, kinds=deg.get("kinds", []), per_clip=int(deg.get("per_clip", 1)), seed=seed
    )
    summary["degradation"] = {
        "pairs": len(sets["degradation"]),
        "by_kind": sets["degradation"]["category"].value_counts().to_dict(),
    }
    renderers = renderers or Renderers(audio_dir, threads)
    sets["modality"] = modality_set(cfg.get("corpus"), renderers, seed, summary)
    sets["colloquial"] = colloquial_set(
        cfg.get("colloquial"), stimuli, conversations, renderers, study_tts, seed, summary
    )
    clash = rp.contradictions(pd.concat([v for v in sets.values() if len(v)] or [rp.empty_pairs()]))
    summary["contradictions"] = {"pairs": len(clash), "pair_ids": clash["pair_id"].astype(str).tolist()[:20]}
    if len(clash):
        log.warning(
            "%d pairs have another pair's inputs with the opposite label (criterion_by_modality / "
            "criterion_by_source off?): %s",
            len(clash),
            clash["pair_id"].tolist()[:10],
        )
    for what, why in summary["skipped"].items():
        log.info("skipped %s pairs: %s", what, why)
    log.info("pairs: %s", {k: len(v) for k, v in sets.items()})
    return sets, summary
