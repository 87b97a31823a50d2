"""The keyed work queue between informers (which add keys) and a controller's workers (which take
them): a key is queued at most once, never handed to two workers at once, and retried later with
backoff when its reconcile fails.

Semantics are client-go's ``workqueue`` ("dirty" and "processing" sets): adding a key that is
already waiting does nothing; adding a key that a worker is processing queues it again once the
worker calls :meth:`WorkQueue.done`, so no change is lost and no key runs concurrently. Delayed
adds (:meth:`WorkQueue.add_after`) wait in a heap that :meth:`WorkQueue.get` drains when due.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable

from pivoter.observability.metrics import Metrics
from pivoter.runtime.backoff import RateLimiter, default_rate_limiter

__all__ = ["WorkQueue"]


class WorkQueue:
    """A de-duplicating, rate-limited, delaying FIFO of string keys (``namespace/name``)."""

    def __init__(
        self,
        name: str,
        *,
        rate_limiter: RateLimiter | None = None,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.rate_limiter = rate_limiter or default_rate_limiter()
        self._metrics = metrics
        self._clock = clock
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._waiting: list[tuple[float, int, str]] = []  # heap of (ready_at, seq, key)
        self._ready_at: dict[str, float] = {}  # earliest ready time of each waiting key
        self._seq = itertools.count()
        self._queued_at: dict[str, float] = {}
        self._started_at: dict[str, float] = {}
        self._shutting_down = False
        self._cond = threading.Condition()

    # ------------------------------------------------------------------ adding

    def add(self, key: str) -> None:
        """Queue ``key`` now (no-op if it is already queued, or after :meth:`shutdown`)."""
        with self._cond:
            self._add_locked(key)

    def _add_locked(self, key: str) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        self._queued_at.setdefault(key, self._clock())
        if self._metrics is not None:
            self._metrics.queue_adds.labels(self.name).inc()
        if key in self._processing:
            return  # re-queued by done()
        self._queue.append(key)
        self._set_depth()
        self._cond.notify()

    def add_after(self, key: str, delay: float) -> None:
        """Queue ``key`` in ``delay`` seconds; an earlier pending time for it wins."""
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if self._shutting_down:
                return
            ready = self._clock() + delay
            if self._ready_at.get(key, float("inf")) <= ready:
                return
            self._ready_at[key] = ready
            heapq.heappush(self._waiting, (ready, next(self._seq), key))
            self._cond.notify()

    def add_rate_limited(self, key: str, cap: float | None = None) -> None:
        """Queue ``key`` after the delay its rate limiter gives (backoff after a failure), at
        most ``cap`` seconds when given."""
        if self._metrics is not None:
            self._metrics.queue_retries.labels(self.name).inc()
        delay = self.rate_limiter.when(key)
        self.add_after(key, delay if cap is None else min(delay, cap))

    def forget(self, key: str) -> None:
        """``key`` reconciled fine: reset its backoff."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: str) -> int:
        """How many times ``key`` has been re-added with backoff since it was last forgotten."""
        return self.rate_limiter.retries(key)

    # ------------------------------------------------------------------ taking

    def get(self, timeout: float | None = None) -> str | None:
        """Take the next key, waiting up to ``timeout`` seconds (forever if None; 0: don't wait).

        Returns None on timeout or once the queue is shut down. The caller must call
        :meth:`done` with the key when finished with it.
        """
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while True:
                if self._shutting_down:
                    return None
                self._promote_due()
                if self._queue:
                    return self._take()
                now = self._clock()
                waits = [self._waiting[0][0] - now] if self._waiting else []
                if deadline is not None:
                    if now >= deadline:
                        return None
                    waits.append(deadline - now)
                self._cond.wait(max(min(waits), 0.001) if waits else None)

    def _take(self) -> str:
        key = self._queue.popleft()
        self._dirty.discard(key)
        self._processing.add(key)
        now = self._clock()
        queued = self._queued_at.pop(key, now)
        self._started_at[key] = now
        if self._metrics is not None:
            self._metrics.queue_latency.labels(self.name).observe(max(now - queued, 0.0))
        self._set_depth()
        return key

    def _promote_due(self) -> None:
        now = self._clock()
        while self._waiting and self._waiting[0][0] <= now:
            ready, _, key = heapq.heappop(self._waiting)
            if self._ready_at.get(key) != ready:
                continue  # superseded by an earlier add_after of the same key
            del self._ready_at[key]
            self._add_locked(key)

    def done(self, key: str) -> None:
        """The worker finished ``key``; if it was added meanwhile, it is queued again now."""
        with self._cond:
            self._processing.discard(key)
            started = self._started_at.pop(key, None)
            if self._metrics is not None and started is not None:
                self._metrics.work_duration.labels(self.name).observe(self._clock() - started)
            if key in self._dirty:
                self._queue.append(key)
                self._set_depth()
                self._cond.notify()

    # ------------------------------------------------------------------ lifecycle

    def shutdown(self) -> None:
        """Stop handing out keys: blocked and future :meth:`get` calls return None."""
        with self._cond:
            self._shutting_down = True
            self._cond.notify_all()

    @property
    def shutting_down(self) -> bool:
        """Whether :meth:`shutdown` was called."""
        with self._cond:
            return self._shutting_down

    def __len__(self) -> int:
        """Keys ready to be taken now (not counting delayed ones or ones being processed)."""
        with self._cond:
            return len(self._queue)

    def pending(self) -> int:
        """Keys ready, delayed or being processed: zero means there is nothing left to do."""
        with self._cond:
            return len(self._dirty | self._processing | set(self._ready_at))

    def _set_depth(self) -> None:
        if self._metrics is not None:
            self._metrics.queue_depth.labels(self.name).set(len(self._queue))
