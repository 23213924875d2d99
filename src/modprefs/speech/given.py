"""``tts.backend: given``: the lab's own audio as the study's clips.

A pairs table (:mod:`modprefs.data.pairs`) may carry each response's audio, e.g. what the lab's spoken dialogue
model said. With ``tts.backend: given`` nothing is synthesised: each side's audio is read with soundfile (any
format and rate it reads), mixed to mono (the mean of the channels), resampled to the study rate
(``tts.sample_rate``, default 24 kHz; polyphase, :func:`modprefs.speech.qc.resample`), then loudness-normalised and
QC'd like synthesised audio (:mod:`modprefs.speech.render`). The attention check has no given audio: its two
texts are spoken by ``tts.attention_tts`` (default :data:`DEFAULT_ATTENTION_TTS`), and their level is matched to
the study's by the same normalisation.

What QC must judge on the file *as given* is measured before any of that (:func:`source_measures`): a take clipped
at full scale is no longer at full scale once normalised to -23 LUFS, so clipping (and DC offset) measured on the
study clip would pass it.

A file longer than :data:`modprefs.speech.long_audio.STREAM_ABOVE_S` is read in blocks (:func:`stream_given_mono`)
and resampled and levelled block by block (:mod:`modprefs.speech.long_audio`), so its length (up to the config's
``data.max_audio_s``, checked when the workflow starts) does not decide the memory a render job needs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import soundfile as sf

from modprefs.errors import UserInputError
from modprefs.speech import piper_backend
from modprefs.speech.resample import resample

__all__ = [
    "DEFAULT_ATTENTION_TTS",
    "DEFAULT_SAMPLE_RATE",
    "GivenAudioError",
    "attention_tts_config",
    "given_duration_s",
    "given_sample_rate",
    "read_given_audio",
    "read_given_audio_measured",
    "source_measures",
    "stream_given_mono",
]

#: The study rate given audio is resampled to when ``tts.sample_rate`` is not set (Kokoro's rate).
DEFAULT_SAMPLE_RATE = 24000
#: Who speaks the attention check in a given-audio study when ``tts.attention_tts`` is not set (offline, PyPI).
DEFAULT_ATTENTION_TTS: dict[str, Any] = {
    "backend": piper_backend.NAME,
    "voice": piper_backend.DEFAULT_VOICE,
    "lang": "en-us",
}


class GivenAudioError(UserInputError):
    """A given audio file cannot be read or holds no usable samples; names the clip and the file."""


def given_sample_rate(tts: Mapping[str, Any]) -> int:
    """The study rate of a given-audio study (Hz)."""
    return int(tts.get("sample_rate") or DEFAULT_SAMPLE_RATE)


def attention_tts_config(tts: Mapping[str, Any]) -> dict[str, Any]:
    """The tts block that speaks the attention check in a given-audio study."""
    return dict(tts.get("attention_tts") or DEFAULT_ATTENTION_TTS)


#: A sample at or above this magnitude (full scale 1.0) counts as clipped (as the manifest's ``clipping_ratio``).
CLIP_LEVEL = 0.999
#: Columns :func:`source_measures` fills (NaN for synthesised clips).
SOURCE_COLUMNS = ["source_peak", "source_clipping_ratio", "source_dc_offset"]


def source_measures(frames: np.ndarray) -> dict[str, float]:
    """Signal measures of a file as given, ``frames`` float ``(n_samples, n_channels)``, full scale 1.0.

    Returns:
        ``source_peak`` (largest magnitude of any channel), ``source_clipping_ratio`` (share of the samples, over
        every channel, at or above :data:`CLIP_LEVEL`) and ``source_dc_offset`` (the largest magnitude of a channel's
        mean, full-scale units).
    """
    x = np.abs(np.asarray(frames, dtype=np.float64))
    return {
        "source_peak": float(x.max()),
        "source_clipping_ratio": float(np.mean(x >= CLIP_LEVEL)),
        "source_dc_offset": float(np.max(np.abs(np.asarray(frames, dtype=np.float64).mean(axis=0)))),
    }


def read_given_audio(path: str | os.PathLike[str], sample_rate: int, clip_id: str = "") -> np.ndarray:
    """One given clip as the study uses it: mono float32 ``(n_samples,)`` at ``sample_rate`` Hz, full scale 1.0.

    Multichannel audio is averaged over its channels; integer PCM is scaled to [-1, 1) by soundfile.

    Raises:
        GivenAudioError: unreadable, empty, or non-finite samples (names the clip and the file).
    """
    return read_given_audio_measured(path, sample_rate, clip_id)[0]


def read_given_audio_measured(
    path: str | os.PathLike[str], sample_rate: int, clip_id: str = ""
) -> tuple[np.ndarray, dict[str, float]]:
    """(:func:`read_given_audio`, :func:`source_measures` of the file as given), from one read of the file."""
    try:
        audio, rate = sf.read(str(path), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, OSError) as err:
        raise GivenAudioError(f"clip {clip_id}: given audio {path} cannot be read ({str(err).strip()})") from None
    if audio.shape[0] == 0:
        raise GivenAudioError(f"clip {clip_id}: given audio {path} has no samples")
    mono = audio.mean(axis=1, dtype=np.float64).astype(np.float32)
    if not np.all(np.isfinite(mono)):
        raise GivenAudioError(f"clip {clip_id}: given audio {path} has NaN or infinite samples")
    return resample(mono, int(rate), int(sample_rate)), source_measures(audio)


#: frames per block when a long file is read in blocks (:func:`stream_given_mono`)
READ_BLOCK = 1 << 18


def given_duration_s(path: str | os.PathLike[str]) -> float | None:
    """The duration of a given file from its header (seconds); None when soundfile cannot read the header."""
    try:
        info = sf.info(str(path))
    except (sf.LibsndfileError, RuntimeError, OSError):
        return None
    return info.frames / info.samplerate if info.samplerate else None


def stream_given_mono(
    path: str | os.PathLike[str], clip_id: str, append: Callable[[np.ndarray], None]
) -> tuple[int, dict[str, float]]:
    """:func:`read_given_audio_measured` of a long file, in blocks: each block mixed to mono float32 is handed to
    ``append``; returns (the file's rate, :func:`source_measures` of the file as given, accumulated over the blocks).

    Raises:
        GivenAudioError: as :func:`read_given_audio_measured`.
    """
    peak, clipped, count, frames = 0.0, 0, 0, 0
    sums: np.ndarray | None = None
    try:
        with sf.SoundFile(str(path)) as f:
            rate = int(f.samplerate)
            for block in f.blocks(blocksize=READ_BLOCK, dtype="float32", always_2d=True):
                mono = block.mean(axis=1, dtype=np.float64).astype(np.float32)
                if not np.all(np.isfinite(mono)):
                    raise GivenAudioError(f"clip {clip_id}: given audio {path} has NaN or infinite samples")
                magnitude = np.abs(block.astype(np.float64))  # compared in float64, as source_measures
                peak = max(peak, float(magnitude.max()))
                clipped += int(np.count_nonzero(magnitude >= CLIP_LEVEL))
                count += block.size
                frames += block.shape[0]
                column = block.sum(axis=0, dtype=np.float64)
                sums = column if sums is None else sums + column
                append(mono)
    except (sf.LibsndfileError, RuntimeError, OSError) as err:
        raise GivenAudioError(f"clip {clip_id}: given audio {path} cannot be read ({str(err).strip()})") from None
    if frames == 0 or sums is None:
        raise GivenAudioError(f"clip {clip_id}: given audio {path} has no samples")
    measures = {
        "source_peak": peak,
        "source_clipping_ratio": clipped / count,
        "source_dc_offset": float(np.max(np.abs(sums / frames))),
    }
    return rate, measures
