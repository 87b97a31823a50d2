"""Run a job at most once per interval however often it is asked for, and never drop the last
ask: a call within the interval of the last run schedules one run at the interval's end.

What work that scans a whole store (the content store's garbage collection, run when a Bundle
is deleted) needs when its triggers come in bursts: a catalog change that deletes n Bundles
asked for n scans of the n entries, n² work for the same result as one scan at the end.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["Throttle"]

log = logging.getLogger(__name__)


class Throttle:
    """``ask()`` runs ``job`` now when it has not run for ``interval`` seconds, else once at the
    end of the interval (on a daemon timer thread), however many asks came in between."""

    def __init__(
        self,
        job: Callable[[], object],
        interval: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._job = job
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._last = -float("inf")
        self._timer: threading.Timer | None = None

    def ask(self) -> bool:
        """Run the job now (True) or make sure it runs once the interval has passed (False)."""
        with self._lock:
            wait = self._last + self._interval - self._clock()
            if wait > 0:
                if self._timer is None:
                    self._timer = threading.Timer(wait, self._later)
                    self._timer.daemon = True
                    self._timer.start()
                return False
            self._last = self._clock()
        self._job()
        return True

    def _later(self) -> None:
        with self._lock:
            self._timer = None
        try:
            self.ask()
        except Exception:  # a timer thread has no caller to raise to: say it, the next ask retries
            log.exception("a throttled job failed")

    def stop(self) -> None:
        """Cancel a pending run."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
