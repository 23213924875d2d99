"""Synthetic audio for the speech tests."""

from __future__ import annotations

import numpy as np
from scipy.signal import butter, sosfilt


def speech_like(sr: int, seconds: float = 6.0, level_db: float = 0.0, seed: int = 1) -> np.ndarray:
    """Bursty voiced/unvoiced signal: 4 Hz syllables, random pauses, 120 Hz +- 30 Hz harmonics, 2-6 kHz noise."""
    rng = np.random.default_rng(seed)
    n = int(sr * seconds)
    t = np.arange(n) / sr
    syllables = np.clip(np.sin(2 * np.pi * 4 * t + rng.uniform(0, 6)), 0, None) ** 2
    pauses = np.repeat(rng.uniform(size=int(seconds * 4) + 1) > 0.3, sr // 4 + 1)[:n]
    phase = 2 * np.pi * np.cumsum(120 + 30 * np.sin(2 * np.pi * 0.5 * t)) / sr
    voiced = sum(np.sin(k * phase) / k for k in range(1, 20))
    noise = sosfilt(butter(4, [2000, min(6000, 0.45 * sr)], "bandpass", fs=sr, output="sos"), rng.normal(size=n))
    x = syllables * pauses * (0.3 * voiced + 0.5 * noise)
    return 0.5 * x / np.abs(x).max() * 10 ** (level_db / 20)
