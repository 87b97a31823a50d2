"""The pivot state machine (:class:`pivoter.pivot.PivotMachine`) driven in memory: every phase,
every transition and every failure path, with the fakes of tests/pivot/fakes.py in place of the
child BundleDeployments and of the ``Preparing`` phase. No cluster: the same behaviour on a real
API server is in tests/inputs/ (test_resume_cluster.py, test_kill_cluster.py, ...).

The scenario: input ``Resolution/web`` has revision 1 installed (db 1.0.0, web 1.0.0, cache
1.0.0, all Ready) and pivots to revision 2 (db 2.0.0, web 2.0.0 requiring db, metrics 1.0.0;
cache is dropped), applied in two waves ``[db] -> [metrics, web]``.

Each row maps a transition of pivoter/pivot/machine.py (a branch of ``_act`` and of the phase's
action) to the test that makes it happen and asserts its outcome;
:func:`test_the_table_names_every_phase_and_existing_tests` checks that the table covers every
:class:`~pivoter.pivot.Phase` and names only tests that exist.

| from | when | to | test |
|---|---|---|---|
| Preparing | the dry run passes | Applying | test_preparing_dry_run_passes_and_applies_the_first_wave |
| Preparing | bundles unpacking, within the deadline | Preparing | test_preparing_waits_for_unpacking_then_fails_at_the_deadline |
| Preparing | still unpacking at the progress deadline | RollingBack | test_preparing_waits_for_unpacking_then_fails_at_the_deadline |
| Preparing | the dry run fails, a previous revision exists | RollingBack | test_preparing_dry_run_fails_rolls_back_without_touching_a_child |
| Preparing | the dry run fails on the first install | Failed | test_first_install_dry_run_fails_creates_nothing |
| Preparing | the dry run fails, autoRollback off | Failed | test_dry_run_fails_with_rollback_off_is_failed |
| Preparing | a bundle has no image | RollingBack | test_uninstallable_bundle_fails_in_preparing |
| Applying | the first wave (appliedWaves 0) | Applying | test_preparing_dry_run_passes_and_applies_the_first_wave |
| Applying | an earlier wave still pending | Applying | test_waves_apply_in_order_once_earlier_waves_are_installed |
| Applying | the earlier waves are Ready: the last wave | Waiting | test_waves_apply_in_order_once_earlier_waves_are_installed |
| Applying | an earlier wave is Unhealthy (installed) | Waiting | test_an_unhealthy_earlier_wave_counts_as_installed |
| Applying | an earlier wave failed (failingSince set) | Applying | test_a_failed_earlier_wave_rolls_back_after_the_grace |
| Applying | an earlier wave stayed failed for the grace | RollingBack | test_a_failed_earlier_wave_rolls_back_after_the_grace |
| Applying | a record without waves (one wave of all) | Waiting | test_a_record_without_waves_applies_everything_in_one_wave |
| Applying | appliedWaves already past the last wave | Waiting | test_applying_past_the_last_wave_goes_to_waiting |
| Applying | a bundle of the wave has no image | Failed | test_uninstallable_bundle_fails_in_applying |
| Waiting | every child Ready | Pruning | test_a_successful_pivot_end_to_end |
| Waiting | children pending or Unhealthy | Waiting | test_waiting_requeues_while_children_are_pending |
| Waiting | a child failed while another is pending | Waiting | test_a_failure_counts_only_when_no_child_is_pending |
| Waiting | a child failed, nothing pending (failingSince set) | Waiting | test_a_child_failing_install_rolls_back_the_group |
| Waiting | failed, the grace not over yet | Waiting | test_a_failure_within_the_grace_waits |
| Waiting | failed for the grace, a previous revision exists | RollingBack | test_a_child_failing_install_rolls_back_the_group |
| Waiting | the failed child recovers (failingSince cleared) | Waiting | test_a_failed_child_that_recovers_clears_failing_since |
| Waiting | the progress deadline passed | RollingBack | test_progress_deadline_rolls_back_naming_the_unready_child |
| Waiting | the deadline passes during a failure's grace | RollingBack | test_deadline_during_the_grace_names_the_failed_child |
| Waiting | the progress deadline passed, autoRollback off | Failed | test_progress_deadline_with_rollback_off_is_failed |
| Waiting | a child failed on the first install | Failed | test_first_install_failing_after_apply_keeps_the_children |
| Waiting | a child is missing (deleted by hand) | Waiting | test_a_missing_child_is_recreated_while_waiting |
| Pruning | a dropped bundle's child still exists | Pruning | test_pruning_deletes_dropped_bundles_once_and_waits_until_gone |
| Pruning | no dropped child left | Succeeded | test_pruning_deletes_dropped_bundles_once_and_waits_until_gone |
| RollingBack | children of the previous revision re-applied, extras pruned | RollingBack | test_rollback_reapplies_only_children_not_on_the_previous_revision |
| RollingBack | every child of the previous revision Ready, none left to prune | RolledBack | test_a_child_failing_install_rolls_back_the_group |
| RollingBack | not Ready yet, within the deadline | RollingBack | test_rollback_failing_ends_failed_at_the_deadline |
| RollingBack | a child not Ready at the deadline | Failed | test_rollback_failing_ends_failed_at_the_deadline |
| RollingBack | only pruning left at the deadline | Failed | test_rollback_stuck_pruning_ends_failed_at_the_deadline |
| Succeeded | run again | Succeeded | test_a_finished_pivot_does_nothing |
| RolledBack | run again | RolledBack | test_a_finished_pivot_does_nothing |
| Failed | run again | Failed | test_a_finished_pivot_does_nothing |
| Succeeded | entering a terminal phase releases unused Bundles | Succeeded | test_prepared_bundles_are_released_when_the_pivot_ends |
| Applying | each persisted record reaches on_transition | Waiting | test_on_transition_sees_every_persisted_record |
| Applying | more transitions than phases in one call | Applying | test_run_is_bounded_per_call |
| Preparing | restarted after each transition of a pivot that succeeds | Succeeded | test_resume_from_every_persisted_record_converges_the_same_way |
| RollingBack | restarted after each transition of a pivot that rolls back | RolledBack | test_resume_from_every_persisted_record_converges_the_same_way |
| Failed | restarted after each transition of a first install that fails | Failed | test_resume_from_every_persisted_record_converges_the_same_way |
| Pruning | every call repeated at once, in every phase reached | Pruning | test_running_twice_changes_nothing |
"""  # noqa: E501 (the table is wider than a line)

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from pivoter.kube import Kube, Object
from pivoter.pivot import (
    Children,
    ChildState,
    Event,
    Pending,
    Phase,
    PivotJob,
    PivotMachine,
    PivotRecord,
    PrepareFailed,
    StepResult,
    desired_child,
)
from pivoter.pivot.naming import ANNOTATION_REVISION
from pivoter.resolvesets import InputRef
from resolver.resolveset import Entry, ResolveSet
from tests.pivot.fakes import FakeChildren, FakeClock, FakePreparer, Outcome

REF = InputRef("Resolution", "web")
OWNER = {
    "apiVersion": "pivoter.io/v1alpha1",
    "kind": "Resolution",
    "metadata": {"name": "web", "uid": "u1"},
}
DEADLINE = 600.0
GRACE = 5.0
POLL = 2.0


def entry(
    package: str, version: str, *, image: str | None = None, requires: tuple[str, ...] = ()
) -> Entry:
    return Entry(
        package=package,
        version=version,
        bundle=f"{package}.v{version}",
        channel="stable",
        catalog="main",
        image=f"registry.example/{package}:{version}" if image is None else image,
        provisioner_class="core-rukpak-io-plain",
        requires=requires,
    )


V1 = ResolveSet(
    (entry("db", "1.0.0"), entry("web", "1.0.0", requires=("db",)), entry("cache", "1.0.0"))
)
V2 = ResolveSet(
    (entry("db", "2.0.0"), entry("web", "2.0.0", requires=("db",)), entry("metrics", "1.0.0"))
)
WAVES = (("db",), ("metrics", "web"))
ON_V1 = {"db": ("db.v1.0.0", "1"), "web": ("web.v1.0.0", "1"), "cache": ("cache.v1.0.0", "1")}
ON_V2 = {"db": ("db.v2.0.0", "2"), "web": ("web.v2.0.0", "2"), "metrics": ("metrics.v1.0.0", "2")}
WEB_BROKEN = {"web.v2.0.0": Outcome(ChildState.FAILED, message="ConfigMap web is invalid")}


def plan(target: ResolveSet = V2, previous: ResolveSet | None = V1, **changes: Any) -> PivotJob:
    return PivotJob(REF, OWNER, target, previous, deadline_seconds=DEADLINE, **changes)


def install(children: FakeChildren, resolveset: ResolveSet, revision: int) -> None:
    """Apply the children of ``resolveset`` at ``revision`` (they report nothing yet)."""
    for e in resolveset.entries:
        children.apply(desired_child(REF, e, revision=revision, owner=OWNER))


@dataclass
class Harness:
    """A machine over the fakes, recording what it persists (with the cluster at that moment)."""

    children: FakeChildren
    preparer: FakePreparer
    clock: FakeClock
    hooked: list[PivotRecord] = field(default_factory=list)
    persisted: list[PivotRecord] = field(default_factory=list)
    snapshots: list[tuple[dict[str, Object], float]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    @property
    def machine(self) -> PivotMachine:
        return PivotMachine(
            self.children,
            self.preparer,
            clock=self.clock,
            failure_grace=GRACE,
            on_transition=self.hooked.append,
        )

    def persist(self, record: PivotRecord) -> None:
        self.persisted.append(record)
        self.snapshots.append((self.children.snapshot(), self.clock.now))

    def start(self, revision: int = 2, previous: int | None = 1) -> PivotRecord:
        return self.machine.start(revision, previous)

    def run(self, the_plan: PivotJob, record: PivotRecord) -> StepResult:
        step = self.machine.run(the_plan, record, self.persist)
        self.events += step.events
        return step

    def drive(
        self,
        the_plan: PivotJob,
        record: PivotRecord,
        *,
        check: Callable[[StepResult], None] | None = None,
    ) -> PivotRecord:
        """Run, let the controller act and the requested time pass, until the pivot is over."""
        for _ in range(40):
            step = self.run(the_plan, record)
            if check is not None:
                check(step)
            record = step.record
            if record.phase.terminal:
                return record
            self.children.settle()
            self.clock.advance(step.requeue_after)
        raise AssertionError(f"the pivot did not end: {record}")

    def phases(self) -> list[Phase]:
        return [r.phase for r in self.persisted]


def harness(
    outcomes: dict[str, Outcome] | None = None, *, installed: ResolveSet | None = V1
) -> Harness:
    """Revision 1 (or nothing) installed and Ready; the preparer orders the group in WAVES."""
    children = FakeChildren(REF, outcomes=dict(outcomes or {}))
    if installed is not None:
        install(children, installed, 1)
        children.settle()
        children.applied.clear()
    return Harness(children, FakePreparer(waves=WAVES), FakeClock())


def at_waiting(h: Harness) -> PivotRecord:
    """Revision 2 applied over revision 1 (the children report nothing for it yet)."""
    install(h.children, V2, 2)
    h.children.applied.clear()
    return PivotRecord(Phase.WAITING, 2, 1, started=h.clock(), waves=WAVES, applied_waves=2)


# ----------------------------------------------------------------------------- Preparing


def test_preparing_dry_run_passes_and_applies_the_first_wave() -> None:
    h = harness()
    step = h.run(plan(), h.start())

    assert [(r.phase, r.waves, r.applied_waves) for r in h.persisted] == [
        (Phase.APPLYING, WAVES, 0),
        (Phase.APPLYING, WAVES, 1),
    ]
    assert h.preparer.prepared == [
        (("db", "web", "metrics"), {"db": (), "web": ("db",), "metrics": ()})
    ]
    assert h.events == [
        (
            "Normal",
            "PivotPrepared",
            "Prepared revision 2: 3 bundles, 0 objects; 3 passed a server-side dry run; "
            "apply order [db] -> [metrics, web]",
        )
    ]
    # Only the first wave: db is updated in place, web and metrics wait for it.
    assert h.children.applied == [("web-db", "db.v2.0.0", "2")]
    assert h.preparer.handed_over == ["web-db"]
    assert h.children.installed() == {**ON_V1, "db": ("db.v2.0.0", "2")}
    assert step.record == h.persisted[-1]
    assert step.requeue_after == POLL
    assert [(r.package, r.state) for r in step.reports] == [("db", ChildState.PENDING)]


def test_preparing_waits_for_unpacking_then_fails_at_the_deadline() -> None:
    h = harness()
    h.preparer.result = Pending(("db.v2.0.0", "web.v2.0.0"))
    start = h.start()

    step = h.run(plan(), start)
    assert step.record == start
    assert step.requeue_after == 1.0
    assert h.persisted == []
    assert h.events == []
    assert h.children.applied == []

    h.clock.advance(DEADLINE + 1)
    step = h.run(plan(), start)
    rolling_back = h.persisted[0]
    assert rolling_back.phase is Phase.ROLLING_BACK
    assert rolling_back.failed_bundle == "db.v2.0.0"
    assert rolling_back.message == (
        "the progress deadline of 600s passed while waiting for 2 bundles to unpack: "
        "db.v2.0.0, web.v2.0.0"
    )
    assert rolling_back.started == h.clock.now  # the rollback has a deadline of its own
    # Nothing of revision 2 was applied, so the rollback has nothing to do and ends at once.
    assert step.record.phase is Phase.ROLLED_BACK
    assert h.children.applied == []
    assert h.children.deleted == []
    assert h.children.installed() == ON_V1


def test_preparing_dry_run_fails_rolls_back_without_touching_a_child() -> None:
    h = harness()
    h.preparer.result = PrepareFailed(
        "web", "web.v2.0.0", "the server-side dry run of bundle web.v2.0.0 failed: ConfigMap x"
    )
    step = h.run(plan(), h.start())

    why = (
        "bundle web.v2.0.0 of package web cannot be installed: the server-side dry run of bundle "
        "web.v2.0.0 failed: ConfigMap x"
    )
    assert h.phases() == [Phase.ROLLING_BACK, Phase.ROLLED_BACK]
    assert step.record.failed_bundle == "web.v2.0.0"
    assert step.record.message == why
    assert h.events == [
        (
            "Warning",
            "PivotFailed",
            f"Pivot to revision 2 failed, rolling back to revision 1: {why}",
        ),
        ("Warning", "RolledBack", "Rolled back to revision 1 after revision 2 failed"),
    ]
    assert h.children.applied == []
    assert h.children.deleted == []
    assert h.children.installed() == ON_V1


def test_first_install_dry_run_fails_creates_nothing() -> None:
    h = harness(installed=None)
    h.preparer.result = PrepareFailed("db", "db.v2.0.0", "Bundle db failed to unpack")
    step = h.run(plan(previous=None), h.start(1, None))

    assert h.phases() == [Phase.FAILED]
    assert step.record.message == (
        "bundle db.v2.0.0 of package db cannot be installed: Bundle db failed to unpack "
        "(no earlier successful revision to revert to)"
    )
    assert h.events == [
        ("Warning", "PivotFailed", f"Pivot to revision 1 failed: {step.record.message}")
    ]
    assert h.children.objects == {}


def test_dry_run_fails_with_rollback_off_is_failed() -> None:
    h = harness()
    h.preparer.result = PrepareFailed("web", "web.v2.0.0", "denied by a webhook")
    step = h.run(plan(auto_rollback=False), h.start())

    assert h.phases() == [Phase.FAILED]
    assert step.record.failed_bundle == "web.v2.0.0"
    assert step.record.message.endswith("denied by a webhook (automatic rollback is off)")
    assert h.children.applied == []
    assert h.children.installed() == ON_V1


def test_uninstallable_bundle_fails_in_preparing() -> None:
    h = harness()
    no_image = ResolveSet((entry("db", "2.0.0"), entry("web", "2.0.0", image="")))
    step = h.run(plan(no_image), h.start())

    assert h.preparer.prepared == []  # failed before anything was prepared
    assert h.phases() == [Phase.ROLLING_BACK, Phase.ROLLED_BACK]
    assert step.record.failed_bundle == "web.v2.0.0"
    assert "has no image" in step.record.message
    assert h.children.installed() == ON_V1


# ----------------------------------------------------------------------------- Applying


def test_waves_apply_in_order_once_earlier_waves_are_installed() -> None:
    h = harness()
    first = h.run(plan(), h.start())

    again = h.run(plan(), first.record)  # db has not reported for its new spec yet
    assert again.record == first.record
    assert again.requeue_after == POLL
    assert h.children.applied == [("web-db", "db.v2.0.0", "2")]

    h.children.settle()
    step = h.run(plan(), first.record)
    assert h.children.applied[1:] == [
        ("web-web", "web.v2.0.0", "2"),
        ("web-metrics", "metrics.v1.0.0", "2"),
    ]
    assert h.preparer.handed_over == ["web-db", "web-web", "web-metrics"]
    assert (h.persisted[-1].phase, h.persisted[-1].applied_waves) == (Phase.WAITING, 2)
    assert h.events[-1] == ("Normal", "PivotApplied", "Applied the bundles of revision 2")
    assert step.record.phase is Phase.WAITING
    assert step.requeue_after == POLL


def test_an_unhealthy_earlier_wave_counts_as_installed() -> None:
    h = harness()
    first = h.run(plan(), h.start())
    h.children.set_state("db", Outcome(ChildState.UNHEALTHY))

    step = h.run(plan(), first.record)
    assert step.record.phase is Phase.WAITING
    assert [a[0] for a in h.children.applied] == ["web-db", "web-web", "web-metrics"]


def test_a_failed_earlier_wave_rolls_back_after_the_grace() -> None:
    h = harness()
    first = h.run(plan(), h.start())
    h.children.set_state("db", Outcome(ChildState.FAILED, "UpgradeFailed", "CRD x is invalid"))

    step = h.run(plan(), first.record)
    assert step.record.phase is Phase.APPLYING
    assert step.record.failing_since == h.clock.now
    assert step.requeue_after == GRACE
    assert h.persisted[-1] == step.record  # the start of the failure is persisted
    assert len(h.children.applied) == 1  # the next wave waits

    h.clock.advance(GRACE)
    step = h.run(plan(), step.record)
    assert h.persisted[-1].phase is Phase.ROLLING_BACK
    assert h.persisted[-1].message == (
        "bundle db.v2.0.0 of package db failed (BundleDeployment web-db, UpgradeFailed): "
        "CRD x is invalid"
    )
    assert h.persisted[-1].failing_since is None
    assert h.drive(plan(), step.record).phase is Phase.ROLLED_BACK
    assert h.children.installed() == ON_V1


def test_a_record_without_waves_applies_everything_in_one_wave() -> None:
    h = harness()
    record = PivotRecord(Phase.APPLYING, 2, 1, started=h.clock())  # written before waves existed

    step = h.run(plan(), record)
    assert [a[0] for a in h.children.applied] == ["web-db", "web-web", "web-metrics"]
    assert (h.persisted[0].phase, h.persisted[0].applied_waves) == (Phase.WAITING, 1)
    assert step.record.phase is Phase.WAITING


def test_applying_past_the_last_wave_goes_to_waiting() -> None:
    h = harness()
    at_waiting(h)
    h.children.settle()
    record = PivotRecord(Phase.APPLYING, 2, 1, started=h.clock(), waves=WAVES, applied_waves=2)

    h.run(plan(), record)
    assert h.children.applied == []  # every wave was applied already
    assert (h.persisted[0].phase, h.persisted[0].applied_waves) == (Phase.WAITING, 3)
    assert h.phases()[1] is Phase.PRUNING


def test_uninstallable_bundle_fails_in_applying() -> None:
    h = harness(installed=None)
    no_image = ResolveSet((entry("web", "2.0.0", image=""),))
    record = PivotRecord(Phase.APPLYING, 1, None, started=h.clock(), waves=(("web",),))

    step = h.run(plan(no_image, previous=None), record)
    assert step.record.phase is Phase.FAILED
    assert step.record.failed_bundle == "web.v2.0.0"
    assert "has no image" in step.record.message
    assert h.children.applied == []


# ----------------------------------------------------------------------------- Waiting


def test_a_successful_pivot_end_to_end() -> None:
    h = harness()
    final = h.drive(plan(), h.start())

    assert final.phase is Phase.SUCCEEDED
    assert final.message == ""
    assert final.failed_bundle == ""
    assert h.phases() == [
        Phase.APPLYING,
        Phase.APPLYING,
        Phase.WAITING,
        Phase.PRUNING,
        Phase.SUCCEEDED,
    ]
    assert [reason for _, reason, _ in h.events] == [
        "PivotPrepared",
        "PivotApplied",
        "PivotInstalled",
        "PivotSucceeded",
    ]
    assert h.events[2][2] == "Every bundle of revision 2 is installed and healthy; pruning"
    assert h.events[3] == ("Normal", "PivotSucceeded", "Revision 2 is active")
    assert h.children.installed() == ON_V2
    assert h.children.deleted == ["web-cache"]


def test_waiting_requeues_while_children_are_pending() -> None:
    h = harness()
    record = at_waiting(h)

    step = h.run(plan(), record)
    assert step.record == record
    assert step.requeue_after == POLL
    assert h.persisted == []
    assert {r.package: r.state for r in step.reports} == {
        "db": ChildState.PENDING,
        "web": ChildState.PENDING,
        "metrics": ChildState.PENDING,
    }

    h.children.settle()
    h.children.set_state("web", Outcome(ChildState.UNHEALTHY, message="Deployment web: 0/1"))
    step = h.run(plan(), record)
    assert step.record == record
    assert step.requeue_after == POLL
    assert h.persisted == []
    web = next(r for r in step.reports if r.package == "web")
    assert (web.state, web.message) == (ChildState.UNHEALTHY, "Deployment web: 0/1")


def test_a_failure_counts_only_when_no_child_is_pending() -> None:
    h = harness(WEB_BROKEN)
    record = at_waiting(h)
    h.children.settle()
    h.children.set_state("metrics", Outcome(ChildState.UNPACK_PENDING))

    step = h.run(plan(), record)
    assert step.record == record
    assert step.record.failing_since is None
    assert step.requeue_after == POLL
    assert h.persisted == []


def test_a_child_failing_install_rolls_back_the_group() -> None:
    h = harness(WEB_BROKEN)
    final = h.drive(plan(), h.start())

    why = (
        "bundle web.v2.0.0 of package web failed (BundleDeployment web-web, InstallFailed): "
        "ConfigMap web is invalid"
    )
    assert h.phases() == [
        Phase.APPLYING,
        Phase.APPLYING,
        Phase.WAITING,
        Phase.WAITING,
        Phase.ROLLING_BACK,
        Phase.ROLLED_BACK,
    ]
    failing, rolling_back = h.persisted[3], h.persisted[4]
    assert failing.failing_since is not None
    assert rolling_back.started - failing.failing_since == GRACE
    assert (rolling_back.failed_bundle, rolling_back.message) == ("web.v2.0.0", why)
    assert (final.phase, final.revision, final.previous) == (Phase.ROLLED_BACK, 2, 1)
    assert final.message == why
    assert h.events[-2:] == [
        (
            "Warning",
            "PivotFailed",
            f"Pivot to revision 2 failed, rolling back to revision 1: {why}",
        ),
        ("Warning", "RolledBack", "Rolled back to revision 1 after revision 2 failed"),
    ]
    # The whole group is back on revision 1: db and web re-applied, metrics (new in 2) removed.
    assert h.children.installed() == ON_V1
    assert h.children.deleted == ["web-metrics"]


def test_a_failure_within_the_grace_waits() -> None:
    h = harness(WEB_BROKEN)
    record = at_waiting(h)
    h.children.settle()
    failing = h.run(plan(), record).record
    assert failing.failing_since == h.clock.now
    assert h.persisted == [failing]

    h.clock.advance(GRACE - 1)
    step = h.run(plan(), failing)
    assert step.record == failing
    assert step.requeue_after == POLL
    assert h.persisted == [failing]


def test_a_failed_child_that_recovers_clears_failing_since() -> None:
    h = harness(WEB_BROKEN)
    record = at_waiting(h)
    h.children.settle()
    failing = h.run(plan(), record).record

    # The controller's retry installed it; it is not healthy yet.
    h.children.set_state("web", Outcome(ChildState.UNHEALTHY))
    h.clock.advance(1)
    step = h.run(plan(), failing)
    assert step.record.phase is Phase.WAITING
    assert step.record.failing_since is None
    assert h.persisted[-1] == step.record
    assert step.requeue_after == POLL


def test_progress_deadline_rolls_back_naming_the_unready_child() -> None:
    h = harness()
    record = at_waiting(h)
    h.children.settle()
    h.children.set_state("web", Outcome(ChildState.UNHEALTHY, message="Deployment web: 0/1"))

    h.clock.advance(DEADLINE)
    assert h.run(plan(), record).record == record  # not past it yet
    h.clock.advance(1)
    h.run(plan(), record)
    rolling_back = h.persisted[0]
    assert rolling_back.phase is Phase.ROLLING_BACK
    assert rolling_back.failed_bundle == "web.v2.0.0"
    assert rolling_back.message == (
        "the progress deadline of 600s passed; bundle web.v2.0.0 (BundleDeployment web-web) is "
        "Unhealthy: Deployment web: 0/1"
    )


def test_deadline_during_the_grace_names_the_failed_child() -> None:
    h = harness(WEB_BROKEN)
    record = at_waiting(h)
    h.children.settle()
    h.clock.advance(DEADLINE - 1)
    failing = h.run(plan(), record).record  # fails just before the deadline
    h.clock.advance(2)

    h.run(plan(), failing)
    assert h.phases() == [Phase.WAITING, Phase.ROLLING_BACK]
    rolling_back = h.persisted[-1]
    assert rolling_back.phase is Phase.ROLLING_BACK
    assert rolling_back.failed_bundle == "web.v2.0.0"
    assert rolling_back.message.startswith("the progress deadline of 600s passed; bundle web")
    assert "is Failed: ConfigMap web is invalid" in rolling_back.message


def test_progress_deadline_with_rollback_off_is_failed() -> None:
    h = harness()
    record = at_waiting(h)
    h.clock.advance(DEADLINE + 1)

    step = h.run(plan(auto_rollback=False), record)
    assert h.phases() == [Phase.FAILED]
    assert step.record.message.startswith("the progress deadline of 600s passed; bundle db.v2.0.0")
    assert step.record.message.endswith("(automatic rollback is off)")
    assert h.children.installed() == {**ON_V2, "cache": ("cache.v1.0.0", "1")}  # left as is


def test_first_install_failing_after_apply_keeps_the_children() -> None:
    h = harness(WEB_BROKEN, installed=None)
    final = h.drive(plan(previous=None), h.start(1, None))

    assert h.phases()[-1] is Phase.FAILED
    assert final.phase is Phase.FAILED
    assert final.failed_bundle == "web.v2.0.0"
    assert final.message.endswith(
        "ConfigMap web is invalid (no earlier successful revision to revert to)"
    )
    # Nothing to revert to: the children stay for a person to inspect.
    assert h.children.installed() == {p: (b, "1") for p, (b, _) in ON_V2.items()}
    assert h.children.deleted == []


def test_a_missing_child_is_recreated_while_waiting() -> None:
    h = harness()
    record = at_waiting(h)
    h.children.settle()
    h.children.remove("web")  # deleted by hand

    step = h.run(plan(), record)
    assert h.children.applied == [("web-web", "web.v2.0.0", "2")]
    web = next(r for r in step.reports if r.package == "web")
    assert web.state is ChildState.MISSING
    assert web.message == (
        "BundleDeployment web-web (bundle web.v2.0.0) is missing (deleted, or not created yet); "
        "creating it"
    )
    assert step.record == record
    assert step.requeue_after == POLL

    h.children.settle()
    assert h.run(plan(), record).record.phase is Phase.PRUNING


# ----------------------------------------------------------------------------- Pruning


def test_pruning_deletes_dropped_bundles_once_and_waits_until_gone() -> None:
    h = harness()
    at_waiting(h)
    h.children.settle()
    record = PivotRecord(Phase.PRUNING, 2, 1, started=h.clock(), waves=WAVES, applied_waves=2)

    step = h.run(plan(), record)
    assert h.children.deleted == ["web-cache"]
    assert step.record == record
    assert step.requeue_after == POLL
    assert h.persisted == []

    step = h.run(plan(), record)  # still being deleted: not deleted again
    assert h.children.deleted == ["web-cache"]
    assert step.record == record

    h.children.settle()  # its finalizer is done
    step = h.run(plan(), record)
    assert h.phases() == [Phase.SUCCEEDED]
    assert step.record.phase is Phase.SUCCEEDED
    assert h.children.installed() == ON_V2


# ----------------------------------------------------------------------------- RollingBack


def rolling_back(h: Harness) -> PivotRecord:
    return PivotRecord(
        Phase.ROLLING_BACK, 2, 1, started=h.clock(), failed_bundle="web.v2.0.0", message="broke"
    )


def test_rollback_reapplies_only_children_not_on_the_previous_revision() -> None:
    h = harness()
    h.children.apply(desired_child(REF, V2.entries[0], revision=2, owner=OWNER))  # db on 2
    h.children.apply(desired_child(REF, V2.entries[2], revision=2, owner=OWNER))  # metrics
    h.children.settle()
    h.children.by_package("cache")["metadata"]["annotations"][ANNOTATION_REVISION] = "5"
    h.children.applied.clear()

    step = h.run(plan(), rolling_back(h))
    assert h.children.applied == [("web-db", "db.v1.0.0", "1"), ("web-cache", "cache.v1.0.0", "1")]
    assert h.children.deleted == ["web-metrics"]
    assert step.record.phase is Phase.ROLLING_BACK
    assert step.requeue_after == POLL
    assert h.persisted == []

    h.children.settle()
    assert h.run(plan(), step.record).record.phase is Phase.ROLLED_BACK
    assert h.children.installed() == ON_V1


def test_rollback_failing_ends_failed_at_the_deadline() -> None:
    h = harness({"web.v1.0.0": Outcome(ChildState.FAILED, message="still broken")})
    install(h.children, V2, 2)
    h.children.settle()
    record = rolling_back(h)

    step = h.run(plan(), record)
    h.children.settle()
    step = h.run(plan(), step.record)
    assert step.record == record
    assert step.requeue_after == POLL
    assert h.persisted == []

    h.clock.advance(DEADLINE + 1)
    step = h.run(plan(), record)
    assert h.phases() == [Phase.FAILED]
    assert step.record.message.startswith(
        "broke; the rollback to revision 1 did not complete within 600s: bundle "
    )
    assert step.record.message.endswith("(BundleDeployment web-web) is Failed: still broken")
    assert h.events == [
        ("Warning", "PivotFailed", f"Pivot to revision 2 failed: {step.record.message}")
    ]


def test_rollback_stuck_pruning_ends_failed_at_the_deadline() -> None:
    h = harness()
    h.children.apply(desired_child(REF, V2.entries[2], revision=2, owner=OWNER))  # metrics
    h.children.settle()
    record = rolling_back(h)

    step = h.run(plan(), record)
    assert h.children.deleted == ["web-metrics"]
    assert step.requeue_after == POLL
    h.clock.advance(DEADLINE + 1)  # the finalizer never finishes
    step = h.run(plan(), record)
    assert step.record.phase is Phase.FAILED
    assert step.record.message == (
        "broke; the rollback to revision 1 did not complete within 600s: pruning"
    )


# ----------------------------------------------------------------------------- the run loop


@pytest.mark.parametrize("phase", [p for p in Phase if p.terminal])
def test_a_finished_pivot_does_nothing(phase: Phase) -> None:
    h = harness()
    record = PivotRecord(phase, 2, 1, started=h.clock(), message="over")

    step = h.run(plan(), record)
    assert step.record is record
    assert step.requeue_after is None
    assert step.events == []
    assert h.persisted == []
    assert h.hooked == []
    assert h.children.applied == []
    assert h.children.deleted == []
    assert h.preparer.prepared == []
    assert h.preparer.releases == []


def test_prepared_bundles_are_released_when_the_pivot_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = harness()
    h.preparer.released_names = ["web-db-0123456789"]
    with caplog.at_level(logging.INFO, logger="pivoter.pivot.machine"):
        h.drive(plan(), h.start())

    # Once, at the end, with the children as they are then.
    assert h.preparer.releases == [("Resolution/web", ("web-db", "web-metrics", "web-web"))]
    assert "released unused Bundles web-db-0123456789" in caplog.text


def test_on_transition_sees_every_persisted_record() -> None:
    h = harness(WEB_BROKEN)
    h.drive(plan(), h.start())
    assert h.hooked == h.persisted
    assert len(h.hooked) == 6


def test_run_is_bounded_per_call() -> None:
    h = harness(installed=None)
    h.children.settle_on_apply = True  # every child Ready as soon as it is applied
    many = ResolveSet(tuple(entry(f"p{i}", "1.0.0") for i in range(12)))
    h.preparer.waves = tuple((f"p{i}",) for i in range(12))

    step = h.run(plan(many, previous=None), h.start(1, None))
    assert len(h.persisted) == len(Phase) + 1
    assert step.record.phase is Phase.APPLYING
    assert step.requeue_after is None
    assert step.record.applied_waves == len(Phase)
    # The next call carries on where this one stopped.
    assert h.drive(plan(many, previous=None), step.record).phase is Phase.SUCCEEDED


# ----------------------------------------------------------------------------- restarts


SCENARIOS = {
    "succeeds": (None, 2, 1),
    "rolls back": (WEB_BROKEN, 2, 1),
    "first install fails": (WEB_BROKEN, 1, None),
}


def _outcome(h: Harness, final: PivotRecord) -> tuple[Any, ...]:
    return (
        final.phase,
        final.revision,
        final.previous,
        final.failed_bundle,
        final.message,
        h.children.installed(),
    )


def test_resume_from_every_persisted_record_converges_the_same_way() -> None:
    """A daemon killed after any transition finds the record (read back from its stored form)
    and the children as they were then, or as the next action left them before it could
    record the next transition; a new machine carries the pivot to the same end."""
    resumed_phases: set[Phase] = set()
    for name, (outcomes, revision, previous) in SCENARIOS.items():
        reference = harness(outcomes, installed=V1 if previous else None)
        the_plan = plan(previous=V1 if previous else None)
        start = reference.start(revision, previous)
        initial = (reference.children.snapshot(), reference.clock.now)
        expected = _outcome(reference, reference.drive(the_plan, start))

        records = [start, *reference.persisted]
        clusters = [initial, *reference.snapshots]
        points = [(records[i], clusters[i]) for i in range(len(records))]
        points += [(records[i], clusters[i + 1]) for i in range(len(records) - 1)]
        for record, (objects, now) in points:
            h = harness(outcomes, installed=None)
            h.children.objects = copy.deepcopy(objects)
            h.clock.now = now
            stored = PivotRecord.from_dict(record.to_dict())
            assert stored is not None
            final = h.drive(the_plan, stored)
            assert _outcome(h, final) == expected, (name, record.phase)
            resumed_phases.add(record.phase)
    assert resumed_phases == set(Phase)


def test_running_twice_changes_nothing() -> None:
    """Every call, repeated at once on the record it returned, persists, writes and reports
    nothing more: what a restart or a second worker does to a pivot that is in step."""
    for name, (outcomes, revision, previous) in SCENARIOS.items():
        h = harness(outcomes, installed=V1 if previous else None)
        the_plan = plan(previous=V1 if previous else None)
        seen: set[Phase] = set()

        def repeat(
            step: StepResult,
            h: Harness = h,
            seen: set[Phase] = seen,
            the_plan: PivotJob = the_plan,
            name: str = name,
        ) -> None:
            before = (len(h.persisted), h.children.snapshot(), list(h.children.applied))
            deleted = list(h.children.deleted)
            again = h.machine.run(the_plan, step.record, h.persist)
            assert again.record == step.record, (name, step.record.phase)
            assert again.events == []
            assert (len(h.persisted), h.children.snapshot(), h.children.applied) == before
            assert h.children.deleted == deleted
            seen.add(step.record.phase)

        h.drive(the_plan, h.start(revision, previous), check=repeat)
        assert {Phase.APPLYING, Phase.WAITING}.issubset(seen), name
        if name == "succeeds":
            assert {Phase.PRUNING, Phase.SUCCEEDED} <= seen
        if name == "rolls back":
            assert {Phase.ROLLING_BACK, Phase.ROLLED_BACK} <= seen


# ----------------------------------------------------------------------------- the fakes


def test_fake_children_report_as_the_real_children_do() -> None:
    """The fake's reports are the product's: same state, reason and message for a missing
    child, a child being deleted, and a child in each state its conditions can say."""
    real = Children(cast(Kube, None), REF)  # report() reads only the object it is given
    fake = FakeChildren(REF)
    install(fake, V2, 2)
    assert fake.report("web", None, bundle="web.v2.0.0", missing="is gone") == real.report(
        "web", None, bundle="web.v2.0.0", missing="is gone"
    )
    for state in [s for s in ChildState if s is not ChildState.MISSING]:
        fake.set_state("web", Outcome(state, message=f"{state.value} now"))
        bd = fake.list()["web"]
        assert fake.report("web", bd) == real.report("web", bd)
        assert fake.report("web", bd).state is state
    fake.delete("web-web")
    bd = fake.list()["web"]
    assert fake.report("web", bd, bundle="b") == real.report("web", bd, bundle="b")
    assert fake.report("web", bd).reason == "Deleting"


# ----------------------------------------------------------------------------- the table


def test_the_table_names_every_phase_and_existing_tests() -> None:
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in (__doc__ or "").splitlines()
        if line.startswith("| ") and not line.startswith("| from")
    ]
    assert len(rows) > 40
    values = {p.value for p in Phase}
    for source, _, target, test in rows:
        assert source in values, source
        assert target in values, target
        assert test.startswith("test_"), test
        assert callable(globals().get(test)), test
    sources = {row[0] for row in rows}
    assert {p.value for p in Phase if not p.terminal} <= sources
    assert {row[2] for row in rows} | sources == values
    # Every test of this module that drives the machine is in the table (not those of the fakes).
    tests = {
        n
        for n in globals()
        if n.startswith("test_")
        and not n.startswith("test_fake_")
        and n != "test_the_table_names_every_phase_and_existing_tests"
    }
    assert tests == {row[3] for row in rows}
