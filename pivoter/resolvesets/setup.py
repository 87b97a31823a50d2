"""Wiring for ``pivoter run``: the one :class:`RevisionStore` of the daemon.

Revisions are written by the input controllers, not reconciled on their own, so there is no
controller here: :func:`setup` builds the store on the manager's client for the controllers
that need it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pivoter.resolvesets.metrics import RevisionMetrics
from pivoter.resolvesets.revisions import RevisionStore
from pivoter.runtime.manager import Manager
from resolver.resolveset import ResolveSet

__all__ = ["setup"]


def setup(
    manager: Manager,
    *,
    namespace: str,
    prepare: Callable[[ResolveSet, Mapping[str, Any] | None], ResolveSet] | None = None,
) -> RevisionStore:
    """The revision store in the daemon's ``namespace``, reading from ``manager``'s informer
    caches (:attr:`~pivoter.runtime.Manager.reads`); ``prepare``: what each new revision's
    document goes through before it is written."""
    return RevisionStore(
        manager.reads, namespace, RevisionMetrics(manager.metrics.registry), prepare=prepare
    )
