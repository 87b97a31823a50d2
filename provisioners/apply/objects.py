"""Kubernetes objects as the appliers see them: references, install order and ownership labels."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

JSONObject = dict[str, Any]

CRD_API_VERSION = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"

LABEL_OWNER_KIND = "core.rukpak.io/owner-kind"
LABEL_OWNER_NAME = "core.rukpak.io/owner-name"

# Install order: what others depend on first. Webhook configurations come after the workloads
# that serve them, so admission does not start calling a service that does not exist yet.
_KIND_RANK: dict[str, int] = {
    "Namespace": 0,
    CRD_KIND: 1,
    "PriorityClass": 2,
    "StorageClass": 2,
    "ServiceAccount": 3,
    "ClusterRole": 3,
    "Role": 3,
    "ClusterRoleBinding": 4,
    "RoleBinding": 4,
    "ConfigMap": 5,
    "Secret": 5,
    "Service": 6,
    "Deployment": 7,
    "StatefulSet": 7,
    "DaemonSet": 7,
    "Job": 7,
    "APIService": 8,
    "ValidatingWebhookConfiguration": 8,
    "MutatingWebhookConfiguration": 8,
}
_DEFAULT_RANK = 6
_CUSTOM_RESOURCE_RANK = 9


@dataclass(frozen=True, slots=True, order=True)
class ObjectRef:
    """Identifies one object: apiVersion, kind, namespace ("" when cluster-scoped) and name."""

    api_version: str
    kind: str
    namespace: str
    name: str

    @property
    def group(self) -> str:
        """The API group ("" for the core group)."""
        return self.api_version.rpartition("/")[0]

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind}.{self.api_version} {where}"

    def as_dict(self) -> dict[str, str]:
        """A JSON-friendly form (for status and inventories)."""
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, str]) -> ObjectRef:
        """Inverse of :meth:`as_dict`."""
        return cls(data["apiVersion"], data["kind"], data.get("namespace", ""), data["name"])


def ref_of(obj: Mapping[str, Any]) -> ObjectRef:
    """Return the reference of an object; raise ValueError naming what is missing."""
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    missing = [
        field
        for field, value in (("apiVersion", api_version), ("kind", kind), ("metadata.name", name))
        if not isinstance(value, str) or not value
    ]
    if missing:
        raise ValueError(f"object is missing {', '.join(missing)}")
    namespace = metadata.get("namespace", "") if isinstance(metadata, Mapping) else ""
    return ObjectRef(str(api_version), str(kind), str(namespace or ""), str(name))


def crd_kinds(objects: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """The (group, kind) pairs defined by the CRDs among ``objects``."""
    kinds: set[tuple[str, str]] = set()
    for obj in objects:
        if obj.get("kind") == CRD_KIND:
            spec = obj.get("spec", {})
            kinds.add((str(spec.get("group", "")), str(spec.get("names", {}).get("kind", ""))))
    return kinds


def install_phases(objects: Iterable[JSONObject]) -> list[list[JSONObject]]:
    """The objects in install order, grouped by rank: each phase only depends on earlier ones
    (its objects may be applied together), and the order within a phase is the given one.

    Custom resources of kinds defined by CRDs in the same set come last, after their CRDs are
    Established.
    """
    items = list(objects)
    defined = crd_kinds(items)

    def rank(obj: JSONObject) -> int:
        ref = ref_of(obj)
        if (ref.group, ref.kind) in defined:
            return _CUSTOM_RESOURCE_RANK
        return _KIND_RANK.get(ref.kind, _DEFAULT_RANK)

    phases: dict[int, list[JSONObject]] = {}
    for obj in items:
        phases.setdefault(rank(obj), []).append(obj)
    return [phases[r] for r in sorted(phases)]


def install_order(objects: Iterable[JSONObject]) -> list[JSONObject]:
    """Sort objects so that providers come before consumers (stable within a rank)."""
    return [obj for phase in install_phases(objects) for obj in phase]


def with_owner_labels(obj: JSONObject, owner_kind: str, owner_name: str) -> JSONObject:
    """Return a copy of ``obj`` carrying the ownership labels of its owner."""
    out = dict(obj)
    metadata = dict(out.get("metadata") or {})
    labels = dict(metadata.get("labels") or {})
    labels[LABEL_OWNER_KIND] = owner_kind
    labels[LABEL_OWNER_NAME] = owner_name
    metadata["labels"] = labels
    out["metadata"] = metadata
    return out


def owner_of(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """The (kind, name) an existing object's ownership labels name, or None."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    kind, name = labels.get(LABEL_OWNER_KIND), labels.get(LABEL_OWNER_NAME)
    return (str(kind), str(name)) if kind and name else None
