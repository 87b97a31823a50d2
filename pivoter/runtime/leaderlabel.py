"""The leader's Pod carries a label, so that a Service can route to the leader alone.

What only the leader holds, it alone can serve: the content of the ClusterCatalogs it unpacked,
over catalogd's HTTP API (docs/olm-v1.md). ``deploy/`` runs two replicas; the Service of that API
selects :data:`LABEL` ``=true`` as well as the app label, so it has the leader as its one endpoint.

:class:`LeaderLabel` sets the label on this process's own Pod (named by the downward API:
``POD_NAME`` and ``POD_NAMESPACE``) when the manager starts leading, and removes it when it
stops, when it shuts down, and when the process starts (a container restarted after losing the
lease finds its Pod still labelled). A failed patch is logged and retried at the next change; it
never stops the daemon. Wired by :mod:`pivoter.daemon` through
:meth:`pivoter.runtime.manager.Manager.on_leading`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping

from pivoter.apis.resources import PODS
from pivoter.kube import Kube, KubeError

__all__ = ["LABEL", "LeaderLabel"]

log = logging.getLogger(__name__)

LABEL = "pivoter.io/leader"


class LeaderLabel:
    """Marks this process's Pod as the leader's, or not."""

    def __init__(self, kube: Kube, namespace: str, pod: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.pod = pod
        self._lock = threading.Lock()

    @classmethod
    def from_environment(
        cls, kube: Kube, environ: Mapping[str, str] = os.environ
    ) -> LeaderLabel | None:
        """The label of the Pod the downward API names, or None outside a Pod."""
        pod, namespace = environ.get("POD_NAME", ""), environ.get("POD_NAMESPACE", "")
        return cls(kube, namespace, pod) if pod and namespace else None

    def mark(self, leading: bool) -> None:
        """Set (``leading``) or remove the label on the Pod."""
        body = {"metadata": {"labels": {LABEL: "true" if leading else None}}}
        with self._lock:
            try:
                self.kube.merge_patch(PODS, self.pod, body, self.namespace)
            except KubeError as exc:
                log.warning(
                    "cannot %s label %s on pod %s/%s: %s",
                    "set" if leading else "remove",
                    LABEL,
                    self.namespace,
                    self.pod,
                    exc,
                )
                return
        log.info(
            "pod %s/%s %s the leader's label",
            self.namespace,
            self.pod,
            "carries" if leading else "dropped",
        )
