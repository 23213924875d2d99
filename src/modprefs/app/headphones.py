"""Headphone screening: the antiphase test of Woods, Siegel, Traer & McDermott (2017), made with numpy.

Each of :data:`N_TRIALS` trials is one stereo sound of three 200 Hz tones (1 s each, 100 ms
raised-cosine ramps, 0.5 s of silence between them) in a random order:

* ``standard``: the same sine in both channels at the reference level;
* ``antiphase``: the sine in the left channel and its inverse (180 degrees out of phase) in the
  right, at the reference level;
* ``target``: the sine in both channels 6 dB below the reference.

The listener answers which tone was the quietest. Over headphones each ear gets one channel, so the
antiphase tone is as loud as the standard and the target is the quietest. Over loudspeakers the
two channels of the antiphase tone cancel in the air (and in a mono downmix, L + R, they cancel
exactly), so it is the quietest and is chosen instead. Passing needs at least :data:`PASS_MIN`
correct answers (the original criterion: 5 of 6).

The order of the tones in each trial comes from a seeded generator (study seed x participant key),
so a participant's stimuli are reproducible and the server can score the answers without storing them.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Sequence

import numpy as np

SR = 22050  # Hz
FREQ_HZ = 200.0
TONE_S = 1.0
RAMP_S = 0.1
GAP_S = 0.5
LEVEL = 0.25  # reference amplitude (full scale = 1)
TARGET_DB = -6.0
N_TRIALS = 6
PASS_MIN = 5
KINDS = ("standard", "antiphase", "target")


def trial_orders(seed: int, key: int, n: int = N_TRIALS) -> list[tuple[str, str, str]]:
    """The tone order of each of ``n`` trials for participant ``key`` (a permutation of :data:`KINDS`)."""
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, int(key) & 0xFFFFFFFF, 0x48505453])
    return [tuple(KINDS[i] for i in rng.permutation(3)) for _ in range(n)]  # type: ignore[misc]


def correct_answer(order: tuple[str, ...]) -> int:
    """The 1-based position of the quietest tone (the target) in ``order``."""
    return order.index("target") + 1


def intervals() -> list[tuple[float, float]]:
    """(start_s, end_s) of the three tones within a trial's sound."""
    return [(k * (TONE_S + GAP_S), k * (TONE_S + GAP_S) + TONE_S) for k in range(3)]


def _tone() -> np.ndarray:
    t = np.arange(int(round(TONE_S * SR))) / SR
    env = np.ones_like(t)
    n_ramp = int(round(RAMP_S * SR))
    ramp = 0.5 - 0.5 * np.cos(np.pi * np.arange(n_ramp) / n_ramp)  # raised cosine, 0 -> 1
    env[:n_ramp] = ramp
    env[-n_ramp:] = ramp[::-1]
    return np.sin(2 * np.pi * FREQ_HZ * t) * env


def stimulus(order: tuple[str, ...]) -> np.ndarray:
    """The trial's sound, shape (n_samples, 2) float32 (left, right), at :data:`SR` Hz."""
    tone = LEVEL * _tone()
    gap = np.zeros(int(round(GAP_S * SR)))
    parts: list[np.ndarray] = []
    for k, kind in enumerate(order):
        if kind == "standard":
            left, right = tone, tone
        elif kind == "antiphase":
            left, right = tone, -tone
        elif kind == "target":
            quiet = tone * 10 ** (TARGET_DB / 20)
            left, right = quiet, quiet
        else:
            raise ValueError(f"unknown tone kind {kind!r}")
        parts.append(np.stack([left, right], axis=1))
        if k < len(order) - 1:
            parts.append(np.stack([gap, gap], axis=1))
    return np.concatenate(parts).astype(np.float32)


@functools.lru_cache(maxsize=8)
def wav_bytes(order: tuple[str, ...]) -> bytes:
    """The trial's sound as a 16-bit stereo WAV file (one of 6 orders: cached)."""
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, stimulus(order), SR, format="WAV", subtype="PCM_16")
    return buf.getvalue()


@functools.lru_cache(maxsize=1)
def calibration_wav() -> bytes:
    """A diotic reference tone (the standard alone) to set a comfortable volume before the test."""
    import soundfile as sf

    tone = LEVEL * _tone()
    buf = io.BytesIO()
    sf.write(buf, np.stack([tone, tone], axis=1).astype(np.float32), SR, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def score(orders: Sequence[tuple[str, ...]], answers: Sequence[int]) -> tuple[int, bool]:
    """(number correct, passed) for 1-based ``answers`` to ``orders``."""
    if len(answers) != len(orders):
        raise ValueError(f"expected {len(orders)} answers, got {len(answers)}")
    correct = sum(int(a == correct_answer(o)) for o, a in zip(orders, answers))
    return correct, correct >= PASS_MIN
