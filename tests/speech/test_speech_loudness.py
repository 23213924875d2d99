"""Tests of the loudness module: BS.1770-4 loudness and true peak against references, EBU R 128 normalisation.

References are independent of the code under test: BS.1770-4 Annex 1 (a full-scale 997 Hz sine in one
channel reads -3.01 LKFS), the gating of EBU Tech 3341 case 3 (its quiet parts are gated out), and
the analytic true peak of a sine at fs/4 sampled 45 degrees off its crests (3.01 dB above its
samples). The normalisation runs on synthetic speech-like signals (voiced harmonics and noise bursts
under a syllable envelope with pauses) at 16, 22.05 and 44.1 kHz, 10 dB apart.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from modprefs.speech.loudness import (
    ATTACK_DB_PER_MS,
    MANIFEST_LOUDNESS_COLUMNS,
    LoudnessError,
    integrated_loudness,
    limiter_gain_db,
    normalise_loudness,
    true_peak_dbtp,
)
from support.audio import speech_like

TARGET = -23.0
CEILING = -1.0


def sine(sr: int, seconds: float, freq: float = 997.0, amplitude: float = 1.0, phase: float = 0.0) -> np.ndarray:
    return amplitude * np.sin(2 * np.pi * freq * np.arange(int(sr * seconds)) / sr + phase)


# ---------------------------------------------------------------- measurement against references


@pytest.mark.parametrize("sr, tol", [(48000, 0.01), (44100, 0.01), (24000, 0.05), (22050, 0.05), (16000, 0.05)])
def test_full_scale_997hz_sine_reads_minus_3_01_lkfs(sr, tol):
    # BS.1770-4 Annex 1: a 0 dBFS 997 Hz sine in one channel reads -3.01 LKFS; the K-weighting is the
    # standard's 48 kHz filter (bit-exact there), re-derived for other rates
    assert integrated_loudness(sine(sr, 5.0), sr) == pytest.approx(-3.01, abs=tol)
    assert integrated_loudness(sine(sr, 5.0, amplitude=0.1), sr) == pytest.approx(-23.01, abs=tol)
    assert integrated_loudness(sine(sr, 5.0).reshape(-1, 1), sr) == integrated_loudness(sine(sr, 5.0), sr)


def test_relative_gate_as_in_ebu_tech_3341_case_3():
    # Tech 3341 case 3 (in one channel, so 3.01 dB lower): 10 s at -36 dBFS, 60 s at -23, 10 s at -36
    sr = 48000
    parts = [sine(sr, 10, amplitude=10 ** (-36 / 20)), sine(sr, 60, amplitude=10 ** (-23 / 20))]
    x = np.concatenate(parts + parts[:1])
    assert integrated_loudness(x, sr) == pytest.approx(-26.01, abs=0.05)


def test_absolute_gate_silence_and_short_clips():
    sr = 16000
    assert integrated_loudness(np.zeros(sr), sr) == -math.inf
    # below the -70 LUFS absolute gate throughout: no block counts
    assert integrated_loudness(sine(sr, 2.0, amplitude=10 ** (-75 / 20)), sr) == -math.inf
    # a clip shorter than one 400 ms gating block has no BS.1770 integrated loudness
    assert math.isnan(integrated_loudness(sine(sr, 0.399), sr))
    assert integrated_loudness(sine(sr, 0.4), sr) == pytest.approx(-3.0, abs=0.1)


@pytest.mark.parametrize("sr", [16000, 44100, 48000])
def test_true_peak_of_fs_over_4_sine_off_its_crests(sr):
    n = int(2 * sr)
    fade = np.minimum(1.0, np.minimum(np.arange(n), np.arange(n)[::-1]) / (0.05 * sr))  # no edge ringing
    x = sine(sr, 2.0, freq=sr / 4, amplitude=0.5, phase=np.pi / 4) * fade
    assert 20 * np.log10(np.abs(x).max()) == pytest.approx(-9.03, abs=0.01)  # the samples miss the crests
    assert true_peak_dbtp(x, sr) == pytest.approx(20 * np.log10(0.5), abs=0.05)  # -6.02 dBTP
    assert true_peak_dbtp(np.zeros(100), sr) == -math.inf


# ---------------------------------------------------------------- normalisation


def _check_normalised(out: np.ndarray, x: np.ndarray, sr: int, stats: dict[str, float]) -> None:
    assert out.dtype == np.float32 and out.shape == (x.size,)
    assert list(stats) and set(stats) == set(MANIFEST_LOUDNESS_COLUMNS)
    assert abs(stats["lufs_after"] - TARGET) <= 0.5 and stats["true_peak_after_dbtp"] <= CEILING
    # the reported values are the output's, measured independently here
    assert integrated_loudness(out, sr) == pytest.approx(stats["lufs_after"], abs=1e-9)
    assert true_peak_dbtp(out, sr) == pytest.approx(stats["true_peak_after_dbtp"], abs=1e-9)
    assert stats["lufs_before"] == pytest.approx(integrated_loudness(x, sr), abs=1e-9)


@pytest.mark.parametrize("sr", [16000, 22050, 44100])
def test_speech_like_clips_10_db_apart_land_on_the_target(sr):
    after = []
    for level in (-10.0, 0.0, 10.0):
        x = speech_like(sr, level_db=level)
        out, stats = normalise_loudness(x, sr, TARGET, CEILING, clip_id=f"s{level:+.0f}")
        _check_normalised(out, x, sr, stats)
        assert stats["gain_db"] == pytest.approx(TARGET - stats["lufs_before"], abs=0.1)
        after.append(stats["lufs_after"])
    assert max(after) - min(after) <= 0.1
    assert max(abs(a - TARGET) for a in after) <= 0.05


def test_peaky_signal_is_limited_and_still_lands_on_the_target():
    sr = 24000
    x = 0.01 * np.random.default_rng(0).normal(size=3 * sr)
    x[sr // 4 :: sr // 2] = 1.0  # six clicks, about 25 dB above the noise
    out, stats = normalise_loudness(x, sr, TARGET, CEILING, clip_id="clicks")
    _check_normalised(out, x, sr, stats)
    # the static gain alone would put the clicks far over the ceiling
    assert stats["true_peak_before_dbtp"] + stats["gain_db"] > CEILING + 10
    assert 0 < stats["limited"] < 0.5
    assert abs(stats["lufs_after"] - TARGET) <= 0.05
    # away from the clicks the gain is the static gain: the limiter acts locally
    far = slice(int(0.02 * sr), int(0.2 * sr))
    assert np.allclose(out[far], x[far] * 10 ** (stats["gain_db"] / 20), rtol=1e-5, atol=1e-7)


def test_speech_with_a_click_keeps_loudness_within_half_an_lu():
    sr = 22050
    x = speech_like(sr, seed=3)
    x[sr * 2] = 0.9  # one click
    out, stats = normalise_loudness(x, sr, TARGET, CEILING, clip_id="click")
    _check_normalised(out, x, sr, stats)
    assert stats["limited"] > 0


def test_limiter_envelope_looks_ahead_and_releases():
    sr = 16000
    x = np.zeros(sr)
    x[sr // 2] = 1.0
    g = limiter_gain_db(x, sr, -6.0)
    p = sr // 2
    assert g[p] <= -6.0 + 1e-9 and np.all(g <= 0)
    assert g[p - int(0.001 * sr)] == pytest.approx(g[p] + ATTACK_DB_PER_MS, abs=0.2)  # already down 1 ms before
    assert g[0] == 0 and g[-1] == 0
    assert np.argmin(g) == p or g[np.argmin(g)] == g[p]
    assert np.array_equal(limiter_gain_db(0.1 * x, sr, -6.0), np.zeros(sr))  # under the ceiling: no gain change


def test_target_none_is_the_identity_and_measures():
    sr = 16000
    x = speech_like(sr, level_db=-5)
    out, stats = normalise_loudness(x, sr, None, clip_id="x")
    assert np.array_equal(out, x.astype(np.float32))
    assert stats["gain_db"] == 0 and stats["limited"] == 0
    assert stats["lufs_after"] == stats["lufs_before"] == integrated_loudness(x, sr)
    assert stats["true_peak_after_dbtp"] == stats["true_peak_before_dbtp"] == true_peak_dbtp(x, sr)


def test_same_input_same_bytes():
    sr = 24000
    x = 0.01 * np.random.default_rng(5).normal(size=2 * sr)
    x[::9000] = 0.8
    a, sa = normalise_loudness(x, sr, TARGET, clip_id="d")
    b, sb = normalise_loudness(x.copy(), sr, TARGET, clip_id="d")
    assert a.tobytes() == b.tobytes() and sa == sb and sa["limited"] > 0


@pytest.mark.parametrize(
    "audio, fragment",
    [
        (np.zeros(16000), "silent"),
        (sine(16000, 2.0, amplitude=1e-5), "silent"),  # -103 LUFS: under the absolute gate
        (sine(16000, 0.3), "shorter than BS.1770's 400 ms"),
    ],
    ids=["zeros", "below-gate", "300ms"],
)
def test_unnormalisable_clips_raise_naming_the_clip(audio, fragment):
    with pytest.raises(ValueError, match=rf"clip attn_1: .*{fragment}") as exc:
        normalise_loudness(audio, 16000, TARGET, clip_id="attn_1")
    assert isinstance(exc.value, LoudnessError)
    assert "inf" not in str(exc.value)
    out, stats = normalise_loudness(audio, 16000, None, clip_id="attn_1")  # measuring alone is fine
    assert np.array_equal(out, audio.astype(np.float32)) and not stats["lufs_after"] > -70


def test_unreachable_target_raises():
    # a sine under a -1 dBTP ceiling reads at most -4 LUFS: -2 LUFS is out of reach without clipping it
    with pytest.raises(LoudnessError, match=r"clip loud: cannot reach -2.0 LUFS under a -1.0 dBTP ceiling"):
        normalise_loudness(sine(16000, 2.0, amplitude=0.5), 16000, -2.0, CEILING, clip_id="loud")


def test_multichannel_refused():
    with pytest.raises(LoudnessError, match=r"clip st: expected mono"):
        normalise_loudness(np.zeros((16000, 2)), 16000, TARGET, clip_id="st")
