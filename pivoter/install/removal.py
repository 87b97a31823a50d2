"""Remove pivoter from a cluster: ``pivoter uninstall [--keep-workloads]``.

While an input exists (a Resolution, PlatformOperator, ClusterExtension pivoter serves, a
BundleDeployment, a Bundle or a Catalog), removing pivoter would either uninstall what it
installed (its finalizers) or strand it half-managed; so the command refuses and names them,
unless told what to do:

- delete the inputs first (pivoter uninstalls what each installed), then ``pivoter uninstall``;
- or ``--keep-workloads``: everything installed keeps running, and pivoter goes without a trace.
  In order, each step safe to run again after a kill: the daemon is scaled to zero and waited
  for (nothing may react to what follows); the admission webhooks are deleted (with no server
  they refuse every change to pivoter's objects); optionally the inputs are written to a
  directory (``--backup``) to apply again after a new install; pivoter's finalizers are removed
  from every object of its kinds (they are what uninstalls); the CRDs pivoter installed are
  deleted, which deletes its objects with them (installed objects carry no owner reference to
  them, docs/install.md); then the rest of ``deploy/``, the namespace last.

What it leaves: the installed objects, with pivoter's labels and field manager entries (inert
without pivoter; a new install's children take them over by the same field manager, with no
re-creation). What goes with the CRDs: the inputs' revision history (ResolveSets are owned by
their input).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pivoter.apis.inputs import INPUT_KINDS
from pivoter.apis.olmv1 import ANNOTATION_CRD_SOURCE
from pivoter.apis.resources import (
    BUNDLE_DEPLOYMENTS,
    BUNDLES,
    CATALOGS,
    CLUSTER_CATALOGS,
    CLUSTER_EXTENSIONS,
    CRDS,
    NAMESPACES,
    PODS,
)
from pivoter.install.health import PIVOTER_GROUPS, VALIDATING
from pivoter.install.installer import DEPLOYMENTS, InstallError, Progress
from pivoter.install.manifests import Manifests
from pivoter.kube import Kube, KubeError, NotFound, Resource
from pivoter.webhook.registration import NAME as WEBHOOK_CONFIGURATION

__all__ = ["Found", "find_inputs", "remove", "write_backup"]

# The kinds of pivoter's objects: the input kinds first (the order the refusal lists them in).
KINDS: tuple[Resource, ...] = (
    *(kind.resource for kind in INPUT_KINDS),
    BUNDLE_DEPLOYMENTS,
    BUNDLES,
    CATALOGS,
    CLUSTER_CATALOGS,
)
# What a backup keeps of an object's metadata: what its author wrote.
_KEPT_METADATA = ("name", "namespace", "labels", "annotations")


@dataclass(frozen=True)
class Found:
    """One object of pivoter's kinds on the cluster."""

    resource: Resource
    name: str
    owned: bool  # made by another of pivoter's objects (a child), not by a user
    finalizers: tuple[str, ...]
    object: Mapping[str, Any]

    def __str__(self) -> str:
        return f"{self.resource.kind} {self.name}"


def _ours(finalizer: str) -> bool:
    """pivoter's finalizers: ``core.rukpak.io/uninstall``, ``pivoter.io/cleanup``,
    ``olmv0.pivoter.io/hand-back``."""
    return finalizer.startswith(("pivoter.io/", "core.rukpak.io/")) or (".pivoter.io/" in finalizer)


def _pivoter_serves(kube: Kube, resource: Resource) -> bool:
    """Whether pivoter installed the CRD of ``resource`` (OLM v1's kinds: only its own copies)."""
    if resource not in (CLUSTER_EXTENSIONS, CLUSTER_CATALOGS):
        return True
    group = resource.api_version.split("/")[0]
    try:
        crd = kube.get(CRDS, f"{resource.plural}.{group}")
    except NotFound:
        return False
    annotations = (crd.get("metadata") or {}).get("annotations") or {}
    return ANNOTATION_CRD_SOURCE in annotations


def find_inputs(kube: Kube) -> list[Found]:
    """Every object of pivoter's kinds (OLM v1's only where pivoter serves them; on a cluster
    where operator-controller serves them, those that carry one of pivoter's finalizers)."""
    found: list[Found] = []
    for resource in KINDS:
        try:
            items, _ = kube.list(resource)
        except NotFound:
            continue  # the kind is not served: nothing of it
        serves = _pivoter_serves(kube, resource)
        for item in items:
            metadata = item.get("metadata") or {}
            finalizers = tuple(str(f) for f in metadata.get("finalizers") or [])
            if not serves and not any(_ours(f) for f in finalizers):
                continue
            owned = any(
                str(o.get("apiVersion", "")).split("/")[0] in PIVOTER_GROUPS
                for o in metadata.get("ownerReferences") or []
            )
            found.append(Found(resource, str(metadata["name"]), owned, finalizers, item))
    return found


def _wait(what: str, done: Callable[[], bool], deadline: float, progress: Progress) -> None:
    progress(f"waiting for {what}")
    while not done():
        if time.monotonic() > deadline:
            raise InstallError(f"timed out waiting for {what}")
        time.sleep(1.0)


def _stop_daemon(kube: Kube, manifests: Manifests, deadline: float, progress: Progress) -> None:
    for obj in manifests.components:
        if obj.get("kind") != "Deployment":
            continue
        meta = obj["metadata"]
        try:
            kube.merge_patch(
                DEPLOYMENTS, meta["name"], {"spec": {"replicas": 0}}, namespace=meta["namespace"]
            )
        except NotFound:
            continue
        progress(f"Deployment {meta['namespace']}/{meta['name']} scaled to 0")
        selector = ",".join(f"{k}={v}" for k, v in obj["spec"]["selector"]["matchLabels"].items())

        def no_pods(namespace: str = meta["namespace"], selector: str = selector) -> bool:
            pods, _ = kube.list(PODS, namespace, label_selector=selector)
            return not pods

        _wait("the daemon's pods to stop", no_pods, deadline, progress)


def _delete(kube: Kube, resource: Resource, name: str, namespace: str | None = None) -> bool:
    try:
        kube.delete(resource, name, namespace)
        return True
    except NotFound:
        return False


def write_backup(directory: Path, found: Iterable[Found]) -> Path:
    """The inputs (not their children) as their authors wrote them, one YAML stream."""
    directory.mkdir(parents=True, exist_ok=True)
    documents = []
    for item in found:
        if item.owned:
            continue
        obj = item.object
        metadata = obj.get("metadata") or {}
        documents.append(
            {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "metadata": {k: metadata[k] for k in _KEPT_METADATA if metadata.get(k)},
                "spec": obj.get("spec") or {},
            }
        )
    path = directory / "pivoter-inputs.yaml"
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def remove(
    kube: Kube,
    manifests: Manifests,
    *,
    keep_workloads: bool,
    backup: Path | None,
    progress: Progress,
    timeout: float,
) -> list[Found]:
    """Remove pivoter; return the objects of its kinds that were let go (with
    ``keep_workloads``). Raises :class:`InstallError` when inputs exist and ``keep_workloads``
    is not given (nothing is changed then)."""
    deadline = time.monotonic() + timeout
    found = find_inputs(kube)
    if found and not keep_workloads:
        users = [str(f) for f in found if not f.owned]
        listed = ", ".join(users[:10]) + (f" and {len(users) - 10} more" if len(users) > 10 else "")
        raise InstallError(
            f"{len(users)} input(s) exist ({listed or ', '.join(map(str, found[:10]))}): delete "
            "them first to uninstall what they installed, or --keep-workloads to remove pivoter "
            "and leave everything they installed running"
        )
    if backup is not None:
        path = write_backup(backup, found)
        progress(f"inputs written to {path}")
    _stop_daemon(kube, manifests, deadline, progress)
    if _delete(kube, VALIDATING, WEBHOOK_CONFIGURATION):
        progress(f"ValidatingWebhookConfiguration {WEBHOOK_CONFIGURATION} deleted")
    for item in find_inputs(kube):
        kept = [f for f in item.finalizers if not _ours(f)]
        if len(kept) == len(item.finalizers):
            continue
        try:
            kube.merge_patch(
                item.resource,
                item.name,
                {"metadata": {"finalizers": kept or None}},
            )
        except NotFound:
            continue
        progress(
            f"{item}: finalizers {', '.join(sorted(set(item.finalizers) - set(kept)))} removed"
        )
    for crd in manifests.crds:
        name = crd["metadata"]["name"]
        if _delete(kube, CRDS, name):
            progress(f"CustomResourceDefinition {name} deleted")
    for resource in (CLUSTER_EXTENSIONS, CLUSTER_CATALOGS):
        group = resource.api_version.split("/")[0]
        if _pivoter_serves(kube, resource) and _delete(kube, CRDS, f"{resource.plural}.{group}"):
            progress(f"CustomResourceDefinition {resource.plural}.{group} (pivoter's copy) deleted")

    def crds_gone() -> bool:
        for crd in manifests.crds:
            try:
                kube.get(CRDS, crd["metadata"]["name"])
                return False
            except NotFound:
                continue
        return True

    _wait("the CRDs and their objects to be deleted", crds_gone, deadline, progress)
    for obj in reversed(manifests.components):
        meta = obj["metadata"]
        try:
            resource = kube.resource(str(obj["apiVersion"]), str(obj["kind"]))
        except KubeError:
            continue
        if _delete(kube, resource, meta["name"], meta.get("namespace")):
            where = f"{meta['namespace']}/" if meta.get("namespace") else ""
            progress(f"{obj['kind']} {where}{meta['name']} deleted")
    namespaces = [o for o in manifests.components if o.get("kind") == "Namespace"]
    for namespace in namespaces:

        def ns_gone(name: str = namespace["metadata"]["name"]) -> bool:
            try:
                kube.get(NAMESPACES, name)
                return False
            except NotFound:
                return True

        _wait(
            f"namespace {namespace['metadata']['name']} to be deleted", ns_gone, deadline, progress
        )
    return found
