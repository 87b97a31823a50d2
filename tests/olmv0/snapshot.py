"""What an install left on the cluster, read back and normalised for comparison.

:func:`take` reads the objects one operator install owns: the namespaced kinds an OLM bundle can
produce in the install and target namespaces (and ``kube-system``, where OLM puts a RoleBinding
for webhook servers), and the cluster-scoped ones created since a :func:`cluster_names` taken
before the install, attributed to this install by name or label (several installs run side by
side). :func:`normalise` keeps what an operator's behaviour depends on and replaces the names that
differ per run (namespaces, the OperatorGroup, the BundleDeployment) by placeholders, so an OLM
install and a pivoter install of the same bundle can be compared key by key. Used by
tests/olmv0/test_differential_cluster.py.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pivoter.kube import Kube, NotFound, Resource

Key = tuple[str, str, str]
"""(kind, namespace placeholder, name)."""

NAMESPACED = [
    Resource("v1", "ServiceAccount", "serviceaccounts", True),
    Resource("v1", "Service", "services", True),
    Resource("v1", "Secret", "secrets", True),
    Resource("v1", "ConfigMap", "configmaps", True),
    Resource("apps/v1", "Deployment", "deployments", True),
    Resource("rbac.authorization.k8s.io/v1", "Role", "roles", True),
    Resource("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True),
    Resource("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", True),
    Resource("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", True),
    Resource("monitoring.coreos.com/v1", "ServiceMonitor", "servicemonitors", True),
    Resource("monitoring.coreos.com/v1", "PrometheusRule", "prometheusrules", True),
]
CLUSTER = [
    Resource("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False),
    Resource("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False),
    Resource(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        False,
    ),
    Resource(
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        False,
    ),
    Resource(
        "apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False
    ),
]
SKIPPED_NAMES = {"kube-root-ca.crt", "default"}
"""Objects every namespace has (the root CA ConfigMap, the default ServiceAccount)."""


@dataclass
class Install:
    """One install to read back: where it went and the names that identify it."""

    namespace: str
    targets: list[str]
    """Target namespaces other than the install namespace."""
    names: list[str] = field(default_factory=list)
    """Cluster-scoped names that belong to this install exactly (the bundle's own objects: a
    substring would also take another bundle's ``kube-green-aggregate-manager-role`` for one
    named ``manager-role``)."""
    markers: list[str] = field(default_factory=list)
    """Prefixes of the names installers generate for this install (the CSV's name, the
    Deployments', ``olm.og.<OperatorGroup>.``)."""
    owner_values: list[str] = field(default_factory=list)
    """Label values naming this install (the CSV's namespace for OLM's owner labels, the
    BundleDeployment's name for pivoter's)."""
    placeholders: dict[str, str] = field(default_factory=dict)
    """Run-specific names -> placeholders, e.g. the namespaces, the OperatorGroup's name."""


def cluster_names(kube: Kube) -> set[tuple[str, str]]:
    """(kind, name) of every cluster-scoped object of the compared kinds."""
    names: set[tuple[str, str]] = set()
    for resource in CLUSTER:
        items, _ = kube.list(resource)
        names.update((resource.kind, o["metadata"]["name"]) for o in items)
    return names


def _served(kube: Kube, resource: Resource) -> bool:
    try:
        kube.list(resource, "default", page_size=1)
    except NotFound:
        return False
    return True


def _belongs(obj: Mapping[str, Any], install: Install) -> bool:
    metadata = obj["metadata"]
    name = str(metadata["name"])
    if name in install.names or name.startswith(tuple(install.markers)):
        return True
    labels = metadata.get("labels") or {}
    return any(value in install.owner_values for value in labels.values())


def take(kube: Kube, install: Install, before: set[tuple[str, str]]) -> list[dict[str, Any]]:
    """The objects of ``install`` now on the cluster (as stored)."""
    found: list[dict[str, Any]] = []
    for resource in NAMESPACED:
        if not _served(kube, resource):
            continue
        for namespace in [install.namespace, *install.targets]:
            items, _ = kube.list(resource, namespace)
            found += [o for o in items if o["metadata"]["name"] not in SKIPPED_NAMES]
    role_bindings = NAMESPACED[6]
    system, _ = kube.list(role_bindings, "kube-system")
    found += [o for o in system if _belongs(o, install)]
    for resource in CLUSTER:
        items, _ = kube.list(resource)
        found += [
            o
            for o in items
            if (resource.kind, o["metadata"]["name"]) not in before and _belongs(o, install)
        ]
    for obj in found:
        obj.setdefault("kind", "")
    return [o for o in found if not _is_token(o)]


def _is_token(obj: Mapping[str, Any]) -> bool:
    return obj.get("type") == "kubernetes.io/service-account-token"


# -- normalisation ----------------------------------------------------------------------------

SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "managedFields",
    "generation",
    "selfLink",
    "finalizers",
    "generateName",
)
SERVER_ANNOTATIONS = ("deployment.kubernetes.io/revision",)


def _replace(value: Any, placeholders: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for real, placeholder in placeholders.items():
            if value == real:
                return placeholder
            value = value.replace(real, placeholder)
        return value
    if isinstance(value, list):
        return [_replace(v, placeholders) for v in value]
    if isinstance(value, dict):
        return {_replace(k, placeholders): _replace(v, placeholders) for k, v in value.items()}
    return value


def normalise(obj: Mapping[str, Any], placeholders: Mapping[str, str]) -> dict[str, Any]:
    """A copy of ``obj`` without server-written state and with run-specific names replaced.
    Secret data and CA bundles keep only which keys are present (their bytes differ per run)."""
    out = copy.deepcopy(dict(obj))
    out.pop("status", None)
    metadata = out.setdefault("metadata", {})
    for key in SERVER_METADATA:
        metadata.pop(key, None)
    annotations = metadata.get("annotations") or {}
    for key in SERVER_ANNOTATIONS:
        annotations.pop(key, None)
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if not annotations:
        metadata.pop("annotations", None)
    owners = metadata.pop("ownerReferences", None)
    if owners:
        metadata["ownerReferences"] = sorted(f"{o['kind']}/{o['name']}" for o in owners)
    if out.get("kind") == "Secret":
        out["data"] = sorted((out.get("data") or {}).keys())
    if out.get("kind") == "ServiceAccount":
        out.pop("secrets", None)
    for webhook in out.get("webhooks") or []:
        client = webhook.get("clientConfig") or {}
        if "caBundle" in client:
            client["caBundle"] = "<ca>"
    conversion = ((out.get("spec") or {}).get("conversion") or {}).get("webhook") or {}
    client = conversion.get("clientConfig") or {}
    if "caBundle" in client:
        client["caBundle"] = "<ca>"
    if out.get("kind") == "Deployment":
        template = (out.get("spec") or {}).get("template") or {}
        t_annotations = (template.get("metadata") or {}).get("annotations") or {}
        for key in ("olmcahash", "pivoter.io/serving-cert-hash"):
            if key in t_annotations:
                t_annotations[key] = "<hash>"
    if out.get("kind") == "Service":
        spec = out.get("spec") or {}
        for key in ("clusterIP", "clusterIPs"):
            spec.pop(key, None)
    if out.get("kind") == "CustomResourceDefinition":
        metadata.pop("labels", None)
    result: dict[str, Any] = _replace(out, placeholders)
    return result


def index(
    objects: Iterable[Mapping[str, Any]], placeholders: Mapping[str, str]
) -> dict[Key, dict[str, Any]]:
    """Normalised objects by (kind, namespace placeholder, name placeholder)."""
    out: dict[Key, dict[str, Any]] = {}
    for obj in objects:
        n = normalise(obj, placeholders)
        meta = n["metadata"]
        out[(str(n["kind"]), str(meta.get("namespace") or ""), str(meta["name"]))] = n
    return out
