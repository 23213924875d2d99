"""Checks of a ``tts`` config block that need no model: run when the workflow starts, before any job.

A rendering job builds its backend (seconds to load a model) and only then finds out that the voice
does not exist or the language is not supported. :func:`tts_problems` checks what can be known from
the installed packages' files alone, in milliseconds:

- the keys a backend reads: :func:`unused_tts_keys` lists the keys of other backends a block sets (the shipped
  config's ``voice`` under a lab's ``backend: given``, ``voices_path`` under ``piper``); the workflow drops them
  with a note naming where they were set (:func:`modprefs.config_checks.drop_unused_tts_keys`), since a lab's
  overlay cannot remove a key the shipped ``config.yaml`` sets;
- ``kokoro-onnx``: the voice is in the voices archive, ``lang`` is an espeak-ng language (its G2P),
  the model/voices files exist when given;
- ``piper``: the engine is installed, the voice is installed (or ``model_path`` names it) and ``lang``
  is the voice's language;
- ``espeak-ng``: the voice and ``lang`` are espeak-ng languages of the same language family;
- ``kokoro`` (torch): ``lang`` is one of kokoro's languages (read from the installed package's
  source, without importing torch), the voice looks like a Kokoro voice (``af_heart``: language
  letter, gender letter, name), local files exist. Whether a hub voice exists is only known once
  the job asks the hub, unless ``HF_HUB_OFFLINE`` is set, in which case it must be in the hub cache.

A missing package is reported as a problem naming the pip package, like the backends do.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from modprefs.errors import UserInputError

__all__ = ["BACKEND_KEYS", "tts_problems", "unused_tts_keys"]

#: Keys every backend reads; BACKEND_KEYS adds each backend's own. ``shard_size`` and ``engines``
#: belong to the study block (checked by the schema), not to a backend.
COMMON_KEYS = {"backend", "voice", "lang", "speed", "shard_size", "engines"}
BACKEND_KEYS: dict[str, set[str]] = {
    "kokoro-onnx": {"model_path", "voices_path"},
    "kokoro": {"model_path", "config_path", "voice_path", "repo_id", "device", "seed"},
    "piper": {"model_path", "config_path", "seed"},
    "espeak-ng": {"espeak_library", "espeak_data"},
    "given": {"sample_rate", "attention_tts"},
}
#: Keys of COMMON_KEYS a backend does not read: given audio has no voice.
NOT_READ: dict[str, set[str]] = {"given": {"voice"}}


def unused_tts_keys(tts: Mapping[str, Any]) -> list[str]:
    """The keys of one tts block (``tts``, an engine, ``attention_tts``) its backend does not read, sorted.

    An unknown backend reads every key (the schema reports the backend).
    """
    backend = str(tts.get("backend", ""))
    if backend not in BACKEND_KEYS:
        return []
    allowed = (COMMON_KEYS | BACKEND_KEYS[backend]) - NOT_READ.get(backend, set())
    return sorted(set(tts) - allowed)


def _path_problem(tts: Mapping[str, Any], key: str, where: str, base: Path) -> str | None:
    """A file named by ``tts[key]`` that is missing or empty (None when absent from the block or fine)."""
    value = tts.get(key)
    if not value:
        return None
    path = base / Path(str(value)).expanduser()
    if not path.is_file():
        return f"{where}.{key}: file not found: {str(value)!r}"
    if path.stat().st_size == 0:
        return f"{where}.{key}: {str(value)!r} is an empty file"
    return None


def _kokoro_onnx(tts: Mapping[str, Any], where: str, base: Path) -> list[str]:
    from modprefs.speech import espeak_backend, kokoro_onnx

    problems = [p for p in (_path_problem(tts, k, where, base) for k in ("model_path", "voices_path")) if p]
    if problems:
        return problems
    voices_path = base / tts["voices_path"] if tts.get("voices_path") else kokoro_onnx.default_voices_path()
    voice = str(tts.get("voice", kokoro_onnx.DEFAULT_VOICE))
    try:
        voices = kokoro_onnx.available_voices(voices_path)
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        return [f"{where}.voices_path: {str(voices_path)!r} is not a kokoro-onnx voices archive (.npz/.bin): {err}"]
    if voice not in voices:
        problems.append(
            f"{where}.voice: {voice!r} is not a kokoro-onnx voice in {voices_path.name}; "
            f"available: {', '.join(voices)} (other voices: set {where}.voices_path)"
        )
    lang = str(tts.get("lang", kokoro_onnx.DEFAULT_LANG))
    if lang.lower() not in espeak_backend.data_languages(espeak_backend.default_data_path(), file_names=False):
        problems.append(f"{where}.lang: {lang!r} is not a language of kokoro-onnx's G2P (espeak-ng), e.g. en-us, en-gb")
    return problems


def _piper(tts: Mapping[str, Any], where: str, base: Path) -> list[str]:
    from modprefs.speech import piper_backend

    if importlib.util.find_spec("piper") is None:
        return [f"{where}.backend: 'piper' needs the Piper engine: pip install {piper_backend.ENGINE_PACKAGE}"]
    empty = [p for p in (_path_problem(tts, k, where, base) for k in ("model_path", "config_path")) if p]
    if empty:
        return empty
    model = base / tts["model_path"] if tts.get("model_path") else None
    config = base / tts["config_path"] if tts.get("config_path") else None
    try:
        voices = piper_backend.voice_files(model, config)
    except FileNotFoundError as err:
        return [f"{where}: {err}"]
    voice = str(tts.get("voice", piper_backend.DEFAULT_VOICE))
    try:
        problem = piper_backend.voice_problem(voices, voice, tts.get("lang"))
    except (OSError, ValueError) as err:  # the voice's .onnx.json is unreadable or not JSON
        return [
            f"{where}.config_path: the Piper voice config {str(voices[voice][1])!r} is not a readable JSON file: {err}"
        ]
    return [problem.replace("tts.", f"{where}.", 1)] if problem else []


def _espeak(tts: Mapping[str, Any], where: str, base: Path) -> list[str]:
    from modprefs.speech import espeak_backend

    if tts.get("espeak_data"):
        data = base / Path(str(tts["espeak_data"])).expanduser()
        if not (data / "phontab").is_file():
            return [f"{where}.espeak_data: {str(tts['espeak_data'])!r} is not an espeak-ng-data directory (no phontab)"]
    else:
        data = espeak_backend.default_data_path()
    if tts.get("espeak_library") and not (base / Path(str(tts["espeak_library"])).expanduser()).is_file():
        return [f"{where}.espeak_library: file not found: {str(tts['espeak_library'])!r}"]
    names = espeak_backend.data_languages(data)
    voice = str(tts.get("voice", espeak_backend.DEFAULT_VOICE))
    base_voice = voice.split("+")[0].lower()
    problems = []
    if base_voice not in names:
        english = sorted(n for n in names if n.split("-")[0] == "en")
        problems.append(
            f"{where}.voice: {voice!r} is not an espeak-ng voice; English voices: {', '.join(english)} "
            f"({len(names)} names in all; a variant is added as 'en-us+f3')"
        )
    lang = tts.get("lang")
    if lang and str(lang).split("-")[0].lower() != base_voice.split("-")[0]:
        problems.append(f"{where}.lang: {lang!r} does not match the espeak-ng voice {voice!r}")
    return problems


#: A Kokoro voice name: language letter, f/m, underscore, name (``af_heart``, ``zm_yunjian``).
KOKORO_VOICE = re.compile(r"^([a-z])([fm])_[a-z0-9]+$")


def kokoro_languages() -> tuple[dict[str, str], set[str]]:
    """kokoro's ``(ALIASES, LANG_CODES keys)`` read from the installed ``kokoro/pipeline.py`` source.

    Importing kokoro.pipeline imports torch (10 s); the two literal dicts are parsed instead.
    Raises UserInputError when kokoro is not installed.
    """
    spec = importlib.util.find_spec("kokoro")
    if spec is None or not spec.submodule_search_locations:
        raise UserInputError("tts.backend 'kokoro' needs the kokoro package: pip install kokoro")
    source = Path(next(iter(spec.submodule_search_locations))) / "pipeline.py"
    found: dict[str, Any] = {}
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name == "ALIASES":
                found[name] = ast.literal_eval(node.value)
            elif name == "LANG_CODES" and isinstance(node.value, ast.Call):
                found[name] = {kw.arg for kw in node.value.keywords}
    if set(found) != {"ALIASES", "LANG_CODES"}:
        raise UserInputError(f"cannot read kokoro's languages from {source}; is kokoro installed correctly?")
    return found["ALIASES"], found["LANG_CODES"]


def _kokoro(tts: Mapping[str, Any], where: str, base: Path) -> list[str]:
    from modprefs.speech import kokoro_torch

    problems = [
        p for p in (_path_problem(tts, k, where, base) for k in ("model_path", "config_path", "voice_path")) if p
    ]
    try:
        aliases, codes = kokoro_languages()
    except UserInputError as err:
        return [f"{where}: {err}"]
    lang = str(tts.get("lang", kokoro_torch.DEFAULT_LANG)).lower()
    if aliases.get(lang, lang) not in codes:
        problems.append(
            f"{where}.lang: {lang!r} is not a kokoro language; use one of {', '.join(sorted(aliases))} "
            f"or a code in {', '.join(sorted(codes))}"
        )
    if tts.get("voice_path"):
        return problems
    voice = str(tts.get("voice", kokoro_torch.DEFAULT_VOICE))
    m = KOKORO_VOICE.match(voice)
    if not m or m.group(1) not in codes:
        problems.append(
            f"{where}.voice: {voice!r} is not a Kokoro voice name (language letter of "
            f"{''.join(sorted(codes))}, f or m, '_', name: e.g. af_heart); or set {where}.voice_path"
        )
    elif os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        from huggingface_hub import try_to_load_from_cache

        repo = str(tts.get("repo_id") or kokoro_torch.DEFAULT_REPO_ID)
        if not isinstance(try_to_load_from_cache(repo, f"voices/{voice}.pt"), str):
            problems.append(
                f"{where}.voice: {voice!r} is not in the Hugging Face cache of {repo} and "
                f"HF_HUB_OFFLINE is set; set {where}.voice_path to a local voices/{voice}.pt"
            )
    return problems


def _given(tts: Mapping[str, Any], where: str, base: Path) -> list[str]:
    """``given``: the lab's audio needs no engine; the attention check's texts are spoken by ``attention_tts``."""
    from modprefs.speech.given import attention_tts_config

    return tts_problems(attention_tts_config(tts), f"{where}.attention_tts", base)


_CHECKS: dict[str, Callable[[Mapping[str, Any], str, Path], list[str]]] = {
    "kokoro-onnx": _kokoro_onnx,
    "kokoro": _kokoro,
    "piper": _piper,
    "espeak-ng": _espeak,
    "given": _given,
}


def tts_problems(tts: Mapping[str, Any], where: str = "tts", base_dir: str | os.PathLike[str] = ".") -> list[str]:
    """Every problem of one tts block (``tts`` or ``tts.engines[i]``), each naming its key under ``where``.

    A key the backend does not read is a problem here; the workflow has dropped such keys with a note before it
    calls this (:func:`modprefs.config_checks.drop_unused_tts_keys`).

    ``base_dir`` is the folder relative paths are resolved against. An unknown backend is left to the
    schema (it lists the known ones). A backend whose package is missing gives one problem naming it.
    """
    backend = str(tts.get("backend", ""))
    if backend not in _CHECKS:
        return []
    allowed = (COMMON_KEYS | BACKEND_KEYS[backend]) - NOT_READ.get(backend, set())
    problems = [
        f"{where}.{key}: not used by backend {backend!r} (its keys: {', '.join(sorted(allowed - {'engines'}))})"
        for key in unused_tts_keys(tts)
    ]
    try:
        problems += _CHECKS[backend](tts, where, Path(base_dir))
    except UserInputError as err:  # a model package is missing (ModelNotInstalledError names the pip package)
        problems.append(f"{where}: {err}")
    return problems
