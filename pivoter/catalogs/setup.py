"""Wiring for ``pivoter run``: the Catalog controller, and the read-only OLM and catalogd
readers when their CRDs are served, all filling one :class:`CatalogCache`.

``setup(manager, namespace=..., cache=...)`` returns the cache the resolution controllers read.
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pivoter.apis.resources import CATALOG_SOURCES, CATALOGS, CLUSTER_CATALOGS
from pivoter.catalogs.cache import CatalogCache
from pivoter.catalogs.foreign import (
    CatalogdCA,
    ForeignCatalogReconciler,
    ForeignSpec,
    SpecOf,
    catalog_source_spec,
    cluster_catalog_spec,
)
from pivoter.catalogs.metrics import CatalogMetrics
from pivoter.catalogs.reconciler import CatalogReconciler, referenced_config_maps
from pivoter.catalogs.sources import SourceSettings
from pivoter.kube import EventRecorder, NotFound, Object, Resource
from pivoter.registries import RegistryAccessProvider
from pivoter.runtime.manager import Manager

__all__ = ["CLUSTER_CATALOG_READER", "CONTROLLER_NAME", "setup"]

log = logging.getLogger(__name__)

CONTROLLER_NAME = "catalogs"
CLUSTER_CATALOG_READER = "catalogd-clustercatalogs"
"""The controller that reads catalogd's ClusterCatalogs (stopped when pivoter starts serving
them itself, :mod:`pivoter.daemon.product`)."""


def setup(
    manager: Manager,
    *,
    namespace: str,
    cache: CatalogCache | None = None,
    settings: SourceSettings | None = None,
    recorder: EventRecorder | None = None,
    read_olm: bool = True,
    read_cluster_catalogs: bool = True,
    cluster_catalog_ca_config_map: str = "",
    catalogd_ca: CatalogdCA | None = None,
    workers: int = 2,
    registries: RegistryAccessProvider | None = None,
) -> CatalogCache:
    """Register the catalog controllers on ``manager`` and return the cache they fill.

    ``namespace`` is pivoter's own (ConfigMaps and Secrets named by Catalogs live there).
    ``read_olm``: also read ``CatalogSource`` and ``ClusterCatalog`` objects when the API
    server serves those kinds (checked once, here); ``read_cluster_catalogs=False`` leaves
    ClusterCatalogs out (pivoter serves them itself: :mod:`pivoter.olmv1`). ``catalogd_ca``:
    the CA of catalogd's HTTPS certificate (``--catalogd-ca``). ``registries``:
    the global pull secret and the mirrors of catalog images.
    """
    cache = cache if cache is not None else CatalogCache()
    settings = settings or SourceSettings(
        workdir=Path(tempfile.mkdtemp(prefix="pivoter-catalogs-"))
    )
    if registries is not None:
        settings = dataclasses.replace(settings, registries=registries)
    reconciler = CatalogReconciler(
        manager.kube,
        cache,
        namespace,
        settings,
        recorder=recorder,
        metrics=CatalogMetrics(manager.metrics.registry),
    )
    controller = manager.controller(CONTROLLER_NAME, reconciler.reconcile, workers=workers)
    catalogs = manager.informer_for(CATALOGS)
    controller.watch(catalogs)

    def catalogs_reading(config_map: Object) -> list[str]:
        name = str((config_map.get("metadata") or {}).get("name") or "")
        keys = [
            str(c["metadata"]["name"])
            for c in catalogs.store.list()
            if name in referenced_config_maps(c)
        ]
        for key in keys:
            reconciler.invalidate(key)
        return keys

    controller.watch(manager.informer("v1", "ConfigMap", namespace=namespace), catalogs_reading)
    if read_olm:
        _setup_foreign(
            manager,
            cache,
            settings,
            namespace,
            cluster_catalog_ca_config_map,
            cluster_catalogs=read_cluster_catalogs,
            catalogd_ca=catalogd_ca,
        )
    return cache


def _served(manager: Manager, resource: Resource) -> bool:
    try:
        manager.kube.resource(resource.api_version, resource.kind)
    except NotFound:
        return False
    return True


def _setup_foreign(
    manager: Manager,
    cache: CatalogCache,
    settings: SourceSettings,
    namespace: str,
    ca_config_map: str,
    *,
    cluster_catalogs: bool,
    catalogd_ca: CatalogdCA | None,
) -> None:
    def read(kind: str, name: str) -> Mapping[str, Any] | None:
        resource = manager.kube.resource("v1", kind)
        try:
            return manager.kube.get(resource, name, namespace)
        except NotFound:
            return None

    def cluster_catalog(obj: Mapping[str, Any]) -> ForeignSpec | None:
        return cluster_catalog_spec(
            obj, ca_config_map=ca_config_map, catalogd_ca=catalogd_ca is not None
        )

    readers: list[tuple[Resource, SpecOf, str]] = [
        (CATALOG_SOURCES, catalog_source_spec, "olm-catalogsources")
    ]
    if cluster_catalogs:
        readers.append((CLUSTER_CATALOGS, cluster_catalog, CLUSTER_CATALOG_READER))
    for resource, spec_of, name in readers:
        if not _served(manager, resource):
            log.info("%s is not served by this cluster; not reading %s", resource, resource.kind)
            continue
        reading = catalogd_ca.reader(read) if catalogd_ca and resource is CLUSTER_CATALOGS else read
        reconciler = ForeignCatalogReconciler(
            manager.kube, cache, resource, spec_of, settings, read=reading
        )
        controller = manager.controller(name, reconciler.reconcile)
        controller.watch(manager.informer_for(resource))
        log.info("reading %s objects into the catalog cache", resource.kind)
