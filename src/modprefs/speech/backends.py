"""Text-to-speech backends: the interface every engine implements, and a registry by name.

A backend is built once per rendering job (loading a model can take seconds) and then called
once per clip. ``get_backend(config["tts"], threads)`` picks the engine named by
``tts.backend``. Engines are imported lazily, so a workflow that never renders with piper does
not need piper installed.

Adding an engine (e.g. the official ``kokoro`` torch pipeline, piper, espeak-ng):

1. write ``modprefs/speech/<engine>.py`` with a class satisfying :class:`TTSBackend` and a
   factory ``from_config(tts: dict, threads: int) -> TTSBackend``;
2. add one line to ``_BUILTIN`` below: ``"<name>": ("modprefs.speech.<engine>", "from_config")``.

Third-party code (or a test) can call :func:`register_backend` instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["TTSBackend", "BackendFactory", "get_backend", "known_backends", "register_backend"]


@runtime_checkable
class TTSBackend(Protocol):
    """A loaded speech synthesiser with a fixed voice.

    Attributes:
        name: the registry key, e.g. ``"kokoro-onnx"`` (written to the manifest's ``backend``).
        model: an identifier of the model weights, e.g. ``"Kokoro-82M/kokoro-v1.0.int8.onnx"``.
        voice: the voice name (e.g. ``"jf_alpha"``).
        lang: the language/G2P code the text is read with (e.g. ``"en-us"``).
        speed: the speaking-rate factor (1.0 = the model's natural rate).
        sample_rate: samples per second of the audio :meth:`synthesize` returns (Hz).
    """

    name: str
    model: str
    voice: str
    lang: str
    speed: float
    sample_rate: int

    def synthesize(self, text: str) -> np.ndarray:
        """Speak ``text``; return mono float32 audio, shape ``(n_samples,)``, nominally in [-1, 1],
        at :attr:`sample_rate` Hz. Long texts are the backend's job to chunk."""
        ...


BackendFactory = Callable[[Mapping[str, Any], int], TTSBackend]

# name -> (module, attribute of a BackendFactory); imported only when the backend is asked for.
_BUILTIN: dict[str, tuple[str, str]] = {
    "kokoro-onnx": ("modprefs.speech.kokoro_onnx", "from_config"),
    "kokoro": ("modprefs.speech.kokoro_torch", "from_config"),
    "piper": ("modprefs.speech.piper_backend", "from_config"),
    "espeak-ng": ("modprefs.speech.espeak_backend", "from_config"),
}
_REGISTERED: dict[str, BackendFactory] = {}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make ``factory(tts_config, threads)`` available as ``tts.backend: name`` (overrides a built-in)."""
    _REGISTERED[name] = factory


def known_backends() -> list[str]:
    """Names ``tts.backend`` may take, sorted."""
    return sorted(set(_BUILTIN) | set(_REGISTERED))


def _factory(name: str) -> BackendFactory:
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name in _BUILTIN:
        module, attr = _BUILTIN[name]
        return getattr(importlib.import_module(module), attr)
    raise ValueError(f"tts.backend {name!r} is not a known TTS backend; known backends: {', '.join(known_backends())}")


def get_backend(tts_config: Mapping[str, Any], threads: int = 1) -> TTSBackend:
    """Build the backend named by ``tts_config["backend"]``, loading its model once.

    Args:
        tts_config: the ``tts`` section of the workflow config (``backend``, ``voice``, ``lang``,
            ``speed`` and backend-specific keys).
        threads: CPU threads the engine may use (the Snakemake job's ``threads``).

    Raises:
        KeyError: ``tts.backend`` is missing.
        ValueError: the backend name is unknown (the message lists the known ones), or the
            backend rejects its settings (e.g. an unknown voice).
    """
    if "backend" not in tts_config:
        raise KeyError(f"tts.backend is missing; known backends: {', '.join(known_backends())}")
    name = str(tts_config["backend"])
    backend = _factory(name)(tts_config, max(1, int(threads)))
    if not isinstance(backend, TTSBackend):
        raise TypeError(
            f"tts.backend {name!r}: factory returned {type(backend).__name__}, which lacks the TTSBackend attributes"
        )
    return backend
