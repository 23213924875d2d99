"""The interactions a pairs table (:mod:`modprefs.data.pairs`) becomes: ``data.format: pairs``'s conversations.

The interactions built here have :data:`modprefs.data.prism.INTERACTION_COLUMNS` (so the draw, the
rendering and the study read them as they read PRISM's) plus :data:`PAIRS_EXTRA_COLUMNS`.

An audio-only side's text condition is the ASR transcript of its audio (:func:`build_pair_interactions`,
``transcript_0/1 = "asr"``), kept with Whisper's word probabilities and screened (:func:`transcript_screen`);
why, and what audio QC does with them: :mod:`modprefs.data.pairs`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from modprefs.data.pairs import PAIRS_EXTRA_COLUMNS, PairsFormatError, PairsTable, read_pairs_table
from modprefs.data.pairs_checks import PairsChecks, pairs_problems, parse_history
from modprefs.visible_text import visible_text


def side_audio(table: PairsTable, value: Any, item: str, k: int, audio_dir: Path | None) -> str | None:
    """Where one side's audio is for the rest of the workflow: the resolved file path, or (a datasets cell) the
    bytes written to ``audio_dir/<prompt id>_<k><suffix>``; None without audio."""
    from modprefs.io import atomic_path
    from modprefs.sampling.draw import prompt_id_for

    if value is None:
        return None
    if not isinstance(value, dict):
        return str(table.audio_path(value))
    if audio_dir is None:
        raise ValueError("datasets Audio cells need an audio_dir to be written to")
    suffix = Path(str(value.get("path") or "")).suffix.lower() or ".wav"
    suffix = suffix if re.fullmatch(r"\.[a-z0-9]{1,5}", suffix) else ".wav"
    target = audio_dir / f"{prompt_id_for(item)}_{k}{suffix}"
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp:
        tmp.write_bytes(value["bytes"])
    return str(target)


@dataclass(frozen=True)
class Transcript:
    """An ASR transcript with Whisper's per-word probabilities (0..1), in spoken order."""

    text: str
    words: tuple[tuple[str, float], ...] = ()

    @property
    def confidence(self) -> float:
        """The mean word probability (NaN without words)."""
        return float(np.mean([p for _, p in self.words])) if self.words else float("nan")


#: audio file path -> its transcript (an audio-only side's text condition)
Transcribe = Callable[[str], Transcript]
#: a transcript -> why it cannot be a text condition ("" when it passes; :func:`transcript_screen`)
ScreenText = Callable[[str], str]


def build_pair_interactions(
    table: PairsTable,
    audio_dir: str | Path | None,
    transcribe: Transcribe | None,
    screen_text: ScreenText | None = None,
) -> pd.DataFrame:
    """conversations.parquet for a pairs source: one interaction per item, sorted by item id.

    Args:
        table: a checked pairs table (:func:`pairs_problems` found nothing).
        audio_dir: where a datasets source's audio bytes are written (one file per side).
        transcribe: audio file path -> transcript; used for audio-only sides (their text condition), required
            when there are any.
        screen_text: the screen of an audio-only side's transcript (``asr_flag_k``); None screens nothing.

    Returns:
        :data:`modprefs.data.prism.INTERACTION_COLUMNS` + :data:`PAIRS_EXTRA_COLUMNS`: ``conversation_id`` is the
        item id, ``conversation_type`` ``"pairs"``, ``turn`` the number of earlier user turns, ``score_k`` empty
        (no PRISM score), ``model_name_k`` the system column, ``transcript_k`` ``given``/``asr``, for ASR sides
        ``asr_confidence_k`` / ``asr_words_k`` / ``asr_flag_k`` (NaN / "" / "" for given text), ``source_row``.
    """
    from modprefs.data.prism import INTERACTION_COLUMNS

    folder = Path(audio_dir) if audio_dir is not None else None
    records = []
    for i, row in enumerate(table.frame.itertuples(index=False)):
        item = row.item_id.strip()
        history = parse_history(row.history)
        rec: dict[str, Any] = {
            "conversation_id": item,
            "conversation_type": "pairs",
            "turn": sum(1 for t in history if t["role"] == "user"),
            "history": history,
            "prompt": row.prompt,
            "stratum_given": row.stratum.strip() or None,
            "source_row": i + table.first_row,
        }
        for k in (0, 1):
            audio = side_audio(table, getattr(row, f"audio_{k}"), item, k, folder)
            text = getattr(row, f"response_{k}")
            source, heard = "given", Transcript(text)
            if not visible_text(text).strip():  # an audio-only side (invisible characters are no text)
                if transcribe is None or audio is None:
                    raise PairsFormatError(f"item {item!r} side {k}: audio-only, and no ASR to transcribe it")
                heard = transcribe(audio)
                text, source = heard.text.strip(), "asr"
                if not text:
                    raise PairsFormatError(
                        f"{table.name}, item {item!r}, column 'audio_{k}': audio-only, and ASR heard no words in it "
                        f"({audio}); give its text in response_{k}"
                    )
            system = getattr(row, f"system_{k}").strip()
            asr = source == "asr"
            rec |= {
                f"response_id_{k}": f"{item}-{k}",
                f"text_{k}": text,
                f"model_name_{k}": system or None,
                f"score_{k}": None,
                f"audio_{k}": audio,
                f"transcript_{k}": source,
                f"asr_confidence_{k}": heard.confidence if asr else float("nan"),
                f"asr_words_{k}": json.dumps([[w, round(p, 4)] for w, p in heard.words]) if asr else "",
                f"asr_flag_{k}": (screen_text(text) if screen_text else "") if asr else "",
            }
        rec["chars_0"], rec["chars_1"] = len(rec["text_0"]), len(rec["text_1"])
        rec["abs_char_diff"] = abs(rec["chars_0"] - rec["chars_1"])
        rec["history_chars"] = sum(len(h["content"]) for h in history)
        rec["history_turns"] = rec["turn"]
        records.append(rec)
    columns = [*INTERACTION_COLUMNS, *PAIRS_EXTRA_COLUMNS]
    out = pd.DataFrame.from_records(records, columns=columns)
    return out.sort_values("conversation_id", kind="stable").reset_index(drop=True)


def load_pairs(
    data: Mapping[str, Any],
    backend: str,
    base_dir: str | Path = ".",
    audio_dir: str | Path | None = None,
    threads: int = 1,
    check_audio: bool = True,
    screen_text: ScreenText | None = None,
) -> pd.DataFrame:
    """The workflow's data step for ``data.format: pairs``: read, check (raising every problem at once) and build the
    interactions, transcribing audio-only sides with the QC's ASR (faster-whisper tiny.en, English forced, word
    probabilities kept) and screening their transcripts with ``screen_text`` (:func:`transcript_screen`).

    Raises:
        PairsFormatError: the table's problems (:func:`pairs_problems`), one per line.
    """
    table = read_pairs_table(str(data["source"]), data.get("columns"), str(data.get("hf_split", "train")), base_dir)
    checks = PairsChecks.from_config({"data": data, "tts": {"backend": backend}})
    problems = pairs_problems(table, checks) if check_audio else []
    if problems:
        raise PairsFormatError("the pairs table has problems:\n  " + "\n  ".join(problems))
    audio_only = any(
        not visible_text(getattr(row, f"response_{k}")).strip()
        for row in table.frame.itertuples(index=False)
        for k in (0, 1)
    )
    transcribe = _asr_transcriber(threads) if audio_only else None
    return build_pair_interactions(table, audio_dir, transcribe, screen_text)


def _asr_transcriber(threads: int) -> Transcribe:
    import soundfile as sf

    from modprefs.speech.qc_models import Transcriber

    model = Transcriber(threads=threads)

    def transcribe(path: str) -> Transcript:
        audio, rate = sf.read(path, dtype="float32", always_2d=True)
        text, words = model.transcribe_words(audio.mean(axis=1), rate)
        return Transcript(text, tuple(words))

    return transcribe


def asr_sides_described(interactions: pd.DataFrame) -> list[str]:
    """One line per audio-only side of a pairs source's interactions: its transcript, mean word probability and
    screening flag (for the data step's log)."""
    lines = []
    for row in interactions.itertuples(index=False):
        for k in (0, 1):
            if getattr(row, f"transcript_{k}") != "asr":
                continue
            flag = getattr(row, f"asr_flag_{k}")
            lines.append(
                f"{row.conversation_id} side {k}: ASR transcript {getattr(row, f'text_{k}')!r} (mean word probability "
                f"{getattr(row, f'asr_confidence_{k}'):.2f}){f'; flagged: {flag}' if flag else ''}"
            )
    return lines


def transcript_screen(screening: Mapping[str, Any], harmful_terms: str | Path) -> ScreenText:
    """The screen of an audio-only side's transcript: the text screen of a drawn PRISM response (config
    ``sampling.screening``, the term list ``harmful_terms``; :func:`modprefs.sampling.screening.screen_interaction`)
    applied to the transcript alone: ``"empty: ..."``, ``"other_language: ..."``, ``"harmful: ..."`` or ""."""
    from modprefs.sampling.screening import screen_from_config

    screen = screen_from_config(screening, harmful_terms)

    def screen_text(text: str) -> str:
        result = screen({"prompt": "", "text_0": text, "text_1": text})
        return f"{result.reason}: {result.detail.replace('response 0 ', 'transcript ', 1)}" if result.reason else ""

    return screen_text
