"""Rewording the pivot machine changes no fact: every template of :mod:`pivoter.pivot.words`
gets a marker prefix (made of the very phrases status writers once matched on: "spec.config",
"the progress deadline of"), and each pivot scenario is driven again. The phases, causes, failed
bundles, Event reasons, and the condition types, statuses and reasons that every input kind's
status writer derives (Resolution, PlatformOperator, ClusterExtension) must be the same; only
the words may differ, and they must (the marker is seen)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pivoter.inputs.facts import ResolutionState, Resolved, progress_of
from pivoter.inputs.outcome import Draft
from pivoter.inputs.record import Record
from pivoter.inputs.status import resolution_status
from pivoter.olmv1.status import extension_status
from pivoter.pivot import FailureCause, Phase, PivotJob, PivotRecord, words
from pivoter.pivot.children import ChildState
from pivoter.pivot.prepare import Pending, PrepareFailed
from pivoter.platformoperators.status import platform_operator_status
from resolver.resolveset import ResolveSet
from tests.pivot.fakes import Outcome
from tests.pivot.test_machine_units import DEADLINE, V1, Harness, entry, harness, plan

MARKER = "REWORDED spec.config: the progress deadline of 1s passed; "

Scenario = Callable[[], tuple[Harness, PivotJob, PivotRecord]]


def _succeeds() -> tuple[Harness, PivotJob, PivotRecord]:
    h = harness()
    return h, plan(), h.start()


def _child_fails(**changes: Any) -> Scenario:
    def scenario() -> tuple[Harness, PivotJob, PivotRecord]:
        h = harness({"web.v2.0.0": Outcome(ChildState.FAILED, "InstallFailed", "bad ConfigMap")})
        return h, plan(**changes), h.start()

    return scenario


def _prepare_fails(cause: FailureCause, *, first: bool) -> Scenario:
    def scenario() -> tuple[Harness, PivotJob, PivotRecord]:
        h = harness(installed=None if first else V1)
        h.preparer.result = PrepareFailed("web", "web.v2.0.0", "spec.config.x: unknown", cause)
        previous = None if first else V1
        return h, plan(previous=previous), h.start(previous=None if first else 1)

    return scenario


def _unpacks_forever() -> tuple[Harness, PivotJob, PivotRecord]:
    h = harness()
    h.preparer.result = Pending(("web.v2.0.0",))
    return h, plan(), h.start()


def _never_ready() -> tuple[Harness, PivotJob, PivotRecord]:
    h = harness({"web.v2.0.0": Outcome(ChildState.PENDING, message="waiting")})
    return h, plan(), h.start()


def _no_image() -> tuple[Harness, PivotJob, PivotRecord]:
    h = harness()
    target = ResolveSet((entry("db", "2.0.0"), entry("web", "2.0.0", image="")))
    return h, plan(target=target), h.start()


def _rollback_stalls() -> tuple[Harness, PivotJob, PivotRecord]:
    h = harness(
        {
            "web.v2.0.0": Outcome(ChildState.FAILED, "InstallFailed", "bad ConfigMap"),
            "cache.v1.0.0": Outcome(ChildState.PENDING, message="stuck"),
        },
        installed=None,
    )
    return h, plan(previous=V1), h.start()


SCENARIOS: dict[str, Scenario] = {
    "succeeds": _succeeds,
    "child fails, rolled back": _child_fails(),
    "child fails, no rollback": _child_fails(auto_rollback=False),
    "config refused, rolled back": _prepare_fails(FailureCause.INVALID_CONFIGURATION, first=False),
    "config refused, first install": _prepare_fails(FailureCause.INVALID_CONFIGURATION, first=True),
    "dry run refused": _prepare_fails(FailureCause.BUNDLE_FAILED, first=False),
    "unpacks past the deadline": _unpacks_forever,
    "never ready by the deadline": _never_ready,
    "no image": _no_image,
    "rollback does not complete": _rollback_stalls,
}

EXTENSION = {
    "apiVersion": "olm.operatorframework.io/v1",
    "kind": "ClusterExtension",
    "metadata": {"name": "web", "generation": 1},
    "spec": {
        "namespace": "web",
        "serviceAccount": {"name": "installer"},
        "source": {"sourceType": "Catalog", "catalog": {"packageName": "web"}},
    },
}
PLATFORM_OPERATOR = {"metadata": {"name": "web"}, "spec": {"package": {"name": "web"}}}


def _drive(h: Harness, the_plan: PivotJob, record: PivotRecord) -> PivotRecord:
    for _ in range(60):
        step = h.run(the_plan, record)
        record = step.record
        if record.phase.terminal:
            return record
        h.children.settle()
        h.clock.advance(max(step.requeue_after or 1.0, DEADLINE / 4))
    raise AssertionError(f"the pivot did not end: {record}")


def _facts(scenario: Scenario) -> tuple[Any, list[str]]:
    """What a scenario decided (phases, cause, Event reasons, every status writer's condition
    types, statuses and reasons), and every message it wrote."""
    h, the_plan, start = scenario()
    final = _drive(h, the_plan, start)
    failed = final.phase is not Phase.SUCCEEDED
    record = Record(
        active=final.revision
        if not failed
        else (final.previous if final.phase is Phase.ROLLED_BACK else None),
        last_attempted=final.revision,
        pivot=final,
        failed_revision=final.revision if failed else None,
    )
    out = Draft(
        record=record,
        resolved=Resolved(ResolutionState.RESOLVED, "resolved web 2.0.0"),
        progressing=progress_of(final),
        selection=the_plan.target,
        active_document=the_plan.target if not failed else the_plan.previous,
    ).outcome()
    statuses = [
        resolution_status({}, out, 1),
        platform_operator_status(PLATFORM_OPERATOR, out, 1),
        extension_status(EXTENSION, out, 1, deprecation_of=lambda _c, _p: None),
    ]
    conditions = [
        sorted((c["type"], c["status"], c["reason"]) for c in status["conditions"])
        for status in statuses
    ]
    decided = (
        [r.phase for r in h.persisted],
        (final.phase, final.cause, final.failed_bundle, final.revision, final.previous),
        [(type_, reason) for type_, reason, _ in h.events],
        out.progressing.state,
        conditions,
    )
    messages = [final.message, out.progressing.message] + [m for _, _, m in h.events]
    messages += [c["message"] for status in statuses for c in status["conditions"]]
    return decided, messages


def _templates() -> list[str]:
    return [name for name in words.__all__ if isinstance(getattr(words, name), str)]


def test_every_template_is_listed() -> None:
    """The rewording below reaches every template of the module."""
    constants = [n for n in vars(words) if n.isupper() and isinstance(getattr(words, n), str)]
    assert sorted(constants) == sorted(_templates())


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_rewording_changes_no_fact(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    decided, messages = _facts(SCENARIOS[name])
    assert not any(MARKER in m for m in messages)
    for template in _templates():
        monkeypatch.setattr(words, template, MARKER + getattr(words, template))
    reworded, new_messages = _facts(SCENARIOS[name])
    assert reworded == decided
    assert any(MARKER in m for m in new_messages), "the rewording was not seen"


def test_the_causes_decide_the_extension_reasons() -> None:
    """The scenarios cover each cause the status writers tell apart, and OLM v1's reasons follow
    the cause (not the words)."""
    seen = {}
    for name, scenario in SCENARIOS.items():
        decided, _ = _facts(scenario)
        final, extension = decided[1], decided[4][2]
        progressing = next(c for c in extension if c[0] == "Progressing")
        seen[name] = (final[1], progressing[1:])
    assert seen["config refused, rolled back"] == (
        FailureCause.INVALID_CONFIGURATION,
        ("False", "InvalidConfiguration"),
    )
    assert seen["never ready by the deadline"] == (
        FailureCause.DEADLINE_EXCEEDED,
        ("False", "ProgressDeadlineExceeded"),
    )
    assert seen["unpacks past the deadline"][0] is FailureCause.DEADLINE_EXCEEDED
    assert seen["child fails, rolled back"] == (FailureCause.BUNDLE_FAILED, ("True", "Retrying"))
    assert seen["no image"] == (FailureCause.UNINSTALLABLE, ("True", "Retrying"))
    assert seen["succeeds"] == (None, ("True", "Succeeded"))
