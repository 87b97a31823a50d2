"""Catalogs in the cluster: pivoter's ``Catalog`` controller, the read-only readers of OLM's
``CatalogSource`` and catalogd's ``ClusterCatalog``, and the :class:`CatalogCache` they fill.

The resolution controllers read the cache (``catalog, digest, priority = cache.get(name)``) and
subscribe with ``cache.on_change(callback)`` to re-resolve only when content changed.
``pivoter run`` wires it with :func:`setup`. See docs/catalogs-in-cluster.md.
"""

from pivoter.catalogs.cache import CachedCatalog, CatalogCache, CatalogChange, ChangeCallback
from pivoter.catalogs.digest import content_digest
from pivoter.catalogs.errors import (
    REASON_FETCH_FAILED,
    REASON_FETCHED,
    REASON_INVALID,
    REASON_STALE,
    REASON_UNAVAILABLE,
    CatalogProblem,
    FetchFailed,
    InvalidCatalog,
    SourceStale,
    SourceUnavailable,
)
from pivoter.catalogs.foreign import (
    ForeignCatalogReconciler,
    ForeignSpec,
    catalog_source_spec,
    cluster_catalog_spec,
)
from pivoter.catalogs.image import CONFIGS_LABEL, ImageCatalogSource, configs_directory
from pivoter.catalogs.interval import parse_duration, retry_delay
from pivoter.catalogs.poll import Poller, PollOutcome
from pivoter.catalogs.reconciler import CatalogReconciler, referenced_config_maps
from pivoter.catalogs.setup import setup
from pivoter.catalogs.sources import (
    BuiltSource,
    ConfigMapsCatalogSource,
    ObjectReader,
    SourceSettings,
    build_source,
)

__all__ = [
    "CONFIGS_LABEL",
    "REASON_FETCHED",
    "REASON_FETCH_FAILED",
    "REASON_INVALID",
    "REASON_STALE",
    "REASON_UNAVAILABLE",
    "BuiltSource",
    "CachedCatalog",
    "CatalogCache",
    "CatalogChange",
    "CatalogProblem",
    "CatalogReconciler",
    "ChangeCallback",
    "ConfigMapsCatalogSource",
    "FetchFailed",
    "ForeignCatalogReconciler",
    "ForeignSpec",
    "ImageCatalogSource",
    "InvalidCatalog",
    "ObjectReader",
    "PollOutcome",
    "Poller",
    "SourceSettings",
    "SourceStale",
    "SourceUnavailable",
    "build_source",
    "catalog_source_spec",
    "cluster_catalog_spec",
    "configs_directory",
    "content_digest",
    "parse_duration",
    "referenced_config_maps",
    "retry_delay",
    "setup",
]
