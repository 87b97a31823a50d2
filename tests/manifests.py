"""The tests' one set of Kubernetes manifest builders: CRDs, custom resources and ConfigMaps.

Plain dicts (and their YAML, for bundle content) with no cluster or client import, so pure and
cluster tests share them. Cluster-scoped objects get no labels here: a cluster test passes
``labels=session_labels()`` so its session sweep deletes them.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = [
    "cm_manifest",
    "configmap",
    "cr_manifest",
    "crd",
    "crd_manifest",
    "crd_version",
    "custom_resource",
]


def crd_version(
    name: str = "v1",
    *,
    schema: dict[str, Any] | None = None,
    served: bool = True,
    storage: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """One entry of a CRD's ``spec.versions`` (``extra``: e.g. ``deprecated=True``)."""
    return {
        "name": name,
        "served": served,
        "storage": storage,
        # No schema: one that accepts any object (a fresh dict, so callers may edit it).
        "schema": {
            "openAPIV3Schema": schema
            if schema is not None
            else {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        },
        **extra,
    }


def crd(
    group: str,
    kind: str = "Widget",
    *,
    plural: str | None = None,
    namespaced: bool = True,
    versions: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A CRD ``<plural>.<group>`` (plural defaults to ``<kind>s`` lower-cased); one served and
    stored ``v1`` accepting any object unless ``versions`` says otherwise."""
    plural = plural or f"{kind.lower()}s"
    metadata: dict[str, Any] = {"name": f"{plural}.{group}"}
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": group,
            "scope": "Namespaced" if namespaced else "Cluster",
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": kind.lower(),
                "listKind": f"{kind}List",
            },
            "versions": versions if versions is not None else [crd_version()],
        },
    }


def custom_resource(
    group: str,
    name: str,
    namespace: str,
    kind: str = "Widget",
    *,
    spec: dict[str, Any] | None = None,
    version: str = "v1",
) -> dict[str, Any]:
    """A custom resource of :func:`crd`'s kind (no ``spec`` when ``spec`` is None)."""
    obj: dict[str, Any] = {
        "apiVersion": f"{group}/{version}",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
    }
    if spec is not None:
        obj["spec"] = spec
    return obj


def configmap(
    name: str, namespace: str, data: dict[str, str] | None = None, **metadata: Any
) -> dict[str, Any]:
    """A ConfigMap; ``data`` defaults to ``{"k": "v"}``, ``metadata`` adds fields (``labels``)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **metadata},
        "data": {"k": "v"} if data is None else data,
    }


def crd_manifest(group: str, kind: str = "Widget") -> str:
    """YAML of :func:`crd` (bundle content)."""
    return yaml.safe_dump(crd(group, kind))


def cr_manifest(group: str, name: str, namespace: str, kind: str = "Widget") -> str:
    """YAML of a custom resource of :func:`crd_manifest`'s kind with ``spec.size: 1``."""
    return yaml.safe_dump(custom_resource(group, name, namespace, kind, spec={"size": 1}))


def cm_manifest(name: str, namespace: str, data: dict[str, str] | None = None) -> str:
    """YAML of :func:`configmap` (bundle content); ``data`` defaults to ``{"k": "v"}``."""
    return yaml.safe_dump(configmap(name, namespace, data or {"k": "v"}))
