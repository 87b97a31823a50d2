"""Drift correction: what a BundleDeployment in its steady state does about drift.

In the steady state (the bundle and spec wanted are those installed) the controller does not
re-apply blindly. :class:`DriftCorrection` remembers, per BundleDeployment, the fingerprints of
its objects the last time they all matched the bundle: while the shared caches still show them
so, and not for longer than the full-check interval, there is nothing to compare
(:meth:`~DriftCorrection.unchanged`). Otherwise :meth:`~DriftCorrection.correct` compares them
with the bundle (:func:`pivoter.controllers.drift.detect`) and does what ``spec.driftPolicy``
says: nothing when nothing drifted, a report under ``Report``, a wait while a drifted object is
still being deleted, else a correction (an install without hooks,
:func:`pivoter.controllers.install.install`). A correction that fails half-way is remembered and
reported as the correction it is once a later apply of the same content works
(:meth:`~DriftCorrection.pending`). :func:`drift_conditions` turns what was found into the
``Drifted`` condition and an Event.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pivoter.apis import rukpak
from pivoter.apis.conditions import FALSE, TRUE, Condition, find
from pivoter.controllers import drift
from pivoter.controllers.bundlecontent import BundleContent
from pivoter.controllers.contentapply import InstallBlocked
from pivoter.controllers.generatedbundles import KIND
from pivoter.controllers.install import InstallResult, install
from pivoter.controllers.managedobjects import ManagedObjects
from pivoter.controllers.reporting import warn
from pivoter.kube import EventRecorder, Kube, KubeError, Object
from provisioners.apply.applier import Owner
from provisioners.apply.objects import ObjectRef

__all__ = [
    "DRIFT_REPORT",
    "REASON_DRIFT_CORRECTED",
    "REASON_DRIFT_DETECTED",
    "REASON_NO_DRIFT",
    "TYPE_DRIFTED",
    "DriftCorrection",
    "Wanted",
    "drift_conditions",
]

log = logging.getLogger(__name__)

DRIFT_REPORT = "Report"  # spec.driftPolicy: report drift, leave it alone (default: Correct)
TYPE_DRIFTED = "Drifted"  # pivoter's condition: True while reported drift remains
REASON_NO_DRIFT = "NoDrift"
REASON_DRIFT_CORRECTED = "DriftCorrected"
REASON_DRIFT_DETECTED = "DriftDetected"


@dataclass(frozen=True, slots=True)
class Wanted:
    """The content a BundleDeployment wants: its name, its bundle and its spec's generation."""

    name: str
    bundle: str
    generation: int


@dataclass(frozen=True, slots=True)
class _Verified:
    """The last time a BundleDeployment's objects were found to match its bundle."""

    wanted: Wanted
    versions: dict[ObjectRef, str]
    """Fingerprint of each object then (:func:`pivoter.controllers.drift.fingerprint`)."""
    at: float


@dataclass(frozen=True, slots=True)
class _PendingDrift:
    """Drift whose correction failed; reported when a later apply of the same content works."""

    wanted: Wanted
    report: drift.DriftReport


@dataclass(slots=True)
class DriftCorrection:
    """Drift found and corrected per BundleDeployment, and what that needs remembered."""

    _verified: dict[str, _Verified] = field(default_factory=dict)
    _pending: dict[str, _PendingDrift] = field(default_factory=dict)

    def forget(self, name: str) -> None:
        """Drop all that is remembered of BundleDeployment ``name`` (deleted, or going)."""
        self._verified.pop(name, None)
        self._pending.pop(name, None)

    def unchanged(
        self,
        wanted: Wanted,
        inventory: list[ObjectRef],
        *,
        managed: ManagedObjects | None,
        max_age: float,
    ) -> bool:
        """Whether every installed object is, in the shared caches, as it was when last found
        to match the bundle (and that was less than ``max_age`` seconds ago): then there is
        nothing to compare."""
        verified = self._verified.get(wanted.name)
        if managed is None or verified is None or verified.wanted != wanted:
            return False
        if time.monotonic() - verified.at > max_age:
            return False
        for ref in inventory:
            known, obj = managed.cached(ref)
            if not known or obj is None:
                return False
            if verified.versions.get(ref) != drift.fingerprint(obj):
                return False
        return True

    def renewed(self, wanted: Wanted) -> None:
        """A full check found every object as the shared caches last showed it matching: it
        counts as compared now (no object was read from the API)."""
        verified = self._verified.get(wanted.name)
        if verified is not None and verified.wanted == wanted:
            self._verified[wanted.name] = _Verified(wanted, verified.versions, time.monotonic())

    def applied(self, wanted: Wanted, live: Mapping[ObjectRef, Mapping[str, Any]]) -> None:
        """``live`` is what the API server answered to the apply of ``wanted``: each object is
        then as the bundle makes it, as a comparison would have found it (one of the inventory
        not in ``live`` makes the next check compare)."""
        versions = {ref: drift.fingerprint(obj) for ref, obj in live.items()}
        self._verified[wanted.name] = _Verified(wanted, versions, time.monotonic())

    def invalidate(self, name: str) -> None:
        """A change someone asked for is about to be applied: what matched before says nothing
        about the objects after it."""
        self._verified.pop(name, None)

    def pending(self, wanted: Wanted) -> drift.DriftReport | None:
        """The drift whose correction failed half-way, once a plain apply of the same content
        worked (None: there was none, or it was for other content)."""
        pending = self._pending.pop(wanted.name, None)
        return pending.report if pending is not None and pending.wanted == wanted else None

    def correct(
        self,
        api: Kube,
        bd: Object,
        wanted: Wanted,
        content: BundleContent,
        *,
        inventory: list[ObjectRef],
        recorder: EventRecorder | None,
    ) -> InstallResult:
        """Compare the installed objects with ``content`` and do what the report calls for:
        nothing (no drift), a report (``driftPolicy: Report``), a wait for an object still being
        deleted, or a correction (an install without hooks)."""
        report = self._detect(api, wanted, content)
        if not report.drifts:
            return InstallResult(refs=inventory, applied=False)
        if (bd.get("spec") or {}).get("driftPolicy") == DRIFT_REPORT:
            return InstallResult(refs=inventory, applied=False, report=report)
        if report.finalizing:
            # Applying now would write to an object about to vanish; its deletion queues the
            # next reconcile (and the requeue is a safety net).
            return InstallResult(refs=inventory, applied=False, wait=True)
        return self._restore(api, bd, wanted, content, report=report, recorder=recorder)

    def _restore(
        self,
        api: Kube,
        bd: Object,
        wanted: Wanted,
        content: BundleContent,
        *,
        report: drift.DriftReport,
        recorder: EventRecorder | None,
    ) -> InstallResult:
        """Correct ``report``'s drift: an install without hooks. One that fails half-way is
        remembered (:meth:`pending`) and raised."""
        try:
            applied = install(api, bd, wanted.bundle, content, run_hooks=False, recorder=recorder)
        except InstallBlocked:
            self._pending[wanted.name] = _PendingDrift(wanted, report)
            raise
        return InstallResult(
            refs=applied.refs,
            applied=True,
            notes=applied.notes,
            report=report,
            corrected=True,
            live=applied.live,
        )

    def _detect(self, api: Kube, wanted: Wanted, content: BundleContent) -> drift.DriftReport:
        """Compare the installed objects with ``content``; when all match, remember their
        fingerprints (the next comparison skips them, :meth:`unchanged` skips it all)."""
        verified = self._verified.get(wanted.name)
        known = verified.versions if verified is not None and verified.wanted == wanted else None
        try:
            report = drift.detect(
                api,
                content.objects,
                owner_kind=KIND,
                owner_name=wanted.name,
                field_manager=Owner(KIND, wanted.name).field_manager,
                known=known,
            )
        except KubeError as exc:
            raise InstallBlocked(
                rukpak.TYPE_INSTALLED,
                rukpak.REASON_UPGRADE_FAILED,
                f"Failed to compare the installed objects with bundle {wanted.bundle}: {exc}",
            ) from exc
        if report.drifts:
            self._verified.pop(wanted.name, None)
        else:
            self._verified[wanted.name] = _Verified(wanted, report.matching, time.monotonic())
        return report


def drift_conditions(
    bd: Object, outcome: InstallResult, recorder: EventRecorder | None
) -> list[Condition]:
    """Event and ``Drifted`` condition for the drift ``outcome`` found (none: it stays)."""
    current = find((bd.get("status") or {}).get("conditions"), TYPE_DRIFTED)
    report = outcome.report
    if report is None:
        if current is None or current.get("status") != FALSE:
            message = "The installed objects match the bundle"
            return [Condition(TYPE_DRIFTED, FALSE, REASON_NO_DRIFT, message)]
        return []
    summary = report.summary()
    if outcome.corrected:
        message = f"Restored {summary}"
        log.info("bundledeployment %s: %s", bd["metadata"]["name"], message)
        if recorder is not None:
            recorder.normal(bd, REASON_DRIFT_CORRECTED, "CorrectDrift", message)
        return [Condition(TYPE_DRIFTED, FALSE, REASON_DRIFT_CORRECTED, message)]
    message = f"Left alone (driftPolicy: Report): {summary}"
    warn(recorder, bd, REASON_DRIFT_DETECTED, message)
    return [Condition(TYPE_DRIFTED, TRUE, REASON_DRIFT_DETECTED, message)]
