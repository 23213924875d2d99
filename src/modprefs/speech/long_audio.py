"""Long given audio in blocks: read, mixed to mono, resampled, levelled and written in memory that does not grow with
its length (``tts.backend: given``, issue #49).

:func:`modprefs.speech.render.given_clip` hands a clip longer than :data:`STREAM_ABOVE_S` here (a lab raised
``data.max_audio_s`` for long stimuli). The whole-array path holds the clip several times over in float64, plus its 4x
oversampled copy for the true-peak meter: about 3.4 GB for 20 minutes. Here every step is the same computation done a
block of :data:`BLOCK` samples at a time:

* resampling: scipy's ``resample_poly`` (the same Kaiser-windowed FIR), each block of output computed by ``upfirdn``
  from exactly the input samples it needs (:class:`Polyphase`);
* BS.1770-4 integrated loudness as pyloudnorm computes it (the DeMan K-weighting with the filters' state carried from
  block to block, each 400 ms gating block's energy summed over the same samples, the same gating);
* the true-peak meter's 4x oversampling (:class:`Polyphase` again) and the look-ahead limiter's two cumulative minima,
  their running minimum carried across blocks;
* the level loop of :func:`modprefs.speech.loudness.normalise_loudness` (gain, limiter rounds, gain correction).

The signals between steps live in raw temporary files beside the clip (:class:`RawSignal`), read back a block at a
time, and are removed afterwards; the process holds a few blocks (tens of MB) whatever the length. The numbers equal
the whole-array path's (tests/speech/test_speech_long_audio.py; the DC offset and RMS are sums taken in another order).
Memory measured in benchmarks/out/given_long_audio.md.
"""

from __future__ import annotations

import math
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from math import gcd
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from modprefs.speech import loudness as ld

__all__ = [
    "BLOCK",
    "STREAM_ABOVE_S",
    "Polyphase",
    "RawSignal",
    "Work",
    "blocks",
    "normalise",
    "resampled",
    "zeros_like",
]

#: samples per block (2 MB of float64)
BLOCK = 1 << 18
#: given audio longer than this (seconds) is rendered here; shorter clips take the whole-array path
STREAM_ABOVE_S = 120.0


class Signal(Protocol):
    """Mono samples that can be read in any range (zeros outside ``[0, n)``)."""

    @property
    def n(self) -> int: ...

    def read(self, i0: int, i1: int) -> np.ndarray: ...


class RawSignal:
    """Mono samples of one dtype in a raw file, appended in order and read (or rewritten) in any range."""

    def __init__(self, path: Path, dtype: Any) -> None:
        self.path, self.dtype, self.n = Path(path), np.dtype(dtype), 0
        self._fh = open(self.path, "w+b")  # noqa: SIM115 - closed by close()

    def append(self, x: np.ndarray) -> None:
        self._fh.seek(self.n * self.dtype.itemsize)
        self._fh.write(np.ascontiguousarray(x, dtype=self.dtype).tobytes())
        self.n += len(x)

    def write_at(self, i0: int, x: np.ndarray) -> None:
        self._fh.seek(i0 * self.dtype.itemsize)
        self._fh.write(np.ascontiguousarray(x, dtype=self.dtype).tobytes())

    def read(self, i0: int, i1: int) -> np.ndarray:
        out = np.zeros(max(0, i1 - i0), self.dtype)
        lo, hi = max(i0, 0), min(i1, self.n)
        if hi > lo:
            self._fh.seek(lo * self.dtype.itemsize)
            out[lo - i0 : hi - i0] = np.frombuffer(self._fh.read((hi - lo) * self.dtype.itemsize), self.dtype)
        return out

    def close(self) -> None:
        self._fh.close()


def blocks(n: int, reverse: bool = False) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of each block of ``n`` samples, in order (or last first)."""
    starts = range(0, n, BLOCK)
    for a in reversed(starts) if reverse else starts:
        yield a, min(n, a + BLOCK)


@dataclass(frozen=True)
class Polyphase:
    """scipy's ``resample_poly(x, up, down)`` (default Kaiser window, zero padding), one block of output at a time."""

    up: int
    down: int
    h: np.ndarray
    pre_remove: int

    @classmethod
    def of(cls, rate: int, target: int, dtype: Any) -> Polyphase:
        from scipy.signal import firwin

        g = gcd(int(rate), int(target))
        up, down = int(target) // g, int(rate) // g
        max_rate = max(up, down)
        half_len = 10 * max_rate
        h = np.asarray(firwin(2 * half_len + 1, 1.0 / max_rate, window=("kaiser", 5.0)), dtype=dtype)
        h *= up
        pre_pad = down - half_len % down
        return cls(up, down, np.concatenate((np.zeros(pre_pad, dtype=h.dtype), h)), (half_len + pre_pad) // down)

    def n_out(self, n_in: int) -> int:
        return -(-n_in * self.up // self.down)

    def block(self, signal: Signal, m0: int, m1: int) -> np.ndarray:
        """Outputs ``[m0, m1)`` of the resampled ``signal``, from the input samples they need."""
        from scipy.signal import upfirdn

        up, down, shift = self.up, self.down, self.pre_remove
        i0 = max(0, ((m0 + shift) * down - (len(self.h) - 1)) // up)
        i0 -= i0 % down  # so that the segment's outputs fall on the whole signal's
        i1 = ((m1 - 1 + shift) * down) // up + 1
        y = upfirdn(self.h, np.asarray(signal.read(i0, i1), dtype=self.h.dtype), up, down)
        q0 = m0 + shift - i0 * up // down
        out = y[q0 : q0 + m1 - m0]
        return out if out.size == m1 - m0 else np.concatenate([out, np.zeros(m1 - m0 - out.size, out.dtype)])


@dataclass
class Scaled:
    """``x * 10^(gain_db / 20) [* 10^(total / 20)]`` in float64, as normalise_loudness forms ``y`` and ``out``."""

    x: Signal
    gain_db: float = 0.0
    total: RawSignal | None = None

    @property
    def n(self) -> int:
        return self.x.n

    def read(self, i0: int, i1: int) -> np.ndarray:
        y = np.asarray(self.x.read(i0, i1), dtype=np.float64) * 10.0 ** (self.gain_db / 20.0)
        return y if self.total is None else y * 10.0 ** (self.total.read(i0, i1) / 20.0)


def integrated_loudness(signal: Signal, sr: int) -> float:
    """:func:`modprefs.speech.loudness.integrated_loudness` of ``signal``, block by block (pyloudnorm's algorithm)."""
    import pyloudnorm
    from scipy.signal import lfilter

    n = signal.n
    if n < ld.BLOCK_S * sr:
        return math.nan
    filters = list(pyloudnorm.Meter(sr, filter_class="DeMan", block_size=ld.BLOCK_S)._filters.values())
    states = [np.zeros(max(len(f.a), len(f.b)) - 1) for f in filters]
    t_g, step = ld.BLOCK_S, 1.0 - 0.75
    n_blocks = int(np.round((n / sr - t_g) / (t_g * step))) + 1
    bounds = [(int(t_g * (j * step) * sr), min(n, int(t_g * (j * step + 1) * sr))) for j in range(n_blocks)]
    z = np.zeros(n_blocks)
    tail, tail_start, j, nonzero = np.zeros(0), 0, 0, False
    for a, b in blocks(n):
        x = np.asarray(signal.read(a, b), dtype=np.float64)
        nonzero = nonzero or bool(np.any(x))
        for k, f in enumerate(filters):
            x, states[k] = lfilter(f.b, f.a, x, zi=states[k])
            x = f.passband_gain * x
        tail = np.concatenate([tail, x])
        while j < n_blocks and bounds[j][1] <= b:
            lo, hi = bounds[j]
            z[j] = (1.0 / (t_g * sr)) * np.sum(np.square(tail[lo - tail_start : hi - tail_start]))
            j += 1
        keep = bounds[j][0] if j < n_blocks else b
        tail, tail_start = tail[keep - tail_start :], keep
    if not nonzero:
        return -math.inf
    lufs = _gated(z)
    return lufs if math.isfinite(lufs) else -math.inf


def _gated(z: np.ndarray) -> float:
    """BS.1770-4's absolute (-70 LUFS) and relative (-10 LU) gates over the block energies ``z``, as pyloudnorm."""
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        levels = [-0.691 + 10.0 * np.log10(np.sum([1.0 * zj])) for zj in z]
        gated = [j for j, level in enumerate(levels) if level >= -70.0]
        mean = np.mean([z[j] for j in gated])
        relative = -0.691 + 10.0 * np.log10(np.sum([1.0 * mean])) - 10.0
        gated = [j for j, level in enumerate(levels) if level > relative and level > -70.0]
        mean = np.nan_to_num(np.array([np.mean([z[j] for j in gated])]))[0]
        return float(-0.691 + 10.0 * np.log10(np.sum([1.0 * mean])))


def peak_per_sample(signal: Signal, sr: int, a: int, b: int) -> np.ndarray:
    """:func:`modprefs.speech.loudness._peak_per_sample` of samples ``[a, b)`` of ``signal``."""
    x = np.asarray(signal.read(a, b), dtype=np.float64)
    k = ld.oversampling_factor(int(sr))
    if k == 1:
        return np.abs(x)
    up = Polyphase.of(1, k, np.float64).block(signal, a * k, b * k)
    return np.maximum(np.abs(up).reshape(b - a, k).max(axis=1), np.abs(x))


def true_peak_dbtp(signal: Signal, sr: int) -> float:
    peak = max((float(peak_per_sample(signal, sr, a, b).max()) for a, b in blocks(signal.n)), default=0.0)
    return 20.0 * math.log10(peak) if peak > 0 else -math.inf


class Work:
    """A temporary folder beside the clip (same disk) for the intermediate signals; everything removed on exit."""

    def __init__(self, beside: Path) -> None:
        self._tmp = tempfile.TemporaryDirectory(dir=beside, prefix=".long-audio-")
        self.folder = Path(self._tmp.name)
        self._signals: list[RawSignal] = []

    def signal(self, name: str, dtype: Any) -> RawSignal:
        raw = RawSignal(self.folder / f"{len(self._signals)}-{name}", dtype)
        self._signals.append(raw)
        return raw

    def __enter__(self) -> Work:
        return self

    def __exit__(self, *exc: object) -> None:
        for raw in self._signals:
            raw.close()
        self._tmp.cleanup()


def zeros_like(signal: Signal, work: Work) -> RawSignal:
    """Digital silence as long as ``signal`` (float32; the fault injection ``audio_qc.inject_silence``)."""
    out = work.signal("silence.f32", np.float32)
    for a, b in blocks(signal.n):
        out.append(np.zeros(b - a, np.float32))
    return out


def resampled(source: RawSignal, rate: int, target: int, work: Work) -> RawSignal:
    """:func:`modprefs.speech.resample.resample` of the float32 ``source`` (``rate`` Hz) to ``target`` Hz."""
    if int(rate) == int(target):
        return source
    poly = Polyphase.of(rate, target, np.float32)
    out = work.signal("resampled.f32", np.float32)
    for m0, m1 in blocks(poly.n_out(source.n)):
        out.append(poly.block(source, m0, m1).astype(np.float32))
    return out


def _limiter_round(out: Signal, sr: int, ceiling_dbtp: float, total: RawSignal, work: Work) -> bool:
    """Add :func:`modprefs.speech.loudness.limiter_gain_db` of ``out`` to ``total`` (forward, then backward over the
    blocks, the cumulative minima carried); False when no sample needs limiting (nothing added)."""
    attack = ld.ATTACK_DB_PER_MS * 1000.0 / sr
    release = ld.RELEASE_DB_PER_MS * 1000.0 / sr
    need_file, after_file = work.signal("need.f64", np.float64), work.signal("after.f64", np.float64)
    carry, limited = math.inf, False
    for a, b in blocks(out.n):
        with np.errstate(divide="ignore"):
            need = np.minimum(0.0, ceiling_dbtp - 20.0 * np.log10(peak_per_sample(out, sr, a, b)))
        limited = limited or bool(np.any(need < 0))
        j = np.arange(a, b, dtype=np.float64)
        running = np.minimum(np.minimum.accumulate(need - release * j), carry)
        carry = float(running[-1])
        need_file.append(need)
        after_file.append(release * j + running)
    if not limited:
        return False
    carry = math.inf
    for a, b in blocks(out.n, reverse=True):
        j = np.arange(a, b, dtype=np.float64)
        ahead = np.minimum(np.minimum.accumulate((need_file.read(a, b) + attack * j)[::-1])[::-1], carry)
        carry = float(ahead[0])
        gain = np.minimum(np.minimum(after_file.read(a, b), ahead - attack * j), 0.0)
        total.write_at(a, total.read(a, b) + gain)
    return True


def _limit(y: Scaled, sr: int, ceiling_dbtp: float, work: Work) -> Scaled:
    """:func:`modprefs.speech.loudness._limit`: ``y`` limited under the ceiling, as a view on its gain file."""
    total = work.signal("total.f64", np.float64)
    for a, b in blocks(y.n):
        total.append(np.zeros(b - a))
    out = Scaled(y.x, y.gain_db, None)
    for _ in range(ld.LIMITER_MAX_ROUNDS):
        if true_peak_dbtp(out, sr) <= ceiling_dbtp - ld.LIMITER_MARGIN_DB / 2:
            break
        if not _limiter_round(out, sr, ceiling_dbtp - ld.LIMITER_MARGIN_DB, total, work):
            break  # nothing over the ceiling sample by sample: another round would find the same
        out = Scaled(y.x, y.gain_db, total)
    return out


def _normalised(x: RawSignal, sr: int, target: float, ceiling: float, clip_id: str, work: Work) -> tuple[Scaled, float]:
    """The level loop of :func:`modprefs.speech.loudness.normalise_loudness`: the levelled view and its static gain."""
    lufs_before = integrated_loudness(x, sr)
    ld.check_measurable(lufs_before, x.n, sr, target, clip_id)
    gain_db = target - lufs_before
    for _ in range(ld.MAX_PASSES):
        out = _limit(Scaled(x, gain_db), sr, ceiling, work)
        lufs = integrated_loudness(out, sr)
        ld.check_measurable(lufs, x.n, sr, target, clip_id)
        if abs(lufs - target) <= ld.AIM_LU:
            break
        gain_db += target - lufs
    return out, gain_db


def normalise(
    x: RawSignal, sr: int, target_lufs: float | None, ceiling: float, clip_id: str, work: Work
) -> tuple[RawSignal, dict[str, float]]:
    """:func:`modprefs.speech.loudness.normalise_loudness` of the float32 clip ``x``, block by block: the float32
    output (a file in ``work``) and its measures (:data:`modprefs.speech.loudness.MANIFEST_LOUDNESS_COLUMNS`).

    Raises:
        LoudnessError: as normalise_loudness (shorter than a gating block, silent, target unreachable).
    """
    lufs_before, tp_before = integrated_loudness(x, sr), true_peak_dbtp(x, sr)
    stats = {"lufs_before": lufs_before, "true_peak_before_dbtp": tp_before, "gain_db": 0.0, "limited": 0.0}
    if target_lufs is None:
        return x, {**stats, "lufs_after": lufs_before, "true_peak_after_dbtp": tp_before}
    target = float(target_lufs)
    out, gain_db = _normalised(x, sr, target, ceiling, clip_id, work)
    written = work.signal("levelled.f32", np.float32)
    for a, b in blocks(x.n):
        written.append(out.read(a, b).astype(np.float32))
    lufs_after, tp_after = integrated_loudness(written, sr), true_peak_dbtp(written, sr)
    if not (abs(lufs_after - target) <= ld.TOLERANCE_LU and tp_after <= ceiling):
        raise ld.LoudnessError(
            f"clip {clip_id or '?'}: cannot reach {target} LUFS under a {ceiling} dBTP ceiling: got {lufs_after:.2f} "
            f"LUFS, {tp_after:.2f} dBTP after {ld.MAX_PASSES} passes (gain {gain_db:+.1f} dB)"
        )
    limited = 0.0
    if out.total is not None:
        below = sum(int(np.sum(out.total.read(a, b) < ld.LIMITED_BELOW_DB)) for a, b in blocks(x.n))
        limited = below / x.n
    stats.update(gain_db=gain_db, limited=limited, lufs_after=lufs_after, true_peak_after_dbtp=tp_after)
    return written, stats
