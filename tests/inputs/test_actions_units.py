"""Each decided action, carried out against fakes of the engine's port: the facts it writes
(progress, freshness, the pending plan, the record, the Events' reasons, when to look again),
with no cluster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from pivoter.inputs import actions
from pivoter.inputs.decide import Action, Decision, Situation
from pivoter.inputs.facts import FreshnessState, ProgressState, ResolutionState
from pivoter.inputs.outcome import Draft
from pivoter.inputs.record import Record
from pivoter.inputs.spec import InputSpec, from_resolution
from pivoter.pivot import Children, Phase, PivotRecord
from resolver.resolveset import ResolveSet
from tests.pivot.test_machine_units import V1, V2


@dataclass
class FakeEngine:
    """The engine's port: records what the actions asked of it."""

    observed: int = 0
    planned: list[int] = field(default_factory=list)
    started: list[tuple[int, int | None]] = field(default_factory=list)

    def observe_active(
        self, spec: InputSpec, out: Draft, children: Children, *, recreating: bool = False
    ) -> list[str]:
        self.observed += 1
        return []

    def plan_objects(
        self,
        obj: Mapping[str, Any],
        spec: InputSpec,
        children: Children,
        *,
        target: ResolveSet,
        number: int,
        out: Draft,
    ) -> dict[str, Any]:
        self.planned.append(number)
        return {"counts": {"added": 1, "removed": 0, "kept": 2}}

    def start_pivot(self, children: Children, revision: int, previous: int | None) -> PivotRecord:
        self.started.append((revision, previous))
        return PivotRecord(Phase.PREPARING, revision, previous, started=0.0)


def _pass(record: Record, **spec: Any) -> tuple[actions.Pass, list[Record]]:
    obj = {
        "metadata": {"name": "web", "uid": "u", "generation": 1},
        "spec": {"packages": [{"name": "web"}], **spec},
    }
    persisted: list[Record] = []
    p = actions.Pass(
        obj=obj,
        spec=from_resolution(obj),
        record=record,
        out=Draft(record=record),
        persist=persisted.append,
        children=cast(Children, None),
        active=V1,
    )
    return p, persisted


def _act(action: Action, p: actions.Pass, engine: FakeEngine, **situation: Any) -> bool:
    return actions.act(engine, p, Decision(action), Situation(**situation), number=2, target=V2)


def _later(p: actions.Pass) -> None:
    """What the engine runs after the claims lock (pivoter.inputs.engine)."""
    for step in p.later:
        step()


def test_a_pivot_starts_and_claims_its_target() -> None:
    engine = FakeEngine()
    p, persisted = _pass(Record(active=1, last_successful=1))
    assert _act(Action.PIVOT, p, engine) is True
    assert p.later == []  # the claim is persisted under the lock
    assert engine.started == [(2, 1)]
    assert persisted
    assert persisted[-1].pivot is not None
    assert (persisted[-1].last_attempted, persisted[-1].requested) == (2, ("web",))
    assert [reason for _, reason, _ in p.out.events] == ["PivotStarted"]
    assert p.out.up_to_date is not None
    assert (p.out.up_to_date.state, p.out.up_to_date.reason) == (
        FreshnessState.NOT_NEWEST,
        "Pivoting",
    )


def test_paused_publishes_the_plan_with_its_objects_and_waits() -> None:
    """A paused input's plan is prepared like an approval's (what an adoption checks before the
    previous manager lets go)."""
    engine = FakeEngine()
    p, persisted = _pass(Record(active=1), paused=True)
    assert _act(Action.PAUSED, p, engine) is False
    # Prepared once the claims lock is released: it claims nothing, and pulls and dry-runs.
    assert engine.planned == []
    _later(p)
    assert p.out.progressing.state is ProgressState.PAUSED
    assert p.out.pending_plan is not None
    assert p.out.pending_plan["revision"] == 2
    assert p.out.pending_plan["objects"] == {"counts": {"added": 1, "removed": 0, "kept": 2}}
    assert engine.planned == [2]
    assert p.out.up_to_date is not None
    assert p.out.up_to_date.reason == "Paused"
    assert persisted == []
    assert engine.started == []
    assert engine.observed == 1


def test_manual_approval_publishes_the_plan_with_its_objects() -> None:
    engine = FakeEngine()
    p, persisted = _pass(Record(active=1), approval="Manual")
    assert _act(Action.AWAITING_APPROVAL, p, engine) is False
    assert engine.planned == []
    _later(p)
    assert p.out.progressing.state is ProgressState.AWAITING_APPROVAL
    assert engine.planned == [2]
    assert p.out.pending_plan is not None
    assert p.out.pending_plan["objects"] == {"counts": {"added": 1, "removed": 0, "kept": 2}}
    assert persisted == []
    assert engine.started == []


def test_a_failed_revision_waits_for_its_backoff_and_keeps_its_cause() -> None:
    from pivoter.pivot import FailureCause

    failed = PivotRecord(
        Phase.FAILED, 2, 1, started=0.0, message="boom", cause=FailureCause.DEADLINE_EXCEEDED
    )
    engine = FakeEngine()
    p, _ = _pass(Record(active=1, pivot=failed, failed_revision=2, failures=1, failed_at=100.0))
    assert _act(Action.BLOCKED, p, engine, retry_at=160.0, now=130.0) is False
    progress = p.out.progressing
    assert (progress.state, progress.cause, progress.retry_waits) == (
        ProgressState.PIVOT_FAILED,
        FailureCause.DEADLINE_EXCEEDED,
        True,
    )
    assert p.out.requeue_after == pytest.approx(30.0)
    assert p.out.up_to_date is not None
    assert p.out.up_to_date.reason == "RevisionFailed"


def test_a_conflict_is_a_fact_and_looks_again_later() -> None:
    engine = FakeEngine()
    p, _ = _pass(Record())
    actions.not_resolved(engine, p, Action.CONFLICT, "package web is already managed by X")
    assert p.out.resolved is not None
    assert p.out.resolved.state is ResolutionState.CONFLICT
    assert p.out.requeue_after == actions.CONFLICT_POLL
    assert engine.observed == 1


def test_the_active_target_holds_nothing_back() -> None:
    engine = FakeEngine()
    p, persisted = _pass(Record(active=1))
    p.active = V2
    assert _act(Action.ACTIVE, p, engine) is False
    assert p.out.up_to_date is not None
    assert p.out.up_to_date.state in (FreshnessState.NEWEST, FreshnessState.NOT_NEWEST)
    assert p.out.up_to_date.reason != "Pivoting"
    assert persisted == []
    assert engine.observed == 0
