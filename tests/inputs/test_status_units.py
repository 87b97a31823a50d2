"""``Ready`` after a failed first install says what failed, whatever the child reports."""

from __future__ import annotations

from pivoter.apis.conditions import find
from pivoter.inputs.engine import Draft
from pivoter.inputs.facts import (
    IDLE,
    Progress,
    ProgressState,
    ResolutionState,
    Resolved,
)
from pivoter.inputs.record import Record
from pivoter.inputs.status import resolution_status
from pivoter.pivot import ChildReport, ChildState

FAILED = Progress(
    ProgressState.PIVOT_FAILED, "revision 1 failed: web.v1.0.0: progress deadline exceeded"
)


def _ready(reports: list[ChildReport], progressing: Progress) -> dict[str, str]:
    out = Draft(record=Record(last_attempted=1), progressing=progressing, reports=reports)
    out.resolved = Resolved(ResolutionState.RESOLVED, "1 bundle selected")
    status = resolution_status({}, out.outcome(), generation=3)
    ready = find(status["conditions"], "Ready")
    assert ready is not None
    assert ready["observedGeneration"] == 3
    return ready


def test_ready_names_the_failed_bundle_when_the_child_is_installed_but_unhealthy() -> None:
    child = ChildReport("web", "r-web", ChildState.UNHEALTHY, "0 of 1 replicas available")
    ready = _ready([child], FAILED)
    assert ready["status"] == "False"
    assert ready["reason"] == "PivotFailed"
    assert "web.v1.0.0" in ready["message"]
    assert "0 of 1 replicas available" in ready["message"]


def test_ready_names_the_failed_bundle_before_the_child_reports() -> None:
    ready = _ready([], FAILED)
    assert (ready["status"], ready["reason"]) == ("False", "PivotFailed")
    assert "web.v1.0.0" in ready["message"]


def test_ready_gives_the_child_state_when_no_pivot_failed() -> None:
    child = ChildReport("web", "r-web", ChildState.UNHEALTHY, "0 of 1 replicas available")
    ready = _ready([child], IDLE)
    assert (ready["status"], ready["reason"]) == ("False", "Unhealthy")
    assert ready["message"].startswith("Healthy: web (r-web)")
