"""Fakes for the pure logic of the controller core: a clock and an in-memory Lease lock.

Only for logic that does not depend on API server behaviour (backoff arithmetic, queue ordering,
the leader-election decision rules); the same code is also exercised against the real control
plane in the ``*_cluster`` test modules.
"""

from __future__ import annotations

import threading

from pivoter.kube import Conflict, NotFound
from pivoter.runtime import LeaseRecord


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class MemoryLeaseLock:
    """One Lease record with compare-and-swap on an integer version, like the API server's."""

    def __init__(self) -> None:
        self.record: LeaseRecord | None = None
        self.version = 0
        self.fail = False
        self.reads = 0
        self._lock = threading.Lock()

    def describe(self) -> str:
        return "memory/lease"

    def get(self) -> tuple[LeaseRecord, str] | None:
        with self._lock:
            self.reads += 1
            self._maybe_fail()
            return None if self.record is None else (self.record, str(self.version))

    def create(self, record: LeaseRecord) -> str:
        with self._lock:
            self._maybe_fail()
            if self.record is not None:
                raise Conflict(409, "AlreadyExists", "lease exists")
            self.record, self.version = record, self.version + 1
            return str(self.version)

    def update(self, record: LeaseRecord, version: str) -> str:
        with self._lock:
            self._maybe_fail()
            if self.record is None:
                raise NotFound(404, "NotFound", "no lease")
            if version != str(self.version):
                raise Conflict(409, "Conflict", "the object has been modified")
            self.record, self.version = record, self.version + 1
            return str(self.version)

    def _maybe_fail(self) -> None:
        if self.fail:
            from pivoter.kube import Unavailable

            raise Unavailable(0, "", "connection refused")
