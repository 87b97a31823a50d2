"""Wiring for ``pivoter run``: the Bundle and BundleDeployment controllers on one content store.

``setup(manager, ...)`` creates both controllers with their watches (BundleDeployments, Bundles
mapped to the BundleDeployment that owns them, and one shared informer per kind of installed
object, added as inventories name new kinds, for drift correction; see
:mod:`pivoter.controllers.managedobjects`) and returns the Bundle reconciler, which the content
server uses to serve (and, after a failover, re-unpack) content.
"""

from __future__ import annotations

from pathlib import Path

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, BUNDLES
from pivoter.controllers.bundle import BundleReconciler
from pivoter.controllers.bundledeployment import BundleDeploymentReconciler, KeepOnDelete
from pivoter.controllers.generatedbundles import generated_from
from pivoter.controllers.managedobjects import ManagedObjects, owning_bundle_deployment
from pivoter.kube import EventRecorder
from pivoter.registries import RegistryAccessProvider
from pivoter.runtime.manager import Manager
from pivoter.runtime.readcache import ReadYourWrites
from provisioners.store import BundleStore

__all__ = ["setup"]


def setup(
    manager: Manager,
    *,
    store_dir: Path,
    namespace: str,
    keep_on_delete: KeepOnDelete,
    content_url_base: str = "",
    recorder: EventRecorder | None = None,
    workers: int = 2,
    health_interval_seconds: float = 10.0,
    full_check_interval_seconds: float = 600.0,
    registries: RegistryAccessProvider | None = None,
) -> BundleReconciler:
    """Register the Bundle and BundleDeployment controllers; return the Bundle reconciler.
    ``keep_on_delete`` is asked whether a deleted BundleDeployment keeps its objects (the daemon
    passes :func:`pivoter.pivot.children.keep_on_delete`). ``registries``: the pull secrets
    and mirrors of image sources (None: a Bundle's own pull secret only)."""
    store = BundleStore(store_dir)
    # Reads from the informer caches, its own writes read back (a Bundle pass was a GET of the
    # Bundle from the API server: three of every pivot's requests).
    bundles = BundleReconciler(
        manager.reads,
        store,
        system_namespace=namespace,
        content_url_base=content_url_base,
        registries=registries,
        recorder=recorder,
    )
    deployments = BundleDeploymentReconciler(
        manager.kube,
        store,
        bundles,
        recorder=recorder,
        health_interval_seconds=health_interval_seconds,
        full_check_interval_seconds=full_check_interval_seconds,
        keep_on_delete=keep_on_delete,
    )
    bundle_informer = manager.informer_for(BUNDLES)
    bundles.live_bundles = bundle_informer.store.list
    bundle_controller = manager.controller("bundles", bundles.reconcile, workers=workers)
    bundle_controller.watch(bundle_informer)
    deployment_controller = manager.controller(
        "bundledeployments", deployments.reconcile, workers=workers
    )
    deployment_informer = manager.informer_for(BUNDLE_DEPLOYMENTS)
    # A pass with nothing to do makes no request: both kinds are read from the shared caches.
    deployments.cached = ReadYourWrites(deployment_informer.store.get)
    deployments.generated = generated_from(bundle_informer.store)
    deployment_controller.watch(deployment_informer)
    # A generated Bundle carries its BundleDeployment's owner labels, as installed objects do.
    deployment_controller.watch(bundle_informer, owning_bundle_deployment)
    deployments.managed = ManagedObjects(manager, deployment_controller)
    return bundles
