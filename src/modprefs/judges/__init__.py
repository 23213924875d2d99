"""Synthetic judges (paper §3.2.3): 1-100 ratings from GPT-4o (text) and GPT-4o-Audio-Preview (audio).

- :mod:`.prompts`   versioned prompt files (resources/judges/prompts), version = stem@sha256[:12]
- :mod:`.parse`     strict/tolerant reply parsing (never clips or defaults)
- :mod:`.client`    the openai-client judge: cache by request hash, limits, retries, fail-fast
- :mod:`.records`   one JSON record per call and the tidy ratings table
- :mod:`.ratelimit` token buckets and backoff
- :mod:`.local`     the offline backend (``judges.backend: local``): a small GGUF instruction model as
  a Yes/No text judge, a Whisper -> text-judge cascade for audio, DNSMOS for audio quality
- :mod:`.local_model` the GGUF model loaded with transformers, scoring P(Yes) of the next token
"""

from modprefs.judges.client import (JudgeAbort, JudgeConfig, JudgeItem, JudgeSetupError, RunResult,
                                    arun_judges, build_items, run_judges)
from modprefs.judges.local import LocalJudgeConfig, run_local_judges
from modprefs.judges.local_model import LocalModelNotInstalledError
from modprefs.judges.parse import ParseResult, parse_rating
from modprefs.judges.records import TABLE_COLUMNS, ratings_table

__all__ = ["JudgeAbort", "JudgeConfig", "JudgeItem", "JudgeSetupError", "LocalJudgeConfig",
           "LocalModelNotInstalledError", "ParseResult", "RunResult", "TABLE_COLUMNS", "arun_judges", "build_items",
           "parse_rating", "ratings_table", "run_judges", "run_local_judges"]
