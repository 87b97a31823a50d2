"""The two adoption controllers' keys, without a cluster: which Resolutions the adoption
controller drives, and that it leaves one alone while the Subscription controller is still
starting it."""

from __future__ import annotations

from typing import Any, cast

from pivoter.kube import Kube
from pivoter.olmv0 import handover
from pivoter.olmv0.adoptions import STEP_PERIOD, AdoptionDriver, Starts, in_progress
from pivoter.olmv0.mapping import ANNOTATION_ADOPTION
from pivoter.runtime.controller import Result


def _resolution(step: str | None) -> dict[str, Any]:
    annotations = {ANNOTATION_ADOPTION: step} if step else {}
    return {"metadata": {"name": "olmv0-ops-op", "annotations": annotations}}


def test_only_adoptions_in_progress_are_driven() -> None:
    assert in_progress(_resolution(handover.PLANNING)) == ["olmv0-ops-op"]
    assert in_progress(_resolution(handover.RELEASING)) == ["olmv0-ops-op"]
    assert in_progress(_resolution(handover.ADOPTED)) == []
    assert in_progress(_resolution(None)) == []


class NoAPI:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the adoption was advanced ({name}) while it was being started")


def test_an_adoption_being_started_waits_for_its_start() -> None:
    starts = Starts()
    driver = AdoptionDriver(cast(Kube, NoAPI()), starts)
    with starts.starting("olmv0-ops-op"):
        assert "olmv0-ops-op" in starts
        assert driver.reconcile("olmv0-ops-op") == Result(requeue_after=STEP_PERIOD)
    assert "olmv0-ops-op" not in starts
