"""Request rate limits: one token bucket per key (an IP address, a Prolific id, a session token).

A bucket holds up to ``limit`` requests and refills at ``limit / window_s`` per second, so a key
may make ``limit`` requests in a burst and ``limit`` per window on average. A request beyond that
is refused with the seconds to wait (the ``Retry-After`` of the 429 answer). State lives in the
server process: with ``--workers N`` each worker counts on its own (limits are per worker).
The clock is injectable for tests; nothing here does I/O.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    stamp: float
    window_s: float  # a bucket untouched this long is full again (forgettable)


class RateLimiter:
    """Token buckets per key; ``hit(key, limit, window_s)`` -> 0 (allowed) or seconds to wait."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_keys: int = 100_000):
        self.clock = clock
        self.max_keys = max_keys
        self._buckets: dict[str, _Bucket] = {}

    def hit(self, key: str, limit: int, window_s: float) -> int:
        """Count one request of ``key``; 0 when allowed (``limit`` <= 0 disables), else Retry-After (s, >= 1)."""
        if limit <= 0 or window_s <= 0:
            return 0
        now = self.clock()
        rate = limit / window_s  # tokens per second
        b = self._buckets.get(key)
        if b is None:
            if len(self._buckets) >= self.max_keys:
                self._prune(now)
            b = self._buckets[key] = _Bucket(float(limit), now, window_s)
        else:
            b.tokens = min(float(limit), b.tokens + (now - b.stamp) * rate)
            b.stamp, b.window_s = now, window_s
        if b.tokens >= 1.0:
            b.tokens -= 1.0
            return 0
        return max(1, math.ceil((1.0 - b.tokens) / rate))

    def wait(self, key: str, limit: int, window_s: float) -> int:
        """Seconds until ``key`` may make a request (0: now), without counting one (a bucket's state as ``hit``
        would see it): how a throttle checks before the request that would count."""
        if limit <= 0 or window_s <= 0:
            return 0
        b = self._buckets.get(key)
        if b is None:
            return 0
        rate = limit / window_s
        tokens = min(float(limit), b.tokens + (self.clock() - b.stamp) * rate)
        return 0 if tokens >= 1.0 else max(1, math.ceil((1.0 - tokens) / rate))

    def _prune(self, now: float) -> None:
        """Forget idle keys (buckets that have refilled); if none, the oldest half."""
        idle = [k for k, b in self._buckets.items() if now - b.stamp >= b.window_s]
        if not idle:
            idle = sorted(self._buckets, key=lambda k: self._buckets[k].stamp)[: len(self._buckets) // 2]
        for k in idle:
            del self._buckets[k]
