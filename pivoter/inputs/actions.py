"""Carrying out what :func:`pivoter.inputs.decide.decide` decided for an input with no pivot in
progress: one function per :class:`~pivoter.inputs.decide.Action`, each writing what it found
into the pass' :class:`~pivoter.inputs.outcome.Draft` as facts (and the words beside them).

The functions reach the engine only through :class:`EnginePort` (observe the active revision's
children, compute a plan's objects, start a pivot record), so each action can be driven with
fakes, as :class:`pivoter.pivot.PivotMachine` is. Called by :mod:`pivoter.inputs.engine`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pivoter.inputs import held
from pivoter.inputs.decide import Action, Decision, Situation
from pivoter.inputs.facts import Progress, ProgressState, ResolutionState, Resolved, progress_of
from pivoter.inputs.outcome import Draft
from pivoter.inputs.passfacts import missing_text, set_freshness
from pivoter.inputs.record import Record
from pivoter.inputs.revisionplan import plan as make_plan
from pivoter.inputs.revisionplan import summary
from pivoter.inputs.spec import InputSpec
from pivoter.pivot import Children, PivotRecord
from resolver.resolveset import ResolveSet

__all__ = [
    "CONFLICT_POLL",
    "EnginePort",
    "Pass",
    "act",
    "adopt",
    "awaiting_approval",
    "blocked",
    "children_missing",
    "not_resolved",
    "paused",
    "start_pivot",
]

CONFLICT_POLL = 30.0
"""How often an input in conflict with another looks again (the other may let go)."""


@dataclass
class Pass:
    """One pass over an input with no pivot in progress: what the decision's steps read and
    write."""

    obj: Mapping[str, Any]
    spec: InputSpec
    record: Record
    out: Draft
    persist: Callable[[Record], None]
    children: Children
    active: ResolveSet | None
    """The active revision's ResolveSet (None: never installed, or lost to a hand edit)."""
    later: list[Callable[[], None]] = field(default_factory=list)
    """What the decision still does that claims nothing: run by the engine once the claims lock
    is released (preparing a plan pulls, unpacks and dry-runs its bundles; under the lock every
    other input waited for it)."""


class EnginePort(Protocol):
    """What the actions ask of the engine."""

    def observe_active(
        self, spec: InputSpec, out: Draft, children: Children, *, recreating: bool = False
    ) -> list[str]:
        """Report the children of the active revision in ``out``."""
        ...

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
        """The objects section of the plan to revision ``number``."""
        ...

    def start_pivot(self, children: Children, revision: int, previous: int | None) -> PivotRecord:
        """A new pivot record to ``revision`` (reverting to ``previous``)."""
        ...


def act(
    engine: EnginePort,
    p: Pass,
    decision: Decision,
    s: Situation,
    *,
    number: int,
    target: ResolveSet,
) -> bool:
    """Carry out ``decision`` for the target revision ``number``; True when a pivot started."""
    action = decision.action
    if action is Action.ACTIVE or decision.recreate:
        # The target is the active revision: nothing of it is held back.
        set_freshness(p.out, target, p.active)
    if action is Action.ACTIVE:
        return False
    if decision.recreate:
        children_missing(p)
    if action is Action.BLOCKED:
        blocked(engine, p, number, target, s)
        return False
    if action is Action.DEPENDENCY_CONFLICT:
        p.out.conflict = s.dependency_conflict
        p.out.requeue_after = CONFLICT_POLL
        engine.observe_active(p.spec, p.out, p.children)
        return False
    plan = make_plan(p.active, target, revision=number, active=p.record.active)
    if action is Action.PAUSED:
        p.later.append(lambda: paused(engine, p, number, target, plan))
        return False
    if action is Action.AWAITING_APPROVAL:
        p.later.append(lambda: awaiting_approval(engine, p, number, target, plan))
        return False
    start_pivot(engine, p, number, target, plan, recreate=decision.recreate)
    return True


def not_resolved(engine: EnginePort, p: Pass, action: Action, conflict: str) -> None:
    """:attr:`Action.CONFLICT` or :attr:`Action.UNRESOLVED` (the target said why): report what
    runs."""
    if action is Action.CONFLICT:
        p.out.conflict = conflict
        p.out.resolved = Resolved(ResolutionState.CONFLICT, conflict)
        p.out.requeue_after = CONFLICT_POLL
    engine.observe_active(p.spec, p.out, p.children)


def adopt(p: Pass, number: int) -> None:
    """The active revision was deleted or edited by hand, and the rebuilt selection is exactly
    what the children install: it is the active revision now (no pivot, no approval: nothing
    changes on the cluster)."""
    record, out = p.record, p.out
    record.active = number
    if record.last_successful in (None, out.lost_active):
        record.last_successful = number
    p.persist(record)
    p.children.record_revision(number)
    out.events.append(
        (
            "Normal",
            "ResolveSetRebuilt",
            f"revision {number} records what is installed; it replaces revision "
            f"{out.lost_active}, which was deleted or modified by hand",
        )
    )


def children_missing(p: Pass) -> None:
    """Children of the active revision were deleted by hand: say so (and, unless paused,
    publish it now: the re-creation may complete within this pass)."""
    out = p.out
    out.events.append(("Warning", "ChildMissing", missing_text(out.reports)))
    if out.publish is not None and not p.spec.paused:
        pivoting = Progress(ProgressState.PIVOTING, missing_text(out.reports))
        out.publish(replace(out, progressing=pivoting).outcome())


def blocked(engine: EnginePort, p: Pass, number: int, target: ResolveSet, s: Situation) -> None:
    """Revision ``number`` failed and waits for its backoff, a new selection or a retry."""
    out = p.out
    engine.observe_active(p.spec, out, p.children)
    if p.record.pivot is not None:
        out.progressing = progress_of(p.record.pivot)
    out.progressing = replace(
        out.progressing,
        message=f"{out.progressing.message}. Revision {number} is tried again after a "
        "backoff, when the selection changes, or now with the annotation pivoter.io/retry-now",
        retry_waits=True,
    )
    set_freshness(
        out,
        target,
        p.active,
        gate=(
            "RevisionFailed",
            f"revision {number} failed and is tried again after a backoff (or now "
            "with the annotation pivoter.io/retry-now)",
        ),
    )
    if s.retry_at is not None:
        out.requeue_after = max(1.0, s.retry_at - s.now)


def paused(
    engine: EnginePort, p: Pass, number: int, target: ResolveSet, plan: dict[str, Any]
) -> None:
    """``spec.paused``: revision ``number`` waits; its plan is published with the objects it
    changes, prepared as for an approval (pulled, unpacked, rendered, dry-run): what an
    adoption checks before the previous manager lets go (pivoter.olmv0.handover)."""
    out = p.out
    plan["objects"] = engine.plan_objects(
        p.obj, p.spec, p.children, target=target, number=number, out=out
    )
    out.pending_plan = plan
    out.progressing = Progress(
        ProgressState.PAUSED,
        f"paused: revision {number} ({summary(plan)}) waits until spec.paused is false",
    )
    set_freshness(
        out,
        target,
        p.active,
        gate=("Paused", f"revision {number} waits until spec.paused is false"),
    )
    engine.observe_active(p.spec, out, p.children)


def awaiting_approval(
    engine: EnginePort, p: Pass, number: int, target: ResolveSet, plan: dict[str, Any]
) -> None:
    """Manual approval: revision ``number`` waits for it; its plan (with the objects it
    changes) is published."""
    out, name = p.out, p.spec.ref.cli
    plan["objects"] = engine.plan_objects(
        p.obj, p.spec, p.children, target=target, number=number, out=out
    )
    out.pending_plan = plan
    out.progressing = Progress(
        ProgressState.AWAITING_APPROVAL,
        f"revision {number} ({summary(plan)}) waits for approval: "
        f"pivoter approve {name} --revision {number}",
    )
    set_freshness(
        out,
        target,
        p.active,
        gate=(
            "AwaitingApproval",
            f"revision {number} waits for Manual approval: pivoter approve "
            f"{name} --revision {number}",
        ),
    )
    engine.observe_active(p.spec, out, p.children)


def start_pivot(
    engine: EnginePort,
    p: Pass,
    number: int,
    target: ResolveSet,
    plan: dict[str, Any],
    *,
    recreate: tuple[str, ...],
) -> None:
    """Start the pivot to revision ``number`` and persist its record (the claim on what it
    installs)."""
    record = p.record
    set_freshness(
        p.out, target, p.active, gate=("Pivoting", f"revision {number} is being installed")
    )
    record.pivot = engine.start_pivot(p.children, number, record.last_successful)
    record.last_attempted = number
    record.retry_token = p.spec.retry_token
    record.requested = tuple(p.spec.packages)
    record.recreating = recreate
    p.persist(record)
    # Under the claims lock: the next input to resolve holds this target even before the input
    # cache shows the record just written.
    held.LEDGER.started(p.spec.ref, number)
    p.out.events.append(
        ("Normal", "PivotStarted", f"pivoting to revision {number}: {summary(plan)}")
    )
