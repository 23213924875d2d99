"""Which audio-QC thresholds should ``tts.backend: given`` (a lab's own audio) default to?

``qc.DEFAULT_THRESHOLDS`` were set on the project's neural voices (benchmarks/out/tts_qc.json); a lab
that brought ordinary synthetic speech (espeak-ng at several rates, stored at 16-48 kHz, some stereo)
saw most clips fail on WER and DNSMOS. This benchmark measures every QC metric on

* ordinary speech a lab would bring: the 24 English assistant answers of :data:`TEXTS` (8-40 words,
  numbers, names, lists) read by espeak-ng (5 voices x 6 speeds 0.8-1.3, each combination once:
  30 clips), piper (``en_US-joe-medium``, speeds 0.8-1.2, 12 clips) and kokoro-onnx (3 bundled
  voices, 6 clips), each stored as a lab's file would be: 16 / 22.05 / 44.1 / 48 kHz, every third
  clip stereo, 16-bit / 24-bit / float WAV, a gain drawn from -12..+12 dB (capped so the file peaks
  at 0.98: a lab's export does not clip);
* degraded copies of 4 of those files (2 espeak-ng, 1 piper, 1 kokoro-onnx) that QC must still
  catch: digital silence, white noise at 0 and -5 dB SNR (against the clip's mean power), +20 dB
  then hard-clipped at full scale, the first 20 % only, 2 s of silence inserted mid-clip, 3 s of
  leading silence, 2x faster (resampled, same header rate), and the audio paired with another
  item's text (the one closest in word count, so that only WER can tell);

each processed exactly as the study processes given audio (``given.read_given_audio``: mono mix,
polyphase resample to 24 kHz; ``render.level_clip`` to -23 LUFS with a -1 dBTP limiter;
``render.write_wav`` 16-bit) and scored by ``qc.QualityChecker(threads=1)`` with every threshold
disabled. It reports each metric's distribution (min, 5th pct, median, 95th pct, max) per engine and
per degradation, the pass rate under the current defaults, and proposes a bound per check:

    data bound = the most extreme ordinary value moved outwards by the check's MARGINS entry,
                 rounded outwards to its step (so it passes every ordinary clip with that margin);
    proposed   = the looser of the current default and the data bound (the sample is synthetic
                 speech of chosen texts, so a default a lab's recordings may need is not tightened);
                 for the silence checks only (TIGHTEN_IF_CATCHES), the data bound where it catches
                 more degraded clips than the default.

For each proposed bound: ordinary pass rate per engine and the share of each degradation it catches;
whether one bound of a metric can pass all ordinary clips (all engines, espeak-ng alone, the neural
voices alone) and still catch a degradation (e.g. WER: espeak-ng vs the swapped-text clips).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/validity/given_qc_defaults.py [--keep-audio DIR] [--quick]
    .venv/bin/python benchmarks/validity/given_qc_defaults.py --from-rows DIR/rows.json   # re-analyse only

One thread everywhere (engines, Whisper, DNSMOS); deterministic (fixed seeds; piper's onnxruntime
seed 0 and fixed rendering order). About 11 min of CPU on one core (measured 657 s: kokoro-onnx
synthesis 108 s, QC 3-10 s per clip). Writes
benchmarks/out/given_qc_defaults.json and .md (``--quick``: 2 texts, 1 degraded base, prints only).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Mapping  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

from modprefs.speech.backends import get_backend  # noqa: E402
from modprefs.speech.given import read_given_audio  # noqa: E402
from modprefs.speech.qc import DEFAULT_THRESHOLDS, QualityChecker, check_thresholds  # noqa: E402
from modprefs.speech.render import level_clip, write_wav  # noqa: E402
from modprefs.speech.resample import resample  # noqa: E402

THREADS = 1
SEED = 20240611
STUDY_RATE = 24000
LEVEL = {"target_lufs": -23.0, "true_peak_dbfs": -1.0}
STORE_RATES = [16000, 22050, 44100, 48000]
SUBTYPES = ["PCM_16", "PCM_24", "FLOAT"]
GAIN_DB = (-12.0, 12.0)
MAX_FILE_PEAK = 0.98

TEXTS = [
    "The capital of Australia is Canberra, not Sydney.",
    "Sure, your meeting with Doctor Patel is on Thursday at 10 in room 204.",
    "Jane Austen wrote six novels, including Pride and Prejudice, Emma, and Persuasion.",
    "The average adult needs between seven and nine hours of sleep each night.",
    "Mount Everest is 8,849 metres tall, which is about 29,032 feet above sea level.",
    "Here are four good names for a golden retriever: Sunny, Maple, Biscuit, and Cooper.",
    "A medium banana has about 105 calories, 27 grams of carbohydrate, and 3 grams of fibre.",
    "You need three things for pancakes: flour, milk, and two eggs. A pinch of salt helps too.",
    "Your package left the warehouse in Memphis this morning and should arrive by Friday, March 14th.",
    "The train from Boston to New York takes roughly 4 hours, and a standard ticket costs around $89.",
    "Your balance is $1,250.75, and the next payment of $310 is due on the 3rd of next month.",
    "The Great Fire of London started in 1666 in a bakery on Pudding Lane and burned for four days.",
    "Jupiter has 95 known moons. The four largest, Io, Europa, Ganymede, and Callisto, "
    "were discovered by Galileo in 1610.",
    "Yes, you can take the number 12 bus from the station. It leaves every 15 minutes "
    "and stops right outside the museum.",
    "The flight to Lisbon leaves from gate 22 and boards 40 minutes before take off, "
    "so please be there by a quarter past two.",
    "To reset the router, hold the button on the back for 30 seconds, wait until the light "
    "turns green, then reconnect your laptop.",
    "Marie Curie won two Nobel Prizes, in physics in 1903 and in chemistry in 1911, and she "
    "remains the only person honoured in two different sciences.",
    "Water boils at 100 degrees Celsius at sea level, but at the top of Mont Blanc it boils "
    "closer to 85 degrees, because the air pressure is lower.",
    "I would start with a simple budget: put 50% of your income toward needs, 30% toward wants, "
    "and the remaining 20% into savings or paying off debt.",
    "The recipe serves 6 people. Preheat the oven to 180 degrees, grease a round tin, and bake "
    "the cake for 35 to 40 minutes until a skewer comes out clean.",
    "Tokyo, Delhi, and Shanghai are the three largest cities in the world by population, and "
    "together they are home to more than 90 million people.",
    "Photosynthesis turns sunlight, water, and carbon dioxide into sugar and oxygen. It happens "
    "mostly in the leaves, inside small structures called chloroplasts.",
    "For a beginner, I would suggest running three times a week: twenty minutes on Monday, "
    "twenty five on Wednesday, and thirty on Saturday, with a rest day between runs.",
    "Please bring your passport, two printed copies of the booking, a pen, a phone charger, and "
    "about 50 euros in cash for the taxi from the airport to the hotel in the city centre.",
]
#: Short dialogue turns (3-9 words): Whisper tiny has little context in them, so their WER says less (measured:
#: wer_min_words below).
SHORT_TEXTS = [
    "Two hours is usually enough.",
    "Yes, that works for me.",
    "It is twelve degrees outside.",
    "Go to bed at the same time every night.",
    "I'm sorry, I can't help with that.",
    "The store closes at nine tonight.",
    "Try turning it off and on again.",
    "About forty minutes by car.",
    "Sure, here you go.",
    "No, the meeting is on Tuesday.",
    "Drink more water and rest.",
    "That depends on the weather tomorrow.",
]
N_LONG = len(TEXTS)
TEXTS = TEXTS + SHORT_TEXTS
ESPEAK_VOICES = ["en-us", "en-gb", "en-us+f3", "en-gb-x-rp", "en-us+m3"]
ESPEAK_SPEEDS = [0.8, 0.9, 1.0, 1.1, 1.2, 1.3]
PIPER_SPEEDS = [0.8, 0.9, 1.0, 1.1, 1.2]
KOKORO_VOICES = [("jf_alpha", 1.0), ("jf_nezumi", 0.9), ("jm_kumo", 1.1)]
ENGINES = ["espeak-ng", "piper", "kokoro-onnx"]
BASES_PER_ENGINE = {"espeak-ng": 2, "piper": 1, "kokoro-onnx": 1}

METRICS = [
    "duration_s",
    "rms_dbfs",
    "peak",
    "clipping_ratio",
    "leading_silence_s",
    "trailing_silence_s",
    "internal_silence_s",
    "speech_s",
    "words_per_s",
    "chars_per_s",
    "wer",
    "dnsmos_sig",
    "dnsmos_bak",
    "dnsmos_ovrl",
    "dnsmos_p808",
    "source_peak",  # the file as given (before mono, resampling and levelling): given.source_measures
    "source_clipping_ratio",
    "source_dc_offset",
    "asr_confidence",  # Whisper's mean word probability of the file as given (an audio-only side's transcript)
]

# check -> (how the margin applies, margin, rounding step). "abs": extreme +/- margin; "rel": extreme
# x (1 + margin) for max_, / (1 + margin) for min_.
MARGINS: dict[str, tuple[str, float, float]] = {
    "min_duration_s": ("rel", 0.5, 0.1),
    "max_duration_s": ("rel", 0.5, 10.0),
    "min_rms_dbfs": ("abs", 6.0, 1.0),
    "max_clipping_ratio": ("abs", 0.001, 0.001),
    "max_leading_silence_s": ("abs", 0.5, 0.1),
    "max_trailing_silence_s": ("abs", 0.5, 0.1),
    "max_internal_silence_s": ("abs", 0.5, 0.1),
    "min_words_per_s": ("rel", 0.2, 0.1),
    "max_words_per_s": ("rel", 0.2, 0.1),
    "min_chars_per_s": ("rel", 0.2, 0.5),
    "max_chars_per_s": ("rel", 0.2, 0.5),
    "max_wer": ("abs", 0.1, 0.05),
    "min_dnsmos_ovrl": ("abs", 0.2, 0.05),
    "max_source_clipping_ratio": ("abs", 0.001, 0.001),
    "max_source_dc_offset": ("abs", 0.02, 0.01),
    "min_asr_confidence": ("abs", 0.1, 0.05),
}
# Checks a data bound may tighten when that catches more degraded clips: none. The talkers here are synthetic; a
# lab's own recordings (people, or models that pause as people do) pause longer than these voices, so no default
# is tightened on their evidence (the internal-silence data bound, 1.6 s, would catch the one 2.00 s inserted
# pause the default 2.0 misses, at the cost of natural pauses); defaults are only ever loosened.
TIGHTEN_IF_CATCHES: set[str] = set()


def n_words(text: str) -> int:
    return len(text.split())


def plan_ordinary(n_texts: int) -> list[dict[str, Any]]:
    """Every ordinary clip: engine config, text index and how the lab stored it.

    espeak-ng reads every text once and every fourth text (1, 5, 9, ...) a second time, 30 clips that take each
    of the 30 voice x speed combinations once; piper every other text; kokoro-onnx every fourth (1, 5, 9, ...).
    """
    plan: list[dict[str, Any]] = []
    espeak_texts = [*range(n_texts), *range(1, n_texts, 4)]
    for c, i in enumerate(espeak_texts):
        voice, speed = ESPEAK_VOICES[c % 5], ESPEAK_SPEEDS[(c // 5) % 6]
        cfg = {"backend": "espeak-ng", "voice": voice, "lang": voice.split("+")[0][:5], "speed": speed}
        plan.append({"engine": "espeak-ng", "cfg": cfg, "text": i})
    for j, i in enumerate(range(0, n_texts, 2)):
        cfg = {"backend": "piper", "voice": "en_US-joe-medium", "lang": "en-us", "speed": PIPER_SPEEDS[j % 5]}
        plan.append({"engine": "piper", "cfg": cfg, "text": i})
    for j, i in enumerate(range(1, n_texts, 4)):
        voice, speed = KOKORO_VOICES[j % 3]
        cfg = {"backend": "kokoro-onnx", "voice": voice, "lang": "en-us", "speed": speed}
        plan.append({"engine": "kokoro-onnx", "cfg": cfg, "text": i})
    rng = np.random.default_rng(SEED)
    for n, clip in enumerate(plan):
        clip.update(
            id=f"o{n:03d}",
            store_rate=STORE_RATES[n % 4],
            channels=2 if n % 3 == 2 else 1,
            subtype=SUBTYPES[(n // 4) % 3],
            gain_db=float(rng.uniform(*GAIN_DB)),
        )
    return plan


def synthesize(plan: list[dict[str, Any]]) -> tuple[dict[str, np.ndarray], dict[str, int], dict[str, float]]:
    """Engine audio of every planned clip, one backend per config, in plan order; CPU seconds per engine."""
    audio: dict[str, np.ndarray] = {}
    rates: dict[str, int] = {}
    cpu: dict[str, float] = dict.fromkeys(ENGINES, 0.0)
    groups: dict[str, list[dict[str, Any]]] = {}
    for clip in plan:
        groups.setdefault(json.dumps(clip["cfg"], sort_keys=True), []).append(clip)
    for key, clips in groups.items():
        t0 = time.process_time()
        backend = get_backend(json.loads(key), threads=THREADS)
        for clip in clips:
            audio[clip["id"]] = np.asarray(backend.synthesize(TEXTS[clip["text"]]), dtype=np.float32)
            rates[clip["id"]] = int(backend.sample_rate)
        del backend
        cpu[clips[0]["engine"]] += time.process_time() - t0
        print(f"synth {key}: {len(clips)} clips", file=sys.stderr)
    return audio, rates, cpu


def to_lab_file(clip: dict[str, Any], x: np.ndarray, rate: int) -> np.ndarray:
    """The engine audio as the lab stored it: resampled, gain (capped at MAX_FILE_PEAK), channels."""
    y = resample(x, rate, clip["store_rate"]).astype(np.float64)
    gain = 10.0 ** (clip["gain_db"] / 20.0)
    peak = float(np.max(np.abs(y))) if y.size else 0.0
    if peak * gain > MAX_FILE_PEAK:
        gain = MAX_FILE_PEAK / peak
    clip["gain_db_applied"] = round(20.0 * math.log10(gain), 2)
    clip["gain_capped"] = clip["gain_db_applied"] < round(clip["gain_db"], 2)
    y = y * gain
    return np.stack([y] * clip["channels"], axis=1)


def write_lab(path: Path, lab: np.ndarray, rate: int, subtype: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), lab if subtype == "FLOAT" else np.clip(lab, -1.0, 1.0 - 2**-15), rate, subtype=subtype)


# ---------------------------------------------------------------- degradations (on the lab file)


def _safe(y: np.ndarray) -> np.ndarray:
    """Scale down to MAX_FILE_PEAK if louder (a lab's noisy recording is not clipped)."""
    peak = float(np.max(np.abs(y))) if y.size else 0.0
    return y * (MAX_FILE_PEAK / peak) if peak > MAX_FILE_PEAK else y


def _noise(snr_db: float) -> Callable[[np.ndarray, int, np.random.Generator, float], np.ndarray]:
    def apply(y: np.ndarray, rate: int, rng: np.random.Generator, gain: float) -> np.ndarray:
        power = float(np.mean(y.mean(axis=1) ** 2))
        noise = rng.standard_normal(y.shape[0])[:, None] * math.sqrt(power / 10.0 ** (snr_db / 10.0))
        return _safe(y + noise)

    return apply


def _insert(y: np.ndarray, at: int, seconds: float, rate: int) -> np.ndarray:
    return np.concatenate([y[:at], np.zeros((round(seconds * rate), y.shape[1])), y[at:]])


def _faster(y: np.ndarray, rate: int, rng: np.random.Generator, gain: float) -> np.ndarray:
    return np.stack([resample(y[:, c], 2 * rate, rate) for c in range(y.shape[1])], axis=1)


DEGRADATIONS: dict[str, Callable[[np.ndarray, int, np.random.Generator, float], np.ndarray]] = {
    "silence": lambda y, r, g, k: np.zeros_like(y),
    "noise_snr0": _noise(0.0),
    "noise_snr-5": _noise(-5.0),
    "clipped_+20dB": lambda y, r, g, k: np.clip(y / k * 10.0, -1.0, 1.0),  # +20 dB on the engine's own level
    "truncated_20pct": lambda y, r, g, k: y[: round(0.2 * y.shape[0])],
    "inserted_silence_2s": lambda y, r, g, k: _insert(y, y.shape[0] // 2, 2.0, r),
    "leading_silence_3s": lambda y, r, g, k: _insert(y, 0, 3.0, r),
    "faster_2x": _faster,
    "swapped_text": lambda y, r, g, k: y,
}


def swap_text(i: int, n_texts: int) -> int:
    """The other text closest in word count (ties: the lower index)."""
    return min((j for j in range(n_texts) if j != i), key=lambda j: (abs(n_words(TEXTS[j]) - n_words(TEXTS[i])), j))


def degradation_bases(plan: list[dict[str, Any]], per_engine: Mapping[str, int]) -> list[dict[str, Any]]:
    """``per_engine[e]`` clips of engine ``e``, evenly spaced through its list."""
    bases = []
    for engine, n in per_engine.items():
        clips = [c for c in plan if c["engine"] == engine]
        if not clips or n <= 0:
            continue
        picks = [round((k + 0.5) * len(clips) / n - 0.5) for k in range(n)]
        bases += [clips[p] for p in sorted(set(picks)) if p < len(clips)]
    return bases


# ---------------------------------------------------------------- the study's processing and QC


def source_measures(frames: np.ndarray) -> dict[str, float]:
    """Peak, clipped share (|x| >= 0.999, every channel) and largest channel mean of a file as given.

    The definitions of ``modprefs.speech.given.source_measures`` (used when that exists)."""
    from modprefs.speech import given

    if hasattr(given, "source_measures"):
        return {k: float(v) for k, v in given.source_measures(frames).items()}
    x = np.asarray(frames, dtype=np.float64)
    return {
        "source_peak": float(np.abs(x).max()),
        "source_clipping_ratio": float(np.mean(np.abs(x) >= 0.999)),
        "source_dc_offset": float(np.max(np.abs(x.mean(axis=0)))),
    }


def study_qc(checker: QualityChecker, lab_path: Path, study_dir: Path, clip_id: str, text: str) -> dict[str, Any]:
    """read_given_audio -> level_clip -> write_wav -> QualityChecker.check_file, as the workflow does; plus the
    source measures of the file as given and the CPU seconds QC took."""
    frames, file_rate = sf.read(str(lab_path), dtype="float32", always_2d=True)
    source = source_measures(frames)
    # an audio-only side's text is the data step's transcript of the file as given (modprefs.data.pairs)
    assert checker.transcriber is not None
    _, words = checker.transcriber.transcribe_words(frames.mean(axis=1), int(file_rate))
    source["asr_confidence"] = float(np.mean([p for _, p in words])) if words else math.nan
    audio = read_given_audio(lab_path, STUDY_RATE, clip_id)
    levelled, loudness = level_clip(audio, STUDY_RATE, LEVEL, clip_id)
    path = study_dir / f"{clip_id}.wav"
    write_wav(levelled, STUDY_RATE, path)
    spoken = " ".join(text.split())  # render.given_clip's spoken text
    t0 = time.process_time()
    row = checker.check_file(path, spoken)
    return {
        **{m: float(row[m]) for m in METRICS if m in row and not m.startswith("source_")},
        **source,
        "lufs_before": float(loudness.get("lufs_before", math.nan)),
        "qc_cpu_s": round(time.process_time() - t0, 3),
        "transcript": row["transcript"],
    }


# ---------------------------------------------------------------- summaries and the proposal


def dist(values: list[float], digits: int = 3) -> dict[str, float | int]:
    v = np.array([x for x in values if np.isfinite(x)], dtype=float)
    out: dict[str, float | int] = {"n": int(v.size)}
    if v.size:
        q = np.percentile(v, [0, 5, 50, 95, 100])
        out.update(zip(("min", "p5", "median", "p95", "max"), (round(float(x), digits) for x in q), strict=True))
    return out


#: The checks of what Whisper heard, applied (as QC applies them) to clips of at least ``wer_min_words`` words only
WORD_COUNT_CHECKS = ("max_wer", "min_asr_confidence")


def fails(row: Mapping[str, Any], key: str, limit: float | None, wer_min_words: int = 0) -> bool:
    """Whether ``row`` fails the one check ``key`` (a metric not measured here is NaN: skipped, as in QC; WER is not
    checked on a clip of fewer than ``wer_min_words`` words, as ``audio_qc.wer_min_words`` has QC do)."""
    if key in WORD_COUNT_CHECKS and row.get("n_words", 0) < wer_min_words:
        return False
    metric = key.partition("_")[2]
    value = row.get(metric, math.nan)
    return bool(check_thresholds({metric: math.nan if value is None else value}, {key: limit}))


def failing_checks(row: Mapping[str, Any], thresholds: Mapping[str, float | None], wer_min_words: int = 0) -> list[str]:
    return [k for k, v in thresholds.items() if fails(row, k, v, wer_min_words)]


def wer_min_words(rows: list[dict[str, Any]], margin: float = 0.1) -> tuple[int, list[dict[str, Any]]]:
    """The fewest words a clip needs for its WER to tell ordinary speech from speech of another text: the smallest
    word count n such that, over the clips of n words or more, the largest ordinary WER plus ``margin`` is below
    the smallest swapped-text WER; and per word count, those two extremes."""
    ordinary = [r for r in rows if r["kind"] == "ordinary" and np.isfinite(r.get("wer", math.nan))]
    swapped = [r for r in rows if r["kind"].startswith("swapped_text") and np.isfinite(r.get("wer", math.nan))]
    table, chosen = [], None
    for n in sorted({r["n_words"] for r in ordinary}, reverse=True):
        ok = [r["wer"] for r in ordinary if r["n_words"] >= n]
        bad = [r["wer"] for r in swapped if r["n_words"] >= n]
        separates = bool(bad) and max(ok) + margin < min(bad)
        table.append(
            {
                "min_words": n,
                "ordinary_clips": len(ok),
                "ordinary_max_wer": round(max(ok), 4),
                "swapped_clips": len(bad),
                "swapped_min_wer": round(min(bad), 4) if bad else None,
                "separates": separates,
            }
        )
        if separates:
            chosen = n
        elif bad:
            break  # fewer words only adds ordinary clips: the first word count that fails ends the search
    return (chosen if chosen is not None else 10**6), sorted(table, key=lambda t: t["min_words"])


def _round_out(value: float, step: float, up: bool) -> float:
    q = value / step
    q = math.ceil(q - 1e-9) if up else math.floor(q + 1e-9)
    return round(q * step, 6)


def data_bound(key: str, ordinary: list[dict[str, Any]], min_words: int = 0) -> tuple[float, float] | None:
    """(the most extreme ordinary value, that value moved outwards by MARGINS and rounded outwards); None when
    the check has no margin here or its metric was not measured. WER: over the clips of ``min_words`` or more."""
    kind, _, metric = key.partition("_")
    if key in WORD_COUNT_CHECKS:
        ordinary = [r for r in ordinary if r.get("n_words", 0) >= min_words]
    values = [float(r[metric]) for r in ordinary if r.get(metric) is not None and np.isfinite(r[metric])]
    if key not in MARGINS or not values:
        return None
    mode, margin, step = MARGINS[key]
    extreme = max(values) if kind == "max" else min(values)
    if kind == "max":
        moved = extreme + margin if mode == "abs" else extreme * (1.0 + margin)
        return extreme, _round_out(moved, step, up=True)
    moved = extreme - margin if mode == "abs" else extreme / (1.0 + margin)
    return extreme, _round_out(moved, step, up=False)


def propose(
    ordinary: list[dict[str, Any]],
    degraded: list[dict[str, Any]],
    defaults: Mapping[str, float | None],
    min_words: int = 0,
) -> tuple[dict[str, float | None], dict[str, dict[str, Any]]]:
    """Per check: the looser of the default and the data bound; for :data:`TIGHTEN_IF_CATCHES`, the data bound
    when it catches more degraded clips than the default (module docstring)."""
    proposed: dict[str, float | None] = {}
    basis: dict[str, dict[str, Any]] = {}
    for key, default in defaults.items():
        found = data_bound(key, ordinary, min_words)
        if found is None:
            proposed[key] = default
            basis[key] = {"default": default, "proposed": default, "source": "default (not measured here)"}
            continue
        extreme, bound = found
        kind = key.split("_")[0]
        caught_default = sum(fails(r, key, default, min_words) for r in degraded)
        caught_bound = sum(fails(r, key, bound, min_words) for r in degraded)
        if default is None or (key in TIGHTEN_IF_CATCHES and caught_bound > caught_default):
            chosen, source = (
                bound,
                "data bound"
                + (
                    f" (catches {caught_bound} degraded clips, the default {caught_default})"
                    if default is not None
                    else ""
                ),
            )
        else:
            chosen = max(default, bound) if kind == "max" else min(default, bound)
            source = "default (passes every ordinary clip with the margin)" if chosen == default else "data bound"
        proposed[key] = chosen
        mode, margin, step = MARGINS[key]
        basis[key] = {
            "default": default,
            "ordinary_extreme": round(extreme, 4),
            "margin": f"{'+' if kind == 'max' else '-'}{margin:g}{' relative' if mode == 'rel' else ''}, step {step:g}",
            "data_bound": bound,
            "proposed": chosen,
            "source": source,
        }
    return proposed, basis


def evaluate(
    rows: list[dict[str, Any]], thresholds: Mapping[str, float | None], degradations: list[str], min_words: int = 0
) -> dict[str, Any]:
    ordinary = [r for r in rows if r["kind"] == "ordinary"]
    per_check: dict[str, Any] = {}
    for key, limit in thresholds.items():
        per_check[key] = {
            "bound": limit,
            "ordinary_pass_rate": {
                e: round(float(np.mean([not fails(r, key, limit, min_words) for r in ordinary if r["engine"] == e])), 4)
                for e in ENGINES
                if any(r["engine"] == e for r in ordinary)
            },
            "caught": {
                d: round(float(np.mean([fails(r, key, limit, min_words) for r in rows if r["kind"] == d])), 3)
                for d in degradations
            },
        }
    overall = {
        "ordinary_pass": {
            e: f"{sum(not failing_checks(r, thresholds, min_words) for r in ordinary if r['engine'] == e)}"
            f"/{sum(r['engine'] == e for r in ordinary)}"
            for e in ENGINES
        },
        "degraded_caught": {
            d: f"{sum(bool(failing_checks(r, thresholds, min_words)) for r in rows if r['kind'] == d)}"
            f"/{sum(r['kind'] == d for r in rows)}"
            for d in degradations
        },
    }
    fail_counts: dict[str, int] = {}
    for r in ordinary:
        for k in failing_checks(r, thresholds, min_words):
            fail_counts[k] = fail_counts.get(k, 0) + 1
    overall["ordinary_failures_by_check"] = fail_counts
    return {"per_check": per_check, "overall": overall}


# (metric, degradation, True when larger is worse): can one bound pass every ordinary clip and catch it?
SEPARATIONS = [
    ("wer", "swapped_text", True),
    ("wer", "noise_snr0", True),
    ("wer", "faster_2x", True),
    ("dnsmos_ovrl", "noise_snr0", False),
    ("dnsmos_ovrl", "noise_snr-5", False),
    ("dnsmos_ovrl", "clipped_+20dB", False),
    ("clipping_ratio", "clipped_+20dB", True),
    ("source_clipping_ratio", "clipped_+20dB", True),
    ("words_per_s", "faster_2x", True),
    ("internal_silence_s", "inserted_silence_2s", True),
]


def separations(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per :data:`SEPARATIONS` entry and engine set: the ordinary extreme, the degraded clips' range, whether a
    bound between them exists (``gap`` > 0) and how many degraded clips lie beyond the ordinary extreme."""
    ordinary = [r for r in rows if r["kind"] == "ordinary"]
    out = []
    for metric, kind, larger_worse in SEPARATIONS:
        bad = [float(r[metric]) for r in rows if r["kind"] == kind and np.isfinite(r.get(metric, math.nan))]
        if not bad:
            continue
        for label, engines in (("all", ENGINES), ("espeak-ng", ["espeak-ng"]), ("neural", ["piper", "kokoro-onnx"])):
            ok = [float(r[metric]) for r in ordinary if r["engine"] in engines and np.isfinite(r.get(metric, math.nan))]
            if not ok:
                continue
            edge = max(ok) if larger_worse else min(ok)
            worst_bad = min(bad) if larger_worse else max(bad)
            beyond = sum(v > edge for v in bad) if larger_worse else sum(v < edge for v in bad)
            out.append(
                {
                    "metric": metric,
                    "degradation": kind,
                    "ordinary": label,
                    "ordinary_extreme": round(edge, 4),
                    "degraded_range": [round(min(bad), 4), round(max(bad), 4)],
                    "gap": round((worst_bad - edge) if larger_worse else (edge - worst_bad), 4),
                    "degraded_beyond_ordinary_extreme": f"{beyond}/{len(bad)}",
                }
            )
    return out


def versions() -> dict[str, str]:
    out = {}
    for pkg in ("onnxruntime", "ctranslate2", "faster-whisper", "numpy", "soundfile", "piper-tts", "kokoro-onnx"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _fmt(v: float | None) -> str:
    return "off" if v is None else f"{v:g}"


def markdown(result: dict[str, Any]) -> str:
    prop = result["proposal"]
    ev, ev_default = result["evaluation_proposed"], result["evaluation_default"]
    degr = result["degradations"]
    lines = [
        "# Audio-QC defaults for `tts.backend: given`",
        "",
        f"{result['n_ordinary']} ordinary clips ({', '.join(f'{e} {n}' for e, n in result['n_by_engine'].items())}), "
        f"{result['n_degraded']} degraded ({len(degr)} kinds x {result['n_bases']} bases); stored at 16-48 kHz, "
        "some stereo, gain -12..+12 dB, then mono -> 24 kHz -> -23 LUFS / -1 dBTP -> QC (Whisper tiny.en, DNSMOS). "
        "Rule: data bound = ordinary extreme moved out by the margin; proposed = the looser of the default and the "
        "data bound (no default is tightened); WER is checked on clips of at least the proposed word count only. "
        f"Rerun: `{result['command']}`.",
        "",
        "| check | default | proposed | ordinary extreme (margin) | ordinary pass: "
        + " / ".join(ENGINES)
        + " | degradations caught (share of clips) |",
        "|---|---|---|---|---|---|",
    ]
    for key, pc in ev["per_check"].items():
        b = prop["basis"][key]
        caught = ", ".join(f"{d} {s:g}" for d, s in pc["caught"].items() if s > 0) or "none"
        rates = " / ".join(f"{pc['ordinary_pass_rate'].get(e, float('nan')):.0%}" for e in ENGINES)
        extreme = f"{b['ordinary_extreme']:g} ({b['margin']})" if "ordinary_extreme" in b else "not measured"
        lines.append(f"| {key} | {_fmt(b['default'])} | **{_fmt(b['proposed'])}** | {extreme} | {rates} | {caught} |")
    lines += [
        "",
        f"WER and the ASR confidence are checked on clips of **{result['proposed_wer_min_words']} words or more** "
        "(`audio_qc.wer_min_words`): "
        "the smallest word count at which the largest ordinary WER + 0.1 stays below the smallest WER of speech "
        "paired with another text of about its length (short dialogue turns: Whisper tiny has little context).",
        "",
        "| clips of n words or more | ordinary clips | ordinary max WER | swapped-text clips | swapped min WER | "
        "separates |",
        "|---|---|---|---|---|---|",
        *(
            f"| {t['min_words']} | {t['ordinary_clips']} | {t['ordinary_max_wer']:g} | {t['swapped_clips']} | "
            f"{_fmt(t['swapped_min_wer'])} | {'yes' if t['separates'] else 'no'} |"
            for t in result["wer_by_min_words"]
        ),
        "",
        "| all checks | ordinary pass " + " / ".join(ENGINES) + " | " + " | ".join(degr) + " |",
        "|---|---|" + "---|" * len(degr),
    ]
    for name, e in (("default", ev_default), ("proposed", ev)):
        lines.append(
            f"| {name} | {' / '.join(e['overall']['ordinary_pass'][x] for x in ENGINES)} | "
            + " | ".join(e["overall"]["degraded_caught"][d] for d in degr)
            + " |"
        )
    lines += ["", "Distributions (min / p5 / median / p95 / max):", ""]
    show = [
        "wer",
        "dnsmos_ovrl",
        "words_per_s",
        "chars_per_s",
        "leading_silence_s",
        "trailing_silence_s",
        "internal_silence_s",
        "source_clipping_ratio",
    ]
    lines += ["| set | " + " | ".join(show) + " |", "|---|" + "---|" * len(show)]
    for group, stats in [*result["ordinary_by_engine"].items(), *result["degraded"].items()]:
        cells = []
        for m in show:
            s = stats[m]
            cells.append(
                "/".join(f"{s[q]:.3g}" for q in ("min", "p5", "median", "p95", "max")) if s.get("n") else "n/a"
            )
        lines.append(f"| {group} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Separation: can one bound pass every ordinary clip of the set and catch the degradation? "
        "(gap > 0: yes; beyond: degraded clips past the most extreme ordinary clip)",
        "",
        "| metric | degradation | ordinary set | ordinary extreme | degraded range | gap | beyond |",
        "|---|---|---|---|---|---|---|",
    ]
    for sep in result["separation"]:
        lo, hi = sep["degraded_range"]
        lines.append(
            f"| {sep['metric']} | {sep['degradation']} | {sep['ordinary']} | {sep['ordinary_extreme']:.3g} | "
            f"{lo:.3g}..{hi:.3g} | {sep['gap']:.3g} | {sep['degraded_beyond_ordinary_extreme']} |"
        )
    fails_default = result["evaluation_default"]["overall"]["ordinary_failures_by_check"]
    lines += [
        "",
        "Ordinary clips failing the current defaults, by check: "
        + (", ".join(f"{k} {v}" for k, v in sorted(fails_default.items(), key=lambda kv: -kv[1])) or "none")
        + f". CPU: {result['cpu_s']['total_measure']} s on {result['machine'].get('nproc')} CPUs, 1 thread.",
        "",
    ]
    return "\n".join(lines)


def measure(quick: bool, work: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Render, store, degrade, process and QC every clip; (rows, facts about the run)."""
    cpu0 = time.process_time()
    n_texts = 2 if quick else len(TEXTS)
    lab_dir, study_dir = work / "lab", work / "study"
    study_dir.mkdir(parents=True, exist_ok=True)

    plan = plan_ordinary(n_texts)
    audio, rates, synth_cpu = synthesize(plan)
    checker = QualityChecker(dict.fromkeys(DEFAULT_THRESHOLDS), threads=THREADS)

    rows: list[dict[str, Any]] = []
    labs: dict[str, np.ndarray] = {}
    for clip in plan:
        lab = to_lab_file(clip, audio[clip["id"]], rates[clip["id"]])
        labs[clip["id"]] = lab
        path = lab_dir / f"{clip['id']}.wav"
        write_lab(path, lab, clip["store_rate"], clip["subtype"])
        row = study_qc(checker, path, study_dir, clip["id"], TEXTS[clip["text"]])
        rows.append(
            {
                "id": clip["id"],
                "kind": "ordinary",
                "engine": clip["engine"],
                "voice": clip["cfg"]["voice"],
                "speed": clip["cfg"]["speed"],
                "text": clip["text"],
                "n_words": n_words(TEXTS[clip["text"]]),
                "engine_rate": rates[clip["id"]],
                "store_rate": clip["store_rate"],
                "channels": clip["channels"],
                "subtype": clip["subtype"],
                "gain_db": clip["gain_db_applied"],
                "gain_capped": clip["gain_capped"],
                **row,
            }
        )
        print(f"{clip['id']} {clip['engine']} wer {row['wer']:.3f} cpu {row['qc_cpu_s']:.1f}", file=sys.stderr)

    rng = np.random.default_rng(SEED + 1)
    bases = degradation_bases(plan, {"espeak-ng": 1} if quick else BASES_PER_ENGINE)
    for base in bases:
        for name, fn in DEGRADATIONS.items():
            clip_id = f"{base['id']}_{name}"
            gain = 10.0 ** (base["gain_db_applied"] / 20.0)
            y = fn(labs[base["id"]], base["store_rate"], rng, gain)
            path = lab_dir / f"{clip_id}.wav"
            write_lab(path, y, base["store_rate"], base["subtype"])
            text = base["text"] if name != "swapped_text" else swap_text(base["text"], n_texts)
            row = study_qc(checker, path, study_dir, clip_id, TEXTS[text])
            rows.append(
                {
                    "id": clip_id,
                    "kind": name,
                    "engine": base["engine"],
                    "voice": base["cfg"]["voice"],
                    "speed": base["cfg"]["speed"],
                    "text": text,
                    "n_words": n_words(TEXTS[text]),
                    "base": base["id"],
                    "store_rate": base["store_rate"],
                    "channels": base["channels"],
                    **row,
                }
            )
            print(f"{clip_id} wer {row['wer']:.3f} cpu {row['qc_cpu_s']:.1f}", file=sys.stderr)
    # every short ordinary clip also paired with another short text: where does WER stop telling them apart?
    for base in [c for c in plan if n_words(TEXTS[c["text"]]) < 10 and not quick]:
        clip_id = f"{base['id']}_swapped_text_short"
        text = swap_text(base["text"], n_texts)
        path = lab_dir / f"{base['id']}.wav"
        row = study_qc(checker, path, study_dir, clip_id, TEXTS[text])
        rows.append(
            {
                "id": clip_id,
                "kind": "swapped_text_short",
                "engine": base["engine"],
                "voice": base["cfg"]["voice"],
                "speed": base["cfg"]["speed"],
                "text": text,
                "n_words": n_words(TEXTS[text]),
                "base": base["id"],
                "store_rate": base["store_rate"],
                "channels": base["channels"],
                **row,
            }
        )
        print(f"{clip_id} wer {row['wer']:.3f} cpu {row['qc_cpu_s']:.1f}", file=sys.stderr)
    ordinary_ids = {c["id"] for c in plan}
    facts = {
        "n_texts": n_texts,
        "degradation_bases": [b["id"] for b in bases],
        "cpu_s": {
            "synthesis": {e: round(v, 1) for e, v in synth_cpu.items()},
            "qc_ordinary": round(sum(r["qc_cpu_s"] for r in rows if r["id"] in ordinary_ids), 1),
            "qc_degraded": round(sum(r["qc_cpu_s"] for r in rows if r["id"] not in ordinary_ids), 1),
            "total_measure": round(time.process_time() - cpu0, 1),
        },
    }
    return rows, facts


def analyse(rows: list[dict[str, Any]], facts: Mapping[str, Any]) -> dict[str, Any]:
    """Distributions, the proposal and its evaluation (module docstring)."""
    ordinary = [r for r in rows if r["kind"] == "ordinary"]
    degradations = [d for d in [*DEGRADATIONS, "swapped_text_short"] if any(r["kind"] == d for r in rows)]
    defaults = dict(DEFAULT_THRESHOLDS)
    min_words, by_words = wer_min_words(rows)
    proposed, basis = propose(ordinary, [r for r in rows if r["kind"] != "ordinary"], defaults, min_words)

    def col(subset: list[dict[str, Any]], m: str) -> list[float]:
        return [float(r[m]) if r.get(m) is not None else math.nan for r in subset]

    return {
        "question": "default audio-QC thresholds for tts.backend: given (a lab's own audio)",
        "command": "OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/validity/given_qc_defaults.py",
        "n_ordinary": len(ordinary),
        "n_by_engine": {e: sum(r["engine"] == e for r in ordinary) for e in ENGINES},
        "n_degraded": len(rows) - len(ordinary),
        "n_bases": len(facts["degradation_bases"]),
        "degradations": degradations,
        "degradation_bases": facts["degradation_bases"],
        "n_gain_capped": sum(bool(r.get("gain_capped")) for r in ordinary),
        "processing": {
            "study_rate": STUDY_RATE,
            "level": LEVEL,
            "store_rates": STORE_RATES,
            "subtypes": SUBTYPES,
            "gain_db_range": GAIN_DB,
            "max_file_peak": MAX_FILE_PEAK,
            "qc": "QualityChecker(threads=1), every threshold None; Whisper tiny.en int8 greedy; DNSMOS hop 1 s; "
            "source_* measured on the file as given",
        },
        "proposed_given_thresholds": proposed,
        "proposed_wer_min_words": min_words,
        "wer_by_min_words": by_words,
        "current_default_thresholds": defaults,
        "proposal": {
            "rule": "per check, data bound = ordinary extreme moved out by the margin; proposed = the looser of the "
            "default and the data bound (never tighter); WER's and the ASR confidence's data bounds over the clips of "
            "wer_min_words or more",
            "basis": basis,
        },
        "evaluation_proposed": evaluate(rows, proposed, degradations, min_words),
        "evaluation_default": evaluate(rows, defaults, degradations),
        "evaluation_data_bounds": evaluate(
            rows, {k: b.get("data_bound", b["default"]) for k, b in basis.items()}, degradations, min_words
        ),
        "separation": separations(rows),
        "ordinary_by_engine": {
            e: {m: dist(col([r for r in ordinary if r["engine"] == e], m)) for m in METRICS}
            for e in ENGINES
            if any(r["engine"] == e for r in ordinary)
        },
        "ordinary_all": {m: dist(col(ordinary, m)) for m in METRICS},
        "degraded": {d: {m: dist(col([r for r in rows if r["kind"] == d], m)) for m in METRICS} for d in degradations},
        "texts": TEXTS[: facts["n_texts"]],
        "clips": [
            {k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items() if k != "transcript"}
            | {"transcript": r["transcript"][:160]}
            for r in rows
        ],
        "cpu_s": facts["cpu_s"],
        "threads": THREADS,
        "machine": facts.get("machine", {}),
        "versions": versions(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep-audio", type=Path, default=None, help="keep the lab files, study clips, rows here")
    parser.add_argument("--quick", action="store_true", help="2 texts, 1 degraded base; print, write nothing")
    parser.add_argument("--from-rows", type=Path, default=None, help="re-analyse a kept rows.json, measure nothing")
    args = parser.parse_args()
    for t in TEXTS[:N_LONG]:
        assert 8 <= n_words(t) <= 40, t
    for t in SHORT_TEXTS:
        assert 3 <= n_words(t) <= 9, t
    if args.from_rows is not None:
        saved = json.loads(args.from_rows.read_text(encoding="utf-8"))
        rows, facts = saved["rows"], saved["facts"]
    else:
        wall0 = time.perf_counter()
        load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        with tempfile.TemporaryDirectory() as tmp:
            work = args.keep_audio or Path(tmp)
            rows, facts = measure(args.quick, work)
            facts["wall_s"] = round(time.perf_counter() - wall0, 1)
            facts["machine"] = {
                "nproc": os.cpu_count(),
                "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
                "load_average_1min": {
                    "before": load_before,
                    "after": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
                },
                "python": platform.python_version(),
                "platform": platform.platform(),
            }
            if args.keep_audio is not None:
                (work / "rows.json").write_text(json.dumps({"rows": rows, "facts": facts}, default=float) + "\n")
    result = analyse(rows, facts)
    result["wall_s"] = facts.get("wall_s")
    md = markdown(result)
    if args.quick:
        print(json.dumps({k: result[k] for k in ("proposed_given_thresholds", "cpu_s")}, indent=1))
        print(md)
        return
    out = ROOT / "benchmarks/out"
    out.mkdir(exist_ok=True)
    (out / "given_qc_defaults.json").write_text(json.dumps(result, indent=1, default=float) + "\n")
    (out / "given_qc_defaults.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
