"""The operator Deployments of a CSV, with OLM's annotations and the user's overrides.

Each ``spec.install.spec.deployments`` entry becomes a Deployment in the install namespace. Its pod
template carries the CSV's annotations and ``olm.targetNamespaces`` (operators read the namespaces
to watch from it through the downward API). ``deploymentConfig`` overrides are applied with the
semantics of OLM's Subscription ``spec.config``: ``env`` and ``volumeMounts`` are merged by name
into every container, ``envFrom`` and ``tolerations`` appended when absent, ``volumes`` merged by
name, ``resources`` replace each container's, ``nodeSelector`` replaces the pod's, ``affinity``
replaces the kinds it names, ``annotations`` are added without overwriting. Called by
:mod:`~provisioners.formats.registry_v1.convert`.
"""

from __future__ import annotations

import copy
from typing import Any

from provisioners.formats.registry_v1.clusterserviceversion import ClusterServiceVersion
from provisioners.formats.registry_v1.config import DeploymentConfig
from provisioners.formats.registry_v1.installmode import InstallTarget

TARGET_NAMESPACES_ANNOTATION = "olm.targetNamespaces"


def deployment_objects(
    csv: ClusterServiceVersion, install: InstallTarget, overrides: DeploymentConfig
) -> dict[str, dict[str, Any]]:
    """The operator Deployments by name, in CSV order."""
    annotations = dict(csv.annotations)
    annotations[TARGET_NAMESPACES_ANNOTATION] = install.annotation
    result: dict[str, dict[str, Any]] = {}
    for entry in csv.deployments:
        spec = copy.deepcopy(entry.spec)
        template = spec["template"]
        template_metadata = dict(template.get("metadata") or {})
        template_metadata["annotations"] = {
            **(template_metadata.get("annotations") or {}),
            **annotations,
        }
        template["metadata"] = template_metadata
        metadata: dict[str, Any] = {"name": entry.name, "namespace": install.install_namespace}
        if entry.labels:
            metadata["labels"] = dict(entry.labels)
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": metadata,
            "spec": spec,
        }
        apply_overrides(deployment, overrides)
        result[entry.name] = deployment
    return result


def _merge_by(items: list[dict[str, Any]], new: list[dict[str, Any]], key: str) -> None:
    """Replace entries of ``items`` whose ``key`` matches one in ``new``; append the rest."""
    for item in new:
        for index, existing in enumerate(items):
            if existing.get(key) == item.get(key):
                items[index] = copy.deepcopy(item)
                break
        else:
            items.append(copy.deepcopy(item))


def _append_missing(items: list[dict[str, Any]], new: list[dict[str, Any]]) -> None:
    for item in new:
        if item not in items:
            items.append(copy.deepcopy(item))


def apply_overrides(deployment: dict[str, Any], overrides: DeploymentConfig) -> None:
    """Apply ``overrides`` to ``deployment`` in place."""
    template = deployment["spec"]["template"]
    pod = template["spec"]
    for container in pod.get("containers", []):
        if overrides.env:
            _merge_by(container.setdefault("env", []), overrides.env, "name")
        if overrides.env_from:
            _append_missing(container.setdefault("envFrom", []), overrides.env_from)
        if overrides.volume_mounts:
            _merge_by(container.setdefault("volumeMounts", []), overrides.volume_mounts, "name")
        if overrides.resources is not None:
            container["resources"] = copy.deepcopy(overrides.resources)
    if overrides.volumes:
        _merge_by(pod.setdefault("volumes", []), overrides.volumes, "name")
    if overrides.tolerations:
        _append_missing(pod.setdefault("tolerations", []), overrides.tolerations)
    if overrides.node_selector is not None:
        pod["nodeSelector"] = dict(overrides.node_selector)
    if overrides.affinity is not None:
        affinity = dict(pod.get("affinity") or {})
        for kind, value in overrides.affinity.items():
            affinity[kind] = copy.deepcopy(value)
        pod["affinity"] = affinity
    if overrides.annotations:
        for metadata in (deployment["metadata"], template.setdefault("metadata", {})):
            existing = metadata.setdefault("annotations", {})
            for key, value in overrides.annotations.items():
                existing.setdefault(key, value)
