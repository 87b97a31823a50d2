"""Wiring for ``pivoter run`` when it serves OLM v1's APIs: the ClusterCatalog controller, the
ClusterExtension controller (a pivoter input on the shared engine, like PlatformOperators), and
the catalogd-compatible HTTP server that publishes what the ClusterCatalogs unpacked.

``setup(manager, ...)`` registers both controllers and returns an :class:`OlmV1` holding the
served catalogs and the ClusterExtension reconciler; :meth:`OlmV1.start_server` starts the HTTP
API (``/catalogs/<name>/api/v1/all`` and ``/metas``) on the address of ``--catalogd-bind-address``.
Called by :mod:`pivoter.daemon`; whether to call it is :mod:`pivoter.olmv1.mode`'s decision.

``--olmv1=auto`` may decide to serve while the daemon runs, but a Manager takes no controller once
it has started: ``setup(..., serving=False)`` registers the controllers and their informers at
start all the same, idle (every reconcile returns at once, nothing is written) until
:meth:`OlmV1.start_serving` opens them and queues every ClusterCatalog and ClusterExtension.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pivoter.apis.resources import CLUSTER_CATALOGS, CLUSTER_EXTENSIONS
from pivoter.catalogs import CatalogCache, SourceSettings
from pivoter.catalogserver.httpserver import CatalogHTTPServer
from pivoter.inputs import InputReconciler, Kind
from pivoter.inputs.controller import register
from pivoter.kube import EventRecorder
from pivoter.olmv1.clustercatalogs import ClusterCatalogReconciler, ServedCatalogs
from pivoter.olmv1.extensions import ExtensionSettings, extension_spec
from pivoter.olmv1.status import status_function
from pivoter.pivot import Preparer
from pivoter.resolvesets import RevisionStore
from pivoter.runtime.controller import Controller, Reconcile, Result
from pivoter.runtime.manager import Manager

__all__ = [
    "CATALOG_CONTROLLER",
    "EXTENSION_CONTROLLER",
    "CatalogdServer",
    "OlmV1",
    "cluster_extension_kind",
    "setup",
]

log = logging.getLogger(__name__)

CATALOG_CONTROLLER = "clustercatalogs"
EXTENSION_CONTROLLER = "clusterextensions"


def cluster_extension_kind(cache: CatalogCache, settings: ExtensionSettings | None = None) -> Kind:
    """How the shared reconciler reads and writes ClusterExtensions (deletion always removes what
    the extension installed, as OLM v1's does)."""

    def spec_of(obj: Mapping[str, Any]) -> Any:
        return extension_spec(obj, settings)

    return Kind(CLUSTER_EXTENSIONS, spec_of, status_function(cache), lambda _: "Delete")


@dataclass
class OlmV1:
    """What :func:`setup` built."""

    served: ServedCatalogs
    catalogs: ClusterCatalogReconciler
    extensions: InputReconciler | None
    """None when set up with ``extensions=False``."""
    controllers: tuple[Controller, ...] = ()
    """The controllers :func:`setup` registered."""
    _serving: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def serving(self) -> bool:
        """Whether the controllers do their work (False: set up idle, ``serving=False``)."""
        return self._serving.is_set()

    def start_serving(self) -> None:
        """Let the idle controllers work and queue every object they watch (no-op when they
        already serve). Safe from any thread, before or after the Manager starts them."""
        if self._serving.is_set():
            return
        self._serving.set()
        for controller in self.controllers:
            controller.resync()

    def gated(self, reconcile: Reconcile) -> Reconcile:
        """``reconcile``, doing nothing until :meth:`start_serving`."""

        def reconcile_when_serving(key: str) -> Result | None:
            return reconcile(key) if self._serving.is_set() else None

        return reconcile_when_serving

    def start_server(self, host: str, port: int) -> CatalogdServer:
        """Serve the ClusterCatalogs' content (catalogd's HTTP API) in a background thread."""
        server = CatalogdServer(CatalogHTTPServer((host, port), catalogs=self.served.get))
        threading.Thread(
            target=server.http.serve_forever, name="catalogd-http", daemon=True
        ).start()
        log.info("serving ClusterCatalogs' content on %s:%d", host, server.port)
        return server


@dataclass
class CatalogdServer:
    """The running catalogd HTTP API."""

    http: CatalogHTTPServer

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self.http.server_address[1])

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.http.shutdown()
        self.http.server_close()


def setup(
    manager: Manager,
    *,
    cache: CatalogCache,
    store: RevisionStore,
    preparer: Preparer,
    base_url: str,
    source_settings: SourceSettings,
    settings: ExtensionSettings | None = None,
    recorder: EventRecorder | None = None,
    workers: int = 2,
    extensions: bool = True,
    serving: bool = True,
) -> OlmV1:
    """Register the ClusterCatalog and ClusterExtension controllers on ``manager``.

    ``base_url`` is where clients reach :meth:`OlmV1.start_server` (``status.urls.base`` of each
    ClusterCatalog is ``<base_url>/catalogs/<name>``). ``extensions=False`` registers the
    ClusterCatalog controller alone (pivoter as catalogd, another controller reconciles the
    ClusterExtensions). ``serving=False``: the controllers stay idle until
    :meth:`OlmV1.start_serving` (both CRDs must be installed: their informers must sync).
    """
    before = len(manager.controllers)
    olm = _register(
        manager,
        cache=cache,
        store=store,
        preparer=preparer,
        base_url=base_url,
        source_settings=source_settings,
        settings=settings,
        recorder=recorder,
        workers=workers,
        extensions=extensions,
    )
    olm.controllers = tuple(manager.controllers[before:])
    for controller in olm.controllers:
        controller.reconcile = olm.gated(controller.reconcile)
    if serving:
        olm.start_serving()
    return olm


def _register(
    manager: Manager,
    *,
    cache: CatalogCache,
    store: RevisionStore,
    preparer: Preparer,
    base_url: str,
    source_settings: SourceSettings,
    settings: ExtensionSettings | None,
    recorder: EventRecorder | None,
    workers: int,
    extensions: bool,
) -> OlmV1:
    served = ServedCatalogs()
    catalogs = ClusterCatalogReconciler(manager.kube, cache, served, base_url, source_settings)
    catalog_controller = manager.controller(CATALOG_CONTROLLER, catalogs.reconcile, workers=workers)
    cluster_catalogs = manager.informer_for(CLUSTER_CATALOGS)
    catalog_controller.watch(cluster_catalogs)
    if not extensions:
        return OlmV1(served, catalogs, None)
    reconciler = register(
        manager,
        cluster_extension_kind(cache, settings),
        name=EXTENSION_CONTROLLER,
        cache=cache,
        store=store,
        preparer=preparer,
        recorder=recorder,
        workers=workers,
    )
    controller = next(c for c in manager.controllers if c.name == EXTENSION_CONTROLLER)
    inputs = manager.informer_for(CLUSTER_EXTENSIONS)
    seen: dict[str, str] = {}

    def selection_changed(catalog: Any) -> list[str]:
        """A ClusterCatalog whose labels, priority, availability or Serving status changed
        (content changes arrive through the cache): every ClusterExtension resolves again, as
        operator-controller's catalog watch does."""
        metadata = catalog.get("metadata") or {}
        serving = [
            (c.get("type"), c.get("status"))
            for c in (catalog.get("status") or {}).get("conditions") or []
        ]
        key = repr((metadata.get("labels"), catalog.get("spec"), serving))
        name = str(metadata.get("name") or "")
        if seen.get(name) == key:
            return []
        seen[name] = key
        return [str(o["metadata"]["name"]) for o in inputs.store.list()]

    controller.watch(cluster_catalogs, selection_changed)
    return OlmV1(served, catalogs, reconciler)
