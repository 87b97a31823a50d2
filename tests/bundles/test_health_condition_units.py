"""The ``Healthy`` condition alone, from objects a cache answers (no API server): its message
names each failing object, up to ten."""

from __future__ import annotations

from typing import Any, cast

from pivoter.apis import rukpak
from pivoter.apis.conditions import FALSE, TRUE, Condition
from pivoter.controllers.health import healthy_condition
from pivoter.kube import Kube
from provisioners.apply.objects import ObjectRef

NO_API = cast(Kube, None)  # every object below is answered by ``read``


def _deployment(ready: int) -> dict[str, Any]:
    status = {"updatedReplicas": 1, "availableReplicas": ready}
    return {"kind": "Deployment", "spec": {"replicas": 1}, "status": status}


def test_all_healthy() -> None:
    refs = [ObjectRef("apps/v1", "Deployment", "ns", "web")]
    healthy, failing = healthy_condition(NO_API, refs, read=lambda ref: _deployment(1))
    assert failing == []
    assert healthy == Condition(
        rukpak.TYPE_HEALTHY, TRUE, rukpak.REASON_HEALTHY, "All 1 installed objects are healthy"
    )


def test_the_message_names_ten_failing_objects_and_counts_the_rest() -> None:
    refs = [ObjectRef("apps/v1", "Deployment", "ns", f"d{i}") for i in range(12)]
    healthy, failing = healthy_condition(NO_API, refs, read=lambda ref: _deployment(0))
    assert len(failing) == 12
    assert healthy.status == FALSE
    assert healthy.reason == rukpak.REASON_UNHEALTHY
    assert healthy.message.startswith("Deployment ns/d0: 0 of 1 replicas available; ")
    assert "ns/d9:" in healthy.message
    assert "ns/d10:" not in healthy.message
    assert healthy.message.endswith(" (and 2 more)")
