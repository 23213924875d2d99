"""The ``espeak-ng`` backend: the formant synthesiser libespeak-ng, called through ctypes.

Where the files come from (offline, from PyPI): ``espeakng-loader`` (already a kokoro-onnx
dependency) ships ``libespeak-ng.so`` and ``espeak-ng-data`` (voices, dictionaries). Set
``tts.espeak_library`` and ``tts.espeak_data`` to use another build (e.g. Debian's
``/usr/lib/x86_64-linux-gnu/libespeak-ng.so.1`` and ``/usr/lib/x86_64-linux-gnu/espeak-ng-data``).

espeak-ng keeps its state in globals, and kokoro-onnx's G2P (phonemizer) uses the same library
in the same process. Like phonemizer, this backend loads a private copy of the shared library
(copied to a temporary directory, which is removed once loaded), so the two never change each
other's voice or settings; one lock serialises synthesis within an instance.

Voices are espeak-ng voice names (``en-us``, ``en-gb``, ``en-gb-x-rp``, ...), optionally with a
variant (``en-us+f3``). ``tts.speed`` scales espeak's default rate of 175 words per minute.
The audio is espeak's 16-bit output at 22.05 kHz, as float32 in [-1, 1).
"""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import sys
import tempfile
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from modprefs.errors import ModelNotInstalledError

log = logging.getLogger(__name__)

NAME = "espeak-ng"
DEFAULT_VOICE = "en-us"
DEFAULT_WPM = 175
LOADER_PACKAGE = "espeakng-loader"

# espeak-ng's speak_lib.h
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_POS_CHARACTER = 1
_ESPEAK_CHARS_UTF8 = 1
_ESPEAK_RATE = 1
_EE_OK = 0

__all__ = ["EspeakNgBackend", "from_config", "NAME", "DEFAULT_VOICE"]


class _Voice(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("languages", ctypes.c_char_p),
        ("identifier", ctypes.c_char_p),
        ("gender", ctypes.c_ubyte),
        ("age", ctypes.c_ubyte),
        ("variant", ctypes.c_ubyte),
        ("xx1", ctypes.c_ubyte),
        ("score", ctypes.c_int),
        ("spare", ctypes.c_void_p),
    ]


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)


def _default_paths() -> tuple[Path, Path]:
    try:
        import espeakng_loader
    except ImportError as err:
        raise ModelNotInstalledError(
            f"tts.backend {NAME!r} needs libespeak-ng and its data: pip install {LOADER_PACKAGE} "
            "(or set tts.espeak_library and tts.espeak_data, e.g. from Debian's libespeak-ng1 "
            "and espeak-ng-data)"
        ) from err
    try:
        data = Path(espeakng_loader.get_data_path())
    except RuntimeError as err:
        raise ModelNotInstalledError(f"tts.backend {NAME!r}: {err}; reinstall {LOADER_PACKAGE}") from err
    return Path(espeakng_loader.get_library_path()), data


def default_data_path() -> Path:
    """espeakng-loader's ``espeak-ng-data`` directory (ModelNotInstalledError when it is not installed)."""
    return _default_paths()[1]


def data_languages(data_path: str | os.PathLike[str], file_names: bool = True) -> set[str]:
    """The languages an ``espeak-ng-data`` directory offers, lower case, read without loading the library.

    Each voice file under ``lang/`` names its language on its first ``language <name>`` line (``en-us``,
    ``en-gb``, ...; later ``language`` lines are lower-priority aliases that neither espeak_SetVoiceByName
    nor phonemizer accept). With ``file_names`` the voice files' own names (``en``, ``en-gb-x-rp``) are
    included too: :func:`_set_voice` accepts both, phonemizer (kokoro-onnx's G2P) only the languages.
    """
    names: set[str] = set()
    for path in (Path(data_path) / "lang").rglob("*"):
        if not path.is_file():
            continue
        if file_names:
            names.add(path.name.lower())
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "language":
                names.add(parts[1].lower())
                break
    return names


def _load_private_copy(library: Path) -> ctypes.CDLL:
    """dlopen a copy of ``library`` so that its global state is this backend's alone."""
    real = library.resolve()
    tmp = tempfile.mkdtemp(prefix="modprefs-espeak-")
    copy = Path(tmp) / real.name
    shutil.copyfile(real, copy)
    try:
        lib = ctypes.CDLL(str(copy))
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ModelNotInstalledError(f"tts.backend {NAME!r}: cannot load {library}: {err}") from err
    if sys.platform == "win32":  # a loaded DLL cannot be deleted there
        import atexit

        atexit.register(shutil.rmtree, tmp, True)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return lib


def _declare(lib: ctypes.CDLL) -> None:
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_Initialize.restype = ctypes.c_int
    lib.espeak_SetSynthCallback.argtypes = [_CALLBACK]
    lib.espeak_SetSynthCallback.restype = None
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_SetVoiceByName.restype = ctypes.c_int
    lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.espeak_SetParameter.restype = ctypes.c_int
    lib.espeak_Synth.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.POINTER(ctypes.c_uint),
        ctypes.c_void_p,
    ]
    lib.espeak_Synth.restype = ctypes.c_int
    lib.espeak_ListVoices.argtypes = [ctypes.c_void_p]
    lib.espeak_ListVoices.restype = ctypes.POINTER(ctypes.POINTER(_Voice))
    lib.espeak_Info.argtypes = [ctypes.POINTER(ctypes.c_char_p)]
    lib.espeak_Info.restype = ctypes.c_char_p
    lib.espeak_Terminate.argtypes = []
    lib.espeak_Terminate.restype = ctypes.c_int


def _voice_table(lib: ctypes.CDLL) -> dict[str, str]:
    """Every installed voice: ``{language name (lower case): voice file identifier}``, e.g.
    ``{"en-gb": "gmw/en", "en-us": "gmw/en-US", ...}``."""
    voices = lib.espeak_ListVoices(None)
    table: dict[str, str] = {}
    i = 0
    while voices[i]:
        identifier = voices[i].contents.identifier.decode("utf-8", "replace")
        # languages: (priority byte, name, NUL) pairs, ended by a zero byte
        raw = ctypes.string_at(voices[i].contents.languages, 256)
        pos = 0
        while pos < len(raw) and raw[pos] != 0:
            end = raw.index(b"\0", pos + 1)
            table.setdefault(raw[pos + 1 : end].decode("utf-8", "replace").lower(), identifier)
            pos = end + 1
        i += 1
    return table


def _set_voice(lib: ctypes.CDLL, voice: str) -> bool:
    """Select ``voice``: a voice file name (``en-us``, ``en``), a voice name, or a language name
    (``en-gb``, whose file is ``gmw/en``), each optionally with ``+variant``. True on success."""
    if lib.espeak_SetVoiceByName(voice.encode()) == _EE_OK:
        return True
    base, plus, variant = voice.partition("+")
    identifier = _voice_table(lib).get(base.lower())
    return identifier is not None and lib.espeak_SetVoiceByName(f"{identifier}{plus}{variant}".encode()) == _EE_OK


class EspeakNgBackend:
    """libespeak-ng with one voice, initialised once at construction.

    Args:
        voice: an espeak-ng voice name (``en-us``, ``en-gb``, ``en-us+f3``, ...).
        lang: recorded in the manifest; default the voice's language. Must agree with the voice.
        speed: speaking-rate factor in [0.5, 2.0] (x 175 words per minute).
        threads: unused (espeak-ng is single-threaded); accepted for the interface.
        library_path, data_path: a libespeak-ng and its ``espeak-ng-data`` other than espeakng-loader's.
    """

    name = NAME

    def __init__(
        self,
        voice: str = DEFAULT_VOICE,
        lang: str | None = None,
        speed: float = 1.0,
        threads: int = 1,
        library_path: str | os.PathLike[str] | None = None,
        data_path: str | os.PathLike[str] | None = None,
    ) -> None:
        if not 0.5 <= float(speed) <= 2.0:
            raise ValueError(f"tts.speed must be in [0.5, 2.0] for {NAME}, got {speed}")
        if library_path and data_path:
            self.library_path, self.data_path = Path(library_path), Path(data_path)
        else:
            default_lib, default_data = _default_paths()
            self.library_path = Path(library_path) if library_path else default_lib
            self.data_path = Path(data_path) if data_path else default_data
        for key, path, is_dir in (
            ("tts.espeak_library", self.library_path, False),
            ("tts.espeak_data", self.data_path, True),
        ):
            if not (path.is_dir() if is_dir else path.is_file()):
                raise FileNotFoundError(f"{key} {path} does not exist")
        if not (self.data_path / "phontab").is_file():
            raise FileNotFoundError(f"tts.espeak_data {self.data_path} is not an espeak-ng-data directory (no phontab)")
        self._lib = _load_private_copy(self.library_path)
        _declare(self._lib)
        self.sample_rate = int(
            self._lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, str(self.data_path).encode(), 0)
        )
        if self.sample_rate <= 0:
            raise RuntimeError(f"{NAME}: espeak_Initialize failed with data {self.data_path}")
        weakref.finalize(self, self._lib.espeak_Terminate)
        self._chunks: list[np.ndarray] = []
        self._callback = _CALLBACK(self._on_audio)  # keep a reference: espeak calls it
        self._lib.espeak_SetSynthCallback(self._callback)
        if not _set_voice(self._lib, str(voice)):
            names = sorted(_voice_table(self._lib))
            english = [n for n in names if n.split("-")[0] == "en"]
            raise ValueError(
                f"tts.voice {voice!r} is not an {NAME} voice in {self.data_path}; English voices: "
                f"{', '.join(english)} ({len(names)} voices in all; a variant is added as "
                "'en-us+f3')"
            )
        voice_lang = str(voice).split("+")[0].lower()
        self.lang = str(lang) if lang else voice_lang
        if self.lang.split("-")[0].lower() != voice_lang.split("-")[0]:
            raise ValueError(f"tts.lang {lang!r} does not match the {NAME} voice {voice!r}")
        self.voice = str(voice)
        self.speed = float(speed)
        self.threads = 1
        self.wpm = round(DEFAULT_WPM * self.speed)
        if self._lib.espeak_SetParameter(_ESPEAK_RATE, self.wpm, 0) != _EE_OK:
            raise RuntimeError(f"{NAME}: cannot set the rate to {self.wpm} words per minute")
        version = self._lib.espeak_Info(None)
        self.model = f"espeak-ng {version.decode() if version else '?'}"
        self._lock = threading.Lock()
        log.info(
            "%s: %s from %s, data %s, voice %s, %d wpm, %d Hz",
            NAME,
            self.model,
            self.library_path,
            self.data_path,
            self.voice,
            self.wpm,
            self.sample_rate,
        )

    def _on_audio(self, wav: Any, n_samples: int, _events: Any) -> int:
        if wav and n_samples > 0:
            self._chunks.append(np.ctypeslib.as_array(wav, shape=(n_samples,)).copy())
        return 0  # continue

    def synthesize(self, text: str) -> np.ndarray:
        """Speak ``text``: float32 mono audio, shape ``(n_samples,)``, at :attr:`sample_rate` (22.05 kHz).

        Raises:
            ValueError: ``text`` is empty or only whitespace.
            RuntimeError: espeak-ng reports an error.
        """
        if not text or not text.strip():
            raise ValueError(f"{NAME}: nothing to speak (empty text)")
        data = text.encode("utf-8")
        buffer = ctypes.create_string_buffer(data)
        with self._lock:
            self._chunks = []
            rc = self._lib.espeak_Synth(buffer, len(data) + 1, 0, _POS_CHARACTER, 0, _ESPEAK_CHARS_UTF8, None, None)
            chunks, self._chunks = self._chunks, []
        if rc != _EE_OK:
            raise RuntimeError(f"{NAME}: espeak_Synth failed with code {rc}")
        if not chunks:
            return np.zeros(0, dtype=np.float32)
        return (np.concatenate(chunks).astype(np.float32) / 32768.0).astype(np.float32)

    def __repr__(self) -> str:
        return f"EspeakNgBackend(model={self.model!r}, voice={self.voice!r}, lang={self.lang!r}, speed={self.speed})"


def from_config(tts: Mapping[str, Any], threads: int = 1) -> EspeakNgBackend:
    """Registry factory. Keys: ``voice`` (default ``en-us``), ``lang`` (default: the voice's language),
    ``speed`` (1.0), optional ``espeak_library`` / ``espeak_data``."""
    return EspeakNgBackend(
        voice=str(tts.get("voice", DEFAULT_VOICE)),
        lang=tts.get("lang"),
        speed=float(tts.get("speed", 1.0)),
        threads=threads,
        library_path=tts.get("espeak_library"),
        data_path=tts.get("espeak_data"),
    )
