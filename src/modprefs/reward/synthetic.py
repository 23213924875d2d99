"""Speech-like synthetic audio and clip manifests for tests and benchmarks of the reward models (no TTS needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import soundfile as sf

from modprefs.reward.pairs import degradation_pairs

SR = 16_000
SENTENCES = [
    "The train leaves at nine tomorrow morning.", "Could you pass me the salt, please?",
    "I think the meeting went rather well today.", "Rain is expected later this afternoon.",
    "She planted tomatoes along the garden fence.", "Let's meet outside the library at noon.",
    "The recipe needs two cups of flour.", "My brother moved to a small town last year.",
    "Turn left after the second traffic light.", "We watched the stars from the hilltop.",
]


def speechlike(seed: int, seconds: float = 1.6, sr: int = SR) -> np.ndarray:
    """A voiced, syllable-modulated harmonic signal with a wandering pitch (no TTS needed)."""
    rng = np.random.default_rng(seed)
    n = int(seconds * sr)
    t = np.arange(n) / sr
    f0 = rng.uniform(100, 220) * (1 + 0.15 * np.sin(2 * np.pi * rng.uniform(0.3, 1.2) * t + rng.uniform(0, 6)))
    phase = 2 * np.pi * np.cumsum(f0) / sr
    amps = rng.uniform(0.2, 1.0, size=12) / np.arange(1, 13)
    wave = sum(a * np.sin(k * phase) for k, a in zip(range(1, 13), amps))
    syll = np.clip(np.sin(2 * np.pi * rng.uniform(3, 5) * t + rng.uniform(0, 6)), 0, None) ** 0.7
    wave = wave * syll + 0.003 * rng.standard_normal(n)
    return (0.3 * wave / np.max(np.abs(wave))).astype(np.float32)


def write_clips(directory: Path, n: int, seed: int = 0, seconds: float = 1.6) -> pd.DataFrame:
    """n clips as a manifest (clip_id, prompt_id, path, spoken_text)."""
    directory.mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(n):
        path = directory / f"c{i:03d}_0.wav"
        sf.write(path, speechlike(seed * 1000 + i, seconds), SR)
        rows.append({"clip_id": f"c{i:03d}_0", "prompt_id": f"c{i:03d}", "path": str(path),
                     "spoken_text": SENTENCES[i % len(SENTENCES)]})
    return pd.DataFrame(rows)


def fidelity_pairs(directory: Path, n_clips: int, per_clip: int = 3, seed: int = 0) -> pd.DataFrame:
    return degradation_pairs(write_clips(directory, n_clips, seed), per_clip=per_clip, seed=seed)
