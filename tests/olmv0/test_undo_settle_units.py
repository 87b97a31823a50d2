"""The hand-back's last step (``Cleaning``, pivoter.olmv0.undo) without a cluster: a mark it put
back and OLM v0 took off again is put back, and the children (which hold the inventory) stay
until a whole quiet window passed with nothing to put back. The race it guards against (OLM v0
running an InstallPlan's steps once more after it is Complete, whose two-way patch resets a
RoleBinding to its manifest) is run against the real OLM v0 in test_undo_crash_cluster.py."""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from typing import Any, cast

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS
from pivoter.kube import Kube, NotFound, Object, Resource
from pivoter.olmv0 import quiet, undo
from pivoter.olmv0.resources import CSVS

NAMESPACE = "ops"
CSV = "op.v1.0.0"
CHILD = "olmv0-ops-op-abc"
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True)
TARGET = undo.UndoTarget(
    resolution="olmv0-ops-op", namespace=NAMESPACE, subscription="op", starting_csv=CSV
)


def _merge(into: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            into.pop(key, None)
        elif isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


class Objects:
    """The calls the Cleaning step makes of a Kube, on objects in memory."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], Object] = {}
        self.writes = 0

    def put(self, resource: Resource, obj: Object) -> None:
        self.items[(resource.kind, obj["metadata"]["name"])] = obj

    def resource(self, api_version: str, kind: str) -> Resource:
        assert kind == ROLE_BINDINGS.kind
        return ROLE_BINDINGS

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        try:
            return copy.deepcopy(self.items[(resource.kind, name)])
        except KeyError:
            raise NotFound(404, "NotFound", f"{resource.kind} {name}") from None

    def list(
        self, resource: Resource, namespace: str | None = None, *, label_selector: str = ""
    ) -> tuple[list[Object], str]:
        key, _, value = label_selector.partition("=")
        found = [
            copy.deepcopy(o)
            for (kind, _), o in self.items.items()
            if kind == resource.kind and (o["metadata"].get("labels") or {}).get(key) == value
        ]
        return found, "1"

    def merge_patch(
        self, resource: Resource, name: str, patch: Object, namespace: str | None = None
    ) -> Object:
        obj = self.items[(resource.kind, name)]
        _merge(obj, patch)
        obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
        self.writes += 1
        return copy.deepcopy(obj)

    def set_finalizers(self, resource: Resource, obj: Object, finalizers: Sequence[str]) -> Object:
        name = obj["metadata"]["name"]
        if not finalizers and self.items[(resource.kind, name)]["metadata"].get(
            "deletionTimestamp"
        ):
            del self.items[(resource.kind, name)]
            return obj
        return self.merge_patch(resource, name, {"metadata": {"finalizers": [*finalizers]}})


def _cluster() -> Objects:
    objects = Objects()
    objects.put(CSVS, {"metadata": {"name": CSV, "namespace": NAMESPACE, "uid": "csv-uid"}})
    objects.put(
        ROLE_BINDINGS,
        {
            "metadata": {
                "name": "agent",
                "namespace": NAMESPACE,
                "uid": "rb-uid",
                "resourceVersion": "10",
                "labels": {"olm.managed": "true"},
            }
        },
    )
    inventory = [
        {
            "apiVersion": ROLE_BINDINGS.api_version,
            "kind": ROLE_BINDINGS.kind,
            "namespace": NAMESPACE,
            "name": "agent",
        }
    ]
    objects.put(
        BUNDLE_DEPLOYMENTS,
        {
            "metadata": {
                "name": CHILD,
                "resourceVersion": "1",
                "deletionTimestamp": "2026-11-29T15:11:15Z",
                "finalizers": [undo.FINALIZER],
                "labels": {undo.LABEL_UNDO: TARGET.resolution},
                "annotations": {undo.ANNOTATION_UNDO: undo.CLEANING},
            },
            "status": {"inventory": inventory},
        },
    )
    return objects


def _owners(objects: Objects) -> list[str]:
    metadata = objects.get(ROLE_BINDINGS, "agent")["metadata"]
    return [o["uid"] for o in metadata.get("ownerReferences") or []]


def _backdate(objects: Objects, seconds: float) -> None:
    """As if the window recorded on the child had started ``seconds`` earlier."""
    annotations = objects.items[(BUNDLE_DEPLOYMENTS.kind, CHILD)]["metadata"]["annotations"]
    digest, _, since = annotations[undo.ANNOTATION_SETTLED].partition(" ")
    annotations[undo.ANNOTATION_SETTLED] = f"{digest} {float(since) - seconds:.3f}"


def test_a_mark_olm_takes_off_again_is_put_back_before_the_children_go() -> None:
    objects = _cluster()
    kube = cast(Kube, objects)

    first = undo.STEPS[undo.CLEANING](kube, TARGET)
    assert first.step == undo.CLEANING, first
    assert _owners(objects) == ["csv-uid"]
    assert (BUNDLE_DEPLOYMENTS.kind, CHILD) in objects.items

    # Nothing to put back, but the window has not passed: the children stay.
    assert undo.STEPS[undo.CLEANING](kube, TARGET).step == undo.CLEANING
    assert (BUNDLE_DEPLOYMENTS.kind, CHILD) in objects.items

    # OLM v0 runs the InstallPlan's RoleBinding step once more (a two-way patch to the
    # manifest): the ownerReference goes. A window that had passed starts again.
    _backdate(objects, quiet.QUIET_SECONDS + 1)
    objects.merge_patch(ROLE_BINDINGS, "agent", {"metadata": {"ownerReferences": None}})
    again = undo.STEPS[undo.CLEANING](kube, TARGET)
    assert again.step == undo.CLEANING, again
    assert _owners(objects) == ["csv-uid"]
    assert (BUNDLE_DEPLOYMENTS.kind, CHILD) in objects.items

    # A whole window with nothing to put back: the children go.
    _backdate(objects, quiet.QUIET_SECONDS + 1)
    writes = objects.writes
    done = undo.STEPS[undo.CLEANING](kube, TARGET)
    assert done.step == undo.HANDED_BACK, done
    assert objects.writes == writes  # no mark written, only the finalizer taken off
    assert (BUNDLE_DEPLOYMENTS.kind, CHILD) not in objects.items
    assert _owners(objects) == ["csv-uid"]


def test_the_window_survives_a_restart() -> None:
    """The window is recorded on the children: an undo killed and run again goes on with it."""
    objects = _cluster()
    kube = cast(Kube, objects)
    undo.STEPS[undo.CLEANING](kube, TARGET)
    annotations = objects.get(BUNDLE_DEPLOYMENTS, CHILD)["metadata"]["annotations"]
    _, _, since = annotations[undo.ANNOTATION_SETTLED].partition(" ")
    assert abs(float(since) - time.time()) < 60
    _backdate(objects, quiet.QUIET_SECONDS + 1)
    assert undo.STEPS[undo.CLEANING](kube, TARGET).step == undo.HANDED_BACK
