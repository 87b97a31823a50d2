"""How the BundleDeployment controller tells people what went wrong: a Warning Event on the
BundleDeployment with its log line, and objects named the same way in every message.

Each step of the controller reports through here: the install (the API server's warnings, an
install that stopped, :mod:`pivoter.controllers.install`), drift left alone
(:mod:`pivoter.controllers.driftcorrection`) and objects kept on deletion
(:mod:`pivoter.controllers.uninstall`).
"""

from __future__ import annotations

import logging

from pivoter.kube import EventRecorder, Object
from provisioners.apply.objects import ObjectRef

__all__ = ["warn", "where"]

log = logging.getLogger(__name__)


def warn(recorder: EventRecorder | None, bd: Object, reason: str, note: str) -> None:
    """Log ``note`` as a warning and record it as a Warning Event on ``bd`` (when events are
    recorded at all)."""
    log.warning("bundledeployment %s: %s: %s", bd["metadata"]["name"], reason, note)
    if recorder is not None:
        recorder.warning(bd, reason, "Reconcile", note)


def where(ref: ObjectRef) -> str:
    """``namespace/name``, or ``name`` for a cluster-scoped object (for messages)."""
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
