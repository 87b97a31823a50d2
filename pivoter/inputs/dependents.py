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
from pivoter.runtime.cache import Store

__all__ = ["WAITS_ON_INDEX", "dependents_of", "waits_on"]

WAITS_ON_INDEX = "pivoter.io/waits-on"
"""An index of the inputs' cache: the packages of other inputs an input's answer depends on."""
_ANY = "*"
"""Under this value: the unsatisfiable inputs (any other input's package may be in their way)."""


def waits_on(obj: Mapping[str, Any]) -> list[str]:
    """The packages whose holders' changes ``obj`` re-resolves for: its shared dependencies, and
    every package (``*``) when it is unsatisfiable (a held version or API may have been what
    stood in the way)."""
    status = obj.get("status") or {}
    if not isinstance(status, dict):
        return []
    shared = status.get("sharedDependencies") or []
    found = [str(s.get("package")) for s in shared if isinstance(s, dict) and s.get("package")]
    if Record.resolution_in(status) is ResolutionState.UNSATISFIABLE:
        found.append(_ANY)
    return found


def dependents_of(kind: str, inputs: Store) -> Callable[[Object], list[str]]:
    """A mapper from a child BundleDeployment of any input to the names of the inputs of
    ``kind`` (cached in ``inputs``, an informer's store, indexed by :func:`waits_on`: one child
    event reads the inputs that wait on its package, not every input) that depend on other
    inputs."""
    inputs.add_index(WAITS_ON_INDEX, waits_on)

    def mapper(bd: Object) -> list[str]:
        annotations = (bd.get("metadata") or {}).get("annotations") or {}
        owner = str(annotations.get(ANNOTATION_INPUT) or "")
        package = str(annotations.get(ANNOTATION_PACKAGE) or "")
        if not owner or not package:
            return []
        waiting = inputs.by_index(WAITS_ON_INDEX, package) + inputs.by_index(WAITS_ON_INDEX, _ANY)
        names = {str(obj["metadata"]["name"]) for obj in waiting}
        return sorted(name for name in names if f"{kind}/{name}" != owner)

    return mapper
