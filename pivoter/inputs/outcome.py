"""What one pass of the input engine found: the frozen :class:`Outcome` each input kind's
status module reads, and the :class:`Draft` the engine fills during the pass (the caller keeps
it, so that the events of what happened before a failure are not lost). The facts are the enums
of :mod:`pivoter.inputs.facts`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pivoter.inputs import held
from pivoter.inputs.facts import IDLE, Freshness, Progress, Resolved
from pivoter.inputs.record import Record
from pivoter.pivot import ChildReport, Event
from resolver.explain import NotNewer
from resolver.resolveset import ResolveSet

__all__ = ["Draft", "Outcome"]


@dataclass(frozen=True)
class Outcome:
    """What one reconcile found and did, as facts (:mod:`pivoter.inputs.facts`) for each
    input kind's status module to turn into conditions."""

    record: Record
    resolved: Resolved | None
    """None: not resolved in this pass (a pivot in progress); the condition keeps its value."""
    progressing: Progress
    selection: ResolveSet | None
    explanation: str
    pending_plan: Mapping[str, Any] | None
    conflict: str
    """A requested package installed by another input, or one of the target's bundles (the
    message), or ''."""
    shared: tuple[held.SharedDependency, ...] | None
    """The held bundles the new selection depends on (None: not resolved in this pass)."""
    problem: str
    """A ResolveSet revision found deleted or modified by hand, and what pivoter did."""
    not_newer: tuple[NotNewer, ...]
    """Per requested package, the newest bundle the resolution did not take, and why."""
    up_to_date: Freshness | None
    """None: not resolved in this pass; the condition keeps its value."""
    reports: tuple[ChildReport, ...]
    requeue_after: float | None
    events: tuple[Event, ...]
    active_document: ResolveSet | None
    """The active revision's ResolveSet when the pass ended (None: nothing active)."""


@dataclass
class Draft:
    """An :class:`Outcome` being found: the engine fills it during one pass, and the caller
    keeps it so that the events of what happened before a failure are not lost."""

    record: Record
    resolved: Resolved | None = None
    progressing: Progress = IDLE
    selection: ResolveSet | None = None
    explanation: str = ""
    pending_plan: dict[str, Any] | None = None
    conflict: str = ""
    shared: list[held.SharedDependency] | None = None
    problem: str = ""
    lost_active: int | None = None
    """The active revision, found deleted or modified by hand in this pass (no longer active)."""
    not_newer: tuple[NotNewer, ...] = ()
    up_to_date: Freshness | None = None
    reports: list[ChildReport] = field(default_factory=list)
    requeue_after: float | None = None
    events: list[Event] = field(default_factory=list)
    active_document: ResolveSet | None = None
    publish: Callable[[Outcome], None] | None = field(default=None, repr=False, compare=False)
    """Writes the whole status of the outcome as it stands, mid-pass (set by the reconciler;
    used when a pass finds a child deleted by hand, before it re-creates it)."""

    def outcome(self) -> Outcome:
        """What the pass has found so far, frozen."""
        return Outcome(
            record=replace(self.record),
            resolved=self.resolved,
            progressing=self.progressing,
            selection=self.selection,
            explanation=self.explanation,
            pending_plan=self.pending_plan,
            conflict=self.conflict,
            shared=tuple(self.shared) if self.shared is not None else None,
            problem=self.problem,
            not_newer=self.not_newer,
            up_to_date=self.up_to_date,
            reports=tuple(self.reports),
            requeue_after=self.requeue_after,
            events=tuple(self.events),
            active_document=self.active_document,
        )
