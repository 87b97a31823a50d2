"""List-then-watch one kind into a :class:`~pivoter.runtime.cache.Store` and tell handlers.

An :class:`Informer` lists the collection, replaces its cache with the result, then watches from
the list's resourceVersion and applies every event to the cache before calling the handlers. When
the API server answers 410 Gone (the resourceVersion was compacted away) it lists again and
reports the difference (objects created, changed or deleted while it was not watching) as events,
so handlers never miss a change. Other errors (network, apiserver restart) are retried with
capped exponential backoff (0.8 s doubling up to 5 s: the daemon is one client, and after an
API server outage its caches should catch up within seconds), resuming the watch from the last
resourceVersion seen: that of the last event the cache applied, also when the watch broke (as
client-go's reflector; resuming from where the broken watch began would replay every change
since, and the cache would hold old versions of objects again until the replay caught up).

Cached objects carry no ``metadata.managedFields`` (controller-runtime's
``TransformStripManagedFields``): nothing of the daemon reads who wrote which field from a cache
(drift is compared through a server-side dry run), and dropping them took the daemon from 283 to
213 MiB at a thousand inputs (docs/benchmarks/daemon-scale.md). Read an object from the API
server to see them.

A :class:`pivoter.runtime.Manager` owns one informer per kind (and namespace) and shares it
between all controllers that watch that kind.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass

from pivoter.kube import Gone, KubeError
from pivoter.kube.client import Kube, Object, WatchStream
from pivoter.observability.metrics import Metrics
from pivoter.runtime.cache import Store
from provisioners.apply.resources import Resource

__all__ = ["EventHandler", "Informer"]

log = logging.getLogger(__name__)


def _stripped(obj: Object) -> Object:
    """``obj`` (freshly decoded, owned by the informer) without ``metadata.managedFields``."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return obj


@dataclass(frozen=True, slots=True)
class EventHandler:
    """Callbacks for cache changes; each runs on the informer's thread, so keep them quick
    (controllers only enqueue keys)."""

    on_add: Callable[[Object], None] | None = None
    on_update: Callable[[Object, Object], None] | None = None
    on_delete: Callable[[Object], None] | None = None


class Informer:
    """Keeps :attr:`store` in step with one collection; see the module docstring."""

    def __init__(
        self,
        kube: Kube,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        metrics: Metrics | None = None,
        watch_timeout: int = 300,
        backoff_base: float = 0.8,
        backoff_cap: float = 5.0,
    ) -> None:
        self.kube = kube
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.store = Store()
        self._metrics = metrics
        self._watch_timeout = watch_timeout
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        self._handlers: list[EventHandler] = []
        self._handlers_lock = threading.Lock()
        self._synced = threading.Event()
        self._applied = ""
        """The resourceVersion of the last watch event applied to the cache."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stream: WatchStream | None = None
        self._stream_lock = threading.Lock()
        self.relists = 0

    def __str__(self) -> str:
        scope = f" in {self.namespace}" if self.namespace else ""
        return f"informer for {self.resource}{scope}"

    # ------------------------------------------------------------------ handlers

    def add_handler(self, handler: EventHandler) -> None:
        """Register ``handler``; if the cache is already filled it first hears an add for every
        cached object, so a late subscriber sees the same world as an early one."""
        with self._handlers_lock:
            self._handlers.append(handler)
            if self._synced.is_set() and handler.on_add is not None:
                for obj in self.store.list():
                    _call(handler.on_add, obj)

    def _dispatch(self, kind: str, obj: Object, old: Object | None = None) -> None:
        with self._handlers_lock:
            handlers = list(self._handlers)
        for handler in handlers:
            if kind == "add" and handler.on_add is not None:
                _call(handler.on_add, obj)
            elif kind == "update" and handler.on_update is not None:
                _call(handler.on_update, old or obj, obj)
            elif kind == "delete" and handler.on_delete is not None:
                _call(handler.on_delete, obj)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start listing and watching on a background thread (once)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._run, name=f"informer-{self.resource}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop watching and wait for the thread to end."""
        self._stop.set()
        with self._stream_lock:
            if self._stream is not None:
                self._stream.close()
        if self._thread is not None:
            self._thread.join(timeout)

    def has_synced(self) -> bool:
        """Whether the first list has filled the cache."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Wait until the first list has filled the cache (or ``timeout``); True if it did."""
        return self._synced.wait(timeout)

    def interrupt_watch(self) -> None:
        """Break the current watch connection (as a network failure would); the informer
        resumes from its last resourceVersion. For tests and operators' debugging."""
        with self._stream_lock:
            if self._stream is not None:
                self._stream.close()

    # ------------------------------------------------------------------ the loop

    def _run(self) -> None:
        resource_version: str | None = None
        reason = "initial"
        failures = 0
        while not self._stop.is_set():
            try:
                if resource_version is None:
                    resource_version = self._relist(reason)
                resource_version = self._watch(resource_version)
                failures = 0
            except Gone as exc:
                log.info("%s: %s; listing again", self, exc.message)
                resource_version, reason = None, "expired"
            except KubeError as exc:
                if self._stop.is_set():
                    break
                if resource_version is not None:
                    resource_version = self._applied or resource_version
                failures += 1
                delay = min(self._backoff_base * 2 ** (failures - 1), self._backoff_cap)
                delay *= 1 + random.random() * 0.2  # spread reconnects of many informers
                log.warning("%s: %s; retrying in %.1fs", self, exc, delay)
                if resource_version is None:
                    reason = "error"
                self._stop.wait(delay)
            except Exception:  # a bug must not kill the cache silently; keep trying, loudly
                log.exception("%s: unexpected failure; listing again", self)
                resource_version, reason = None, "error"
                self._stop.wait(self._backoff_cap)

    def _relist(self, reason: str) -> str:
        items, resource_version = self.kube.list(
            self.resource, self.namespace, label_selector=self.label_selector
        )
        added, updated, deleted = self.store.replace(map(_stripped, items))
        self.relists += 1
        if self._metrics is not None:
            self._metrics.informer_relists.labels(str(self.resource), reason).inc()
            self._metrics.informer_objects.labels(str(self.resource)).set(len(self.store))
        log.debug("%s: listed %d objects at %s (%s)", self, len(items), resource_version, reason)
        for obj in deleted:
            self._dispatch("delete", obj)
        for obj in added:
            self._dispatch("add", obj)
        for old, new in updated:
            self._dispatch("update", new, old)
        self._synced.set()
        return resource_version

    def _watch(self, resource_version: str) -> str:
        """Watch until the server ends the request; return the last resourceVersion seen (also
        kept in :attr:`_applied` as each event is applied, for a watch that breaks)."""
        self._applied = resource_version
        timeout = int(self._watch_timeout * (1 + random.random()))  # as client-go: spread expiry
        stream = self.kube.watch(
            self.resource,
            self.namespace,
            resource_version=resource_version,
            timeout_seconds=timeout,
            label_selector=self.label_selector,
        )
        with self._stream_lock:
            if self._stop.is_set():
                stream.close()
            self._stream = stream
        try:
            for kind, obj in stream:
                resource_version = str(
                    (obj.get("metadata") or {}).get("resourceVersion") or resource_version
                )
                if kind in {"ADDED", "MODIFIED"}:
                    old = self.store.upsert(_stripped(obj))
                    self._dispatch("update" if old is not None else "add", obj, old)
                elif kind == "DELETED":
                    self.store.delete(_stripped(obj))
                    self._dispatch("delete", obj)
                # BOOKMARK: only its resourceVersion matters, recorded above.
                self._applied = resource_version
                if self._metrics is not None:
                    self._metrics.informer_objects.labels(str(self.resource)).set(len(self.store))
        finally:
            with self._stream_lock:
                self._stream = None
        return resource_version


def _call(callback: Callable[..., None], *args: Object) -> None:
    try:
        callback(*args)
    except Exception:  # one faulty handler must not starve the others
        log.exception("event handler %r failed", callback)
