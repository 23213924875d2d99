"""Speech stage: response text -> speakable text -> per-clip WAVs and a manifest.

- :mod:`.backends`: the :class:`TTSBackend` interface and ``get_backend(tts_config, threads)``;
- :mod:`.kokoro_onnx`: Kokoro-82M int8 ONNX from PyPI (the default, offline);
- :mod:`.text`: ``speakable_text`` (Markdown -> plain sentences);
- :mod:`.clips`: the ordered clip list and its shards;
- :mod:`.render`: render clips, write WAVs atomically, return manifest rows.

Engines are imported lazily: importing this package does not load onnxruntime.
"""

from modprefs.speech.backends import TTSBackend, get_backend, known_backends, register_backend
from modprefs.speech.clips import CLIP_COLUMNS, read_study_clips, shard, study_clips
from modprefs.speech.render import MANIFEST_COLUMNS, ClipRenderError, combine_manifests, render_clips
from modprefs.speech.text import speakable_text

__all__ = [
    "TTSBackend",
    "get_backend",
    "known_backends",
    "register_backend",
    "CLIP_COLUMNS",
    "read_study_clips",
    "shard",
    "study_clips",
    "MANIFEST_COLUMNS",
    "ClipRenderError",
    "combine_manifests",
    "render_clips",
    "speakable_text",
]
