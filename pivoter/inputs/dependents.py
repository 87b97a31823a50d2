"""Which inputs to re-resolve when another input's child BundleDeployment changes.

Joint resolution (:mod:`pivoter.inputs.held`) makes an input's answer depend on what the
other inputs installed: when a child is added, pivoted, or deleted, the inputs whose
``status.sharedDependencies`` name its package are queued (a holder deleted: they install the
package themselves), and so are the inputs that are unsatisfiable (a held version or API may
have been what stood in the way). Level-triggered: the reconcile reads the cluster afresh. Used
by the controllers of every input kind as a watch mapper.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pivoter.inputs.facts import ResolutionState
from pivoter.inputs.record import Record
from pivoter.kube import Object
from pivoter.pivot import ANNOTATION_INPUT, ANNOTATION_PACKAGE

__all__ = ["dependents_of"]


def _waits_on_others(obj: Mapping[str, Any], package: str) -> bool:
    status = obj.get("status") or {}
    if any(s.get("package") == package for s in status.get("sharedDependencies") or []):
        return True
    return Record.resolution_in(status) is ResolutionState.UNSATISFIABLE


def dependents_of(kind: str, inputs: Callable[[], list[Object]]) -> Callable[[Object], list[str]]:
    """A mapper from a child BundleDeployment of any input to the names of the inputs of
    ``kind`` (listed by ``inputs``, e.g. an informer's store) that depend on other inputs."""

    def mapper(bd: Object) -> list[str]:
        annotations = (bd.get("metadata") or {}).get("annotations") or {}
        owner = str(annotations.get(ANNOTATION_INPUT) or "")
        package = str(annotations.get(ANNOTATION_PACKAGE) or "")
        if not owner or not package:
            return []
        names = []
        for obj in inputs():
            name = str(obj["metadata"]["name"])
            if f"{kind}/{name}" != owner and _waits_on_others(obj, package):
                names.append(name)
        return names

    return mapper
