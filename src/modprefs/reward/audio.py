"""Audio for the reward models: reading (mono, resampled, truncated), degradations, log-mel.

Degradations make the "does it really listen" pairs (clean vs degraded rendition of the same
text, :func:`modprefs.reward.speech_pairs.degradation_pairs`). Each is a pure function of the waveform
and a spec ``{"kind": ..., "seed": ..., <params>}``; the spec travels with the pair as JSON, so
the same degradation can be re-applied to another engine's rendition (out-of-distribution
evaluation) and the degraded audio need not be stored.

- ``noise``: white Gaussian noise at ``snr_db`` (signal-to-noise ratio over the whole clip);
- ``clipping``: gain ``gain`` then hard clipping at ``level`` × the clip's peak;
- ``lowpass``: 4th-order Butterworth low-pass at ``cutoff_hz`` (zero-phase).
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from modprefs.errors import UserInputError

SAMPLE_RATE = 16_000
DEGRADATIONS = ("noise", "clipping", "lowpass")
DEFAULT_PARAMS = {"noise": {"snr_db": 10.0}, "clipping": {"gain": 4.0, "level": 0.3}, "lowpass": {"cutoff_hz": 1500.0}}


class AudioReadError(UserInputError):
    """An audio file is missing or unreadable; the message names it."""


def degradation_spec(kind: str, seed: int, **params: Any) -> str:
    if kind not in DEGRADATIONS:
        raise ValueError(f"unknown degradation {kind!r}; choose one of {', '.join(DEGRADATIONS)}")
    spec = {"kind": kind, "seed": int(seed), **DEFAULT_PARAMS[kind], **params}
    return json.dumps(spec, sort_keys=True)


def degrade(wave: np.ndarray, sr: int, spec: str | dict) -> np.ndarray:
    """Apply a degradation spec (JSON string or dict) to a mono float waveform."""
    spec = json.loads(spec) if isinstance(spec, str) else dict(spec)
    kind = spec["kind"]
    wave = np.asarray(wave, dtype=np.float64)
    if kind == "noise":
        rng = np.random.default_rng(int(spec["seed"]))
        power = float(np.mean(wave**2)) or 1e-8
        noise = rng.standard_normal(wave.shape) * math.sqrt(power / 10 ** (float(spec["snr_db"]) / 10))
        out = wave + noise
    elif kind == "clipping":
        peak = float(np.max(np.abs(wave))) or 1.0
        level = float(spec["level"]) * peak
        out = np.clip(wave * float(spec["gain"]), -level, level)
    elif kind == "lowpass":
        from scipy.signal import butter, sosfiltfilt

        cutoff = min(float(spec["cutoff_hz"]), 0.45 * sr)
        sos = butter(4, cutoff, btype="low", fs=sr, output="sos")
        out = sosfiltfilt(sos, wave) if len(wave) > 27 else wave
    else:
        raise ValueError(f"unknown degradation {kind!r}; choose one of {', '.join(DEGRADATIONS)}")
    return out.astype(np.float32)


def check_audio(path: str | Path) -> None:
    """Raise :class:`AudioReadError` naming ``path`` if it is missing or not a readable sound file."""
    p = Path(path)
    if not p.is_file():
        raise AudioReadError(f"audio file not found: {p}")
    try:
        info = sf.info(str(p))
    except Exception as exc:  # soundfile raises LibsndfileError/RuntimeError
        raise AudioReadError(f"audio file unreadable: {p} ({exc})") from exc
    if info.frames == 0:
        raise AudioReadError(f"audio file is empty (0 samples): {p}")


def load_audio(
    path: str | Path, sr: int = SAMPLE_RATE, max_s: float | None = None, transform: str | None = None
) -> np.ndarray:
    """Mono float32 audio at ``sr`` Hz, degraded by ``transform`` (a spec) and cut to ``max_s`` s."""
    try:
        wave, file_sr = sf.read(str(path), dtype="float32", always_2d=True)
    except Exception as exc:
        raise AudioReadError(f"audio file unreadable: {path} ({exc})") from exc
    wave = wave.mean(axis=1)
    if transform:
        wave = degrade(wave, file_sr, transform)
    if max_s is not None:
        wave = wave[: int(round(max_s * file_sr))]
    if file_sr != sr:
        from scipy.signal import resample_poly

        g = math.gcd(int(file_sr), int(sr))
        wave = resample_poly(wave, sr // g, file_sr // g).astype(np.float32)
    return np.ascontiguousarray(wave, dtype=np.float32)


@lru_cache(maxsize=8)
def _mel_filters(n_mels: int, n_fft: int, sr: int) -> np.ndarray:
    from transformers.audio_utils import mel_filter_bank

    return mel_filter_bank(
        num_frequency_bins=n_fft // 2 + 1,
        num_mel_filters=n_mels,
        min_frequency=0.0,
        max_frequency=sr / 2,
        sampling_rate=sr,
        norm="slaney",
        mel_scale="slaney",
    ).astype(np.float32)


def log_mel(wave: np.ndarray, n_mels: int = 64, sr: int = SAMPLE_RATE, n_fft: int = 400, hop: int = 160) -> np.ndarray:
    """Log-mel spectrogram ``[n_mels, frames]`` (Whisper's scaling without per-clip normalisation,
    so level, noise floor and bandwidth stay visible)."""
    import torch

    x = torch.from_numpy(np.asarray(wave, dtype=np.float32))
    if x.numel() < n_fft:
        x = torch.nn.functional.pad(x, (0, n_fft - x.numel()))
    spec = torch.stft(x, n_fft, hop, window=torch.hann_window(n_fft), return_complex=True).abs() ** 2
    mel = torch.from_numpy(_mel_filters(n_mels, n_fft, sr)).T @ spec
    return ((torch.log10(mel.clamp_min(1e-10)) + 4.0) / 4.0).numpy().astype(np.float32)
