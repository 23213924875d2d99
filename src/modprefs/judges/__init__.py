"""Synthetic judges (paper §3.2.3): 1-100 ratings from GPT-4o (text) and GPT-4o-Audio-Preview (audio).

- :mod:`.prompts`   versioned prompt files (resources/judges/prompts), version = stem@sha256[:12]
- :mod:`.parse`     strict/tolerant reply parsing (never clips or defaults)
- :mod:`.client`    the openai-client judge: cache by request hash, limits, retries, fail-fast
- :mod:`.records`   one JSON record per call and the tidy ratings table
- :mod:`.ratelimit` token buckets and backoff
"""

from modprefs.judges.client import (JudgeAbort, JudgeConfig, JudgeItem, JudgeSetupError, RunResult,
                                    arun_judges, build_items, run_judges)
from modprefs.judges.parse import ParseResult, parse_rating
from modprefs.judges.records import TABLE_COLUMNS, ratings_table

__all__ = ["JudgeAbort", "JudgeConfig", "JudgeItem", "JudgeSetupError", "ParseResult", "RunResult",
           "TABLE_COLUMNS", "arun_judges", "build_items", "parse_rating", "ratings_table", "run_judges"]
