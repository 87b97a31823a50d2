"""The ClusterCatalog controller: catalogd's job, done by the daemon.

``reconcile(name)`` reads the ClusterCatalog and converges:

* ``availabilityMode: Unavailable``: its content leaves the cache and the HTTP API;
  ``Serving=False/UserSpecifiedUnavailable``, ``Progressing=True/Succeeded``, no URLs.
* otherwise, when due (new to this process, a new generation, a new ``source.image.ref``, the
  ``pollIntervalMinutes`` elapsed, or the last attempt failed), the image is polled: one manifest
  request; only a moved digest pulls and unpacks the layers (:mod:`pivoter.catalogs.image`),
  loads the FBC directory (:func:`served_snapshot`; like catalogd, a catalog ``opm validate``
  faults is served anyway, the findings logged) and swaps the content served at
  ``/catalogs/<name>/api/v1/{all,metas}`` and cached for resolution
  under ``ClusterCatalog/<name>`` (whose change re-resolves every input, as any catalog's does).
  A digest reference is never polled again (upstream's CRD refuses ``pollIntervalMinutes`` with a
  digest).
* status as catalogd writes it: ``resolvedSource.image.ref`` (the digest-pinned reference),
  ``urls.base`` (``<--catalogd-url>/catalogs/<name>``), ``lastUnpacked`` (whole seconds),
  ``Serving=True/Available`` and ``Progressing=True/Succeeded`` with catalogd's messages; a failed
  poll is ``Progressing=True/Retrying`` (``source catalog content: ...``) while the last good
  content keeps being served (and ``Serving`` stays as it was); retried after 5 s, doubling, at
  most the poll interval (five minutes without one).
* the label ``olm.operatorframework.io/metadata.name: <name>`` (catalogd's mutating webhook sets
  it; pivoter has no mutating webhook, so the controller patches it).

No finalizer: a deleted ClusterCatalog's content is dropped when the reconcile finds it gone.
Registered by :mod:`pivoter.olmv1.setup`.
"""

from __future__ import annotations

import datetime as dt
import logging
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pivoter.apis import olmv1
from pivoter.apis.conditions import FALSE, TRUE, set_condition
from pivoter.apis.resources import CLUSTER_CATALOGS
from pivoter.catalogs import CatalogCache, CatalogProblem, ImageCatalogSource, SourceSettings
from pivoter.catalogs.digest import content_digest
from pivoter.catalogs.interval import retry_delay
from pivoter.catalogserver.registry import RegistryView
from pivoter.catalogserver.reload import Snapshot, SnapshotError
from pivoter.kube import Kube, NotFound, Object
from pivoter.registries.names import cluster_catalog_pull_secrets
from pivoter.registries.verification import named_policy
from pivoter.runtime.controller import Result
from provisioners.errors import InvalidSourceError
from provisioners.registries.pull import RegistryAccess
from provisioners.sources import FetchOptions
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.load import load_served
from resolver.catalog.model import Catalog
from resolver.catalog.validate import validate

__all__ = [
    "CLUSTER_CATALOGS",
    "MESSAGE_SERVING",
    "MESSAGE_SUCCEEDED",
    "MESSAGE_UNAVAILABLE",
    "ClusterCatalogReconciler",
    "ServedCatalogs",
    "cache_name",
]

log = logging.getLogger(__name__)

MESSAGE_SERVING = "Serving desired content from resolved source"
MESSAGE_SUCCEEDED = "Successfully unpacked and stored content from resolved source"
MESSAGE_UNAVAILABLE = "Catalog availability mode is set to Unavailable"
RETRY_WITHOUT_INTERVAL = 300.0
_NO_REGISTRY = RegistryView(Catalog())


def served_snapshot(root: str, *, name: str) -> Snapshot:
    """The catalog in ``root`` as the catalogd API serves it: every object as the image holds it
    (JSON Lines in walk order), and its parsed model for resolution. Like catalogd (and unlike
    ``pivoter catalog serve``), a catalog that ``opm validate`` would fault is still served; the
    findings are logged. Raises :class:`SnapshotError` when the files cannot be read or parsed."""
    try:
        catalog, body = load_served(root, name=name, use_cache=False)
    except CatalogLoadError as exc:
        raise SnapshotError(f"cannot load: {exc}") from None
    findings = [str(f) for f in validate(catalog)]
    for finding in findings[:5]:
        log.warning("ClusterCatalog %s: %s (served anyway, as catalogd does)", name, finding)
    return Snapshot(
        catalog=catalog,
        view=_NO_REGISTRY,  # no gRPC here: the daemon serves only catalogd's HTTP API
        jsonl_gzip=body.gzip,
        jsonl_size=body.size,
        lines=body.lines,
        last_modified=int(time.time()),
        signature="",
        warnings=tuple(findings),
    )


def cache_name(name: str) -> str:
    """The catalog cache's name for ClusterCatalog ``name`` (the same as the read-only reader's)."""
    return f"ClusterCatalog/{name}"


class ServedCatalogs:
    """The snapshots the daemon's catalogd API serves, by ClusterCatalog name (thread-safe)."""

    def __init__(self) -> None:
        self._snapshots: dict[str, Snapshot] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> Snapshot | None:
        """The snapshot served as ``name``, or None (the HTTP API answers 404)."""
        with self._lock:
            return self._snapshots.get(name)

    def put(self, name: str, snapshot: Snapshot) -> None:
        """Serve ``snapshot`` as ``name`` from now on."""
        with self._lock:
            self._snapshots[name] = snapshot

    def remove(self, name: str) -> bool:
        """Stop serving ``name``; True when it was served."""
        with self._lock:
            return self._snapshots.pop(name, None) is not None

    def names(self) -> list[str]:
        """The names served, sorted."""
        with self._lock:
            return sorted(self._snapshots)


@dataclass
class _State:
    """What this process knows of one ClusterCatalog between reconciles."""

    generation: int
    ref: str
    digest: str = ""
    pinned: str = ""
    unpacked: str = ""
    polled: float = 0.0
    failures: int = 0


@dataclass
class ClusterCatalogReconciler:
    """Unpacks and serves ClusterCatalogs (see the module docstring)."""

    kube: Kube
    cache: CatalogCache
    served: ServedCatalogs
    base_url: str
    """Where clients reach the daemon's catalogd API (``status.urls.base`` is under it)."""
    settings: SourceSettings
    clock: Callable[[], float] = time.monotonic
    _states: dict[str, _State] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def reconcile(self, name: str) -> Result | None:
        """Converge ClusterCatalog ``name``; say when to look again."""
        try:
            obj = self.kube.get(CLUSTER_CATALOGS, name)
        except NotFound:
            self._forget(name)
            return None
        metadata = obj["metadata"]
        if metadata.get("deletionTimestamp"):
            self._forget(name)
            return None
        self._label(obj)
        spec = obj.get("spec") or {}
        generation = int(metadata.get("generation") or 0)
        conditions = [dict(c) for c in (obj.get("status") or {}).get("conditions") or []]
        if spec.get("availabilityMode") == olmv1.UNAVAILABLE:
            self._unavailable(obj, conditions, generation)
            return None
        source = spec.get("source") or {}
        image = source.get("image") or {}
        ref = str(image.get("ref") or "")
        if source.get("type") != olmv1.SOURCE_TYPE_IMAGE or not ref:
            set_condition(
                conditions,
                olmv1.TYPE_PROGRESSING,
                FALSE,
                olmv1.REASON_BLOCKED,
                _blocked_message(name, source),
                generation=generation,
            )
            self._write(obj, {"conditions": conditions})
            return None
        minutes = image.get("pollIntervalMinutes")
        interval = float(minutes) * 60.0 if isinstance(minutes, int) and minutes > 0 else None
        polled = self._poll_if_due(obj, ref, interval, conditions)
        if isinstance(polled, Result):
            return polled
        self._record_secrets(obj)
        self._serving(obj, polled, conditions, generation)
        if interval is None:
            return None
        return Result(requeue_after=max(1.0, polled.polled + interval - self.clock()))

    def _unavailable(self, obj: Object, conditions: list[dict[str, Any]], generation: int) -> None:
        """``availabilityMode: Unavailable``: stop serving, say so."""
        self._forget(obj["metadata"]["name"])
        for type_, status, reason in (
            (olmv1.TYPE_PROGRESSING, TRUE, olmv1.REASON_SUCCEEDED),
            (olmv1.TYPE_SERVING, FALSE, olmv1.REASON_USER_SPECIFIED_UNAVAILABLE),
        ):
            set_condition(
                conditions, type_, status, reason, MESSAGE_UNAVAILABLE, generation=generation
            )
        self._write(
            obj,
            {"conditions": conditions, "resolvedSource": None, "urls": None, "lastUnpacked": None},
        )

    def _poll_if_due(
        self,
        obj: Object,
        ref: str,
        interval: float | None,
        conditions: list[dict[str, Any]],
    ) -> _State | Result:
        """Pull and serve the image when due (new generation or ref, a failure to retry, not
        served yet, or the poll interval passed); the state served, or when to retry."""
        name = obj["metadata"]["name"]
        spec = obj.get("spec") or {}
        generation = int(obj["metadata"].get("generation") or 0)
        priority = int(spec.get("priority") or 0)
        with self._lock:
            state = self._states.get(name)
        now = self.clock()
        due = (
            state is None
            or state.generation != generation
            or state.ref != ref
            or state.failures > 0
            or self.served.get(name) is None
            or (interval is not None and now - state.polled >= interval)
        )
        if state is None or state.ref != ref:
            state = _State(generation, ref)
        if not due:
            self.cache.set_priority(cache_name(name), priority)
            return state
        try:
            self._poll(obj, ref, state, priority)
        except (CatalogProblem, SnapshotError, OSError) as exc:
            state.failures += 1
            state.generation = generation
            with self._lock:
                self._states[name] = state
            text = " ".join(str(exc).split())
            log.warning("ClusterCatalog %s: %s", name, text)
            set_condition(
                conditions,
                olmv1.TYPE_PROGRESSING,
                TRUE,
                olmv1.REASON_RETRYING,
                f"source catalog content: {text}",
                generation=generation,
            )
            self._write(obj, {"conditions": conditions})
            return Result(
                requeue_after=retry_delay(
                    state.failures, interval or RETRY_WITHOUT_INTERVAL, first=5.0
                )
            )
        state.generation = generation
        with self._lock:
            self._states[name] = state
        return state

    def _serving(
        self, obj: Object, state: _State, conditions: list[dict[str, Any]], generation: int
    ) -> None:
        """Write the status of a catalog being served from ``state``."""
        name = obj["metadata"]["name"]
        for type_, reason, message in (
            (olmv1.TYPE_PROGRESSING, olmv1.REASON_SUCCEEDED, MESSAGE_SUCCEEDED),
            (olmv1.TYPE_SERVING, olmv1.REASON_AVAILABLE, MESSAGE_SERVING),
        ):
            set_condition(conditions, type_, TRUE, reason, message, generation=generation)
        self._write(
            obj,
            {
                "conditions": conditions,
                "resolvedSource": {
                    "type": olmv1.SOURCE_TYPE_IMAGE,
                    "image": {"ref": state.pinned},
                },
                "urls": {"base": f"{self.base_url.rstrip('/')}/catalogs/{name}"},
                "lastUnpacked": state.unpacked,
            },
        )

    def _poll(self, obj: Object, ref: str, state: _State, priority: int) -> None:
        """One poll of the image: re-pull only when its digest moved (raises on failure)."""
        name = str(obj["metadata"]["name"])
        options = self.settings.fetch_options or FetchOptions(
            timeout_seconds=self.settings.timeout, deadline_seconds=self.settings.deadline
        )
        registries = self.settings.registries

        def access() -> RegistryAccess:
            """The ClusterCatalog's pull secret (its pivoter.io/pull-secret annotation), then
            the global one, and the mirrors, as they are at this poll."""
            if registries is None:
                return RegistryAccess()
            return registries.access(cluster_catalog_pull_secrets(obj, registries.namespace))

        source = ImageCatalogSource(
            ref,
            name=name,
            access=access,
            options=options,
            verification=(
                (lambda: registries.verification_policies(named_policy(obj, "ClusterCatalog")))
                if registries is not None
                else None
            ),
        )
        digest = source.resolve()
        if digest == state.digest and self.served.get(name) is not None:
            state.polled, state.failures = self.clock(), 0
            self.cache.set_priority(cache_name(name), priority)
            return
        self.settings.workdir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="clustercatalog-", dir=self.settings.workdir) as d:
            pulled = source.pull_into(Path(d))
            try:
                snapshot = served_snapshot(str(pulled.directory), name=name)
            except SnapshotError as exc:
                raise SnapshotError(f"image {pulled.pinned}: {exc}") from None
        self.served.put(name, snapshot)
        digest = content_digest(snapshot.catalog)
        self.cache.put(cache_name(name), snapshot.catalog, digest, priority)
        state.digest, state.pinned = pulled.digest, pulled.pinned
        state.unpacked = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        state.polled, state.failures = self.clock(), 0
        log.info(
            "ClusterCatalog %s: serving %s (%d packages, %d bundles)",
            name,
            pulled.pinned,
            len(snapshot.catalog.packages),
            len(snapshot.catalog.bundles),
        )

    def _record_secrets(self, obj: Object) -> None:
        """Let the catalog's pull secret (its annotation, as it is now: added, changed or
        removed without a new generation) serve the bundle images it names."""
        registries = self.settings.registries
        name = str(obj["metadata"]["name"])
        cached = self.cache.get(cache_name(name))
        if registries is None or cached is None:
            return
        try:
            secrets = cluster_catalog_pull_secrets(obj, registries.namespace)
        except InvalidSourceError as exc:
            log.warning("ClusterCatalog %s: %s", name, exc)
            secrets = []
        registries.catalog_secrets.record(
            cache_name(name), cached.digest, secrets, (b.image for b in cached.catalog.bundles)
        )

    def _forget(self, name: str) -> None:
        with self._lock:
            self._states.pop(name, None)
        self.served.remove(name)
        if self.settings.registries is not None:
            self.settings.registries.catalog_secrets.forget(cache_name(name))
        if self.cache.remove(cache_name(name)):
            log.info("ClusterCatalog %s: no longer served", name)

    def _label(self, obj: Mapping[str, Any]) -> None:
        """Set ``olm.operatorframework.io/metadata.name`` (catalogd's webhook does upstream)."""
        name = str(obj["metadata"]["name"])
        labels = obj["metadata"].get("labels") or {}
        if labels.get(olmv1.LABEL_METADATA_NAME) != name:
            patch = {"metadata": {"labels": {olmv1.LABEL_METADATA_NAME: name}}}
            self.kube.merge_patch(CLUSTER_CATALOGS, name, patch)

    def _write(self, obj: Mapping[str, Any], status: Mapping[str, Any]) -> None:
        """Patch the status when it differs from what is stored (None removes a field)."""
        current = obj.get("status") or {}
        if all(current.get(k) == v for k, v in status.items()):
            return
        self.kube.patch_status(CLUSTER_CATALOGS, str(obj["metadata"]["name"]), dict(status))


def _blocked_message(name: str, source: Mapping[str, Any]) -> str:
    """Why a ClusterCatalog's source cannot be read (operator-controller's wording)."""
    if source.get("type") != olmv1.SOURCE_TYPE_IMAGE:
        return f'unknown source type "{source.get("type")}"'
    return f'error parsing ClusterCatalog "{name}", image source is nil'
