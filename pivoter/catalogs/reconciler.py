"""The Catalog controller: poll each ``Catalog``'s source into the :class:`CatalogCache` and
report what it serves in the Catalog's status.

``reconcile(name)`` is level-triggered. A Catalog whose spec is unchanged and whose next poll is
not due yet costs nothing (our own status writes come back as watch events and land here). When
a poll is due (new Catalog, spec changed, a ConfigMap it reads changed, the interval elapsed, or
this process has no content for it yet, e.g. a new leader), it builds the source from the spec,
polls it (:mod:`pivoter.catalogs.poll`), and writes status only when something a reader would see
changed: an unchanged poll writes nothing (``lastFetchTime`` is refreshed at most every
``status_heartbeat`` seconds). It asks to be called again after ``spec.pollInterval``, or sooner
after a failure.

Status: ``Serving`` (True ``Fetched``; False ``FetchFailed``, ``Invalid``, ``Unavailable`` or
``Stale`` (the server says its content is stale, and why) with what to do and whether the last
good content still serves), ``contentDigest``, ``packages``,
``bundles``, ``lastFetchTime``, ``lastChangeTime``, ``observedGeneration``. A deleted Catalog
leaves the cache.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pivoter.apis import pivoter as api
from pivoter.apis.conditions import FALSE, TRUE, find, set_condition
from pivoter.apis.resources import CATALOGS, CONFIG_MAPS, SECRETS
from pivoter.catalogs.cache import CachedCatalog, CatalogCache
from pivoter.catalogs.errors import REASON_FETCHED, REASON_STALE, CatalogProblem, InvalidCatalog
from pivoter.catalogs.image import ImageCatalogSource
from pivoter.catalogs.interval import MIN_INTERVAL, parse_duration, retry_delay
from pivoter.catalogs.metrics import CatalogMetrics
from pivoter.catalogs.poll import Poller, PollOutcome
from pivoter.catalogs.sources import SourceSettings, build_source
from pivoter.kube import EventRecorder, Kube, NotFound
from pivoter.registries.names import catalog_pull_secrets
from pivoter.registries.verification import named_policy
from pivoter.runtime.controller import Result

__all__ = ["CATALOGS", "CONFIG_MAPS", "SECRETS", "CatalogReconciler", "referenced_config_maps"]

log = logging.getLogger(__name__)


def referenced_config_maps(catalog: Mapping[str, Any]) -> set[str]:
    """Names of the ConfigMaps a Catalog reads (its content or its CA)."""
    source = (catalog.get("spec") or {}).get("source") or {}
    names = {str((ref or {}).get("name") or "") for ref in source.get("configMaps") or []}
    names.add(str(((source.get("http") or {}).get("caConfigMap") or {}).get("name") or ""))
    return names - {""}


def _timestamp(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _age(stamp: str, now: float) -> float:
    try:
        then = dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    except ValueError:
        return float("inf")
    return now - then.timestamp()


@dataclass
class _State:
    """What this process remembers about one Catalog between reconciles."""

    poller: Poller
    generation: int
    next_poll: float
    stale: bool = False


@dataclass
class CatalogReconciler:
    """Polls ``Catalog`` sources into ``cache``; see the module docstring."""

    kube: Kube
    cache: CatalogCache
    namespace: str
    """pivoter's namespace: where the ConfigMaps and Secrets a Catalog names live."""
    settings: SourceSettings
    validate: bool = True
    status_heartbeat: float = 3600.0
    recorder: EventRecorder | None = None
    metrics: CatalogMetrics | None = None
    clock: Callable[[], float] = time.monotonic
    wall_clock: Callable[[], float] = time.time
    _states: dict[str, _State] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    # ------------------------------------------------------------------ triggers

    def invalidate(self, name: str) -> None:
        """Make the next reconcile of ``name`` poll even if it is not due (e.g. a ConfigMap it
        reads changed)."""
        with self._lock:
            state = self._states.get(name)
            if state is not None:
                state.stale = True

    def forget(self, name: str) -> None:
        """Drop what is known about ``name`` and remove it from the cache."""
        with self._lock:
            self._states.pop(name, None)
        if self.metrics is not None:
            self.metrics.forget(name)
        if self.cache.remove(name):
            log.info("catalog %s: deleted; removed from the cache", name)
        if self.settings.registries is not None:
            self.settings.registries.catalog_secrets.forget(name)

    def _record_images(self, name: str, spec: Mapping[str, Any]) -> None:
        """Let the catalog's pull secret serve the bundle images it names."""
        registries, cached = self.settings.registries, self.cache.get(name)
        if registries is None or cached is None:
            return
        registries.catalog_secrets.record(
            name,
            cached.digest,
            catalog_pull_secrets(spec, self.namespace),
            (b.image for b in cached.catalog.bundles),
        )

    # ------------------------------------------------------------------ reconcile

    def reconcile(self, name: str) -> Result | None:
        """Converge one Catalog; say when to look again."""
        try:
            catalog = self.kube.get(CATALOGS, name)
        except NotFound:
            self.forget(name)
            return None
        metadata = catalog.get("metadata") or {}
        if metadata.get("deletionTimestamp"):
            self.forget(name)
            return None
        generation = int(metadata.get("generation") or 0)
        spec = catalog.get("spec") or {}
        with self._lock:
            state = self._states.get(name)
        now = self.clock()
        if (
            state is not None
            and state.generation == generation
            and not state.stale
            and now < state.next_poll
        ):
            # Not due (e.g. the watch event of our own status write). A process that has no
            # state for the Catalog (a new leader) polls at once: its cache is empty.
            return Result(requeue_after=state.next_poll - now)
        try:
            interval = max(MIN_INTERVAL, parse_duration(str(spec.get("pollInterval") or "")))
        except ValueError:
            interval = parse_duration(api.DEFAULT_POLL_INTERVAL)
        try:
            priority = int(spec.get("priority") or 0)
            built = build_source(
                name,
                spec.get("source") or {},
                self._read,
                self.settings,
                policy=named_policy(catalog, "Catalog"),
            )
        except (CatalogProblem, ValueError) as exc:
            problem = exc if isinstance(exc, CatalogProblem) else InvalidCatalog(str(exc))
            failures = state.poller.failures + 1 if state else 1
            if state is not None:
                state.poller.failures = failures
            if self.metrics is not None:
                self.metrics.record(
                    name, seconds=0.0, changed=False, fetched=None, reason=problem.reason
                )
            self._report(catalog, PollOutcome(self.cache.get(name), problem=problem), "")
            return Result(requeue_after=retry_delay(failures, interval))
        if state is None or state.poller.built.key != built.key:
            state = _State(Poller(name, built, validate=self.validate), generation, now)
            with self._lock:
                self._states[name] = state
        state.generation, state.stale = generation, False
        outcome = state.poller.poll(self.cache, priority)
        self._record_images(name, spec)
        if self.metrics is not None:
            self.metrics.record(
                name,
                seconds=outcome.seconds,
                changed=outcome.changed,
                fetched=outcome.fetched_bytes,
                reason=outcome.problem.reason if outcome.problem else "",
            )
        delay = retry_delay(state.poller.failures, interval)
        state.next_poll = self.clock() + delay
        where = built.description
        if isinstance(built.source, ImageCatalogSource) and built.source.served_by:
            where += f" (from mirror {built.source.served_by})"
        self._report(catalog, outcome, where)
        return Result(requeue_after=delay)

    def _read(self, kind: str, name: str) -> Mapping[str, Any] | None:
        resource = SECRETS if kind == "Secret" else CONFIG_MAPS
        try:
            return self.kube.get(resource, name, self.namespace)
        except NotFound:
            return None

    # ------------------------------------------------------------------ status

    def _report(self, catalog: Mapping[str, Any], outcome: PollOutcome, source: str) -> None:
        name = catalog["metadata"]["name"]
        generation = int(catalog["metadata"].get("generation") or 0)
        old: dict[str, Any] = dict(catalog.get("status") or {})
        conditions = [dict(c) for c in old.get("conditions") or []]
        previous = find(conditions, api.TYPE_SERVING)
        status: dict[str, Any] = {**old, "observedGeneration": generation}
        entry = outcome.entry
        if entry is not None:
            status.update(_counts(entry))
        now = self.wall_clock()
        # Compared with the status, not the cache: a new leader's first poll is no change.
        moved = entry is not None and entry.digest != old.get("contentDigest")
        if outcome.problem is None:
            assert entry is not None  # a successful poll leaves content in the cache
            set_condition(
                conditions,
                api.TYPE_SERVING,
                TRUE,
                REASON_FETCHED,
                f"Serving {status['packages']} packages and {status['bundles']} bundles from "
                f"{source}",
                generation=generation,
            )
            if moved or not old.get("lastChangeTime"):
                status["lastChangeTime"] = _timestamp(now)
        else:
            message = str(outcome.problem)
            if outcome.changed and entry is not None:
                # A stale source still delivered this content: it did change.
                status["lastChangeTime"] = _timestamp(now)
            if entry is not None and outcome.problem.reason == REASON_STALE:
                message += (
                    f". The content it serves ({entry.digest}, {len(entry.catalog.packages)} "
                    "packages) keeps serving resolution; fix the server's catalog and this "
                    "clears at its next reload"
                )
            elif entry is not None:
                message += (
                    f". The last good content ({entry.digest}, {len(entry.catalog.packages)} "
                    "packages) keeps serving resolution"
                )
                if old.get("lastFetchTime"):
                    message += f"; it was fetched by {old['lastFetchTime']}"
            else:
                message += ". Nothing from this catalog is available to resolution until a fetch"
                message += " succeeds"
            set_condition(
                conditions,
                api.TYPE_SERVING,
                FALSE,
                outcome.problem.reason,
                message,
                generation=generation,
            )
        status["conditions"] = conditions
        if outcome.problem is None:
            stale = _age(str(old.get("lastFetchTime") or ""), now) >= self.status_heartbeat
            if stale or _without_fetch_time(status) != _without_fetch_time(old):
                status["lastFetchTime"] = _timestamp(now)
        if status == old:
            return
        self.kube.patch_status(CATALOGS, name, status)
        self._event(catalog, previous, find(conditions, api.TYPE_SERVING), outcome, moved)

    def _event(
        self,
        catalog: Mapping[str, Any],
        previous: Mapping[str, Any] | None,
        current: Mapping[str, Any] | None,
        outcome: PollOutcome,
        moved: bool,
    ) -> None:
        if self.recorder is None or current is None:
            return
        if moved and outcome.problem is None:
            self.recorder.normal(
                dict(catalog), "ContentChanged", "Fetch", str(current.get("message") or "")
            )
        elif outcome.problem is not None and (
            previous is None or previous.get("reason") != current.get("reason")
        ):
            self.recorder.warning(
                dict(catalog), outcome.problem.reason, "Fetch", str(current.get("message") or "")
            )


def _counts(entry: CachedCatalog) -> dict[str, Any]:
    return {
        "contentDigest": entry.digest,
        "packages": len(entry.catalog.packages),
        "bundles": len(entry.catalog.bundles),
    }


def _without_fetch_time(status: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in status.items() if k != "lastFetchTime"}
