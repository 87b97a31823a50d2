"""OLM v1's APIs served by pivoter: ``ClusterCatalog`` (catalogd's job: unpack a catalog image,
serve it over catalogd's HTTP API) and ``ClusterExtension`` (operator-controller's job, done
through pivoter's resolver, ResolveSets and grouped pivots), accepted unchanged.

:func:`decide` says whether this daemon serves them (``pivoter run --olmv1``), :func:`setup`
registers the controllers. See docs/olm-v1.md.
"""

from pivoter.olmv1.clustercatalogs import ClusterCatalogReconciler, ServedCatalogs, cache_name
from pivoter.olmv1.extensions import (
    ANNOTATION_APPROVAL,
    ANNOTATION_AUTO_ROLLBACK,
    ANNOTATION_DEPENDENCIES,
    ANNOTATION_HISTORY_LIMIT,
    ExtensionSettings,
    extension_spec,
)
from pivoter.olmv1.mode import Mode, ModeDecision, OlmV1Error, decide
from pivoter.olmv1.setup import OlmV1, cluster_extension_kind, setup
from pivoter.olmv1.status import extension_status

__all__ = [
    "ANNOTATION_APPROVAL",
    "ANNOTATION_AUTO_ROLLBACK",
    "ANNOTATION_DEPENDENCIES",
    "ANNOTATION_HISTORY_LIMIT",
    "ClusterCatalogReconciler",
    "ExtensionSettings",
    "Mode",
    "ModeDecision",
    "OlmV1",
    "OlmV1Error",
    "ServedCatalogs",
    "cache_name",
    "cluster_extension_kind",
    "decide",
    "extension_spec",
    "extension_status",
    "setup",
]
