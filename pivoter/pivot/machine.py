"""The grouped pivot as a state machine: observe the children, pick the phase's action, run it.

:meth:`PivotMachine.run` drives one pivot of an input from one ResolveSet revision to another
(docs/pivot.md has the diagram)::

    Preparing -> Applying -> Waiting -> Pruning -> Succeeded
        |            |          |
        +------------+----------+-- a bundle failed, or the progress deadline passed
                                      -> RollingBack -> RolledBack  (automatic rollback, default)
                                      -> Failed                     (no rollback, or it failed)

``Preparing`` unpacks every bundle, renders its objects, orders the bundles (providers of APIs
and namespaces first) and dry-runs every object on the API server
(:mod:`pivoter.pivot.prepare`): a bundle that fails there fails the pivot before any child
changes. ``Applying`` applies the children wave by wave, each wave once the previous ones are
installed.

Each transition is persisted through the caller's ``persist`` callback *before* the next
phase's action runs, and every action is idempotent, so a daemon killed anywhere resumes the
recorded phase on restart. The machine never decides *whether* to pivot (the input controllers
do: new selection, approval, pin); it only carries a started pivot to an end. Called by
:mod:`pivoter.inputs.engine`; it reaches the cluster only through the two boundaries of
:mod:`pivoter.pivot.ports`, so tests/pivot/test_machine_units.py drives it in memory.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pivoter.kube import Object
from pivoter.pivot import words
from pivoter.pivot.children import (
    ChildReport,
    ChildSettings,
    ChildState,
    UninstallableBundle,
    desired_child,
)
from pivoter.pivot.naming import ANNOTATION_BUNDLE, ANNOTATION_REVISION
from pivoter.pivot.ports import ChildrenPort, PreparerPort
from pivoter.pivot.prepare import Pending, Prepared, PrepareFailed
from pivoter.pivot.state import FailureCause, Phase, PivotRecord
from pivoter.resolvesets import InputRef
from resolver.resolveset import Entry, ResolveSet

__all__ = ["Event", "PivotJob", "PivotMachine", "StepResult"]

log = logging.getLogger(__name__)

POLL_SECONDS = 2.0
PREPARE_POLL_SECONDS = 1.0
"""How often a pivot looks at Bundles being unpacked (the input does not watch Bundles)."""
DEFAULT_FAILURE_GRACE = 5.0
"""How long a child must stay failed, with no other child still pending, before the pivot is
declared failed: children are applied together, so a consumer may fail once before its
provider's CRD exists, and the BundleDeployment controller retries it."""

Event = tuple[str, str, str]
"""(``Normal`` or ``Warning``, reason, message) for the input's Events."""


@dataclass(frozen=True, slots=True)
class PivotJob:
    """What one pivot installs, and how."""

    ref: InputRef
    owner: Mapping[str, Any]
    target: ResolveSet
    previous: ResolveSet | None
    service_account: Mapping[str, str] | None = None
    primary_package: str = ""
    deadline_seconds: float = 600.0
    auto_rollback: bool = True
    child_settings: ChildSettings | None = None


@dataclass(slots=True)
class StepResult:
    """Where a call to :meth:`PivotMachine.run` left the pivot."""

    record: PivotRecord
    requeue_after: float | None = None
    events: list[Event] = field(default_factory=list)
    reports: list[ChildReport] = field(default_factory=list)


@dataclass
class PivotMachine:
    """Carries pivots of one input to an end; see the module docstring."""

    children: ChildrenPort
    """The input's child BundleDeployments (:class:`~pivoter.pivot.children.Children`)."""
    preparer: PreparerPort
    """The ``Preparing`` phase (:class:`~pivoter.pivot.prepare.Preparer`)."""
    clock: Callable[[], float] = time.time
    failure_grace: float = DEFAULT_FAILURE_GRACE
    on_transition: Callable[[PivotRecord], None] | None = None
    """Test hook: called after each transition is persisted, before the next action runs."""

    def start(self, revision: int, previous: int | None) -> PivotRecord:
        """A new pivot to ``revision``, reverting to ``previous`` on failure."""
        return PivotRecord(Phase.PREPARING, revision, previous, started=self.clock())

    def run(
        self,
        plan: PivotJob,
        record: PivotRecord,
        persist: Callable[[PivotRecord], None],
    ) -> StepResult:
        """Run phases until the pivot must wait or is over; persist every transition."""
        result = StepResult(record)
        for _ in range(len(Phase) + 1):
            if result.record.phase.terminal:
                return result
            before = result.record
            self._act(plan, result)
            if result.record == before:
                return result
            if result.record.phase != before.phase:
                log.info(
                    "%s: pivot to revision %d: %s -> %s",
                    plan.ref,
                    before.revision,
                    before.phase.value,
                    result.record.phase.value,
                )
                event = _event_for(plan, result.record)
                if event is not None:
                    result.events.append(event)
            persist(result.record)
            if result.record.phase.terminal:
                released = self.preparer.release(plan.ref, self.children.list())
                if released:
                    log.info("%s: released unused Bundles %s", plan.ref, ", ".join(released))
            if self.on_transition is not None:
                self.on_transition(result.record)
            if result.requeue_after is not None:
                return result
        return result

    # -- the actions of each phase -------------------------------------------------------------

    def _act(self, plan: PivotJob, result: StepResult) -> None:
        record = result.record
        result.requeue_after = None
        if record.phase is Phase.PREPARING:
            self._prepare(plan, result)
        elif record.phase is Phase.APPLYING:
            self._apply_wave(plan, result)
        elif record.phase is Phase.WAITING:
            self._wait(plan, result)
        elif record.phase is Phase.PRUNING:
            keep = {e.package for e in plan.target.entries}
            if self._prune(keep):
                result.requeue_after = POLL_SECONDS
            else:
                result.record = record.to(Phase.SUCCEEDED, failing_since=None)
        elif record.phase is Phase.ROLLING_BACK:
            self._roll_back(plan, result)

    def _prepare(self, plan: PivotJob, result: StepResult) -> None:
        record = result.record
        try:
            desired = [self._desired(plan, e, record.revision) for e in plan.target.entries]
            requires = {e.package: e.requires for e in plan.target.entries}
            prepared = self.preparer.prepare(desired, owner=plan.owner, requires=requires)
        except UninstallableBundle as exc:
            self._fail(plan, result, exc.bundle, str(exc), FailureCause.UNINSTALLABLE)
            return
        except PrepareFailed as exc:
            why = words.NOT_INSTALLABLE.format(bundle=exc.bundle, package=exc.package, why=exc)
            self._fail(plan, result, exc.bundle, why, exc.cause)
            return
        if isinstance(prepared, Pending):
            if self.clock() - record.started > plan.deadline_seconds:
                why = words.DEADLINE_PREPARING.format(
                    seconds=plan.deadline_seconds, waiting=prepared.summary()
                )
                self._fail(plan, result, prepared.waiting[0], why, FailureCause.DEADLINE_EXCEEDED)
                return
            result.requeue_after = PREPARE_POLL_SECONDS
            return
        result.record = record.to(Phase.APPLYING, waves=prepared.waves, applied_waves=0)
        result.events.append(_prepared_event(record.revision, prepared))

    def _apply_wave(self, plan: PivotJob, result: StepResult) -> None:
        """Apply the next wave of children once every earlier wave is installed."""
        record = result.record
        waves = record.waves or (tuple(e.package for e in plan.target.entries),)
        done = min(record.applied_waves, len(waves))
        if done:
            earlier = [p for wave in waves[:done] for p in wave]
            existing = self.children.list()
            reports = [
                self.children.report(p, existing.get(p), bundle=_bundle_of(plan.target, p))
                for p in earlier
            ]
            result.reports = reports
            if not all(r.state in (ChildState.READY, ChildState.UNHEALTHY) for r in reports):
                self._keep_waiting(plan, result, reports)
                return
        wave = set(waves[done]) if done < len(waves) else set()
        try:
            desired = [
                self._desired(plan, e, record.revision)
                for e in plan.target.entries
                if e.package in wave
            ]
        except UninstallableBundle as exc:
            self._fail(plan, result, exc.bundle, str(exc), FailureCause.UNINSTALLABLE)
            return
        for child in desired:
            self.preparer.hand_over(self.children.apply(child))
        applied = done + 1
        phase = Phase.WAITING if applied >= len(waves) else Phase.APPLYING
        result.record = record.to(phase, applied_waves=applied, failing_since=None)

    def _wait(self, plan: PivotJob, result: StepResult) -> None:
        record = result.record
        existing = self.children.list()
        for entry in plan.target.entries:
            if entry.package not in existing:
                # Deleted by hand (or never created before a crash): create it again.
                self.children.apply(self._desired(plan, entry, record.revision))
        reports = [
            self.children.report(
                e.package, existing.get(e.package), bundle=e.bundle, missing=words.RECREATING
            )
            for e in plan.target.entries
        ]
        result.reports = reports
        states = {r.state for r in reports}
        if states == {ChildState.READY}:
            result.record = record.to(Phase.PRUNING, failing_since=None)
            return
        self._keep_waiting(plan, result, reports)

    def _keep_waiting(self, plan: PivotJob, result: StepResult, reports: list[ChildReport]) -> None:
        """Wait on the children of ``reports``: fail the pivot on a child that stays failed or
        when the progress deadline passes, else look again later."""
        record = result.record
        states = {r.state for r in reports}
        now = self.clock()
        failed = [r for r in reports if r.state is ChildState.FAILED]
        pending = states & {ChildState.PENDING, ChildState.UNPACK_PENDING, ChildState.MISSING}
        why, cause = "", FailureCause.BUNDLE_FAILED
        if failed and not pending:
            if record.failing_since is None:
                result.record = record.to(record.phase, failing_since=now)
                result.requeue_after = self.failure_grace
                return
            if now - record.failing_since >= self.failure_grace:
                why = _failure_message(plan, failed[0])
        if not why and now - record.started > plan.deadline_seconds:
            not_ready = [r for r in reports if r.state is not ChildState.READY]
            why = words.DEADLINE_WAITING.format(
                seconds=plan.deadline_seconds,
                not_ready="; ".join(_describe(plan, r) for r in not_ready),
            )
            cause = FailureCause.DEADLINE_EXCEEDED
        if not why:
            if not failed and record.failing_since is not None:
                result.record = record.to(record.phase, failing_since=None)
            result.requeue_after = POLL_SECONDS
            return
        culprit = (failed or [r for r in reports if r.state is not ChildState.READY])[0]
        self._fail(plan, result, _bundle_of(plan.target, culprit.package), why, cause)

    def _fail(
        self, plan: PivotJob, result: StepResult, bundle: str, why: str, cause: FailureCause
    ) -> None:
        """End the pivot on ``bundle``'s failure (``cause`` says why, ``why`` in words): roll
        back, or stop when that is not possible."""
        record = result.record
        now = self.clock()
        if plan.auto_rollback and plan.previous is not None:
            result.record = record.to(
                Phase.ROLLING_BACK,
                started=now,
                failing_since=None,
                failed_bundle=bundle,
                message=why,
                cause=cause,
            )
        else:
            template = words.NO_ROLLBACK_OFF if not plan.auto_rollback else words.NO_ROLLBACK_TARGET
            result.record = record.to(
                Phase.FAILED,
                failed_bundle=bundle,
                message=template.format(why=why),
                cause=cause,
                failing_since=None,
            )

    def _roll_back(self, plan: PivotJob, result: StepResult) -> None:
        record = result.record
        assert plan.previous is not None
        assert record.previous is not None
        existing = self.children.list()
        for entry in plan.previous.entries:
            child = existing.get(entry.package)
            annotations = (child or {}).get("metadata", {}).get("annotations") or {}
            if (
                child is None
                or annotations.get(ANNOTATION_BUNDLE) != entry.bundle
                or annotations.get(ANNOTATION_REVISION) != str(record.previous)
            ):
                self.children.apply(self._desired(plan, entry, record.previous))
        keep = {e.package for e in plan.previous.entries}
        pruning = self._prune(keep)
        existing = self.children.list()
        reports = [
            self.children.report(e.package, existing.get(e.package), bundle=e.bundle)
            for e in plan.previous.entries
        ]
        result.reports = reports
        if not pruning and all(r.state is ChildState.READY for r in reports):
            result.record = record.to(Phase.ROLLED_BACK)
            return
        if self.clock() - record.started > plan.deadline_seconds:
            not_ready = "; ".join(
                _describe(plan, r) for r in reports if r.state is not ChildState.READY
            )
            result.record = record.to(
                Phase.FAILED,
                message=words.ROLLBACK_INCOMPLETE.format(
                    why=record.message,
                    previous=record.previous,
                    seconds=plan.deadline_seconds,
                    not_ready=not_ready or "pruning",
                ),
            )
            return
        result.requeue_after = POLL_SECONDS

    # -- helpers -------------------------------------------------------------------------------

    def _desired(self, plan: PivotJob, entry: Entry, revision: int) -> Object:
        return desired_child(
            plan.ref,
            entry,
            revision=revision,
            owner=plan.owner,
            service_account=plan.service_account,
            primary=entry.package == plan.primary_package,
            settings=plan.child_settings,
        )

    def _prune(self, keep: set[str]) -> bool:
        """Delete children whose package is not in ``keep``; True while any still exist."""
        leftovers = {p: bd for p, bd in self.children.list().items() if p not in keep}
        for bd in leftovers.values():
            if not bd["metadata"].get("deletionTimestamp"):
                self.children.delete(str(bd["metadata"]["name"]))
        return bool(leftovers)


def _bundle_of(resolveset: ResolveSet, package: str) -> str:
    for entry in resolveset.entries:
        if entry.package == package:
            return entry.bundle
    return package


def _describe(plan: PivotJob, report: ChildReport) -> str:
    bundle = _bundle_of(plan.target, report.package)
    where = f" (BundleDeployment {report.name})" if report.name else ""
    return words.NOT_READY.format(
        bundle=bundle, where=where, state=report.state.value, why=report.message
    )


def _failure_message(plan: PivotJob, report: ChildReport) -> str:
    bundle = _bundle_of(plan.target, report.package)
    return words.FAILED_CHILD.format(
        bundle=bundle,
        package=report.package,
        child=report.name,
        reason=report.reason,
        why=report.message,
    )


def _prepared_event(revision: int, prepared: Prepared) -> Event:
    return (
        "Normal",
        "PivotPrepared",
        words.EVENT_PREPARED.format(revision=revision, summary=prepared.summary()),
    )


def _event_for(plan: PivotJob, record: PivotRecord) -> Event | None:
    fields = {"revision": record.revision, "previous": record.previous, "why": record.message}
    texts = {
        Phase.WAITING: ("Normal", "PivotApplied", words.EVENT_APPLIED),
        Phase.PRUNING: ("Normal", "PivotInstalled", words.EVENT_INSTALLED),
        Phase.SUCCEEDED: ("Normal", "PivotSucceeded", words.EVENT_SUCCEEDED),
        Phase.ROLLING_BACK: ("Warning", "PivotFailed", words.EVENT_ROLLING_BACK),
        Phase.ROLLED_BACK: ("Warning", "RolledBack", words.EVENT_ROLLED_BACK),
        Phase.FAILED: ("Warning", "PivotFailed", words.EVENT_FAILED),
    }
    found = texts.get(record.phase)
    if found is None:
        return None
    type_, reason, template = found
    return type_, reason, template.format(**fields)
