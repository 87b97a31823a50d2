"""Wiring for ``pivoter run``: the one :class:`RevisionStore` of the daemon.

Revisions are written by the input controllers, not reconciled on their own, so there is no
controller here: :func:`setup` builds the store on the manager's client for the controllers
that need it.
"""

from __future__ import annotations

from pivoter.resolvesets.metrics import RevisionMetrics
from pivoter.resolvesets.revisions import RevisionStore
from pivoter.runtime.manager import Manager

__all__ = ["setup"]


def setup(manager: Manager, *, namespace: str) -> RevisionStore:
    """The revision store in the daemon's ``namespace``, on ``manager``'s API client."""
    return RevisionStore(manager.kube, namespace, RevisionMetrics(manager.metrics.registry))
