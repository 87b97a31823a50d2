"""Record ``events.k8s.io/v1`` Events, so that ``kubectl events`` explains what pivoter did.

Reconcilers call :meth:`EventRecorder.event` with the object concerned and a reason; repeats of
the same event are folded into one Event's ``series`` (count and last time seen) rather than
written again, as client-go's recorder does. Recording is best effort: a failure is logged, never
raised, because an Event must not decide whether a reconcile succeeds.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from pivoter.kube.client import Kube, Object
from provisioners.apply.kubeerrors import KubeError, NotFound
from provisioners.apply.resources import Resource

__all__ = ["EVENTS", "NORMAL", "WARNING", "EventRecorder", "object_reference"]

log = logging.getLogger(__name__)

EVENTS = Resource("events.k8s.io/v1", "Event", "events", namespaced=True)
NOTE_LIMIT = 1024  # the API server rejects longer notes
NORMAL, WARNING = "Normal", "Warning"


@dataclass(slots=True)
class _Series:
    name: str
    namespace: str
    count: int
    last: float


class EventRecorder:
    """Writes Events as ``reporting_controller`` running as ``reporting_instance`` (the Pod)."""

    def __init__(
        self,
        kube: Kube,
        *,
        reporting_controller: str,
        reporting_instance: str,
        series_window: float = 600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.kube = kube
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance
        self.series_window = series_window
        self._clock = clock
        # Oldest last-seen first (a repeat moves its series to the end), so forgetting the
        # stale ones reads only those: a scan of every series per Event grew with the cluster.
        self._series: OrderedDict[tuple[str, ...], _Series] = OrderedDict()
        self._lock = threading.Lock()

    def normal(self, regarding: Object, reason: str, action: str, note: str) -> Object | None:
        """Record a ``Normal`` event (something went as expected)."""
        return self.event(regarding, NORMAL, reason, action, note)

    def warning(self, regarding: Object, reason: str, action: str, note: str) -> Object | None:
        """Record a ``Warning`` event (something a person may need to act on)."""
        return self.event(regarding, WARNING, reason, action, note)

    def event(
        self, regarding: Object, type_: str, reason: str, action: str, note: str
    ) -> Object | None:
        """Record one event about ``regarding``; returns the stored Event, or None on failure."""
        if type_ not in (NORMAL, WARNING):
            raise ValueError(f"event type must be {NORMAL} or {WARNING}, not {type_!r}")
        ref = object_reference(regarding)
        namespace = ref.get("namespace") or "default"  # cluster-scoped objects: as client-go
        note = note if len(note) <= NOTE_LIMIT else note[: NOTE_LIMIT - 3] + "..."
        key = (ref.get("uid", ""), ref["kind"], ref["name"], namespace, type_, reason, action, note)
        now = self._clock()
        with self._lock:
            series = self._series.get(key)
            if series is not None and now - series.last > self.series_window:
                series = None
            if series is not None:
                series.count += 1
                series.last = now
                self._series.move_to_end(key)
        try:
            if series is not None:
                try:
                    return self._update_series(series)
                except NotFound:  # the Event expired (kept an hour): start a new series
                    pass
            created = self._create(
                ref,
                namespace=namespace,
                type_=type_,
                reason=reason,
                action=action,
                note=note,
                now=now,
            )
        except KubeError as exc:
            log.warning(
                "could not record event %s on %s %s: %s", reason, ref["kind"], ref["name"], exc
            )
            return None
        with self._lock:
            self._forget_old(now)
            self._series[key] = _Series(created["metadata"]["name"], namespace, 1, now)
            self._series.move_to_end(key)  # a stale series of the same key was at the front
        return created

    def _create(
        self,
        ref: Object,
        *,
        namespace: str,
        type_: str,
        reason: str,
        action: str,
        note: str,
        now: float,
    ) -> Object:
        body: Object = {
            "apiVersion": EVENTS.api_version,
            "kind": EVENTS.kind,
            "metadata": {"name": f"{ref['name']}.{secrets.token_hex(8)}", "namespace": namespace},
            "eventTime": _micro_time(now),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action,
            "reason": reason,
            "note": note,
            "type": type_,
            "regarding": ref,
        }
        return self.kube.create(EVENTS, body, namespace)

    def _update_series(self, series: _Series) -> Object:
        patch = {"series": {"count": series.count, "lastObservedTime": _micro_time(series.last)}}
        return self.kube.merge_patch(EVENTS, series.name, patch, series.namespace)

    def _forget_old(self, now: float) -> None:
        while self._series:
            key, oldest = next(iter(self._series.items()))
            if now - oldest.last <= self.series_window:
                return
            del self._series[key]


def object_reference(obj: Object) -> Object:
    """The ``ObjectReference`` of a (full) object, for an Event's ``regarding``."""
    metadata = obj.get("metadata") or {}
    ref: Object = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "name": metadata.get("name", ""),
    }
    for source, target in (
        ("namespace", "namespace"),
        ("uid", "uid"),
        ("resourceVersion", "resourceVersion"),
    ):
        if metadata.get(source):
            ref[target] = metadata[source]
    if not ref["kind"] or not ref["name"]:
        raise ValueError("an Event must regard an object with a kind and a metadata.name")
    return ref


def _micro_time(seconds: float) -> str:
    stamp = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
