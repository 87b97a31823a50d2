"""The Resolution controller: ``setup(manager, cache=..., store=...)`` for ``pivoter run``.

Watches Resolutions and their child BundleDeployments (mapped back through the
``pivoter.io/input`` annotation), re-resolves the Resolutions that depend on another input's
child when it changes (:mod:`pivoter.resolutions.dependents`), and re-resolves every
Resolution when a catalog's content changes (:meth:`pivoter.catalogs.CatalogCache.on_change`).
The work is done by the shared :class:`~pivoter.resolutions.inputs.InputReconciler` and
:class:`~pivoter.resolutions.engine.Engine`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pivoter.apis import pivoter as api
from pivoter.catalogs import CATALOGS, CatalogCache, CatalogChange
from pivoter.controller.manager import Manager
from pivoter.controllers.bundle import BUNDLES
from pivoter.controllers.bundledeployment import BUNDLE_DEPLOYMENTS
from pivoter.kube import EventRecorder, Object, Resource
from pivoter.pivot import ANNOTATION_INPUT, Preparer
from pivoter.resolutions.catalogs import serving_flips
from pivoter.resolutions.dependents import dependents_of
from pivoter.resolutions.engine import Engine
from pivoter.resolutions.inputs import InputReconciler, Kind
from pivoter.resolutions.metrics import InputMetrics
from pivoter.resolutions.spec import from_resolution
from pivoter.resolutions.status import resolution_status
from pivoter.resolvesets import RevisionStore

__all__ = ["CONTROLLER_NAME", "RESOLUTIONS", "children_of", "resolution_kind", "setup"]

RESOLUTIONS = Resource(api.API_VERSION, "Resolution", "resolutions", namespaced=False)
CONTROLLER_NAME = "resolutions"


def _deletion_policy(obj: Mapping[str, Any]) -> str:
    return str((obj.get("spec") or {}).get("deletionPolicy") or "Delete")


def resolution_kind() -> Kind:
    """How the shared reconciler reads and writes Resolutions."""
    return Kind(RESOLUTIONS, from_resolution, resolution_status, _deletion_policy)


def children_of(kind: str) -> Any:
    """A mapper from a child BundleDeployment to the name of its input of ``kind``."""

    def mapper(bd: Object) -> list[str]:
        owner = str(
            ((bd.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_INPUT) or ""
        )
        owner_kind, _, name = owner.partition("/")
        return [name] if owner_kind == kind and name else []

    return mapper


def setup(
    manager: Manager,
    *,
    cache: CatalogCache,
    store: RevisionStore,
    preparer: Preparer,
    recorder: EventRecorder | None = None,
    workers: int = 2,
) -> InputReconciler:
    """Register the Resolution controller; return its reconciler."""
    engine = Engine(
        manager.kube,
        cache,
        store,
        preparer=preparer,
        metrics=InputMetrics.of(manager.metrics.registry),
    )
    reconciler = InputReconciler(manager.kube, engine, resolution_kind(), recorder=recorder)
    controller = manager.controller(CONTROLLER_NAME, reconciler.reconcile, workers=workers)
    resolutions = manager.informer_for(RESOLUTIONS)
    controller.watch(resolutions)
    controller.watch(manager.informer_for(BUNDLE_DEPLOYMENTS), children_of("Resolution"))
    # Joint resolution: another input's child changed, re-resolve the inputs that depend on it.
    controller.watch(
        manager.informer_for(BUNDLE_DEPLOYMENTS),
        dependents_of("Resolution", resolutions.store.list),
    )
    # A pivot that is Preparing waits for its Bundles to unpack.
    controller.watch(manager.informer_for(BUNDLES), children_of("Resolution"))

    def catalog_changed(_: CatalogChange) -> None:
        for obj in resolutions.store.list():
            controller.queue.add(str(obj["metadata"]["name"]))

    cache.on_change(catalog_changed)
    # A Catalog that stops (or starts again) serving: the inputs say whether they resolve from
    # its last good content.
    flipped = serving_flips()
    controller.watch(
        manager.informer_for(CATALOGS),
        lambda catalog: (
            [str(o["metadata"]["name"]) for o in resolutions.store.list()]
            if flipped(catalog)
            else []
        ),
    )
    return reconciler
