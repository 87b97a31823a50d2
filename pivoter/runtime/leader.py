"""Lease-based leader election on ``coordination.k8s.io/v1`` Leases, so one replica reconciles.

client-go's algorithm written for Leases. (The official Python client has a Lease lock too, but its
elector cannot be stopped, never releases, cannot say whether it still leads and reads the wall
clock directly; docs/decisions.md (7).) Every candidate tries, every ``retry_period``, to write
itself as the Lease's holder with a compare-and-swap on resourceVersion. A candidate only takes a
Lease whose holder has not renewed it for ``lease_duration`` as measured on the candidate's own
clock, from when it last saw the Lease change (so clocks need not agree, only tick at similar
rates). A leader that has not renewed for ``renew_deadline`` stops leading on its own, and one that
sees another holder in the Lease stops at once. Because ``retry_period < renew_deadline <
lease_duration``, the old leader has stopped before anyone else can take over: two electors never
lead at the same time.

Defaults (client-go's and controller-runtime's): lease 15 s, renew deadline 10 s, retry 2 s. A
crashed leader is replaced within about ``lease_duration + retry_period`` (17 s); a leader that
shuts down gracefully releases the Lease so a standby takes over within ``retry_period``.

Used by :class:`pivoter.runtime.Manager`; the :class:`LeaseLock` protocol lets the pure logic
be tested with an in-memory lock.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from pivoter.apis.resources import LEASES
from pivoter.kube import KubeError, NotFound
from pivoter.kube.client import Kube, Object
from pivoter.observability.metrics import Metrics

__all__ = [
    "KubeLeaseLock",
    "LeaderElectionConfig",
    "LeaderElector",
    "LeaseLock",
    "LeaseRecord",
]

log = logging.getLogger(__name__)

JITTER = 1.2  # client-go's JitterFactor: retries are spread over [retry, retry * 1.2]


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    """Which Lease to compete for, as whom, and the timing (seconds)."""

    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not (self.namespace and self.name and self.identity):
            raise ValueError(
                "leader election needs a lease namespace, a lease name and an identity"
            )
        if self.retry_period <= 0:
            raise ValueError("leader election retry period must be positive")
        if self.renew_deadline <= self.retry_period * JITTER:
            raise ValueError(
                f"leader election renew deadline ({self.renew_deadline}s) must exceed "
                f"{JITTER} x the retry period ({self.retry_period}s)"
            )
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(
                f"leader election lease duration ({self.lease_duration}s) must exceed the renew "
                f"deadline ({self.renew_deadline}s), or two replicas could lead at once"
            )


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The part of a Lease's spec that leader election reads and writes."""

    holder: str
    lease_duration_seconds: int
    acquire_time: float | None = None
    renew_time: float | None = None
    transitions: int = 0


class LeaseLock(Protocol):
    """Storage for one :class:`LeaseRecord` with compare-and-swap on a version string."""

    def get(self) -> tuple[LeaseRecord, str] | None:
        """The record and its version, or None if the Lease does not exist."""
        ...

    def create(self, record: LeaseRecord) -> str:
        """Create the Lease holding ``record``; raise ``Conflict`` if it exists. Returns the
        new version."""
        ...

    def update(self, record: LeaseRecord, version: str) -> str:
        """Write ``record`` if the Lease is still at ``version`` (else raise ``Conflict``)."""
        ...

    def describe(self) -> str:
        """``namespace/name`` of the Lease, for messages."""
        ...


class KubeLeaseLock:
    """A :class:`LeaseLock` on a real ``coordination.k8s.io/v1`` Lease."""

    def __init__(self, kube: Kube, namespace: str, name: str, *, timeout: float = 5.0) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.timeout = timeout

    def describe(self) -> str:
        """See :meth:`LeaseLock.describe`."""
        return f"{self.namespace}/{self.name}"

    def get(self) -> tuple[LeaseRecord, str] | None:
        """See :meth:`LeaseLock.get`."""
        try:
            lease = self.kube.request(
                "GET", LEASES.path(self.namespace, self.name), timeout=self.timeout
            )
        except NotFound:
            return None
        spec = lease.get("spec") or {}
        record = LeaseRecord(
            holder=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=_parse_micro_time(spec.get("acquireTime")),
            renew_time=_parse_micro_time(spec.get("renewTime")),
            transitions=int(spec.get("leaseTransitions") or 0),
        )
        return record, str(lease["metadata"]["resourceVersion"])

    def create(self, record: LeaseRecord) -> str:
        """See :meth:`LeaseLock.create`."""
        body = self._body(record, version=None)
        created = self.kube.request(
            "POST", LEASES.path(self.namespace), body=body, timeout=self.timeout
        )
        return str(created["metadata"]["resourceVersion"])

    def update(self, record: LeaseRecord, version: str) -> str:
        """See :meth:`LeaseLock.update`."""
        body = self._body(record, version=version)
        updated = self.kube.request(
            "PUT", LEASES.path(self.namespace, self.name), body=body, timeout=self.timeout
        )
        return str(updated["metadata"]["resourceVersion"])

    def _body(self, record: LeaseRecord, *, version: str | None) -> Object:
        metadata: Object = {"name": self.name, "namespace": self.namespace}
        if version is not None:
            metadata["resourceVersion"] = version
        spec: Object = {
            "holderIdentity": record.holder,
            "leaseDurationSeconds": record.lease_duration_seconds,
            "leaseTransitions": record.transitions,
        }
        if record.acquire_time is not None:
            spec["acquireTime"] = _micro_time(record.acquire_time)
        if record.renew_time is not None:
            spec["renewTime"] = _micro_time(record.renew_time)
        return {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": metadata,
            "spec": spec,
        }


class LeaderElector:
    """Competes for one Lease on a background thread and calls back on gaining or losing it.

    ``on_started_leading`` and ``on_stopped_leading`` run on the elector's thread and must return
    quickly (start or stop work elsewhere). After leadership is lost the elector does not compete
    again: the process is expected to shut down, as controller-runtime's manager does.
    """

    def __init__(
        self,
        config: LeaderElectionConfig,
        lock: LeaseLock,
        *,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.lock = lock
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._metrics = metrics
        self._clock = clock
        self._wall = wall_clock
        self._stop = threading.Event()
        self._release_on_stop = True
        self._thread: threading.Thread | None = None
        self._observed: LeaseRecord | None = None
        self._observed_version = ""
        self._observed_at = 0.0
        self._last_contact: float | None = None  # last successful read of the Lease
        self._leading = False
        self._renewed_at = 0.0  # when the last successful renewal was *sent*
        self._state = threading.Lock()
        self.lost = threading.Event()
        if metrics is not None:
            metrics.leader_status.labels(config.name).set(0)

    # ------------------------------------------------------------------ state

    def is_leader(self) -> bool:
        """Whether this elector leads now: it holds the Lease and renewed it within the renew
        deadline (checked here too, so a stuck renew thread cannot overstay)."""
        with self._state:
            return self._leading and self._clock() - self._renewed_at < self.config.renew_deadline

    @property
    def leader(self) -> str:
        """The holder this elector last saw in the Lease ("" if none)."""
        with self._state:
            return self._observed.holder if self._observed else ""

    def healthy(self) -> bool:
        """For ``/healthz`` and ``/readyz``: running, and either leading within the deadline or
        standing by with a recent successful look at the Lease."""
        if self._thread is None or not self._thread.is_alive():
            return False
        with self._state:
            now = self._clock()
            if self._leading:
                return now - self._renewed_at < self.config.renew_deadline
            limit = self.config.lease_duration + self.config.retry_period * JITTER
            return self._last_contact is not None and now - self._last_contact < limit

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start competing on a background thread."""
        if self._thread is not None:
            raise RuntimeError("leader elector already started")
        self._thread = threading.Thread(target=self.run, name="leader-election", daemon=True)
        self._thread.start()

    def stop(self, *, release: bool = True, timeout: float = 10.0) -> None:
        """Stop competing (and renewing); with ``release`` give up a held Lease at once so a
        standby need not wait for it to expire. ``release=False`` is what a crash looks like."""
        self._release_on_stop = release
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def run(self) -> None:
        """Acquire, then renew until stopped or lost (blocking)."""
        if not self._acquire():
            return
        self._set_leading(True)
        if self._on_started is not None:
            self._on_started()
        self._renew()
        released = False
        if self._stop.is_set() and self._release_on_stop:
            released = self._release()
        self._set_leading(False)
        if not self._stop.is_set():
            self.lost.set()
        log.info(
            "%s stopped leading (lease %s)",
            self.config.identity,
            "released" if released else "left to expire",
        )
        if self._on_stopped is not None:
            self._on_stopped()

    def _set_leading(self, leading: bool) -> None:
        with self._state:
            self._leading = leading
        if self._metrics is not None:
            self._metrics.leader_status.labels(self.config.name).set(1 if leading else 0)
            to = "leading" if leading else "standby"
            self._metrics.leader_transitions.labels(self.config.name, to).inc()
        log.info(
            "%s %s the lease %s",
            self.config.identity,
            "now holds" if leading else "no longer holds",
            self.lock.describe(),
        )

    def _wait(self, seconds: float) -> bool:
        """Sleep (jittered); True if asked to stop meanwhile."""
        return self._stop.wait(seconds * random.uniform(1.0, JITTER))

    def _acquire(self) -> bool:
        log.info("%s competing for lease %s", self.config.identity, self.lock.describe())
        while not self._stop.is_set():
            if self.try_acquire_or_renew():
                return True
            if self._wait(self.config.retry_period):
                break
        return False

    def _renew(self) -> None:
        while not self._wait(self.config.retry_period):
            while True:
                if self.try_acquire_or_renew():
                    break
                with self._state:
                    other = self._observed is not None and self._observed.holder not in (
                        "",
                        self.config.identity,
                    )
                    overdue = self._clock() - self._renewed_at >= self.config.renew_deadline
                if other or overdue:
                    why = f"{self.leader} holds it now" if other else "renewal failed"
                    log.error(
                        "%s lost lease %s: %s", self.config.identity, self.lock.describe(), why
                    )
                    return
                if self._stop.wait(self.config.retry_period / 2):
                    return

    def _release(self) -> bool:
        with self._state:
            observed, version = self._observed, self._observed_version
        if observed is None or observed.holder != self.config.identity:
            return False
        now = self._wall()
        record = LeaseRecord(
            holder="",
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            transitions=observed.transitions,
        )
        try:
            self.lock.update(record, version)
        except KubeError as exc:
            log.warning("could not release lease %s: %s", self.lock.describe(), exc)
            return False
        log.info("%s released lease %s", self.config.identity, self.lock.describe())
        return True

    # ------------------------------------------------------------------ one attempt

    def try_acquire_or_renew(self) -> bool:
        """One attempt to take or renew the Lease; True if this elector holds it afterwards."""
        me = self.config.identity
        attempt_started = self._clock()
        wall = self._wall()
        duration = math.ceil(self.config.lease_duration)
        if self._renew_observed(attempt_started, wall, duration):
            return True
        try:
            current = self.lock.get()
        except KubeError as exc:
            log.warning("reading lease %s failed: %s", self.lock.describe(), exc)
            return False
        if current is None:
            record = LeaseRecord(me, duration, acquire_time=wall, renew_time=wall)
            try:
                version = self.lock.create(record)
            except KubeError as exc:
                log.info("creating lease %s failed: %s", self.lock.describe(), exc)
                return False
            self._observe(record, version, attempt_started, renewed=True)
            return True
        record, version = current
        self._observe(record, version, self._clock(), renewed=False)
        with self._state:
            observed_at = self._observed_at
        held_by_other = record.holder not in ("", me)
        if held_by_other and observed_at + record.lease_duration_seconds > self._clock():
            return False
        if held_by_other and self.is_leader():
            return False  # we lost it: never take it straight back while still "leading"
        mine = record.holder == me
        new = replace(
            record,
            holder=me,
            lease_duration_seconds=duration,
            acquire_time=record.acquire_time if mine else wall,
            renew_time=wall,
            transitions=record.transitions if mine else record.transitions + 1,
        )
        try:
            new_version = self.lock.update(new, version)
        except KubeError as exc:
            log.info("updating lease %s failed: %s", self.lock.describe(), exc)
            return False
        self._observe(new, new_version, attempt_started, renewed=True)
        return True

    def _renew_observed(self, started: float, wall: float, duration: int) -> bool:
        """The leader's fast path (client-go's): renew from the record it wrote last, one update
        and no read; False when it does not lead or the update fails (the Lease changed since,
        or the API server did not answer): the caller reads the Lease and decides."""
        with self._state:
            observed, version = self._observed, self._observed_version
        if not self.is_leader() or observed is None or observed.holder != self.config.identity:
            return False
        new = replace(observed, lease_duration_seconds=duration, renew_time=wall)
        try:
            new_version = self.lock.update(new, version)
        except KubeError:
            return False
        self._observe(new, new_version, started, renewed=True)
        return True

    def _observe(self, record: LeaseRecord, version: str, at: float, *, renewed: bool) -> None:
        new_holder = ""
        with self._state:
            self._last_contact = self._clock()
            if version != self._observed_version:
                if self._observed is None or self._observed.holder != record.holder:
                    new_holder = record.holder
                self._observed, self._observed_version, self._observed_at = record, version, at
            if renewed:
                self._renewed_at = at
        if new_holder and self._on_new_leader is not None:
            self._on_new_leader(new_holder)


def _micro_time(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_micro_time(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
