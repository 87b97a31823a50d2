"""The bundle's own manifests besides the CSV and CRDs: which kinds pass through, and where.

The kinds OLM's operator-registry accepts in a registry+v1 bundle (``IsSupported``) pass through;
namespaced ones are placed in the install namespace whatever the manifest says (a bundle does not
choose where it writes). Any other kind is refused with the kind and file named, because OLM would
not install it either. Kinds served by optional CRDs (Prometheus, VPA, the OpenShift console) are
reported so the applier can skip them on clusters without those CRDs. Called by
:mod:`~provisioners.formats.registry_v1.convert`.
"""

from __future__ import annotations

import copy
from typing import Any

from provisioners.formats.registry_v1.bundle import Manifest
from provisioners.formats.registry_v1.errors import UnsupportedBundleError
from provisioners.formats.registry_v1.installmode import InstallTarget

NAMESPACED_KINDS = frozenset(
    {
        "ConfigMap",
        "Secret",
        "Service",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "PrometheusRule",
        "ServiceMonitor",
        "PodDisruptionBudget",
        "VerticalPodAutoscaler",
        "NetworkPolicy",
    }
)
CLUSTER_KINDS = frozenset(
    {
        "ClusterRole",
        "ClusterRoleBinding",
        "PriorityClass",
        "ConsoleYAMLSample",
        "ConsoleQuickStart",
        "ConsoleCLIDownload",
        "ConsoleLink",
        "ConsolePlugin",
    }
)
OPTIONAL_KINDS = frozenset(
    {
        "PrometheusRule",
        "ServiceMonitor",
        "VerticalPodAutoscaler",
        "ConsoleYAMLSample",
        "ConsoleQuickStart",
        "ConsoleCLIDownload",
        "ConsoleLink",
        "ConsolePlugin",
    }
)
SUPPORTED_KINDS = NAMESPACED_KINDS | CLUSTER_KINDS


def other_objects(manifests: list[Manifest], install: InstallTarget) -> list[dict[str, Any]]:
    """The pass-through objects, namespaced into the install namespace; refuse other kinds."""
    objects: list[dict[str, Any]] = []
    for manifest in manifests:
        kind = manifest.kind
        if kind not in SUPPORTED_KINDS:
            raise UnsupportedBundleError(
                manifest.source,
                "kind",
                f"{kind} {manifest.name!r} is not a kind a registry+v1 bundle may carry; "
                f"supported besides the CSV and CRDs: {', '.join(sorted(SUPPORTED_KINDS))}",
            )
        obj = copy.deepcopy(manifest.object)
        metadata = obj["metadata"]
        if kind in NAMESPACED_KINDS:
            metadata["namespace"] = install.install_namespace
        else:
            metadata.pop("namespace", None)
        objects.append(obj)
    return objects


def optional_kinds(objects: list[dict[str, Any]]) -> list[str]:
    """``apiVersion/Kind`` of objects whose kind exists only where an optional CRD is installed."""
    return sorted(
        {f"{o['apiVersion']}/{o['kind']}" for o in objects if o.get("kind") in OPTIONAL_KINDS}
    )
