"""Synthetic judges (paper §3.2.3): 1-100 ratings from GPT-4o (text) and GPT-4o-Audio-Preview (audio).

- :mod:`.prompts`   versioned prompt files (resources/judges/prompts), version = stem@sha256[:12]
- :mod:`.parse`     strict/tolerant reply parsing (never clips or defaults)
- :mod:`.types`     what is rated (JudgeItem), a run's result and the judges' errors (no backend)
- :mod:`.dispatch`  run_judges: the configured backend over items; the command line
- :mod:`.client`    the openai-client judge: cache by request hash, limits, retries, fail-fast
- :mod:`.records`   one JSON record per call and the tidy ratings table
- :mod:`.ratelimit` token buckets and backoff
- :mod:`.local`     the offline backend (``judges.backend: local``): a small GGUF instruction model as
  a Yes/No text judge, a Whisper -> text-judge cascade for audio, DNSMOS for audio quality
- :mod:`.local_model` the GGUF model loaded with transformers, scoring P(Yes) of the next token
"""

from importlib import import_module
from typing import Any

# Loaded on first use (PEP 562), so that importing one submodule (e.g. ``judges.records`` for the reward
# pairs) does not load the openai client, torch or transformers.
_EXPORTS = {
    "JudgeAbort": "types",
    "JudgeConfig": "api_config",
    "JudgeItem": "types",
    "JudgeSetupError": "types",
    "RunResult": "types",
    "arun_judges": "client",
    "build_items": "api_config",
    "run_judges": "dispatch",
    "LocalJudgeConfig": "local",
    "run_local_judges": "local",
    "LocalModelNotInstalledError": "local_model",
    "ParseResult": "parse",
    "parse_rating": "parse",
    "TABLE_COLUMNS": "records",
    "ratings_table": "records",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value
