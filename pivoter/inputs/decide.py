"""Whether and how an input pivots, as a value: :func:`decide` maps a :class:`Situation` to a
:class:`Decision`.

The engine (:mod:`pivoter.inputs.engine`) reads the world (the other inputs' children,
the target revision, the active revision's children, the clock) into a :class:`Situation`, calls
:func:`decide`, and carries the :class:`Action` out. Nothing here reads the cluster or the
clock, so every branch is tested from a table (tests/inputs/test_decide_units.py).

Two facts cost a read of the cluster and matter only in some situations: whether the children
install exactly the target (:attr:`Situation.installs_target`, asked only when the active
revision was lost) and which children of the active revision are missing
(:attr:`Situation.missing`, observed only when :func:`targets_active`). Pure functions.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from pivoter.pivot import Phase, PivotRecord

__all__ = ["Action", "Decision", "Situation", "adopts", "decide", "stopped", "targets_active"]


class Action(enum.Enum):
    """What one pass does with an input that has no pivot in progress."""

    CONFLICT = "Conflict"
    """A requested package is installed by another input: nothing is resolved."""
    UNRESOLVED = "Unresolved"
    """No target: the resolution failed or the pinned revision is missing."""
    ACTIVE = "Active"
    """The target is the active revision and every child is there: observe, collect garbage."""
    BLOCKED = "Blocked"
    """The target failed and waits for its backoff (or a retry, or a new selection)."""
    DEPENDENCY_CONFLICT = "DependencyConflict"
    """A bundle of the target is installed by another input."""
    PAUSED = "Paused"
    """``spec.paused``: the target waits."""
    AWAITING_APPROVAL = "AwaitingApproval"
    """Manual approval: the target waits until it is approved."""
    RECREATE = "Recreate"
    """Start a pivot to the active revision that re-creates the children deleted by hand."""
    PIVOT = "Pivot"
    """Start a pivot to the target."""


@dataclass(frozen=True, slots=True)
class Situation:
    """What the engine read for one input with no pivot in progress (see the module
    docstring for the two facts read only when needed)."""

    conflict: str = ""
    """A requested package installed by another input (its message), or ''."""
    target: int | None = None
    """The target revision's number; None when there is none (not resolved, pin missing)."""
    active: int | None = None
    """The active revision (None: never installed, or lost to a hand edit in this pass)."""
    lost_active: int | None = None
    """The active revision, found deleted or modified by hand in this pass."""
    installs_target: bool = False
    """Whether the children install exactly the target's bundles."""
    retry_asked: bool = False
    """A new ``pivoter.io/retry-now`` token."""
    missing: tuple[str, ...] = ()
    """The packages whose child of the active revision was deleted by hand."""
    failed_revision: int | None = None
    retry_at: float | None = None
    """When the failed revision may be tried again on its own (None: only on request)."""
    now: float = 0.0
    dependency_conflict: str = ""
    """A bundle of the target installed by another input (its message), or ''."""
    paused: bool = False
    manual: bool = False
    """Manual approval applies (``approval: Manual`` and no pinned revision)."""
    approved: bool = False
    """The recorded approval names the target (by number or selection hash)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """The :class:`Action`, and the children it re-creates."""

    action: Action
    recreate: tuple[str, ...] = ()
    """The children of the active revision deleted by hand: the pivot that starts re-creates
    them (:attr:`Action.RECREATE`); a pivot that waits (paused, a dependency conflict) still
    names them."""


def adopts(s: Situation) -> bool:
    """Whether the target replaces a lost active revision as it stands: the children install
    exactly the target, so the engine records it as active first (no pivot, no approval:
    nothing changes on the cluster)."""
    return s.target is not None and s.lost_active is not None and s.installs_target


def targets_active(s: Situation) -> bool:
    """Whether the target is the active revision (after :func:`adopts`) and no retry was
    asked: then the children of the active revision decide (:attr:`Situation.missing`)."""
    active = s.target if adopts(s) else s.active
    return s.target is not None and s.target == active and not s.retry_asked


def decide(s: Situation) -> Decision:
    """The decision for ``s`` (after the adoption :func:`adopts` asks for). The checks run in
    this order and the first that holds wins: conflict, no target, the target is active (every
    child there, or re-create the missing), a failed target within its backoff, a dependency
    conflict, paused, awaiting approval; else pivot."""
    if s.conflict:
        return Decision(Action.CONFLICT)
    if s.target is None:
        return Decision(Action.UNRESOLVED)
    active = s.target if adopts(s) else s.active
    recreate: tuple[str, ...] = ()
    if targets_active(s):
        if not s.missing:
            return Decision(Action.ACTIVE)
        recreate = s.missing
    elif s.target == s.failed_revision and not s.retry_asked and _backing_off(s):
        return Decision(Action.BLOCKED)
    if s.dependency_conflict:
        return Decision(Action.DEPENDENCY_CONFLICT, recreate)
    if s.paused:
        return Decision(Action.PAUSED, recreate)
    if s.manual and s.target != active and not s.approved:
        return Decision(Action.AWAITING_APPROVAL)
    return Decision(Action.RECREATE if recreate else Action.PIVOT, recreate)


def _backing_off(s: Situation) -> bool:
    """Whether the failed revision is still within its backoff (no backoff: until asked)."""
    return s.retry_at is None or s.now < s.retry_at


def stopped(pivot: PivotRecord, *, target: bool, previous: bool) -> str:
    """Why the pivot in progress cannot go on, or '': its target revision (``target``: intact)
    or, while it rolls back, the revision it goes back to (``previous``: intact) was deleted or
    modified by hand."""
    if not target:
        return (
            f"ResolveSet revision {pivot.revision} was deleted or modified by hand during the "
            "pivot; the pivot stopped. Retry with pivoter.io/retry-now"
        )
    if pivot.phase is Phase.ROLLING_BACK and not previous:
        return (
            f"{pivot.message}; the rollback stopped: ResolveSet revision {pivot.previous}, "
            "the revision to go back to, was deleted or modified by hand"
        )
    return ""
