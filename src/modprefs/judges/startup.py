"""Checks of the judges configuration that run when the workflow starts, before any job is scheduled.

For ``judges.backend: openai`` a missing API key, an unreachable ``base_url`` or an unknown model
would otherwise surface only when the judge job runs (after the speech stage). :func:`check_judges_at_start`
reads the key from the environment and asks the endpoint's ``GET /models`` (a few seconds at most,
``judges.preflight_timeout_s``); ``judges.preflight: false`` skips the network part. The local
backend needs no network: its model files are checked by the judge job itself before any item.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from openai import AsyncOpenAI

from modprefs.judges.api_config import JudgeConfig
from modprefs.judges.client import api_key, preflight


def check_judges_at_start(judges: Mapping[str, Any]) -> None:
    """Raise :class:`~modprefs.judges.client.JudgeSetupError` naming the problem; no-op for local judges."""
    if judges.get("backend", "local") != "openai":
        return
    cfg = JudgeConfig.from_dict(dict(judges))
    key = api_key(cfg)
    if not cfg.preflight:
        return

    async def _check() -> None:
        async with AsyncOpenAI(
            api_key=key, base_url=cfg.base_url, timeout=float(cfg.preflight_timeout_s), max_retries=0
        ) as client:
            await preflight(client, cfg, set(cfg.models.values()))

    asyncio.run(_check())
