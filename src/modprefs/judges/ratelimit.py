"""Async token-bucket limiters (requests per minute, tokens per minute) and retry backoff."""

from __future__ import annotations

import asyncio
import random
import time


class TokenBucket:
    """A token bucket refilled at ``per_minute / 60`` units per second, holding at most ``capacity``.

    ``acquire(n)`` waits (FIFO, one waiter at a time) until ``min(n, capacity)`` units are present,
    then takes ``n`` (the level may go negative for a request larger than the bucket, which delays
    the next ones accordingly). ``per_minute`` of None or <= 0 disables the bucket.
    ``capacity`` defaults to 1/6 of a minute's allowance (10 s of burst), at least 1 unit.
    """

    def __init__(self, per_minute: float | None, capacity: float | None = None, clock=time.monotonic) -> None:
        self.enabled = per_minute is not None and per_minute > 0
        self.rate = (per_minute or 0) / 60.0
        self.capacity = float(capacity) if capacity else max(1.0, (per_minute or 0) / 6.0)
        self.level = self.capacity
        self._clock = clock
        self._t = clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self.level = min(self.capacity, self.level + (now - self._t) * self.rate)
        self._t = now

    async def acquire(self, n: float = 1.0) -> float:
        """Take ``n`` units; return the seconds waited."""
        if not self.enabled or n <= 0:
            return 0.0
        waited = 0.0
        async with self._lock:
            need = min(n, self.capacity)
            self._refill()
            while self.level < need:
                delay = (need - self.level) / self.rate
                await asyncio.sleep(delay)
                waited += delay
                self._refill()
            self.level -= n
        return waited

    def debit(self, n: float) -> None:
        """Charge ``n`` more units (positive) or refund (negative) without waiting, e.g. to settle
        an estimate against the usage the API reported."""
        if not self.enabled:
            return
        self._refill()
        self.level = min(self.capacity, self.level - n)


def backoff_delay(attempt: int, base_s: float, max_s: float, rng: random.Random | None = None) -> float:
    """Exponential backoff with full jitter: uniform(0.5, 1.0) * min(max_s, base_s * 2**attempt)."""
    jitter = rng.uniform(0.5, 1.0) if rng is not None else random.uniform(0.5, 1.0)
    return min(max_s, base_s * (2**attempt)) * jitter


def retry_after_seconds(headers) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds; HTTP dates are ignored)."""
    if headers is None:
        return None
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(key)
        if value is None:
            continue
        try:
            s = float(value) * scale
        except (TypeError, ValueError):
            continue
        if s >= 0:
            return s
    return None
