"""Audio QC's measurements, reused by the offline audio judges: each model runs once per clip.

The speech stage's QC (:mod:`modprefs.speech.qc`, rule ``audio_qc``) already transcribes every clip with
Whisper tiny.en and scores it with DNSMOS; the offline judge's cascade (transcript -> text model) and its
audio-quality judge (DNSMOS OVRL) would run the same models on the same bytes again. QC records the SHA-256 of
the bytes it measured (``audio_sha256``, joined into ``results/audio/manifest.csv``); the judge takes QC's
transcript and scores for an audio whose hash matches, and computes them itself only for audio QC never saw.

Reuse needs the same models with the same settings: QC runs the PyPI tiny.en (``language="en"``,
``beam_size=1``) and DNSMOS with its own 1 s hop, so a judge with another ``asr_model_path`` or
``dnsmos_hop_s`` computes everything itself (:func:`reuse_allowed`). Outputs are identical either way: the
same model sees the same samples (checked in tests/judges/test_judges_local.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

DNSMOS_KEYS = ("sig", "bak", "ovrl", "p808")
#: QC's DNSMOS hop (modprefs.speech.qc.QualityChecker's default, which rule audio_qc uses)
QC_DNSMOS_HOP_S = 1.0


@dataclass(frozen=True)
class QcMeasures:
    """What QC measured on one audio: the Whisper transcript (None: ASR off) and DNSMOS scores (None: off)."""

    transcript: str | None
    dnsmos: dict[str, float] | None


def reuse_allowed(asr_model_path: str | None, dnsmos_hop_s: float) -> bool:
    """Whether a local judge with these settings runs QC's models with QC's settings."""
    return asr_model_path is None and float(dnsmos_hop_s) == QC_DNSMOS_HOP_S


def qc_measures(manifest: pd.DataFrame) -> dict[str, QcMeasures]:
    """``{audio sha256: QcMeasures}`` from a table with QC's columns (the study manifest or qc.csv).

    A row without ``audio_sha256`` (QC of an older run, an unreadable clip) gives nothing; a transcript counts only
    where QC's ASR ran (``wer`` present), scores only where all four DNSMOS values are finite.
    """
    if "audio_sha256" not in manifest.columns:
        return {}
    out: dict[str, QcMeasures] = {}
    for row in manifest.to_dict("records"):
        sha = row.get("audio_sha256")
        if not isinstance(sha, str) or not sha:
            continue
        transcript = _transcript(row)
        scores = {k: _float(row.get(f"dnsmos_{k}")) for k in DNSMOS_KEYS}
        dnsmos = scores if all(math.isfinite(v) for v in scores.values()) else None
        if transcript is not None or dnsmos is not None:
            out[sha] = QcMeasures(transcript, dnsmos)
    return out


def read_qc_measures(manifest_csv: str | None) -> dict[str, QcMeasures]:
    """:func:`qc_measures` of a study manifest CSV read as text (floats exactly as QC wrote them); {} for None."""
    if manifest_csv is None:
        return {}
    return qc_measures(pd.read_csv(manifest_csv, dtype=str, keep_default_na=False))


def _transcript(row: Mapping[str, Any]) -> str | None:
    if not math.isfinite(_float(row.get("wer"))):
        return None
    text = row.get("transcript")
    return "" if text is None or (isinstance(text, float) and math.isnan(text)) else str(text)


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
