"""How long a key waits before it is retried: per-key exponential backoff and an overall rate limit.

Used by :class:`pivoter.runtime.queue.WorkQueue` when a reconcile fails
(``add_rate_limited``). The defaults are client-go's ``DefaultControllerRateLimiter``: per key,
5 ms doubling up to a cap of 1000 s; across all keys, a token bucket of 10 retries per second
with bursts of 100, so a storm of failures cannot hammer the API server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Protocol

__all__ = [
    "BucketRateLimiter",
    "ExponentialBackoff",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_rate_limiter",
]

Clock = Callable[[], float]


class RateLimiter(Protocol):
    """Decides the delay before a key is retried and remembers failures until forgotten."""

    def when(self, key: Hashable) -> float:
        """Record one more failure of ``key`` and return the seconds to wait before retrying."""
        ...

    def forget(self, key: Hashable) -> None:
        """``key`` succeeded: its next failure starts from the shortest delay again."""
        ...

    def retries(self, key: Hashable) -> int:
        """Failures recorded for ``key`` since it was last forgotten."""
        ...


class ExponentialBackoff:
    """Per key: ``base * 2**failures`` seconds, never more than ``cap``."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        if base <= 0 or cap < base:
            raise ValueError(f"backoff needs 0 < base <= cap (got base={base}, cap={cap})")
        self.base = base
        self.cap = cap
        self._failures: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def when(self, key: Hashable) -> float:
        """See :meth:`RateLimiter.when`."""
        with self._lock:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        # 2**failures overflows float only after ~1000 failures; the cap applies long before.
        exponent = min(failures, 1023)
        return min(self.base * 2.0**exponent, self.cap)

    def forget(self, key: Hashable) -> None:
        """See :meth:`RateLimiter.forget`."""
        with self._lock:
            self._failures.pop(key, None)

    def retries(self, key: Hashable) -> int:
        """See :meth:`RateLimiter.retries`."""
        with self._lock:
            return self._failures.get(key, 0)


class BucketRateLimiter:
    """All keys together: at most ``qps`` retries a second after an initial ``burst``."""

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Clock = time.monotonic) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"a token bucket needs qps > 0 and burst >= 1 (got {qps}, {burst})")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self._lock = threading.Lock()

    def when(self, key: Hashable) -> float:
        """Reserve a token and return how long until it is available (0 if one is)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, key: Hashable) -> None:
        """Tokens are not per key: nothing to forget."""

    def retries(self, key: Hashable) -> int:
        """Tokens are not per key: always 0."""
        return 0


class MaxOfRateLimiter:
    """The longest delay any of ``limiters`` asks for."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, key: Hashable) -> float:
        """See :meth:`RateLimiter.when`."""
        return max(limiter.when(key) for limiter in self.limiters)

    def forget(self, key: Hashable) -> None:
        """See :meth:`RateLimiter.forget`."""
        for limiter in self.limiters:
            limiter.forget(key)

    def retries(self, key: Hashable) -> int:
        """See :meth:`RateLimiter.retries`."""
        return max(limiter.retries(key) for limiter in self.limiters)


def default_rate_limiter(
    *, base: float = 0.005, cap: float = 1000.0, qps: float = 10.0, burst: int = 100
) -> RateLimiter:
    """client-go's default controller rate limiter (see the module docstring)."""
    return MaxOfRateLimiter(ExponentialBackoff(base, cap), BucketRateLimiter(qps, burst))
