"""A controller: keys from informer events into a work queue, N workers calling ``reconcile(key)``.

The reconcile function is the only thing a product controller writes (one per concern, see
``pivoter/controllers/``). It receives ``namespace/name``, reads the cache or the API, makes the
world match, and returns a :class:`Result`. Raising means "retry with backoff"; returning
``Result(requeue_after=s)`` means "look again in s seconds"; returning ``Result()`` (or None)
means "done until something changes". A key is never reconciled by two workers at once.

A periodic resync re-queues every cached key (default every 10 hours, as controller-runtime) so
that drift the informer cannot see (a missed external change) is eventually corrected.
Controllers are started and stopped by :class:`pivoter.runtime.Manager`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pivoter.kube import Conflict, Unavailable
from pivoter.kube.client import Object
from pivoter.observability.metrics import Metrics
from pivoter.runtime.backoff import RateLimiter
from pivoter.runtime.cache import object_key
from pivoter.runtime.informer import EventHandler, Informer
from pivoter.runtime.queue import WorkQueue

__all__ = ["DEFAULT_RESYNC", "Controller", "Mapper", "Reconcile", "Result", "owner_keys"]

log = logging.getLogger(__name__)

UNAVAILABLE_RETRY_CAP = 5.0
"""Seconds: the longest a key waits to retry after the API server was unavailable."""

DEFAULT_RESYNC = 10 * 3600.0


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for next: nothing, a retry with backoff, or a look after a delay."""

    requeue: bool = False
    requeue_after: float | None = None


Reconcile = Callable[[str], "Result | None"]
Mapper = Callable[[Object], Iterable[str]]


def owner_keys(kind: str, api_group: str = "") -> Mapper:
    """A mapper from an object to the keys of its owners of ``kind`` (and API group, if given):
    watch dependents this way so a change to a child reconciles its parent."""

    def mapper(obj: Object) -> list[str]:
        metadata = obj.get("metadata") or {}
        namespace = metadata.get("namespace")
        keys = []
        for ref in metadata.get("ownerReferences") or []:
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            if ref.get("kind") == kind and (not api_group or group == api_group):
                keys.append(f"{namespace}/{ref['name']}" if namespace else str(ref["name"]))
        return keys

    return mapper


class Controller:
    """Runs ``reconcile`` for queued keys on ``workers`` threads; see the module docstring."""

    def __init__(
        self,
        name: str,
        reconcile: Reconcile,
        *,
        workers: int = 1,
        resync_period: float | None = DEFAULT_RESYNC,
        rate_limiter: RateLimiter | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError(f"controller {name} needs at least one worker, not {workers}")
        self.name = name
        self.reconcile = reconcile
        self.workers = workers
        self.resync_period = resync_period
        self.metrics = metrics
        self.queue = WorkQueue(name, rate_limiter=rate_limiter, metrics=metrics)
        self.informers: list[tuple[Informer, Mapper]] = []
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._started = False

    def watch(
        self,
        informer: Informer,
        mapper: Mapper | None = None,
        *,
        ignore_update: Callable[[Object, Object], bool] | None = None,
    ) -> None:
        """Reconcile the keys ``mapper`` gives (default: the object's own key) on every add,
        update or delete the informer sees, but the updates ``ignore_update(old, new)`` says
        carry nothing to reconcile (e.g. :meth:`pivoter.runtime.echoes.Echoes.echo`)."""
        mapping: Mapper = mapper or (lambda obj: [object_key(obj)])
        self.informers.append((informer, mapping))

        def enqueue(obj: Object) -> None:
            for key in mapping(obj):
                self.queue.add(key)

        def updated(old: Object, new: Object) -> None:
            if ignore_update is None or not ignore_update(old, new):
                enqueue(new)

        informer.add_handler(EventHandler(on_add=enqueue, on_update=updated, on_delete=enqueue))

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the workers (and the resync timer); call once the informers have synced."""
        if self._started:
            raise RuntimeError(f"controller {self.name} was already started")
        self._started = True
        for n in range(self.workers):
            thread = threading.Thread(
                target=self._work, name=f"{self.name}-worker-{n}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        if self.resync_period:
            thread = threading.Thread(target=self._resync, name=f"{self.name}-resync", daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info("controller %s started with %d workers", self.name, self.workers)

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop taking keys, let running reconciles finish (up to ``timeout`` seconds in all) and
        return whether every worker ended."""
        self._stop.set()
        self.queue.shutdown()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            log.warning("controller %s: %s still busy after %.0fs", self.name, alive, timeout)
        else:
            log.info("controller %s stopped", self.name)
        return not alive

    @property
    def running(self) -> bool:
        """Whether any worker is still running."""
        return any(t.is_alive() for t in self._threads if "worker" in t.name)

    # ------------------------------------------------------------------ workers

    def _work(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            try:
                self._reconcile_one(key)
            finally:
                self.queue.done(key)

    def _reconcile_one(self, key: str) -> None:
        metrics = self.metrics
        started = time.monotonic()
        if metrics is not None:
            metrics.active_workers.labels(self.name).inc()
        try:
            result = self.reconcile(key) or Result()
        except Exception as exc:
            cap = None
            if isinstance(exc, Unavailable):
                # The API server is down or overloaded: expected, and the same for every key,
                # so one line each rather than a traceback each; and a retry soon after it is
                # back, not after a backoff that grew through the whole outage.
                log.warning(
                    "controller %s: reconcile of %s: %s; retrying with backoff", self.name, key, exc
                )
                cap = UNAVAILABLE_RETRY_CAP
            elif isinstance(exc, Conflict):
                # A write guarded by a resourceVersion lost to another writer (the copy came
                # from a cache that had not seen that write yet): the retry reads it. Expected.
                log.info("controller %s: reconcile of %s: %s; retrying", self.name, key, exc)
                cap = UNAVAILABLE_RETRY_CAP
            else:
                log.exception(
                    "controller %s: reconcile of %s failed; retrying with backoff", self.name, key
                )
            self.queue.add_rate_limited(key, cap)
            outcome = "error"
            if metrics is not None:
                metrics.reconcile_errors.labels(self.name).inc()
        else:
            if result.requeue_after is not None and result.requeue_after > 0:
                self.queue.forget(key)
                self.queue.add_after(key, result.requeue_after)
                outcome = "requeue_after"
            elif result.requeue:
                self.queue.add_rate_limited(key)
                outcome = "requeue"
            else:
                self.queue.forget(key)
                outcome = "success"
        finally:
            if metrics is not None:
                metrics.active_workers.labels(self.name).dec()
        if metrics is not None:
            metrics.reconcile_total.labels(self.name, outcome).inc()
            metrics.reconcile_duration.labels(self.name).observe(time.monotonic() - started)

    def _resync(self) -> None:
        assert self.resync_period
        while not self._stop.wait(self.resync_period):
            self.resync()

    def resync(self) -> None:
        """Queue the key of every cached object of every watched informer now."""
        for informer, mapping in self.informers:
            for obj in informer.store.list():
                for key in mapping(obj):
                    self.queue.add(key)
