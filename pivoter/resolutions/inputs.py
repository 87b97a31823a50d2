"""The reconciler shared by the input kinds (Resolution, PlatformOperator): fetch, deletion
policy, delegate to the :class:`~pivoter.resolutions.engine.Engine`, write status once, Events.

A kind plugs in a :class:`Kind`: how to read its spec, how to render its status, and what
deletion means for it. Used by :mod:`pivoter.resolutions.controller` and
:mod:`pivoter.platformoperators`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pivoter.controller.controller import Result
from pivoter.kube import MERGE_PATCH, EventRecorder, Kube, NotFound, Resource
from pivoter.pivot import Children
from pivoter.resolutions.engine import Engine, Outcome
from pivoter.resolutions.record import Record
from pivoter.resolutions.spec import InputSpec

__all__ = ["FINALIZER", "InputReconciler", "Kind"]

log = logging.getLogger(__name__)

FINALIZER = "pivoter.io/cleanup"
DELETE_POLL = 2.0


@dataclass(frozen=True)
class Kind:
    """What differs between input kinds."""

    resource: Resource
    spec_of: Callable[[Mapping[str, Any]], InputSpec]
    status_of: Callable[[Mapping[str, Any], Outcome, int], dict[str, Any]]
    deletion_policy: Callable[[Mapping[str, Any]], str]
    """``Delete`` (remove what the input installed) or ``Orphan``."""


@dataclass
class InputReconciler:
    """Reconciles one input kind with the shared engine."""

    kube: Kube
    engine: Engine
    kind: Kind
    recorder: EventRecorder | None = None

    def reconcile(self, name: str) -> Result | None:
        """Converge the input ``name``; say when to look again."""
        try:
            obj = self.kube.get(self.kind.resource, name)
        except NotFound:
            return None
        metadata = obj["metadata"]
        spec = self.kind.spec_of(obj)
        if metadata.get("deletionTimestamp"):
            return self._delete(obj, spec)
        if FINALIZER not in (metadata.get("finalizers") or []):
            obj = self._finalizers(obj, [*(metadata.get("finalizers") or []), FINALIZER])
        record = Record.from_status(obj.get("status"))

        def persist(current: Record) -> None:
            self._patch_status(name, current.to_status())

        out = Outcome(record=record)
        try:
            self.engine.reconcile(obj, spec, record, persist, out)
            status = self.kind.status_of(obj, out, spec.generation)
            if _strip(status) != _strip(obj.get("status") or {}, keys=status):
                self._patch_status(name, status)
        finally:
            # What happened before a failure still happened, and may have been persisted (a
            # revision found edited, a pivot started): its Events are not lost with the retry.
            # A retry that finds the same again folds into the same Event's series.
            for type_, reason, message in out.events:
                self._event(obj, type_, reason, message)
        if out.requeue_after is not None:
            return Result(requeue_after=out.requeue_after)
        return None

    def _delete(self, obj: Mapping[str, Any], spec: InputSpec) -> Result | None:
        metadata = obj["metadata"]
        if FINALIZER not in (metadata.get("finalizers") or []):
            return None
        children = Children(self.kube, spec.ref)
        policy = self.kind.deletion_policy(obj)
        remaining = children.list()
        if policy == "Orphan":
            for bd in remaining.values():
                children.orphan(str(bd["metadata"]["name"]))
        elif remaining:
            for bd in remaining.values():
                if not bd["metadata"].get("deletionTimestamp"):
                    children.delete(str(bd["metadata"]["name"]))
            return Result(requeue_after=DELETE_POLL)
        self._finalizers(obj, [f for f in metadata["finalizers"] if f != FINALIZER])
        kept = "orphaned" if policy == "Orphan" else "removed"
        log.info("%s: deleted; what it installed was %s", spec.ref, kept)
        return None

    def _finalizers(self, obj: Mapping[str, Any], finalizers: list[str]) -> dict[str, Any]:
        patch = {
            "metadata": {
                "finalizers": finalizers,
                "resourceVersion": obj["metadata"]["resourceVersion"],
            }
        }
        return self.kube.merge_patch(self.kind.resource, obj["metadata"]["name"], patch)

    def _patch_status(self, name: str, status: dict[str, Any]) -> None:
        self.kube.request(
            "PATCH",
            self.kind.resource.path(None, name) + "/status",
            body={"status": status},
            content_type=MERGE_PATCH,
        )

    def _event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        log.info("%s %s: %s: %s", obj.get("kind"), obj["metadata"]["name"], reason, message)
        if self.recorder is None:
            return
        if type_ == "Warning":
            self.recorder.warning(dict(obj), reason, "Pivot", message)
        else:
            self.recorder.normal(dict(obj), reason, "Pivot", message)


def _strip(value: Any, keys: Mapping[str, Any] | None = None) -> Any:
    """``value`` without None entries (and, with ``keys``, only those keys): how a merge patch
    would leave it, to skip writes that change nothing."""
    if isinstance(value, Mapping):
        return {
            k: _strip(v) for k, v in value.items() if v is not None and (keys is None or k in keys)
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value
