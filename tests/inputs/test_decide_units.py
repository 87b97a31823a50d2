"""Whether and how an input pivots (:mod:`pivoter.inputs.decide`), without a cluster: a
table of situations and the decision each one gets, covering every branch of
:func:`~pivoter.inputs.decide.decide`, then the adoption and "target is active" predicates,
why a pivot in progress stops, and the engine's injected clock on a failed pivot."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pivoter.inputs.decide import (
    Action,
    Decision,
    Situation,
    adopts,
    decide,
    stopped,
    targets_active,
)
from pivoter.inputs.engine import InputEngine
from pivoter.inputs.record import BACKOFF_FIRST, Record
from pivoter.pivot import Phase, PivotRecord

CONFLICT = "package web is already managed by Resolution/other"
DEPENDENCY = "package db is already managed by Resolution/other"

#: Revision 2 is active; the pass resolved revision 3 (a new selection).
NEW = Situation(target=3, active=2, now=1000.0)
#: The pass resolved the active revision again.
SAME = replace(NEW, target=2)
#: The active revision 2 was deleted by hand in this pass; the pass resolved revision 3.
LOST = replace(NEW, active=None, lost_active=2)
#: Revision 3 failed at 900 and is resolved again.
FAILED = replace(NEW, failed_revision=3)

CASES: list[tuple[str, Situation, Decision]] = [
    # -- before a target
    ("a requested package held by another input", replace(NEW, conflict=CONFLICT),
     Decision(Action.CONFLICT)),
    ("a conflict wins over everything else",
     replace(SAME, conflict=CONFLICT, missing=("web",), paused=True),
     Decision(Action.CONFLICT)),
    ("no target: not resolved or pin missing", replace(NEW, target=None),
     Decision(Action.UNRESOLVED)),
    ("no target and nothing active", Situation(), Decision(Action.UNRESOLVED)),
    # -- the target is the active revision
    ("already active, every child there", SAME, Decision(Action.ACTIVE)),
    ("already active beats paused and manual approval",
     replace(SAME, paused=True, manual=True, dependency_conflict=DEPENDENCY),
     Decision(Action.ACTIVE)),
    ("a child deleted by hand is re-created", replace(SAME, missing=("web",)),
     Decision(Action.RECREATE, ("web",))),
    ("re-creating needs no approval (the revision is active)",
     replace(SAME, missing=("web", "db"), manual=True),
     Decision(Action.RECREATE, ("web", "db"))),
    ("paused: the re-creation waits, still named", replace(SAME, missing=("web",), paused=True),
     Decision(Action.PAUSED, ("web",))),
    ("a dependency conflict stops the re-creation",
     replace(SAME, missing=("web",), dependency_conflict=DEPENDENCY, paused=True),
     Decision(Action.DEPENDENCY_CONFLICT, ("web",))),
    ("a retry of the active revision pivots again", replace(SAME, retry_asked=True),
     Decision(Action.PIVOT)),
    ("a retry of the active revision needs no approval",
     replace(SAME, retry_asked=True, manual=True), Decision(Action.PIVOT)),
    ("a retry ignores missing children (the pivot applies them all)",
     replace(SAME, retry_asked=True, missing=("web",)), Decision(Action.PIVOT)),
    ("the active revision that failed since is still just active",
     replace(SAME, failed_revision=2, retry_at=None), Decision(Action.ACTIVE)),
    # -- the active revision was lost to a hand edit
    ("lost, and the target is what runs: adopted, nothing to do",
     replace(LOST, installs_target=True), Decision(Action.ACTIVE)),
    ("lost, adopted, a child missing: re-created",
     replace(LOST, installs_target=True, missing=("web",)), Decision(Action.RECREATE, ("web",))),
    ("lost, adopted, manual approval: none needed",
     replace(LOST, installs_target=True, manual=True), Decision(Action.ACTIVE)),
    ("lost, and the target differs from what runs: a pivot", LOST, Decision(Action.PIVOT)),
    ("lost, differs, manual approval: waits for it", replace(LOST, manual=True),
     Decision(Action.AWAITING_APPROVAL)),
    ("installs the target but nothing was lost: a new revision pivots",
     replace(NEW, installs_target=True), Decision(Action.PIVOT)),
    # -- a failed target
    ("failed, no backoff recorded: blocked until asked", replace(FAILED, retry_at=None),
     Decision(Action.BLOCKED)),
    ("failed, within the backoff: blocked", replace(FAILED, retry_at=1000.5),
     Decision(Action.BLOCKED)),
    ("failed, the backoff is over: pivot again", replace(FAILED, retry_at=1000.0),
     Decision(Action.PIVOT)),
    ("failed, retry asked: pivot again", replace(FAILED, retry_at=5000.0, retry_asked=True),
     Decision(Action.PIVOT)),
    ("blocked wins over paused, approval and a dependency conflict",
     replace(FAILED, retry_at=5000.0, paused=True, manual=True, dependency_conflict=DEPENDENCY),
     Decision(Action.BLOCKED)),
    ("failed, backoff over, paused: paused", replace(FAILED, retry_at=10.0, paused=True),
     Decision(Action.PAUSED)),
    ("another revision failed: not blocked", replace(NEW, failed_revision=2, retry_at=5000.0),
     Decision(Action.PIVOT)),
    # -- a new target
    ("a bundle of the target held by another input", replace(NEW, dependency_conflict=DEPENDENCY),
     Decision(Action.DEPENDENCY_CONFLICT)),
    ("a dependency conflict wins over paused",
     replace(NEW, dependency_conflict=DEPENDENCY, paused=True, manual=True),
     Decision(Action.DEPENDENCY_CONFLICT)),
    ("paused", replace(NEW, paused=True), Decision(Action.PAUSED)),
    ("paused wins over manual approval", replace(NEW, paused=True, manual=True),
     Decision(Action.PAUSED)),
    ("manual approval, not approved", replace(NEW, manual=True),
     Decision(Action.AWAITING_APPROVAL)),
    ("manual approval, approved", replace(NEW, manual=True, approved=True),
     Decision(Action.PIVOT)),
    ("an approval without Manual changes nothing", replace(NEW, approved=True),
     Decision(Action.PIVOT)),
    ("a new selection pivots", NEW, Decision(Action.PIVOT)),
    ("a first install pivots", Situation(target=1), Decision(Action.PIVOT)),
    ("a first install with manual approval waits", Situation(target=1, manual=True),
     Decision(Action.AWAITING_APPROVAL)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("situation", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_decide(situation: Situation, expected: Decision) -> None:
    assert decide(situation) == expected


def test_the_table_reaches_every_action() -> None:
    assert {expected.action for _, _, expected in CASES} == set(Action)


def test_missing_children_are_observed_only_when_the_target_is_active() -> None:
    assert targets_active(SAME)
    assert not targets_active(NEW)
    assert not targets_active(replace(SAME, retry_asked=True))
    assert not targets_active(Situation())
    # The lost revision is replaced by the target first: its children decide.
    assert targets_active(replace(LOST, installs_target=True))
    assert not targets_active(LOST)


def test_a_lost_active_revision_is_adopted_only_when_the_children_install_the_target() -> None:
    assert adopts(replace(LOST, installs_target=True))
    assert not adopts(LOST)
    assert not adopts(replace(NEW, installs_target=True))
    assert not adopts(replace(LOST, installs_target=True, target=None))


def pivot(phase: Phase, **changes: Any) -> PivotRecord:
    return replace(PivotRecord(phase, 3, 2, started=0.0), **changes)


def test_a_pivot_stops_when_its_target_is_lost() -> None:
    message = stopped(pivot(Phase.APPLYING), target=False, previous=True)
    assert message == (
        "ResolveSet revision 3 was deleted or modified by hand during the pivot; the pivot "
        "stopped. Retry with pivoter.io/retry-now"
    )
    assert stopped(pivot(Phase.ROLLING_BACK), target=False, previous=False) == message


def test_a_rollback_stops_when_the_revision_to_go_back_to_is_lost() -> None:
    rolling = pivot(Phase.ROLLING_BACK, message="web is not healthy")
    assert stopped(rolling, target=True, previous=False) == (
        "web is not healthy; the rollback stopped: ResolveSet revision 2, the revision to go "
        "back to, was deleted or modified by hand"
    )
    assert stopped(rolling, target=True, previous=True) == ""
    # Only a rollback needs the previous revision.
    assert stopped(pivot(Phase.APPLYING), target=True, previous=False) == ""


def test_a_failed_pivot_is_timed_by_the_engines_clock() -> None:
    engine = InputEngine(None, None, None, preparer=None, clock=lambda: 1234.0)  # type: ignore[arg-type]
    record = Record(pivot=pivot(Phase.FAILED), failures=1)
    engine._finish(record)
    assert (record.failed_revision, record.failures, record.failed_at) == (3, 2, 1234.0)
    # The backoff it starts is measured on the same clock.
    assert record.retry_at() == 1234.0 + 2 * BACKOFF_FIRST

    rolled_back = Record(active=3, pivot=pivot(Phase.ROLLED_BACK))
    engine._finish(rolled_back)
    assert (rolled_back.active, rolled_back.failed_at) == (2, 1234.0)
