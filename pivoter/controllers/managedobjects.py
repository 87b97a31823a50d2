"""Shared watches on every kind BundleDeployments install, so drift is seen within seconds.

:class:`ManagedObjects` holds one informer per kind the inventories name (the Manager's shared
informer for that kind, filtered by ``core.rukpak.io/owner-kind=BundleDeployment`` so the cache
holds managed objects only and memory stays bounded). Every add, change or deletion of a managed
object queues the BundleDeployment its owner labels name. Kinds are added while running: the
BundleDeployment reconciler calls :meth:`track` with each inventory it installs, and reads
cached objects through :meth:`cached` to skip work when nothing changed. Created by
:func:`pivoter.controllers.provisioning.setup`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from pivoter.kube import KubeError, Object
from pivoter.runtime.controller import Controller
from pivoter.runtime.informer import Informer
from pivoter.runtime.manager import Manager
from provisioners.apply.objects import LABEL_OWNER_KIND, LABEL_OWNER_NAME, ObjectRef

__all__ = ["OWNER_KIND", "SELECTOR", "ManagedObjects", "owning_bundle_deployment"]

log = logging.getLogger(__name__)

OWNER_KIND = "BundleDeployment"
SELECTOR = f"{LABEL_OWNER_KIND}={OWNER_KIND}"


def owning_bundle_deployment(obj: Object) -> list[str]:
    """The key of the BundleDeployment an object's owner labels name (none if not one)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get(LABEL_OWNER_KIND) != OWNER_KIND:
        return []
    name = labels.get(LABEL_OWNER_NAME)
    return [str(name)] if name else []


class ManagedObjects:
    """One shared, label-filtered informer per managed kind, feeding ``controller``'s queue."""

    def __init__(self, manager: Manager, controller: Controller) -> None:
        self.manager = manager
        self.controller = controller
        self._informers: dict[tuple[str, str], Informer] = {}
        self._lock = threading.Lock()

    def track(self, refs: Iterable[ObjectRef]) -> None:
        """Make sure every kind among ``refs`` is watched (idempotent, cheap when it is)."""
        for api_version, kind in {(r.api_version, r.kind) for r in refs}:
            with self._lock:
                if (api_version, kind) in self._informers:
                    continue
                try:
                    informer = self.manager.informer(api_version, kind, label_selector=SELECTOR)
                except KubeError as exc:  # not served (yet): the next reconcile tries again
                    log.info("not watching %s %s yet: %s", api_version, kind, exc)
                    continue
                self._informers[(api_version, kind)] = informer
            # Controller.watch only registers a handler: fine after start, and the informer
            # replays its cache to a late handler.
            self.controller.watch(informer, owning_bundle_deployment)
            log.info("watching managed %s %s for drift", api_version, kind)

    def cached(self, ref: ObjectRef) -> tuple[bool, Object | None]:
        """``(known, object)``: whether a synced cache covers ``ref``, and the cached object
        (None: not in the cluster, as far as the cache has seen)."""
        with self._lock:
            informer = self._informers.get((ref.api_version, ref.kind))
        if informer is None or not informer.has_synced():
            return False, None
        key = f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
        return True, informer.store.get(key)

    @property
    def kinds(self) -> list[tuple[str, str]]:
        """The (apiVersion, kind) pairs watched so far."""
        with self._lock:
            return sorted(self._informers)
