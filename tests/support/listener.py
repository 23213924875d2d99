"""A model listener for the headphone check: which tone sounds quietest, given how the sound is rendered.

``stereo``: headphones, the left channel in the left ear and the right channel in the right ear.
``mono``: a mono rendering (one loudspeaker, or a stereo sound downmixed to mono): (L + R) / 2 in
both ears. The loudness of a tone is its RMS level averaged over the two ears, measured over the
tone's interval (modprefs.app.headphones.intervals); the answer is the quietest tone (1-based).
With stereo rendering the -6 dB target is the quietest; in mono the antiphase tone cancels to
silence and is chosen instead, which is what makes the test fail without headphones.
"""

from __future__ import annotations

import io

import numpy as np
import soundfile as sf

from modprefs.app import headphones


def ear_signals(stereo: np.ndarray, rendering: str) -> np.ndarray:
    """(n, 2) what reaches the left and right ear for ``rendering`` (``stereo`` or ``mono``)."""
    if rendering == "stereo":
        return stereo
    if rendering == "mono":
        mono = stereo.mean(axis=1, keepdims=True)
        return np.repeat(mono, 2, axis=1)
    raise ValueError(f"unknown rendering {rendering!r}")


def tone_levels(stereo: np.ndarray, sr: int, rendering: str) -> list[float]:
    """RMS per tone interval (averaged over ears) for ``rendering``."""
    ears = ear_signals(stereo, rendering)
    out = []
    for start, end in headphones.intervals():
        seg = ears[int(start * sr) : int(end * sr)]
        out.append(float(np.mean(np.sqrt(np.mean(seg**2, axis=0)))))
    return out


def answer(stereo: np.ndarray, sr: int, rendering: str) -> int:
    levels = tone_levels(stereo, sr, rendering)
    return int(np.argmin(levels)) + 1


def headphone_answers(wavs: list[bytes], rendering: str) -> list[int]:
    """The model listener's answer (1-3) to each WAV of the check."""
    out = []
    for data in wavs:
        x, sr = sf.read(io.BytesIO(data), dtype="float64", always_2d=True)
        assert x.shape[1] == 2, f"the headphone check's sounds must be stereo, got {x.shape[1]} channel(s)"
        out.append(answer(x, sr, rendering))
    return out
