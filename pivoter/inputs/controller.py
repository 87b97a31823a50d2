"""The Resolution controller: ``setup(manager, cache=..., store=..., preparer=...)`` for
``pivoter run``, and :func:`register`, the wiring every input kind shares.

An input controller watches its inputs and their child BundleDeployments (mapped back through
the ``pivoter.io/input`` annotation), the Bundles prepared for their pivots, the children of
other inputs they depend on (:mod:`pivoter.inputs.dependents`), their ResolveSet revision
ConfigMaps (one deleted by hand is noticed at once), and Catalogs whose
``Serving`` status flips; on a catalog content change
(:meth:`pivoter.catalogs.CatalogCache.on_change`) it re-resolves the inputs whose last
resolution read what changed (:mod:`pivoter.inputs.relevance`). The work is done by the shared
:class:`~pivoter.inputs.reconciler.InputReconciler` and
:class:`~pivoter.inputs.engine.InputEngine`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, BUNDLES, CATALOGS, CONFIG_MAPS, RESOLUTIONS
from pivoter.apis.views import ResolutionView
from pivoter.catalogs import CatalogCache, CatalogChange
from pivoter.inputs import held
from pivoter.inputs.catalogs import catalog_flips
from pivoter.inputs.collector import RevisionCollector
from pivoter.inputs.dependents import dependents_of
from pivoter.inputs.engine import InputEngine
from pivoter.inputs.metrics import InputMetrics
from pivoter.inputs.reconciler import InputReconciler, Kind
from pivoter.inputs.relevance import Relevance
from pivoter.inputs.spec import from_resolution
from pivoter.inputs.status import resolution_status
from pivoter.inputs.targets import revision_packages
from pivoter.kube import EventRecorder, Object, Resource
from pivoter.pivot import ANNOTATION_INPUT, Preparer
from pivoter.resolvesets import REVISIONS_SELECTOR, RevisionStore, input_keys, input_names
from pivoter.runtime.cache import Store
from pivoter.runtime.echoes import Echoes
from pivoter.runtime.informer import EventHandler, Informer
from pivoter.runtime.manager import Manager

__all__ = ["CONTROLLER_NAME", "RESOLUTIONS", "children_of", "register", "resolution_kind", "setup"]

CONTROLLER_NAME = "resolutions"

CHILD_PACKAGE_INDEX = "pivoter.io/package"
"""An index of the BundleDeployments' cache: a child by the package it installs."""
REVISION_PACKAGES_INDEX = "pivoter.io/packages"
"""An index of the revisions' cache: a revision by the packages of its ResolveSet."""
REVISION_INPUT_INDEX = "pivoter.io/input"
"""An index of the revisions' cache: a revision by its input (``kind/name``, lower-case kind)."""


def _deletion_policy(obj: Mapping[str, Any]) -> str:
    return ResolutionView.parse(obj).deletion_policy


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


def _cached_inputs(manager: Manager) -> Callable[[Resource], Store | None]:
    """The cache of an input kind: the manager's informer of all of them (None when the daemon
    has none: that kind is not served or has no controller here)."""

    def cached(resource: Resource) -> Store | None:
        for informer in manager.informers:
            same = (informer.resource.api_version, informer.resource.kind) == (
                resource.api_version,
                resource.kind,
            )
            if same and not informer.namespace and not informer.label_selector:
                return informer.store
        return None

    return cached


def register(
    manager: Manager,
    kind: Kind,
    *,
    name: str,
    cache: CatalogCache,
    store: RevisionStore,
    preparer: Preparer,
    recorder: EventRecorder | None,
    workers: int,
) -> InputReconciler:
    """Register the controller of one input kind with every watch an input needs; return its
    reconciler. Shared by the controllers of every input kind."""
    revisions = manager.informer_for(
        CONFIG_MAPS, namespace=store.namespace, label_selector=REVISIONS_SELECTOR
    )
    children = manager.informer_for(BUNDLE_DEPLOYMENTS).store
    # Indexes of the shared caches (the first controller to ask adds them): a resolving pass
    # reads the holdings of the packages it can meet, not every child and revision.
    children.add_index(CHILD_PACKAGE_INDEX, held.child_package)
    revisions.store.add_index(REVISION_PACKAGES_INDEX, revision_packages)
    # Reads from the informer caches (a pass with nothing to do makes no request).
    engine = InputEngine(
        manager.reads,
        cache,
        store,
        preparer=preparer,
        metrics=InputMetrics.of(manager.metrics.registry),
        children_cache=children.list,
        revisions_cache=revisions.store.get,
        inputs_cache=_cached_inputs(manager),
        children_by_package=lambda package: children.by_index(CHILD_PACKAGE_INDEX, package),
        revisions_with=lambda package: revisions.store.by_index(REVISION_PACKAGES_INDEX, package),
        relevance=Relevance(cache),
    )
    echoes = Echoes()
    reconciler = InputReconciler(manager.reads, engine, kind, recorder=recorder, echoes=echoes)
    controller = manager.controller(name, reconciler.reconcile, workers=workers)
    inputs = manager.informer_for(kind.resource)
    kind_name = kind.resource.kind

    def every_input() -> list[str]:
        return [str(o["metadata"]["name"]) for o in inputs.store.list()]

    # Not the echo of its own status write: the pass that wrote it saw all it says.
    controller.watch(inputs, ignore_update=echoes.echo)
    inputs.add_handler(EventHandler(on_delete=echoes.forget))
    controller.watch(manager.informer_for(BUNDLE_DEPLOYMENTS), children_of(kind_name))
    # Joint resolution: another input's child changed, re-resolve the inputs that depend on it.
    controller.watch(
        manager.informer_for(BUNDLE_DEPLOYMENTS), dependents_of(kind_name, inputs.store)
    )
    # A pivot that is Preparing waits for its Bundles to unpack.
    controller.watch(manager.informer_for(BUNDLES), children_of(kind_name))
    # A ResolveSet revision deleted or re-created by hand: its input verifies its active
    # revision at once (every pass does), not at the next poll.
    controller.watch(revisions, lambda cm: input_names(cm, kind_name))

    assert engine.relevance is not None
    relevance = engine.relevance
    relevance.requeue = controller.queue.add

    def catalog_changed(change: CatalogChange) -> None:
        # Only the inputs whose last resolution read what changed (or that have not resolved).
        for input_name in relevance.concerned(change, every_input()):
            controller.queue.add(input_name)

    cache.on_change(catalog_changed)
    # A Catalog that stops (or starts again) serving: the inputs say whether they resolve from
    # its last good content. A Catalog relabelled: catalog selectors may match it now, or not.
    flipped = catalog_flips()
    controller.watch(manager.informer_for(CATALOGS), lambda c: every_input() if flipped(c) else [])
    _register_collector(manager, kind, name=name, store=store, revisions=revisions)
    return reconciler


def _register_collector(
    manager: Manager, kind: Kind, *, name: str, store: RevisionStore, revisions: Informer
) -> None:
    """The revision garbage collector of ``kind`` (:mod:`pivoter.inputs.collector`),
    queued by its inputs and their revisions."""
    inputs = manager.informer_for(kind.resource)
    kind_name = kind.resource.kind

    revisions.store.add_index(REVISION_INPUT_INDEX, input_keys)

    def stored(input_name: str) -> int:
        return len(
            revisions.store.indexed(REVISION_INPUT_INDEX, f"{kind_name.lower()}/{input_name}")
        )

    collector = RevisionCollector(kind, store, lookup=inputs.store.get, stored=stored)
    controller = manager.controller(f"{name}-revisions", collector.reconcile)
    controller.watch(inputs)
    controller.watch(revisions, lambda cm: input_names(cm, kind_name))


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
    return register(
        manager,
        resolution_kind(),
        name=CONTROLLER_NAME,
        cache=cache,
        store=store,
        preparer=preparer,
        recorder=recorder,
        workers=workers,
    )
