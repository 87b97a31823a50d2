"""Deleting a BundleDeployment: the uninstall finalizer, and the objects that stay.

The controller puts :data:`FINALIZER` on every BundleDeployment it installs
(:func:`add_finalizer`). When one is deleted, :func:`finalize` runs before the finalizer goes.
It first asks the wiring's :data:`KeepOnDelete` whether the objects stay altogether (the daemon
passes :func:`pivoter.pivot.children.keep_on_delete`: a pivot input's child deleted by hand keeps
its objects for the child the input re-creates, docs/pivot.md, "A child deleted by hand"; the
controllers never import the pivot, which builds on them). Otherwise every installed object is
deleted as ``spec.serviceAccount``, except CRDs that still have custom resources under the
``Keep`` policy: those are orphaned (no owner labels) and reported in a Warning Event.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from pivoter.apis.inventory import inventory_of
from pivoter.apis.resources import BUNDLE_DEPLOYMENTS
from pivoter.controllers.generatedbundles import KIND
from pivoter.controllers.reporting import warn, where
from pivoter.kube import EventRecorder, Kube, NotFound, Object
from pivoter.kube.identities import Identities
from provisioners.apply.applier import Applier, Owner
from provisioners.apply.objects import LABEL_OWNER_KIND, LABEL_OWNER_NAME, ObjectRef

__all__ = ["FINALIZER", "KeepOnDelete", "KeptObjects", "add_finalizer", "finalize"]

log = logging.getLogger(__name__)

FINALIZER = "core.rukpak.io/uninstall"


class KeptObjects(Protocol):
    """Why a BundleDeployment being deleted leaves its objects, and who still wants them."""

    @property
    def message(self) -> str: ...

    @property
    def input(self) -> Object: ...


KeepOnDelete = Callable[[Kube, Object], KeptObjects | None]
"""Asked when a BundleDeployment is deleted: whether its objects stay, and why (None: uninstall
them). The wiring passes :func:`pivoter.pivot.children.keep_on_delete` (a pivot input's child
deleted by hand keeps its objects for the child the input re-creates); the controllers never
import the pivot."""


def add_finalizer(kube: Kube, bd: Object) -> Object:
    """``bd`` with :data:`FINALIZER` (added now if it was missing)."""
    finalizers = bd["metadata"].get("finalizers") or []
    if FINALIZER in finalizers:
        return bd
    return kube.set_finalizers(BUNDLE_DEPLOYMENTS, bd, [*finalizers, FINALIZER])


def finalize(
    kube: Kube,
    bd: Object,
    *,
    identities: Identities,
    keep_on_delete: KeepOnDelete,
    recorder: EventRecorder | None,
) -> None:
    """The uninstall finalizer: the objects stay when ``keep_on_delete`` says so, else they are
    uninstalled (as ``spec.serviceAccount``, through ``identities``); then the finalizer goes."""
    metadata = bd["metadata"]
    if FINALIZER not in (metadata.get("finalizers") or []):
        return
    note = _kept(kube, bd, keep_on_delete, recorder)
    if note is None:
        note = _uninstall(kube, bd, identities, recorder)
    kube.set_finalizers(
        BUNDLE_DEPLOYMENTS, bd, [f for f in metadata["finalizers"] if f != FINALIZER]
    )
    log.info("bundledeployment %s: %s", metadata["name"], note)


def _kept(
    kube: Kube, bd: Object, keep_on_delete: KeepOnDelete, recorder: EventRecorder | None
) -> str | None:
    """Why ``bd``'s objects stay (an Event on it and on the input that wants them), or None."""
    kept = keep_on_delete(kube, bd)
    if kept is None:
        return None
    if recorder is not None:
        recorder.normal(bd, "ObjectsKept", "Delete", kept.message)
        recorder.normal(kept.input, "ObjectsKept", "Delete", kept.message)
    return kept.message


def _uninstall(
    kube: Kube, bd: Object, identities: Identities, recorder: EventRecorder | None
) -> str:
    """Delete every installed object, as the service account; objects kept by policy (CRDs
    with custom resources) are orphaned with a Warning Event. Returns what it did."""
    spec = bd.get("spec") or {}
    applier = Applier(
        identities.api_for(spec.get("serviceAccount")), Owner(KIND, bd["metadata"]["name"])
    )
    pruned = applier.prune(
        inventory_of(bd.get("status")),
        [],
        crd_policy=str(spec.get("crdDeletionPolicy") or "Keep"),
    )
    for ref, why in pruned.kept:
        warn(recorder, bd, "ObjectKept", f"kept {ref.kind} {where(ref)} on deletion: {why}")
        _orphan(kube, ref)
    return f"uninstalled {len(pruned.deleted)} objects, kept {len(pruned.kept)}"


def _orphan(kube: Kube, ref: ObjectRef) -> None:
    """Drop the owner labels of an object left behind, so no owner claims it any more."""
    try:
        resource = kube.resource(ref.api_version, ref.kind)
        patch = {"metadata": {"labels": {LABEL_OWNER_KIND: None, LABEL_OWNER_NAME: None}}}
        kube.merge_patch(resource, ref.name, patch, ref.namespace or None)
    except NotFound:
        pass
