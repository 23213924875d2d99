"""Sample-rate conversion of mono audio (one implementation for QC's ASR and DNSMOS input and given audio)."""

from __future__ import annotations

from math import gcd

import numpy as np

__all__ = ["resample"]

#: faster-whisper's and DNSMOS' input rate (Hz).
ASR_SAMPLE_RATE = 16000


def resample(audio: np.ndarray, sample_rate: int, target: int = ASR_SAMPLE_RATE) -> np.ndarray:
    """Polyphase resampling (scipy ``resample_poly``) of mono float audio to ``target`` Hz, float32."""
    x = np.asarray(audio, dtype=np.float32).reshape(-1)
    sample_rate, target = int(sample_rate), int(target)
    if sample_rate == target:
        return x
    from scipy.signal import resample_poly

    g = gcd(sample_rate, target)
    return resample_poly(x, target // g, sample_rate // g).astype(np.float32)
