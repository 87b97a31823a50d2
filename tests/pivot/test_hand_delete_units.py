"""A child deleted by hand and a revision deleted by hand, the pure parts (issue 15 items 10 and
11): when a child's finalizer keeps its objects for the re-created child
(:func:`pivoter.pivot.children.keep_on_delete`), how a revision ConfigMap event maps to its
input (:func:`pivoter.resolvesets.input_names`), the persisted list of children being
re-created, and how the status names a missing child. The API server is a small fake: only
``get`` of the input is read."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pivoter.inputs.outcome import Draft
from pivoter.inputs.passfacts import recreated
from pivoter.inputs.record import Record
from pivoter.inputs.status import healthy, installed
from pivoter.kube import NotFound, Resource, Unavailable
from pivoter.pivot import Children, ChildReport, ChildState, keep_on_delete
from pivoter.platformoperators.status import platform_operator_status
from pivoter.resolvesets import InputRef, input_names
from resolver.resolveset import Entry, ResolveSet


class FakeKube:
    """Answers ``get`` from a dict of objects by name; raises ``error`` when set."""

    def __init__(self, objects: dict[str, dict[str, Any]], error: Exception | None = None) -> None:
        self.objects = objects
        self.error = error

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        if self.error is not None:
            raise self.error
        if name not in self.objects:
            raise NotFound(404, "NotFound", f"{resource.plural} {name} not found")
        return copy.deepcopy(self.objects[name])


def child(**annotations: str | None) -> dict[str, Any]:
    base: dict[str, Any] = {
        "pivoter.io/input": "Resolution/web",
        "pivoter.io/package": "web",
        "pivoter.io/bundle": "web.v1.0.0",
        "pivoter.io/revision": "1",
    }
    base.update(annotations)
    return {
        "metadata": {
            "name": "web-web",
            "annotations": {k: v for k, v in base.items() if v is not None},
            "ownerReferences": [
                {
                    "apiVersion": "pivoter.io/v1alpha1",
                    "kind": "Resolution",
                    "name": "web",
                    "uid": "u1",
                    "controller": True,
                }
            ],
        }
    }


def resolution(**status: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"activeRevision": 1, "selection": [{"package": "web"}]}
    body.update(status)
    return {"metadata": {"name": "web", "uid": "u1"}, "status": body}


def test_a_child_its_input_still_wants_keeps_its_objects() -> None:
    kept = keep_on_delete(FakeKube({"web": resolution()}), child())  # type: ignore[arg-type]
    assert kept is not None
    assert "BundleDeployment web-web (bundle web.v1.0.0) was deleted" in kept.message
    assert "stay in place" in kept.message
    assert kept.input["metadata"]["name"] == "web"


@pytest.mark.parametrize(
    ("objects", "bd"),
    [
        ({"web": resolution()}, child(**{"pivoter.io/uninstall": "true"})),  # the input's own
        ({}, child()),  # the input is gone
        ({"web": {**resolution(), "metadata": {"name": "web", "uid": "other"}}}, child()),
        (
            {
                "web": {
                    **resolution(),
                    "metadata": {"name": "web", "uid": "u1", "deletionTimestamp": "x"},
                }
            },
            child(),
        ),
        ({"web": resolution(selection=[{"package": "db"}])}, child()),  # dropped from the set
        ({"web": resolution()}, child(**{"pivoter.io/input": None})),  # released (Orphan)
        ({"web": resolution()}, child(**{"pivoter.io/input": "Nothing/web"})),
    ],
)
def test_every_other_child_uninstalls(objects: dict[str, Any], bd: dict[str, Any]) -> None:
    assert keep_on_delete(FakeKube(objects), bd) is None  # type: ignore[arg-type]


def test_a_child_without_a_controller_reference_uninstalls() -> None:
    bd = child()
    bd["metadata"]["ownerReferences"] = []
    assert keep_on_delete(FakeKube({"web": resolution()}), bd) is None  # type: ignore[arg-type]


def test_a_platform_operator_child_is_kept_only_outside_a_pivot() -> None:
    bd = child(**{"pivoter.io/input": "PlatformOperator/web"})
    bd["metadata"]["ownerReferences"][0]["kind"] = "PlatformOperator"
    po = {"metadata": {"name": "web", "uid": "u1"}, "status": {"activeRevision": 1}}
    assert keep_on_delete(FakeKube({"web": po}), bd) is not None  # type: ignore[arg-type]
    pivoting = copy.deepcopy(po)
    pivoting["status"]["pivot"] = {"phase": "Pruning", "revision": 2}
    assert keep_on_delete(FakeKube({"web": pivoting}), bd) is None  # type: ignore[arg-type]
    other = copy.deepcopy(po)
    other["status"]["activeRevision"] = 3
    assert keep_on_delete(FakeKube({"web": other}), bd) is None  # type: ignore[arg-type]


def _of(kind: str) -> dict[str, Any]:
    bd = child(**{"pivoter.io/input": f"{kind}/web"})
    bd["metadata"]["ownerReferences"][0]["kind"] = kind
    return bd


def test_each_kind_says_in_its_own_status_which_children_it_wants() -> None:
    """The status is read as the input's kind defines it (pivoter.apis.inputs), never by its
    shape: a ClusterExtension by its selection, a PlatformOperator by its active revision even
    if a selection were written into its status."""
    extension = _of("ClusterExtension")
    assert keep_on_delete(FakeKube({"web": resolution()}), extension) is not None  # type: ignore[arg-type]
    dropped = resolution(selection=[{"package": "db"}])
    assert keep_on_delete(FakeKube({"web": dropped}), extension) is None  # type: ignore[arg-type]
    operator = _of("PlatformOperator")
    pivoting = resolution(pivot={"phase": "Applying", "revision": 2})
    assert keep_on_delete(FakeKube({"web": pivoting}), operator) is None  # type: ignore[arg-type]


def test_an_unreadable_input_fails_the_finalizer_instead_of_guessing() -> None:
    kube = FakeKube({}, error=Unavailable(503, "ServiceUnavailable", "etcd is down"))
    with pytest.raises(Unavailable):
        keep_on_delete(kube, child())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("metadata", "names"),
    [
        ({"annotations": {"pivoter.io/input": "Resolution/web"}}, ["web"]),
        ({"annotations": {"pivoter.io/input": "PlatformOperator/web"}}, []),
        ({"labels": {"pivoter.io/input-kind": "resolution", "pivoter.io/input-name": "a"}}, ["a"]),
        ({"labels": {"pivoter.io/input-kind": "platformoperator"}}, []),
        ({}, []),
    ],
)
def test_revision_events_map_to_their_input(metadata: dict[str, Any], names: list[str]) -> None:
    assert input_names({"metadata": metadata}, "Resolution") == names


def test_the_packages_being_recreated_survive_a_restart() -> None:
    record = Record(active=1, recreating=("web",))
    assert Record.from_status(record.to_status()).recreating == ("web",)
    assert Record.from_status({"pivot": {"recreating": "web"}}).recreating == ()


def test_status_names_the_missing_child_and_not_nothing_installed() -> None:
    target = ResolveSet(
        (
            Entry("web", "1.0.0", "web.v1.0.0", "stable", "c", "x/web:1", "core-rukpak-io-plain"),
            Entry("db", "1.0.0", "db.v1.0.0", "stable", "c", "x/db:1", "core-rukpak-io-plain"),
        )
    )
    reports = [
        ChildReport("web", "res-web", ChildState.PENDING, "waiting for the controller"),
        ChildReport("db", "res-db", ChildState.READY, "installed"),
    ]
    out = Draft(record=Record(active=1), reports=recreated(reports, ("web",), target)).outcome()
    found = healthy(out)
    assert (found.status, found.reason) == ("False", "ChildMissing")
    assert found.message == (
        "BundleDeployment res-web (bundle web.v1.0.0) was deleted; re-creating it "
        "(now Pending: waiting for the controller)"
    )
    assert "res-db" not in found.message
    assert installed(out).reason == "BundleDeploymentMissing"
    # Back and ready: nothing is said any more.
    ready = [ChildReport("web", "res-web", ChildState.READY, "ok"), reports[1]]
    assert (
        healthy(
            Draft(record=Record(active=1), reports=recreated(ready, ("web",), target)).outcome()
        ).status
        == "True"
    )


def test_no_reports_with_an_active_revision_is_not_nothing_installed() -> None:
    assert "nothing is installed" not in healthy(Draft(record=Record(active=2)).outcome()).message
    assert healthy(Draft(record=Record()).outcome()).message == "nothing is installed yet"


def test_input_ref_is_not_confused_with_another_kind() -> None:
    assert (
        input_names(
            {"metadata": {"annotations": {"pivoter.io/input": "Resolution/x"}}}, "PlatformOperator"
        )
        == []
    )
    assert InputRef("Resolution", "x").kind_label == "resolution"


def test_a_child_being_deleted_is_not_ready_whatever_its_conditions_say() -> None:
    bd = child()
    bd["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    bd["metadata"]["generation"] = 1
    bd["status"] = {
        "conditions": [
            {"type": t, "status": "True", "reason": "x", "message": "", "observedGeneration": 1}
            for t in ("HasValidBundle", "Installed", "Healthy")
        ]
    }
    children = Children(FakeKube({}), InputRef("Resolution", "web"))  # type: ignore[arg-type]
    report = children.report("web", bd, bundle="web.v1.0.0")
    assert report.state is ChildState.PENDING
    assert report.message == "BundleDeployment web-web (bundle web.v1.0.0) is being deleted"
    del bd["metadata"]["deletionTimestamp"]
    assert children.report("web", bd).state is ChildState.READY


def test_a_platform_operator_names_no_bundle_deployment_that_is_gone() -> None:
    po = {"metadata": {"name": "op"}, "spec": {"package": {"name": "op"}}}
    missing = ChildReport("op", "op", ChildState.MISSING, "BundleDeployment op was deleted")
    status = platform_operator_status(
        po, Draft(record=Record(active=1), reports=[missing]).outcome(), 1
    )
    assert status["activeBundleDeployment"] is None
    (cond,) = [c for c in status["conditions"] if c["type"] == "Installed"]
    assert cond["message"] == "BundleDeployment op was deleted"
    ready = ChildReport("op", "op", ChildState.READY, "ok")
    status = platform_operator_status(
        po, Draft(record=Record(active=1), reports=[ready]).outcome(), 1
    )
    assert status["activeBundleDeployment"] == {"name": "op"}
