"""The drift-correction step alone, without a cluster: the ``Drifted`` condition and Event for
what a reconcile found (tests/drift/test_drift_cluster.py finds and corrects drift for real)."""

from __future__ import annotations

from typing import Any, cast

from pivoter.apis.conditions import FALSE, TRUE, Condition
from pivoter.controllers.drift import Drift, DriftReport
from pivoter.controllers.driftcorrection import (
    REASON_DRIFT_CORRECTED,
    REASON_DRIFT_DETECTED,
    REASON_NO_DRIFT,
    TYPE_DRIFTED,
    drift_conditions,
)
from pivoter.controllers.install import InstallResult
from pivoter.kube import EventRecorder
from provisioners.apply.objects import ObjectRef

REF = ObjectRef("v1", "ConfigMap", "ns", "web")
REPORT = DriftReport(drifts=[Drift(REF, "changed (data.k)")])


class Events:
    """Records the Events a step would send."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str]] = []

    def normal(self, regarding: Any, reason: str, action: str, note: str) -> None:
        self.sent.append(("Normal", reason, note))

    def warning(self, regarding: Any, reason: str, action: str, note: str) -> None:
        self.sent.append(("Warning", reason, note))


def _bd(drifted: str | None = None) -> dict[str, Any]:
    conditions = [{"type": TYPE_DRIFTED, "status": drifted}] if drifted else []
    return {"metadata": {"name": "web"}, "status": {"conditions": conditions}}


def _recorder(events: Events) -> EventRecorder:
    return cast(EventRecorder, events)


def test_no_drift_is_said_once() -> None:
    nothing = InstallResult(refs=[REF], applied=False)
    assert drift_conditions(_bd(), nothing, None) == [
        Condition(TYPE_DRIFTED, FALSE, REASON_NO_DRIFT, "The installed objects match the bundle")
    ]
    assert drift_conditions(_bd(drifted=FALSE), nothing, None) == []


def test_a_correction_is_a_normal_event_and_a_report_a_warning() -> None:
    events = Events()
    corrected = InstallResult(refs=[REF], applied=True, report=REPORT, corrected=True)
    message = "Restored ConfigMap ns/web changed (data.k)"
    assert drift_conditions(_bd(), corrected, _recorder(events)) == [
        Condition(TYPE_DRIFTED, FALSE, REASON_DRIFT_CORRECTED, message)
    ]
    reported = InstallResult(refs=[REF], applied=False, report=REPORT)
    left = "Left alone (driftPolicy: Report): ConfigMap ns/web changed (data.k)"
    assert drift_conditions(_bd(), reported, _recorder(events)) == [
        Condition(TYPE_DRIFTED, TRUE, REASON_DRIFT_DETECTED, left)
    ]
    assert events.sent == [
        ("Normal", REASON_DRIFT_CORRECTED, message),
        ("Warning", REASON_DRIFT_DETECTED, left),
    ]
