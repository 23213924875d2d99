"""Render clips to WAV files and describe each in a manifest row.

Each clip's text goes through :func:`modprefs.speech.text.speakable_text`, then the backend;
the audio is written as 16-bit PCM mono WAV to ``{clip_dir}/{clip_id}.wav`` atomically (a
failure leaves no partial file). QC metrics are computed on the float audio the engine
returned, before quantisation:

- ``rms_dbfs``: 20·log10(RMS) relative to full scale 1.0 (floored at -200 dBFS for silence);
- ``peak``: max ``|x|`` (above 1.0 means the engine overshot and the WAV is clipped);
- ``clipping_ratio``: fraction of samples with ``|x| >= 0.999``.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import soundfile as sf

from modprefs.errors import UserInputError
from modprefs.io import atomic_path
from modprefs.speech.backends import TTSBackend, get_backend
from modprefs.speech.text import speakable_text

__all__ = [
    "MANIFEST_COLUMNS",
    "ClipRenderError",
    "audio_qc",
    "render_clip",
    "render_clips",
    "combine_manifests",
    "empty_manifest",
    "clip_fingerprint",
    "manifest_clip_paths",
    "unreadable_clips",
]

log = logging.getLogger(__name__)

MANIFEST_COLUMNS = [
    "clip_id",
    "prompt_id",
    "response",
    "path",
    "sample_rate",
    "duration_s",
    "backend",
    "model",
    "voice",
    "lang",
    "speed",
    "spoken_text",
    "n_chars_spoken",
    "rms_dbfs",
    "peak",
    "clipping_ratio",
    "render_seconds",
    # a lab's given audio (tts.backend given; "" / NaN for synthesised clips): where the clip's text condition came
    # from (given / asr), for an ASR transcript its mean word probability and its screening flag, the lab's table
    # row and file, and the file's own peak, clipping and DC offset before any processing (modprefs.speech.given)
    "text_source",
    "asr_confidence",
    "asr_flag",
    "source_row",
    "source_file",
    "source_peak",
    "source_clipping_ratio",
    "source_dc_offset",
    # loudness normalisation (modprefs.speech.loudness; config audio): the engine's or given level, the level
    # written, the gain applied and whether the true-peak limiter acted (NaN when not measurable, e.g. silence)
    "lufs_before",
    "lufs_after",
    "true_peak_before_dbtp",
    "true_peak_after_dbtp",
    "gain_db",
    "limited",
]
LOUDNESS_COLUMNS = MANIFEST_COLUMNS[MANIFEST_COLUMNS.index("lufs_before") :]
CLIP_LEVEL = 0.999
SILENCE_FLOOR_DBFS = -200.0


class ClipRenderError(UserInputError, RuntimeError):
    """Rendering one clip failed; the message names the clip."""


def audio_qc(audio: np.ndarray) -> dict[str, float]:
    """QC metrics of float audio, shape ``(n_samples,)``, full scale 1.0: rms_dbfs, peak, clipping_ratio."""
    x = np.asarray(audio, dtype=np.float64)
    rms = float(np.sqrt(np.mean(x * x))) if x.size else 0.0
    rms_dbfs = 20.0 * np.log10(rms) if rms > 0 else SILENCE_FLOOR_DBFS
    return {
        "rms_dbfs": max(float(rms_dbfs), SILENCE_FLOOR_DBFS),
        "peak": float(np.max(np.abs(x))) if x.size else 0.0,
        "clipping_ratio": float(np.mean(np.abs(x) >= CLIP_LEVEL)) if x.size else 0.0,
    }


def _checked_audio(audio: Any, clip: str, backend: TTSBackend) -> np.ndarray:
    """The backend's output as float32 ``(n,)``; error naming the clip if empty or not finite."""
    x = np.asarray(audio, dtype=np.float32)
    if x.ndim != 1:
        x = np.squeeze(x)
    if x.ndim != 1:
        raise ClipRenderError(f"clip {clip}: {backend.name} returned audio of shape {np.shape(audio)}, expected mono")
    if x.size == 0:
        raise ClipRenderError(f"clip {clip}: {backend.name} returned zero-length audio")
    if not np.all(np.isfinite(x)):
        raise ClipRenderError(f"clip {clip}: {backend.name} returned NaN or infinite samples")
    return x


def write_wav(audio: np.ndarray, sample_rate: int, path: Path) -> None:
    """Write float audio (full scale 1.0) as 16-bit PCM mono WAV, atomically."""
    with atomic_path(path) as tmp:
        sf.write(tmp, np.clip(audio, -1.0, 1.0), int(sample_rate), subtype="PCM_16", format="WAV")


#: Longest spoken text accepted per clip (characters): about 20 minutes of speech. Longer input is
#: almost certainly a data error (a pasted document), and would tie up a rendering job for hours.
MAX_SPOKEN_CHARS = 20_000


def check_output_dir(clip_dir: str | Path) -> Path:
    """Create ``clip_dir`` if needed and prove it is writable; ClipRenderError naming it otherwise."""
    path = Path(clip_dir)
    try:
        path.mkdir(parents=True, exist_ok=True)
        # a file of this process's own (jobs side by side check the same folder: a shared name raced)
        with tempfile.TemporaryFile(dir=path, prefix=".write-test-"):
            pass
    except OSError as err:
        raise ClipRenderError(f"output directory {str(path)!r} is not writable: {err}") from err
    return path


def level_clip(
    audio: np.ndarray, sample_rate: int, level: Mapping[str, Any] | None, clip_id: str
) -> tuple[np.ndarray, dict[str, float]]:
    """Loudness-normalise one clip (config ``audio``: ``target_lufs``, ``true_peak_dbfs``).

    A clip whose loudness cannot be measured (silence, shorter than BS.1770's 400 ms block) is kept as it is, with
    NaN measures and a warning: audio QC then judges it (silence fails ``min_rms_dbfs``).
    """
    from modprefs.speech.loudness import normalise_loudness

    if level is None:  # no level control asked for (a library caller): measure only
        level = {"target_lufs": None}
    level = dict(level)
    target = level.get("target_lufs", -23.0)  # the config's `audio` block: its default is -23 LUFS
    try:
        out, measures = normalise_loudness(
            audio, sample_rate, target, float(level.get("true_peak_dbfs", -1.0)), clip_id=clip_id
        )
    except ValueError as err:
        log.warning("clip %s: loudness not normalised (%s); audio QC judges it", clip_id, err)
        return audio, dict.fromkeys(LOUDNESS_COLUMNS, float("nan"))
    return out, {k: float(measures[k]) for k in LOUDNESS_COLUMNS}


#: The given-audio columns of a synthesised clip's manifest row.
NOT_GIVEN: dict[str, object] = {
    "text_source": "",
    "asr_confidence": float("nan"),
    "asr_flag": "",
    "source_row": float("nan"),
    "source_file": "",
    "source_peak": float("nan"),
    "source_clipping_ratio": float("nan"),
    "source_dc_offset": float("nan"),
}


def finish_clip(
    identity: Mapping[str, Any],
    spoken: str,
    audio: np.ndarray,
    sample_rate: int,
    clip_dir: Path,
    render_seconds: float,
    level: Mapping[str, Any] | None,
    given: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """Level, write and describe one clip; ``identity`` holds clip_id, prompt_id, response and the source's backend,
    model, voice, lang and speed; ``given`` the given-audio columns (:data:`NOT_GIVEN` for a synthesised clip).
    Returns the manifest row (:data:`MANIFEST_COLUMNS`)."""
    clip_id = str(identity["clip_id"])
    audio, loudness = level_clip(audio, sample_rate, level, clip_id)
    path = Path(clip_dir) / f"{clip_id}.wav"
    write_wav(audio, sample_rate, path)
    return clip_row(identity, spoken, path, sample_rate, audio.size, audio_qc(audio), render_seconds, given, loudness)


def clip_row(
    identity: Mapping[str, Any],
    spoken: str,
    path: Path,
    sample_rate: int,
    n_samples: int,
    qc: Mapping[str, float],
    render_seconds: float,
    given: Mapping[str, object] | None,
    loudness: Mapping[str, float],
) -> dict[str, object]:
    """The manifest row (:data:`MANIFEST_COLUMNS`) of a clip written to ``path`` (logged)."""
    duration = n_samples / sample_rate
    log.info(
        "clip %s: %d chars, %.2f s audio in %.2f s -> %s (%s)",
        identity["clip_id"],
        len(spoken),
        duration,
        render_seconds,
        path,
        ", ".join(f"{k} {v:.2f}" for k, v in loudness.items()),
    )
    return {
        **{k: identity[k] for k in ("clip_id", "prompt_id", "response", "backend", "model", "voice", "lang", "speed")},
        "path": str(path),
        "sample_rate": int(sample_rate),
        "duration_s": duration,
        "spoken_text": spoken,
        "n_chars_spoken": len(spoken),
        **qc,
        "render_seconds": render_seconds,
        **{**NOT_GIVEN, **dict(given or {})},
        **loudness,
    }


def _spoken(text: str, clip_id: str, max_chars: int) -> str:
    try:
        spoken = speakable_text(text, clip_id=clip_id)
    except ValueError as err:
        raise ClipRenderError(str(err)) from None
    if len(spoken) > max_chars:
        raise ClipRenderError(
            f"clip {clip_id}: {len(spoken)} characters to speak exceed the limit of {max_chars} "
            "(modprefs.speech.render.MAX_SPOKEN_CHARS); is the response text right?"
        )
    return spoken


def render_clip(
    clip_id: str,
    prompt_id: str,
    response: int,
    text: str,
    backend: TTSBackend,
    clip_dir: Path,
    max_chars: int = MAX_SPOKEN_CHARS,
    inject_silence: bool = False,
    level: Mapping[str, Any] | None = None,
) -> dict[str, object]:
    """Render one clip to ``{clip_dir}/{clip_id}.wav`` at the ``level`` (config ``audio``); return its manifest row.

    ``inject_silence`` is a fault-injection hook (config ``audio_qc.inject_silence``): the engine's
    output is replaced by digital silence of the same length, so audio QC must catch the clip and
    the replacement loop must run. It is logged loudly and never set by default.

    Raises:
        ClipRenderError: nothing speakable in ``text``, more than ``max_chars`` characters, synthesis failed or
            produced no audio (names the clip; no WAV written). A ValueError, as it is a UserInputError.
    """
    spoken = _spoken(text, clip_id, max_chars)
    start = time.perf_counter()
    try:
        raw = backend.synthesize(spoken)
    except Exception as err:
        raise ClipRenderError(f"clip {clip_id}: {backend.name} synthesis failed: {err}") from err
    render_seconds = time.perf_counter() - start
    audio = _checked_audio(raw, clip_id, backend)
    if inject_silence:
        log.warning("clip %s: FAULT INJECTION (audio_qc.inject_silence): writing silence instead of speech", clip_id)
        audio = np.zeros_like(audio)
    identity = {
        "clip_id": clip_id,
        "prompt_id": prompt_id,
        "response": int(response),
        "backend": backend.name,
        "model": backend.model,
        "voice": backend.voice,
        "lang": backend.lang,
        "speed": float(backend.speed),
    }
    return finish_clip(identity, spoken, audio, backend.sample_rate, clip_dir, render_seconds, level)


def given_clip(
    clip: Any, sample_rate: int, clip_dir: Path, level: Mapping[str, Any] | None, inject_silence: bool = False
) -> dict[str, object]:
    """One clip from the lab's audio (``tts.backend: given``): ``clip`` has clip_id, prompt_id, response, text (the
    text condition's, given or ASR) and audio (the file); read, mixed to mono, resampled, levelled, written. A file
    longer than :data:`modprefs.speech.long_audio.STREAM_ABOVE_S` is processed in blocks (:func:`_long_given_clip`)."""
    from modprefs.speech.given import given_duration_s, read_given_audio_measured
    from modprefs.speech.long_audio import STREAM_ABOVE_S

    start = time.perf_counter()
    identity = {
        "clip_id": str(clip.clip_id),
        "prompt_id": str(clip.prompt_id),
        "response": int(clip.response),
        "backend": "given",
        "model": "given",
        "voice": str(getattr(clip, "system", "") or "given"),
        "lang": "",
        "speed": 1.0,
    }
    spoken = " ".join(str(clip.text).split())
    given = {
        "text_source": str(getattr(clip, "text_source", "") or "given"),
        "asr_confidence": float(getattr(clip, "asr_confidence", float("nan"))),
        "asr_flag": str(getattr(clip, "asr_flag", "") or ""),
        "source_row": getattr(clip, "source_row", float("nan")),
        "source_file": str(clip.audio),
    }
    if inject_silence:
        log.warning(
            "clip %s: FAULT INJECTION (audio_qc.inject_silence): writing silence instead of speech", clip.clip_id
        )
    if (given_duration_s(clip.audio) or 0.0) > STREAM_ABOVE_S:
        path, n, qc, loudness, measured = _long_given_clip(clip, sample_rate, Path(clip_dir), level, inject_silence)
        given |= measured
        return clip_row(identity, spoken, path, sample_rate, n, qc, time.perf_counter() - start, given, loudness)
    audio, measured = read_given_audio_measured(clip.audio, sample_rate, str(clip.clip_id))
    if inject_silence:
        audio = np.zeros_like(audio)
    given |= measured
    return finish_clip(identity, spoken, audio, sample_rate, clip_dir, time.perf_counter() - start, level, given)


def _long_given_clip(
    clip: Any, sample_rate: int, clip_dir: Path, level: Mapping[str, Any] | None, inject_silence: bool
) -> tuple[Path, int, dict[str, float], dict[str, float], dict[str, float]]:
    """A long given clip, block by block (:mod:`modprefs.speech.long_audio`): (its WAV, samples, QC, loudness and
    source measures), the same values :func:`finish_clip` gives for the whole array."""
    from modprefs.speech import long_audio as la
    from modprefs.speech.given import stream_given_mono

    clip_id = str(clip.clip_id)
    level = dict(level) if level is not None else {"target_lufs": None}
    with la.Work(clip_dir) as work:
        source = work.signal("source.f32", np.float32)
        rate, measured = stream_given_mono(clip.audio, clip_id, source.append)
        audio = la.resampled(source, rate, sample_rate, work)
        if inject_silence:
            audio = la.zeros_like(audio, work)
        try:
            audio, loudness = la.normalise(
                audio,
                sample_rate,
                level.get("target_lufs", -23.0),
                float(level.get("true_peak_dbfs", -1.0)),
                clip_id,
                work,
            )
        except ValueError as err:  # as level_clip: the clip is kept as it is, and audio QC judges it
            log.warning("clip %s: loudness not normalised (%s); audio QC judges it", clip_id, err)
            loudness = dict.fromkeys(LOUDNESS_COLUMNS, float("nan"))
        path = clip_dir / f"{clip_id}.wav"
        qc = _write_wav_blocks(audio, sample_rate, path)
    return path, audio.n, qc, {k: float(loudness[k]) for k in LOUDNESS_COLUMNS}, measured


def _write_wav_blocks(audio: Any, sample_rate: int, path: Path) -> dict[str, float]:
    """:func:`write_wav` and :func:`audio_qc` of a long clip (a :class:`modprefs.speech.long_audio.RawSignal`), block
    by block."""
    from modprefs.speech.long_audio import blocks

    squares, peak, clipped = 0.0, 0.0, 0
    with atomic_path(path) as tmp, sf.SoundFile(tmp, "w", int(sample_rate), 1, "PCM_16", format="WAV") as out:
        for a, b in blocks(audio.n):
            x = audio.read(a, b)
            wide = x.astype(np.float64)
            squares += float(np.sum(wide * wide))
            peak = max(peak, float(np.max(np.abs(wide))))
            clipped += int(np.count_nonzero(np.abs(wide) >= CLIP_LEVEL))
            out.write(np.clip(x, -1.0, 1.0))
    rms = math.sqrt(squares / audio.n) if audio.n else 0.0
    rms_dbfs = 20.0 * math.log10(rms) if rms > 0 else SILENCE_FLOOR_DBFS
    return {
        "rms_dbfs": max(float(rms_dbfs), SILENCE_FLOOR_DBFS),
        "peak": peak,
        "clipping_ratio": clipped / audio.n if audio.n else 0.0,
    }


def empty_manifest() -> pd.DataFrame:
    """A manifest with the columns and no rows (an empty shard)."""
    return pd.DataFrame(columns=MANIFEST_COLUMNS)


def render_clips(
    clips: pd.DataFrame,
    backend: TTSBackend,
    clip_dir: str | Path,
    inject_silence: Iterable[str] = (),
    level: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Render every row of ``clips`` (clip_id, prompt_id, response, text) in order.

    ``inject_silence``: clip ids rendered as silence (fault injection; see :func:`render_clip`).

    Returns:
        The manifest, one row per clip, columns :data:`MANIFEST_COLUMNS`. Stops at the first
        failing clip (its error names it); WAVs of earlier clips stay, as complete files.
    """
    clip_dir = check_output_dir(clip_dir)
    silent = set(inject_silence)
    rows = [
        render_clip(
            str(c.clip_id),
            str(c.prompt_id),
            int(c.response),
            c.text,
            backend,
            clip_dir,
            inject_silence=str(c.clip_id) in silent,
            level=level,
        )
        for c in clips.itertuples(index=False)
    ]
    return pd.DataFrame(rows, columns=MANIFEST_COLUMNS) if rows else empty_manifest()


#: Bytes of each WAV read for its fingerprint: the header and the first ~1.4 s of 24 kHz audio.
FINGERPRINT_HEAD_BYTES = 65536


def manifest_clip_paths(manifest_csv: str | Path) -> list[str]:
    """The ``path`` column of a shard manifest (the WAVs its render job wrote), in order.

    Raises FileNotFoundError (naming ``manifest_csv``) when the manifest does not exist yet.
    """
    with open(manifest_csv, encoding="utf-8") as fh:
        table = pd.read_csv(fh, usecols=["path"], dtype={"path": str}, keep_default_na=False)
    return table["path"].tolist()


def clip_fingerprint(manifest_csvs: str | Path | Iterable[str | Path]) -> str:
    """A short digest of the WAVs that shard manifests list: each clip's path, size and first 64 KB.

    A rule that reads clips takes this as a param, so a clip changed after rendering (zeroed, truncated,
    replaced, deleted) changes the param and Snakemake reruns the rule (rerun trigger ``params``); the
    WAVs are not declared outputs of the render rules because their names are only known from the
    draw. Reading 64 KB per clip keeps this cheap at PRISM scale (6,228 clips: ~0.4 GB per DAG
    build, from the page cache); damage past the first 64 KB that keeps the size is not seen. A
    missing clip counts as size -1 (its QC then fails it as unreadable).

    Before the shards are rendered (a manifest does not exist yet) the fingerprint is ``"pending"``:
    Snakemake evaluates params again just before it runs a job and records that value, and it only
    compares params that do not derive from ``input`` (so the rules pass the manifest paths by name).
    """
    paths = [manifest_csvs] if isinstance(manifest_csvs, (str, Path)) else list(manifest_csvs)
    if not all(os.path.isfile(p) for p in paths):
        return "pending"
    digest = hashlib.sha256()
    for manifest in paths:
        for clip in manifest_clip_paths(manifest):
            try:
                with open(clip, "rb") as fh:
                    head = fh.read(FINGERPRINT_HEAD_BYTES)
                    size = os.fstat(fh.fileno()).st_size
            except FileNotFoundError:
                head, size = b"", -1
            digest.update(f"{clip}\t{size}\t{hashlib.sha256(head).hexdigest()}\n".encode())
    return digest.hexdigest()[:16]


def unreadable_clips(manifest: pd.DataFrame) -> list[str]:
    """``"<clip_id> (<path>): <why>"`` for every clip whose WAV is missing, undecodable or empty."""
    problems = []
    for clip, path in zip(manifest["clip_id"], manifest["path"]):
        try:
            info = sf.info(str(path))
        except (sf.LibsndfileError, RuntimeError, OSError) as err:
            problems.append(f"{clip} ({path}): {err}")
            continue
        if info.frames == 0:
            problems.append(f"{clip} ({path}): no audio samples")
    return problems


def combine_manifests(shards: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate shard manifests in order; error on a duplicate clip_id or a missing column."""
    frames = list(shards)
    for i, frame in enumerate(frames):
        missing = [c for c in MANIFEST_COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(f"shard manifest {i} lacks column(s) {missing}")
    non_empty = [f for f in frames if len(f)]
    if not non_empty:
        return empty_manifest()
    manifest = pd.concat(non_empty, ignore_index=True)
    dup = manifest["clip_id"][manifest["clip_id"].duplicated()].unique().tolist()
    if dup:
        raise ValueError(f"audio manifest: clip_id appears in more than one row: {dup[:10]}")
    return manifest


def render_shard(
    part: pd.DataFrame,
    tts: Mapping[str, Any],
    threads: int,
    clip_dir: str | os.PathLike[str],
    inject_silence: Iterable[str] = (),
    level: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Render one shard's clips with the backend ``tts`` configures, loaded once (logged with its load time), each
    levelled to ``level`` (config ``audio``); an empty shard loads nothing and gives the header-only manifest
    (:func:`empty_manifest`). With ``tts.backend: given`` the clips with an ``audio`` file are the lab's audio
    (:func:`given_clip`) and the rest (the attention check) are spoken by ``tts.attention_tts``."""
    if part.empty:
        return empty_manifest()
    if tts.get("backend") == "given":
        return _given_shard(part, tts, threads, Path(clip_dir), inject_silence, level)
    start = time.perf_counter()
    backend = get_backend(tts, threads=threads)
    log.info("backend %r ready in %.1f s", backend, time.perf_counter() - start)
    return render_clips(part, backend, Path(clip_dir), inject_silence=inject_silence, level=level)


def _given_shard(
    part: pd.DataFrame,
    tts: Mapping[str, Any],
    threads: int,
    clip_dir: Path,
    inject_silence: Iterable[str],
    level: Mapping[str, Any] | None,
) -> pd.DataFrame:
    from modprefs.speech.given import attention_tts_config, given_sample_rate

    clip_dir = check_output_dir(clip_dir)
    has_audio = (
        part["audio"].notna() & part["audio"].astype(str).ne("") if "audio" in part else pd.Series(False, part.index)
    )
    silent = set(inject_silence)
    rate = given_sample_rate(tts)
    rows: dict[int, dict[str, object]] = {}
    for i, clip in part[has_audio].iterrows():
        rows[i] = given_clip(clip, rate, clip_dir, level, str(clip.clip_id) in silent)
    spoken = part[~has_audio]
    if len(spoken):
        synth = render_shard(spoken, attention_tts_config(tts), threads, clip_dir, inject_silence, level)
        rows |= dict(zip(spoken.index, synth.to_dict("records")))
        # one study rate: the attention check's voice resampled to it
        for i in spoken.index:
            rows[i] = _resampled_row(rows[i], rate, level)
    return pd.DataFrame([rows[i] for i in part.index], columns=MANIFEST_COLUMNS)


def _resampled_row(row: dict[str, object], rate: int, level: Mapping[str, Any] | None) -> dict[str, object]:
    """A synthesised clip rewritten at the study rate ``rate`` (unchanged when it is already at that rate)."""
    if int(row["sample_rate"]) == rate:  # type: ignore[call-overload]
        return row
    from modprefs.speech.given import read_given_audio

    path = Path(str(row["path"]))
    audio = read_given_audio(path, rate, str(row["clip_id"]))
    identity = {k: row[k] for k in ("clip_id", "prompt_id", "response", "backend", "model", "voice", "lang", "speed")}
    out = finish_clip(identity, str(row["spoken_text"]), audio, rate, path.parent, float(row["render_seconds"]), level)  # type: ignore[arg-type]
    out["lufs_before"], out["true_peak_before_dbtp"] = row["lufs_before"], row["true_peak_before_dbtp"]
    return out
