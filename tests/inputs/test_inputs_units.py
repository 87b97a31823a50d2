"""The input reconciler keeps the Events of a pass that failed half-way (no cluster: fakes for
the API and the engine, which are not what is under test here)."""

from __future__ import annotations

from typing import Any

import pytest

from pivoter.apis.inputs import INPUT_KINDS
from pivoter.inputs.controller import resolution_kind
from pivoter.inputs.outcome import Outcome
from pivoter.inputs.reconciler import FINALIZER, InputReconciler, Kind
from pivoter.inputs.record import Record
from pivoter.kube import Resource
from provisioners.apply.kubeerrors import Unavailable

RESOLUTION: dict[str, Any] = {
    "apiVersion": "pivoter.io/v1alpha1",
    "kind": "Resolution",
    "metadata": {
        "name": "r",
        "uid": "u1",
        "generation": 1,
        "resourceVersion": "7",
        "finalizers": [FINALIZER],
    },
    "spec": {"packages": [{"name": "web"}]},
}


class FakeKube:
    def get(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        return RESOLUTION

    def request(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {}

    def patch_status(
        self, resource: Any, name: str, status: Any, namespace: str | None = None
    ) -> dict[str, Any]:
        return {}


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def warning(self, obj: Any, reason: str, action: str, note: str) -> None:
        self.seen.append(("Warning", reason))

    def normal(self, obj: Any, reason: str, action: str, note: str) -> None:
        self.seen.append(("Normal", reason))


class FailingEngine:
    """Finds an edited revision, persists a new pivot, then loses the API server."""

    def reconcile(self, obj: Any, spec: Any, record: Any, persist: Any, out: Outcome) -> Outcome:
        out.events.append(("Warning", "ResolveSetModified", "revision 1 was edited by hand"))
        out.events.append(("Normal", "PivotStarted", "pivoting to revision 2"))
        persist(record)
        raise Unavailable(0, "", "the API server went away")


def test_events_of_a_pass_that_failed_half_way_are_still_recorded() -> None:
    recorder = Recorder()
    reconciler = InputReconciler(
        FakeKube(),  # type: ignore[arg-type]
        FailingEngine(),  # type: ignore[arg-type]
        resolution_kind(),
        recorder=recorder,  # type: ignore[arg-type]
    )
    with pytest.raises(Unavailable):
        reconciler.reconcile("r")
    assert recorder.seen == [("Warning", "ResolveSetModified"), ("Normal", "PivotStarted")]


@pytest.mark.parametrize(
    "resource",
    [
        Resource("pivoter.io/v1alpha1", "Widget", "widgets", namespaced=False),
        # A kind's name with another group: not the registered resource.
        Resource("example.com/v1", "Resolution", "resolutions", namespaced=False),
    ],
)
def test_a_kind_is_built_only_for_a_registered_input_kind(resource: Resource) -> None:
    """Joint resolution, a child's finalizer and admission iterate pivoter.apis.inputs: a kind
    missing there would be missed by them, so its controller is refused when it is wired."""
    kind = resolution_kind()
    with pytest.raises(ValueError, match=r"is not an input kind of pivoter\.apis\.inputs"):
        Kind(resource, kind.spec_of, kind.status_of, kind.deletion_policy)
    for registered in INPUT_KINDS:
        assert Kind(registered.resource, kind.spec_of, kind.status_of, kind.deletion_policy)


@pytest.mark.parametrize(
    "status",
    [
        None,
        {},
        {"pivot": None},
        {"pivot": "edited by hand"},
        {"pivot": {"resolution": "Unsatisfiable"}},
        {"pivot": {"resolution": "Resolved", "phase": "Succeeded", "revision": 2}},
        {"pivot": {"resolution": "NotAState"}},
        {"pivot": {"resolution": 7}},
    ],
)
def test_the_resolution_read_alone_is_the_records(status: dict[str, Any] | None) -> None:
    assert Record.resolution_in(status) is Record.from_status(status).resolution
