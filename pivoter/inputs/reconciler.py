"""The reconciler shared by every input kind (:data:`pivoter.apis.inputs.INPUT_KINDS`): fetch,
deletion policy, delegate to the :class:`~pivoter.inputs.engine.InputEngine`, write status
once, Events.

A kind plugs in a :class:`Kind`, built for one entry of the registry: how to read its spec, how
to render its status, and what deletion means for it. Used by
:mod:`pivoter.inputs.controller`, :mod:`pivoter.platformoperators` and :mod:`pivoter.olmv1`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pivoter.apis.inputs import input_kind
from pivoter.apis.views import FieldError
from pivoter.inputs.engine import InputEngine
from pivoter.inputs.outcome import Draft, Outcome
from pivoter.inputs.record import Record
from pivoter.inputs.spec import InputSpec
from pivoter.kube import EventRecorder, Kube, NotFound, Resource
from pivoter.kube.mergepatch import replacing
from pivoter.pivot import Children, ChildState, UninstallableBundle, desired_child, state_of
from pivoter.pivot.state import parse_time
from pivoter.resolvesets import InputRef
from pivoter.runtime.controller import Result
from pivoter.runtime.echoes import Echoes

__all__ = ["FINALIZER", "InputReconciler", "Kind"]

log = logging.getLogger(__name__)

FINALIZER = "pivoter.io/cleanup"
ANNOTATION_UNINSTALLING = "pivoter.io/uninstalling"
"""On an input being deleted, once it started deleting its children."""
ANNOTATION_ADOPTING = "pivoter.io/adopting"
"""On a child re-created while its input is being deleted: it is deleted once installed (so its
uninstall covers the objects a child deleted by hand left in place)."""
DELETE_POLL = 2.0


@dataclass(frozen=True)
class Kind:
    """What differs in behaviour between input kinds; what the API says of each is its entry
    of :data:`pivoter.apis.inputs.INPUT_KINDS`."""

    resource: Resource
    """The resource of a registered input kind (anything else is refused)."""
    spec_of: Callable[[Mapping[str, Any]], InputSpec]
    status_of: Callable[[Mapping[str, Any], Outcome, int], dict[str, Any]]
    deletion_policy: Callable[[Mapping[str, Any]], str]
    """``Delete`` (remove what the input installed) or ``Orphan``."""

    def __post_init__(self) -> None:
        # A kind left out of the registry would be left out of everything that iterates it
        # (joint resolution, a child's finalizer, admission): refuse it here, at wiring time.
        registered = input_kind(self.resource.kind)
        if registered is None or registered.resource != self.resource:
            raise ValueError(f"{self.resource} is not an input kind of pivoter.apis.inputs")


@dataclass
class InputReconciler:
    """Reconciles one input kind with the shared engine."""

    kube: Kube
    engine: InputEngine
    kind: Kind
    recorder: EventRecorder | None = None
    echoes: Echoes | None = None
    """Notes each status patch before it is sent, so that the watch ignores its echo (none:
    every update queues the input again)."""

    def reconcile(self, name: str) -> Result | None:
        """Converge the input ``name``; say when to look again."""
        try:
            obj = self.kube.get(self.kind.resource, name)
        except NotFound:
            return None
        metadata = obj["metadata"]
        try:
            spec = self.kind.spec_of(obj)
        except FieldError as err:
            return self._unreadable(obj, err)
        if metadata.get("deletionTimestamp"):
            return self._delete(obj, spec)
        if FINALIZER not in (metadata.get("finalizers") or []):
            obj = self.kube.set_finalizers(
                self.kind.resource, obj, [*(metadata.get("finalizers") or []), FINALIZER]
            )
        record = Record.from_status(obj.get("status"))

        def persist(current: Record) -> None:
            self._status(obj, current.to_status())

        def publish(now: Outcome) -> None:
            # What a pass found before it acts (a child deleted by hand, before its pivot):
            # written even when the pass then heals it before its own status write.
            status = self.kind.status_of(obj, now, spec.generation)
            self._status(obj, replacing(obj.get("status") or {}, status))

        out = Draft(record=record, publish=publish)
        try:
            outcome = self.engine.reconcile(obj, spec, record, persist, out)
            status = self.kind.status_of(obj, outcome, spec.generation)
            if _strip(status) != _strip(obj.get("status") or {}, keys=status):
                # Each section exactly as computed (a finished plan drops its pending marker).
                self._status(obj, replacing(obj.get("status") or {}, status))
        finally:
            # What happened before a failure still happened, and may have been persisted (a
            # revision found edited, a pivot started): its Events are not lost with the retry.
            # A retry that finds the same again folds into the same Event's series.
            for type_, reason, message in out.events:
                self._event(obj, type_, reason, message)
        if out.requeue_after is not None:
            return Result(requeue_after=out.requeue_after)
        return None

    def _status(self, obj: Mapping[str, Any], status: dict[str, Any]) -> None:
        if self.echoes is not None:
            self.echoes.writing(obj, status)  # before: its echo may come before the response
        self.kube.patch_status(self.kind.resource, str(obj["metadata"]["name"]), status)

    def _delete(self, obj: Mapping[str, Any], spec: InputSpec) -> Result | None:
        metadata = obj["metadata"]
        if FINALIZER not in (metadata.get("finalizers") or []):
            return None
        children = Children(self.kube, spec.ref, primary=spec.primary_package)
        policy = self.kind.deletion_policy(obj)
        remaining = children.list()
        uninstalling = bool((metadata.get("annotations") or {}).get(ANNOTATION_UNINSTALLING))
        if policy == "Orphan":
            for bd in remaining.values():
                children.orphan(str(bd["metadata"]["name"]))
        elif not uninstalling and self._adopting(obj, spec, children, remaining):
            return Result(requeue_after=DELETE_POLL)
        elif remaining:
            if not uninstalling:
                # From here on a missing child is one this deletion removed: never re-created.
                marker = {"metadata": {"annotations": {ANNOTATION_UNINSTALLING: "true"}}}
                self.kube.merge_patch(self.kind.resource, str(metadata["name"]), marker)
            for bd in remaining.values():
                if not bd["metadata"].get("deletionTimestamp"):
                    children.delete(str(bd["metadata"]["name"]))
            return Result(requeue_after=DELETE_POLL)
        self.kube.set_finalizers(
            self.kind.resource, obj, [f for f in metadata["finalizers"] if f != FINALIZER]
        )
        kept = "orphaned" if policy == "Orphan" else "removed"
        log.info("%s: deleted; what it installed was %s", spec.ref, kept)
        return None

    def _unreadable(self, obj: Mapping[str, Any], err: FieldError) -> Result | None:
        """An input whose spec cannot be read (an object stored before its CRD's schema, an
        annotation no schema checks): say so, and change nothing until it is fixed (an edit
        queues it again). Deleting it keeps what it installed: what it asked for is unknown, so
        its children are orphaned (they and their objects stay; delete them to uninstall)."""
        metadata = obj["metadata"]
        name = str(metadata["name"])
        if not metadata.get("deletionTimestamp"):
            self._event(
                obj, "Warning", "InvalidSpec", f"{err}; nothing is changed until it is fixed"
            )
            return None
        if FINALIZER not in (metadata.get("finalizers") or []):
            return None
        children = Children(self.kube, InputRef(self.kind.resource.kind, name))
        for bd in children.list().values():
            children.orphan(str(bd["metadata"]["name"]))
        self._event(
            obj,
            "Warning",
            "InvalidSpec",
            f"{err}; deleted without uninstalling: its BundleDeployments are kept, delete them "
            "to remove what they installed",
        )
        self.kube.set_finalizers(
            self.kind.resource, obj, [f for f in metadata["finalizers"] if f != FINALIZER]
        )
        return None

    def _adopting(
        self,
        obj: Mapping[str, Any],
        spec: InputSpec,
        children: Children,
        remaining: Mapping[str, Any],
    ) -> bool:
        """Before the children are deleted: re-create each child of the active revision that
        is missing (one deleted by hand may have left its objects in place, docs/pivot.md) and
        wait until it is installed, so that its uninstall removes those objects too. True while
        waiting; gives up after the progress deadline (counted from the deletion)."""
        record = Record.from_status(obj.get("status"))
        if record.active is None:
            return False
        since = parse_time(str(obj["metadata"].get("deletionTimestamp") or ""))
        if since is not None and self.engine.clock() - since > spec.progress_deadline:
            log.warning("%s: deleting without the children it could not re-create", spec.ref)
            return False
        document = self.engine.read(self.engine.store.get(spec.ref, record.active))
        if document is None:
            return False
        waiting = False
        for entry in document.entries:
            bd = remaining.get(entry.package)
            if bd is None:
                try:
                    desired = desired_child(
                        spec.ref,
                        entry,
                        revision=record.active,
                        owner=obj,
                        service_account=spec.service_account,
                        settings=spec.child_settings,
                        primary=entry.package == spec.primary_package,
                    )
                except UninstallableBundle:
                    continue
                desired["metadata"]["annotations"][ANNOTATION_ADOPTING] = "true"
                log.info(
                    "%s: re-creating %s to uninstall it", spec.ref, desired["metadata"]["name"]
                )
                children.apply(desired)
                waiting = True
                continue
            annotations = bd["metadata"].get("annotations") or {}
            adopting = entry.package in record.recreating or annotations.get(ANNOTATION_ADOPTING)
            if adopting and not bd["metadata"].get("deletionTimestamp"):
                state, _, _ = state_of(bd)
                waiting = waiting or state in (ChildState.PENDING, ChildState.UNPACK_PENDING)
        return waiting

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
