"""Loudness measurement and normalisation of a clip: ITU-R BS.1770-4 integrated loudness and true peak.

References:

- ITU-R BS.1770-4 (10/2015), *Algorithms to measure audio programme loudness and true-peak audio
  level*: K-weighting, 400 ms gating blocks with 75 % overlap, the -70 LUFS absolute and -10 LU
  relative gates (Annex 1); the true-peak meter, 4x oversampling at 48 kHz (Annex 2).
- EBU R 128 (2020), *Loudness normalisation and permitted maximum level of audio signals*: a
  target of -23 LUFS and a maximum true peak of -1 dBTP; EBU Tech 3341 (the meter) and its
  test signals.

Units: audio is float, full scale 1.0 (0 dBFS), mono, shape ``(n_samples,)`` (a ``(n_samples, 1)``
array is accepted); loudness in LUFS (= LKFS), loudness differences in LU (= dB); true peak in dBTP
(dB relative to full scale, of the signal reconstructed between samples).

* :func:`integrated_loudness`: pyloudnorm's BS.1770-4 gating with its ``"DeMan"`` K-weighting: the
  analogue filters behind BS.1770's 48 kHz coefficients (bit-exact there), re-derived for the clip's
  own sample rate by the bilinear transform, as libebur128 does. A full-scale 997 Hz sine reads
  -3.010 LUFS at 48 kHz, -3.007 at 44.1 kHz, -2.970 at 16 kHz (pyloudnorm's default parametric
  K-weighting reads -3.05 to -3.08). A clip shorter than one 400 ms gating block has no integrated loudness under
  BS.1770 (pyloudnorm raises): it reads **NaN**, and normalising it raises :class:`LoudnessError`
  naming the clip. A clip no block of which passes the -70 LUFS absolute gate (silence) reads
  **-inf**, and normalising it raises :class:`LoudnessError` naming the clip (no finite gain
  reaches a target from -inf).
* :func:`true_peak_dbtp`: BS.1770-4 Annex 2: the signal oversampled (4x below 96 kHz, 2x below
  192 kHz, 1x from there) with :func:`scipy.signal.resample_poly` (Kaiser-windowed FIR, not the
  Annex's 48-tap example filter), the largest absolute value in dB. At 4x the reading can be low by
  up to 0.69 dB for content at the Nyquist frequency, as with the Annex's meter at 48 kHz.
* :func:`normalise_loudness`: a static gain to the target loudness; if the true peak then exceeds
  the ceiling, a deterministic look-ahead peak limiter (:func:`limiter_gain_db`) brings it under,
  and the static gain is corrected and the limiter re-run until the integrated loudness is within
  :data:`AIM_LU` of the target (it must end within :data:`TOLERANCE_LU`, or the call raises).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

__all__ = [
    "AIM_LU",
    "BLOCK_S",
    "MANIFEST_LOUDNESS_COLUMNS",
    "TOLERANCE_LU",
    "LoudnessError",
    "integrated_loudness",
    "limiter_gain_db",
    "normalise_loudness",
    "oversampling_factor",
    "true_peak_dbtp",
]

BLOCK_S = 0.4  # BS.1770 gating block (s)
TOLERANCE_LU = 0.5  # |integrated loudness after normalisation - target| must not exceed this
AIM_LU = 0.05  # the gain correction after limiting iterates until it is this close
MAX_PASSES = 12  # gain-correction passes before giving up
LIMITER_MARGIN_DB = 0.05  # the limiter aims this far below the ceiling (filter and quantisation slack)
LIMITER_MAX_ROUNDS = 6  # limiter re-runs on its own output while a peak is still over the ceiling
ATTACK_DB_PER_MS = 2.0  # how fast the limiter gain may fall ahead of a peak (look-ahead ramp)
RELEASE_DB_PER_MS = 0.1  # how fast it recovers after the peak (10 dB in 100 ms)
LIMITED_BELOW_DB = -0.01  # a sample counts as limited when the limiter takes off more than this

#: the keys of :func:`normalise_loudness`'s measurements, as audio-manifest / QC columns
MANIFEST_LOUDNESS_COLUMNS = [
    "lufs_before",
    "lufs_after",
    "true_peak_before_dbtp",
    "true_peak_after_dbtp",
    "gain_db",
    "limited",
]


class LoudnessError(ValueError):
    """A clip that cannot be normalised (too short, silent, or the target is unreachable); names the clip."""


def _mono(audio: np.ndarray, clip_id: str = "") -> np.ndarray:
    """``audio`` as a float64 1-D array; a ``(n, 1)`` array is flattened, more channels are refused."""
    x = np.asarray(audio, dtype=np.float64)
    if x.ndim == 2 and x.shape[1] == 1:
        x = x[:, 0]
    if x.ndim != 1:
        raise LoudnessError(f"clip {clip_id or '?'}: expected mono audio of shape (n,), got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise LoudnessError(f"clip {clip_id or '?'}: audio holds NaN or infinite samples")
    return x


def integrated_loudness(audio: np.ndarray, sample_rate: int) -> float:
    """Integrated (gated) loudness of a mono clip per ITU-R BS.1770-4, in LUFS.

    Args:
        audio: float samples, full scale 1.0, shape ``(n,)`` or ``(n, 1)``.
        sample_rate: Hz.

    Returns:
        LUFS; a full-scale (amplitude 1.0) 997 Hz sine reads -3.01 (BS.1770-4, Annex 1). NaN when
        the clip is shorter than one 400 ms gating block (BS.1770 defines no integrated loudness for
        it); -inf when no block passes the -70 LUFS absolute gate (silence).
    """
    import pyloudnorm

    x = _mono(audio)
    sr = int(sample_rate)
    if sr <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
    if x.size < BLOCK_S * sr:
        return math.nan
    if not np.any(x):
        return -math.inf
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # empty gated means (every block below -70 LUFS)
        lufs = float(pyloudnorm.Meter(sr, filter_class="DeMan", block_size=BLOCK_S).integrated_loudness(x))
    return lufs if math.isfinite(lufs) else -math.inf


def oversampling_factor(sample_rate: int) -> int:
    """BS.1770-4 Annex 2's oversampling: 4x below 96 kHz, 2x below 192 kHz, none from 192 kHz."""
    return 4 if sample_rate < 96000 else 2 if sample_rate < 192000 else 1


def _peak_per_sample(x: np.ndarray, sample_rate: int) -> np.ndarray:
    """For each sample i, the largest |value| of the oversampled signal over [i, i + 1) samples (linear)."""
    from scipy.signal import resample_poly

    k = oversampling_factor(int(sample_rate))
    if k == 1 or x.size == 0:
        return np.abs(x)
    up = resample_poly(x, k, 1)[: x.size * k]
    return np.maximum(np.abs(up).reshape(x.size, k).max(axis=1), np.abs(x))


def true_peak_dbtp(audio: np.ndarray, sample_rate: int) -> float:
    """True-peak level per ITU-R BS.1770-4 Annex 2, in dBTP.

    Args:
        audio: float samples, full scale 1.0, shape ``(n,)`` or ``(n, 1)``.
        sample_rate: Hz; below 96 kHz the signal is oversampled 4x (:func:`oversampling_factor`).

    Returns:
        ``20 log10(max |x_oversampled|)`` (never below the sample peak); -inf for silence. A sine of
        amplitude 0.5 at fs/4 sampled 45 degrees off its crests reads -6.02 dBTP, 3 dB above its
        sample peak.
    """
    x = _mono(audio)
    if x.size == 0:
        raise ValueError("true_peak_dbtp: empty audio")
    peak = float(_peak_per_sample(x, int(sample_rate)).max())
    return 20.0 * math.log10(peak) if peak > 0 else -math.inf


def limiter_gain_db(audio: np.ndarray, sample_rate: int, ceiling_dbtp: float) -> np.ndarray:
    """The look-ahead peak limiter's gain (dB, <= 0, shape ``(n,)``) that keeps ``audio`` under a ceiling.

    Each sample's required gain ``d[j] = min(0, ceiling - 20 log10 peak[j])`` comes from the
    4x-oversampled peak over that sample (:func:`_peak_per_sample`). The envelope is the largest gain,
    linear in dB around each peak, that never exceeds any requirement: ``g[n] = min_j d[j] + slope
    |n - j|`` with the attack slope (:data:`ATTACK_DB_PER_MS`) ahead of a peak (look-ahead: the gain is
    already down when the peak arrives) and the release slope (:data:`RELEASE_DB_PER_MS`) after it.
    Computed with two cumulative minima (O(n), no loop, deterministic).
    """
    x = _mono(audio)
    sr = int(sample_rate)
    peak = _peak_per_sample(x, sr)
    with np.errstate(divide="ignore"):
        need = np.minimum(0.0, ceiling_dbtp - 20.0 * np.log10(peak))
    if not np.any(need < 0):
        return np.zeros_like(x)
    j = np.arange(x.size, dtype=np.float64)
    attack = ATTACK_DB_PER_MS * 1000.0 / sr  # dB per sample
    release = RELEASE_DB_PER_MS * 1000.0 / sr
    after = release * j + np.minimum.accumulate(need - release * j)  # constraint from peaks at or before n
    ahead = np.minimum.accumulate((need + attack * j)[::-1])[::-1] - attack * j  # from peaks at or after n
    return np.minimum(np.minimum(after, ahead), 0.0)


def _limit(y: np.ndarray, sample_rate: int, ceiling_dbtp: float) -> tuple[np.ndarray, np.ndarray]:
    """``y`` limited under ``ceiling_dbtp`` (re-run on its own output while a true peak is over); (out, gain dB)."""
    total = np.zeros_like(y)
    out = y
    for _ in range(LIMITER_MAX_ROUNDS):
        if true_peak_dbtp(out, sample_rate) <= ceiling_dbtp - LIMITER_MARGIN_DB / 2:
            break
        g = limiter_gain_db(out, sample_rate, ceiling_dbtp - LIMITER_MARGIN_DB)
        total += g
        out = y * 10.0 ** (total / 20.0)
    return out, total


def _measure(audio: np.ndarray, sample_rate: int) -> tuple[float, float]:
    """(integrated loudness LUFS, true peak dBTP)."""
    return integrated_loudness(audio, sample_rate), true_peak_dbtp(audio, sample_rate)


def check_measurable(lufs: float, n_samples: int, sample_rate: int, target: float, clip_id: str) -> None:
    """Raise :class:`LoudnessError` naming the clip when ``lufs`` gives no finite gain to ``target``."""
    name = clip_id or "?"
    if math.isnan(lufs):
        raise LoudnessError(
            f"clip {name}: {n_samples / sample_rate:.3f} s is shorter than BS.1770's {BLOCK_S * 1000:.0f} ms gating "
            f"block: its integrated loudness is undefined, so it cannot be normalised to {target} LUFS"
        )
    if lufs == -math.inf:
        raise LoudnessError(
            f"clip {name}: silent (no {BLOCK_S * 1000:.0f} ms block above BS.1770's -70 LUFS absolute gate): "
            f"no finite gain brings it to {target} LUFS"
        )


def normalise_loudness(
    audio: np.ndarray,
    sample_rate: int,
    target_lufs: float | None,
    true_peak_dbtp: float = -1.0,
    clip_id: str = "",
) -> tuple[np.ndarray, dict[str, float]]:
    """Normalise a mono clip to ``target_lufs`` (BS.1770-4) with its true peak at most ``true_peak_dbtp``.

    Args:
        audio: float samples, full scale 1.0, shape ``(n,)`` or ``(n, 1)``.
        sample_rate: Hz.
        target_lufs: the integrated loudness to reach (EBU R 128: -23.0); ``None`` returns the audio
            unchanged (as float32) and only measures it.
        true_peak_dbtp: the true-peak ceiling (EBU R 128: -1.0 dBTP); a peak over it after the gain
            is brought under by the look-ahead limiter (:func:`limiter_gain_db`), and the gain is
            then corrected so that the loudness still lands within :data:`AIM_LU` of the target.
        clip_id: named in errors.

    Returns:
        (float32 audio of shape ``(n,)``, measurements): ``lufs_before``, ``lufs_after`` (LUFS),
        ``true_peak_before_dbtp``, ``true_peak_after_dbtp`` (dBTP), ``gain_db`` (the static gain, dB;
        0 when ``target_lufs`` is None) and ``limited`` (the fraction of samples, 0..1, the limiter
        took more than 0.01 dB off) -- :data:`MANIFEST_LOUDNESS_COLUMNS`.

    Raises:
        LoudnessError: (a ``ValueError``) when ``target_lufs`` is given and the clip is shorter than
            400 ms or silent, or the target and ceiling cannot both be met; the message names the clip.
    """
    x = _mono(audio, clip_id)
    sr = int(sample_rate)
    lufs_before, tp_before = _measure(x, sr)
    stats = {"lufs_before": lufs_before, "true_peak_before_dbtp": tp_before, "gain_db": 0.0, "limited": 0.0}
    if target_lufs is None:
        out = x.astype(np.float32)
        return out, {**stats, "lufs_after": lufs_before, "true_peak_after_dbtp": tp_before}
    target = float(target_lufs)
    check_measurable(lufs_before, x.size, sr, target, clip_id)
    gain_db = target - lufs_before
    for _ in range(MAX_PASSES):
        y, limiter_db = _limit(x * 10.0 ** (gain_db / 20.0), sr, true_peak_dbtp)
        lufs = integrated_loudness(y, sr)
        check_measurable(lufs, x.size, sr, target, clip_id)
        if abs(lufs - target) <= AIM_LU:
            break
        gain_db += target - lufs
    out = y.astype(np.float32)
    lufs_after, tp_after = _measure(out, sr)
    if not (abs(lufs_after - target) <= TOLERANCE_LU and tp_after <= true_peak_dbtp):
        raise LoudnessError(
            f"clip {clip_id or '?'}: cannot reach {target} LUFS under a {true_peak_dbtp} dBTP ceiling: got "
            f"{lufs_after:.2f} LUFS, {tp_after:.2f} dBTP after {MAX_PASSES} passes (gain {gain_db:+.1f} dB)"
        )
    limited = float(np.mean(limiter_db < LIMITED_BELOW_DB)) if limiter_db.size else 0.0
    stats.update(gain_db=gain_db, limited=limited, lufs_after=lufs_after, true_peak_after_dbtp=tp_after)
    return out, stats
