"""The BundleDeployment controller: install a Bundle's content and pivot when the template changes.

``reconcile(name)`` follows rukpak's semantics (``ReconcileDesiredBundle``):

1. The template's hash names a generated Bundle ``<bd>-<hash>``, labelled with the owner and the
   hash and owned by the BundleDeployment; it is created when missing.
2. Until that Bundle is unpacked, the previously installed content keeps running:
   ``HasValidBundle`` says whether the new Bundle is pending or failed, ``Installed`` is left as
   it was.
3. Once unpacked, its objects (converted by the provisioner class's format) are applied with
   server-side apply under the BundleDeployment's own field manager, as the named service account
   when ``spec.serviceAccount`` is set (impersonation); what the previous content had and the new
   one does not is pruned; ``activeBundle`` and the inventory move; only then are the other
   generated Bundles deleted.
4. ``Healthy`` is recomputed from the installed objects on every reconcile.

Deletion runs the uninstall finalizer: every installed object is removed, except CRDs that still
have custom resources under the ``Keep`` policy, which are orphaned and reported in an Event.
Whether the objects stay altogether is a question the wiring answers (:data:`KeepOnDelete`,
:func:`pivoter.pivot.children.keep_on_delete` in the daemon): the controllers never import the
pivot, which builds on them.

Step 1 is :mod:`pivoter.controllers.generatedbundles`; loading and applying the content of step
3 is :mod:`pivoter.controllers.contentapply`; drift is :mod:`pivoter.controllers.drift`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pivoter.apis import rukpak
from pivoter.apis.conditions import (
    FALSE,
    TRUE,
    UNKNOWN,
    Condition,
    find,
    set_conditions,
)
from pivoter.apis.inventory import inventory_of
from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, BUNDLES
from pivoter.controllers import drift, health
from pivoter.controllers.bundle import BundleReconciler, bundle_format_for
from pivoter.controllers.bundlecontent import BundleContent
from pivoter.controllers.contentapply import (
    Applied,
    InstallBlocked,
    apply_content,
    load_content,
    where,
)
from pivoter.controllers.generatedbundles import (
    KIND,
    delete_other_bundles,
    desired_bundle,
    generated_bundle_name,
    template_hash,
)
from pivoter.controllers.managedobjects import ManagedObjects
from pivoter.kube import EventRecorder, Kube, KubeError, NotFound, Object
from pivoter.kube.identities import Identities
from pivoter.runtime.controller import Result
from provisioners.apply.applier import Applier, Owner
from provisioners.apply.objects import LABEL_OWNER_KIND, LABEL_OWNER_NAME, ObjectRef
from provisioners.store import BundleStore

__all__ = [
    "DRIFT_REPORT",
    "FINALIZER",
    "KIND",
    "REASON_DRIFT_CORRECTED",
    "REASON_DRIFT_DETECTED",
    "TYPE_DRIFTED",
    "BundleDeploymentReconciler",
    "KeepOnDelete",
    "KeptObjects",
    "generated_bundle_name",
    "template_hash",
]

log = logging.getLogger(__name__)

FINALIZER = "core.rukpak.io/uninstall"

DRIFT_REPORT = "Report"  # spec.driftPolicy: report drift, leave it alone (default: Correct)
TYPE_DRIFTED = "Drifted"  # pivoter's condition: True while reported drift remains
REASON_NO_DRIFT = "NoDrift"
REASON_DRIFT_CORRECTED = "DriftCorrected"
REASON_DRIFT_DETECTED = "DriftDetected"
FINALIZING_RECHECK_SECONDS = 1.0


class KeptObjects(Protocol):
    """Why a BundleDeployment being deleted leaves its objects, and who still wants them."""

    @property
    def message(self) -> str: ...

    @property
    def input(self) -> Object: ...


KeepOnDelete = Callable[[Kube, Object], KeptObjects | None]
"""Asked when a BundleDeployment is deleted: whether its objects stay, and why (None: uninstall
them). The wiring passes :func:`pivoter.pivot.children.keep_on_delete` (a pivot input's child
deleted by hand keeps its objects for the child the input re-creates); the controllers never
import the pivot."""


@dataclass(frozen=True, slots=True)
class _Verified:
    """The last time a BundleDeployment's objects were found to match its bundle."""

    bundle: str
    generation: int
    versions: dict[ObjectRef, str]
    """Fingerprint of each object then (:func:`pivoter.controllers.drift.fingerprint`)."""
    at: float

    def matches(self, bundle: str, generation: int) -> bool:
        return self.bundle == bundle and self.generation == generation


@dataclass(frozen=True, slots=True)
class _PendingDrift:
    """Drift whose correction failed; reported when a later apply of the same content works."""

    bundle: str
    generation: int
    report: drift.DriftReport

    def matches(self, bundle: str, generation: int) -> bool:
        return self.bundle == bundle and self.generation == generation


@dataclass(slots=True)
class _Outcome:
    """What one converge did: the installed objects, whether it applied, and drift found."""

    refs: list[ObjectRef]
    applied: bool
    notes: list[str] = field(default_factory=list)
    report: drift.DriftReport | None = None
    corrected: bool = False
    wait: bool = False
    """An object is still being deleted: look again shortly, then correct."""
    live: dict[ObjectRef, dict[str, Any]] = field(default_factory=dict)
    """The objects as this converge's apply left them (read by the health check first)."""


@dataclass
class BundleDeploymentReconciler:
    """Installs and pivots BundleDeployments of pivoter's provisioner classes."""

    kube: Kube
    store: BundleStore
    bundles: BundleReconciler
    recorder: EventRecorder | None = None
    health_interval_seconds: float = 10.0
    """How soon an unhealthy BundleDeployment is looked at again while some failing object is
    not yet in a synced shared cache (watched objects wake it up themselves when they change)."""
    full_check_interval_seconds: float = 600.0
    """How often the installed objects are compared with the bundle even if no watch said they
    changed (and webhook certificates renewed)."""
    managed: ManagedObjects | None = None
    """Shared watches on the installed objects (set by the wiring); None: read the API."""
    keep_on_delete: KeepOnDelete = field(kw_only=True)
    """Whether a BundleDeployment being deleted keeps its objects (see :data:`KeepOnDelete`)."""
    _identities: Identities = field(init=False)
    _verified: dict[str, _Verified] = field(default_factory=dict)
    _pending_drift: dict[str, _PendingDrift] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._identities = Identities(self.kube)

    # -- entry point -------------------------------------------------------------------------

    def reconcile(self, name: str) -> Result | None:
        """Converge one BundleDeployment; say when to look again (None: when something changes)."""
        try:
            bd = self.kube.get(BUNDLE_DEPLOYMENTS, name)
        except NotFound:
            self._verified.pop(name, None)
            self._pending_drift.pop(name, None)
            return None
        spec = bd.get("spec") or {}
        if bundle_format_for(str(spec.get("provisionerClassName") or "")) is None:
            return None
        metadata = bd["metadata"]
        if metadata.get("deletionTimestamp"):
            self._verified.pop(name, None)
            self._pending_drift.pop(name, None)
            self._finalize(bd)
            return None
        if FINALIZER not in (metadata.get("finalizers") or []):
            bd = self.kube.set_finalizers(
                BUNDLE_DEPLOYMENTS, bd, [*(metadata.get("finalizers") or []), FINALIZER]
            )
        return self._install(bd)

    # -- install -----------------------------------------------------------------------------

    def _install(self, bd: dict[str, Any]) -> Result | None:
        """Steps 1 to 4 of the module docstring. Each step returns the conditions it found;
        every path writes them, and the status, once (:meth:`_write_status`)."""
        status: dict[str, Any] = dict(bd.get("status") or {})
        try:
            bundle = desired_bundle(self.kube, bd)
        except KubeError as exc:
            failed = Condition(
                rukpak.TYPE_HAS_VALID_BUNDLE,
                UNKNOWN,
                rukpak.REASON_RECONCILE_FAILED,
                f"Failed to generate the Bundle: {exc}",
            )
            self._write_status(bd, status, [failed])
            return Result(requeue=True)
        bundle = self._restored(bundle)
        bundle_name = bundle["metadata"]["name"]
        if not self.bundles.is_current(bundle):
            self._write_status(bd, status, _waiting_for(bundle, status))
            return None  # the Bundle's status change triggers the next reconcile
        valid = Condition(
            rukpak.TYPE_HAS_VALID_BUNDLE,
            TRUE,
            rukpak.REASON_UNPACK_SUCCESSFUL,
            f"Successfully unpacked the {bundle_name} Bundle",
        )
        try:
            outcome = self._converge(bd, bundle, steady=self._is_steady(bd, bundle_name))
        except InstallBlocked as exc:
            self._write_status(bd, status, [valid, *self._blocked(bd, status, exc)])
            return Result(requeue=True)
        found = [valid, *_installed(status, bundle_name, outcome), *self._report_drift(bd, outcome)]
        healthy, failing = self._health(outcome)
        self._write_status(bd, status, [*found, healthy])
        if outcome.applied:
            delete_other_bundles(self.kube, bd["metadata"]["name"], bundle_name)
        if self.managed is not None:
            self.managed.track(outcome.refs)
        if outcome.wait:
            return Result(requeue_after=FINALIZING_RECHECK_SECONDS)
        if failing:
            return Result(requeue_after=self._health_recheck(failing))
        # Look again now and then: webhook certificates are renewed by a fresh conversion.
        return Result(requeue_after=self.full_check_interval_seconds)

    def _restored(self, bundle: dict[str, Any]) -> dict[str, Any]:
        """``bundle``, unpacked again when it is Unpacked but the store lost it (e.g. a new
        leader on another node)."""
        phase = (bundle.get("status") or {}).get("phase")
        if phase == rukpak.PHASE_UNPACKED and not self.bundles.is_current(bundle):
            name = bundle["metadata"]["name"]
            self.bundles.reconcile(name)
            return self.kube.get(BUNDLES, name)
        return bundle

    def _blocked(
        self, bd: dict[str, Any], status: dict[str, Any], exc: InstallBlocked
    ) -> list[Condition]:
        """Where the install stopped: objects it created go into the inventory (so that the
        next apply or the uninstall prunes them), a Warning Event, and the conditions."""
        if exc.partial:
            known = inventory_of(status)
            extra = [ref for ref in exc.partial if ref not in known]
            if extra:
                status["inventory"] = [ref.as_dict() for ref in known + extra]
        found = [Condition(exc.condition, FALSE, exc.reason, str(exc))]
        if exc.condition == rukpak.TYPE_INSTALLED:
            found.append(
                Condition(
                    rukpak.TYPE_HEALTHY,
                    FALSE,
                    rukpak.REASON_INSTALLATION_STATUS_FALSE,
                    "The bundle is not installed",
                )
            )
        self._warn(bd, exc.reason, str(exc))
        return found

    def _health(self, outcome: _Outcome) -> tuple[Condition, list[tuple[ObjectRef, str]]]:
        """The ``Healthy`` condition of the installed objects, and the failing ones."""
        refs = outcome.refs
        # Just applied: the apply's answers are the freshest copies (the caches may lag).
        live = outcome.live
        failing = health.check(
            self.kube, refs, read=lambda ref: live.get(ref) or self._cached_object(ref)
        )
        if not failing:
            message = f"All {len(refs)} installed objects are healthy"
            return Condition(rukpak.TYPE_HEALTHY, TRUE, rukpak.REASON_HEALTHY, message), failing
        message = "; ".join(f"{ref.kind} {where(ref)}: {why}" for ref, why in failing[:10]) + (
            f" (and {len(failing) - 10} more)" if len(failing) > 10 else ""
        )
        return Condition(rukpak.TYPE_HEALTHY, FALSE, rukpak.REASON_UNHEALTHY, message), failing

    def _health_recheck(self, failing: list[tuple[ObjectRef, str]]) -> float:
        """When to look again at an unhealthy BundleDeployment. Health is read from the failing
        objects alone, so once the shared caches watch every one of them, each change that can
        heal it queues the BundleDeployment and polling would only repeat the same verdict: the
        full-check interval is then the safety net. Until then, the health interval."""
        if self.managed is None or not all(self.managed.cached(ref)[0] for ref, _ in failing):
            return self.health_interval_seconds
        return self.full_check_interval_seconds

    def _is_steady(self, bd: dict[str, Any], bundle_name: str) -> bool:
        """Whether the bundle and spec now wanted are the ones installed last time (no pivot,
        no spec change): then only drift can make a difference."""
        status = bd.get("status") or {}
        installed = find(status.get("conditions"), rukpak.TYPE_INSTALLED)
        return (
            status.get("activeBundle") == bundle_name
            and status.get("observedGeneration") == bd["metadata"].get("generation")
            and installed is not None
            and installed.get("status") == TRUE
            and status.get("inventory") is not None
        )

    # -- converge: install, upgrade, drift -----------------------------------------------------

    def _converge(self, bd: dict[str, Any], bundle: dict[str, Any], *, steady: bool) -> _Outcome:
        """Install or upgrade; in the steady state correct (or report) drift instead."""
        inventory = inventory_of(bd.get("status"))
        if steady and self._unchanged(
            bd["metadata"]["name"], bundle["metadata"]["name"], _generation(bd), inventory
        ):
            return _Outcome(refs=inventory, applied=False)
        api = self._api_for((bd.get("spec") or {}).get("serviceAccount"))
        content = load_content(self.store, bd, bundle, api)
        if not steady or content.rotated:
            # A new bundle or spec (hooks run), or renewed webhook certificates (they do not).
            return self._apply_planned(bd, bundle, api, content, run_hooks=not steady)
        report = self._detect_drift(bd, bundle, api, content)
        return self._handle_drift(bd, bundle, api, content, report=report, inventory=inventory)

    def _apply_planned(
        self,
        bd: dict[str, Any],
        bundle: dict[str, Any],
        api: Kube,
        content: BundleContent,
        *,
        run_hooks: bool,
    ) -> _Outcome:
        """Apply a change someone asked for (install, upgrade, new spec, renewed certificates)."""
        name = bd["metadata"]["name"]
        self._verified.pop(name, None)
        applied = self._apply(bd, bundle, api, content, run_hooks=run_hooks)
        # A drift correction that failed half-way (e.g. a CRD gone mid-apply) and was
        # retried as a plain apply is still reported as the correction it is.
        pending = self._pending_drift.pop(name, None)
        if pending is not None and not pending.matches(bundle["metadata"]["name"], _generation(bd)):
            pending = None
        return _Outcome(
            refs=applied.refs,
            applied=True,
            live=applied.live,
            notes=applied.notes + content.rotated,
            report=pending.report if pending else None,
            corrected=pending is not None,
        )

    def _detect_drift(
        self, bd: dict[str, Any], bundle: dict[str, Any], api: Kube, content: BundleContent
    ) -> drift.DriftReport:
        """Compare the installed objects with ``content``; when all match, remember their
        fingerprints (the next comparison skips them, :meth:`_unchanged` skips it all)."""
        name = bd["metadata"]["name"]
        bundle_name = bundle["metadata"]["name"]
        generation = _generation(bd)
        verified = self._verified.get(name)
        known = (
            verified.versions if verified and verified.matches(bundle_name, generation) else None
        )
        try:
            report = drift.detect(
                api,
                content.objects,
                owner_kind=KIND,
                owner_name=name,
                field_manager=Owner(KIND, name).field_manager,
                known=known,
            )
        except KubeError as exc:
            raise InstallBlocked(
                rukpak.TYPE_INSTALLED,
                rukpak.REASON_UPGRADE_FAILED,
                f"Failed to compare the installed objects with bundle {bundle_name}: {exc}",
            ) from exc
        if report.drifts:
            self._verified.pop(name, None)
        else:
            self._verified[name] = _Verified(
                bundle_name, generation, report.matching, time.monotonic()
            )
        return report

    def _handle_drift(
        self,
        bd: dict[str, Any],
        bundle: dict[str, Any],
        api: Kube,
        content: BundleContent,
        *,
        report: drift.DriftReport,
        inventory: list[ObjectRef],
    ) -> _Outcome:
        """What ``report`` calls for: nothing (no drift), a report (``driftPolicy: Report``), a
        wait for an object still being deleted, or a correction (an apply without hooks)."""
        if not report.drifts:
            return _Outcome(refs=inventory, applied=False)
        if (bd.get("spec") or {}).get("driftPolicy") == DRIFT_REPORT:
            return _Outcome(refs=inventory, applied=False, report=report)
        if report.finalizing:
            # Applying now would write to an object about to vanish; its deletion queues the
            # next reconcile (and the requeue is a safety net).
            return _Outcome(refs=inventory, applied=False, wait=True)
        try:
            applied = self._apply(bd, bundle, api, content, run_hooks=False)
        except InstallBlocked:
            self._pending_drift[bd["metadata"]["name"]] = _PendingDrift(
                bundle["metadata"]["name"], _generation(bd), report
            )
            raise
        return _Outcome(
            refs=applied.refs,
            applied=True,
            notes=applied.notes,
            report=report,
            corrected=True,
            live=applied.live,
        )

    def _unchanged(
        self, name: str, bundle_name: str, generation: int, inventory: list[ObjectRef]
    ) -> bool:
        """Whether every installed object is, in the shared caches, as it was when last found
        to match the bundle (and that was recent): then there is nothing to compare."""
        verified = self._verified.get(name)
        if (
            self.managed is None
            or verified is None
            or not verified.matches(bundle_name, generation)
        ):
            return False
        if time.monotonic() - verified.at > self.full_check_interval_seconds:
            return False
        for ref in inventory:
            known, obj = self.managed.cached(ref)
            if not known or obj is None:
                return False
            if verified.versions.get(ref) != drift.fingerprint(obj):
                return False
        return True

    def _apply(
        self,
        bd: dict[str, Any],
        bundle: dict[str, Any],
        api: Kube,
        content: BundleContent,
        *,
        run_hooks: bool,
    ) -> Applied:
        """:func:`~pivoter.controllers.contentapply.apply_content` over the inventory; the API
        server's warnings become Warning Events."""
        applied = apply_content(
            api,
            bd,
            bundle["metadata"]["name"],
            content,
            previous=inventory_of(bd.get("status")),
            run_hooks=run_hooks,
        )
        for warning in applied.warnings:
            self._warn(bd, "APIServerWarning", warning)
        return applied

    # -- drift -------------------------------------------------------------------------------

    def _report_drift(self, bd: dict[str, Any], outcome: _Outcome) -> list[Condition]:
        """Event and ``Drifted`` condition for what :meth:`_converge` found (none: it stays)."""
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
            if self.recorder is not None:
                self.recorder.normal(bd, REASON_DRIFT_CORRECTED, "CorrectDrift", message)
            return [Condition(TYPE_DRIFTED, FALSE, REASON_DRIFT_CORRECTED, message)]
        message = f"Left alone (driftPolicy: Report): {summary}"
        self._warn(bd, REASON_DRIFT_DETECTED, message)
        return [Condition(TYPE_DRIFTED, TRUE, REASON_DRIFT_DETECTED, message)]

    def _cached_object(self, ref: ObjectRef) -> dict[str, Any] | None:
        """A managed object from the shared caches, if they hold it (health reads it there)."""
        if self.managed is None:
            return None
        _, obj = self.managed.cached(ref)
        return obj

    # -- identities --------------------------------------------------------------------------

    def _api_for(self, service_account: Mapping[str, Any] | None) -> Kube:
        """The daemon's own API access, or one that impersonates the named service account."""
        return self._identities.api_for(service_account)

    # -- deletion ----------------------------------------------------------------------------

    def _finalize(self, bd: dict[str, Any]) -> None:
        """The uninstall finalizer: the objects stay when :attr:`keep_on_delete` says so, else
        they are uninstalled; then the finalizer goes."""
        metadata = bd["metadata"]
        if FINALIZER not in (metadata.get("finalizers") or []):
            return
        note = self._kept(bd)
        if note is None:
            note = self._uninstall(bd)
        self.kube.set_finalizers(
            BUNDLE_DEPLOYMENTS, bd, [f for f in metadata["finalizers"] if f != FINALIZER]
        )
        log.info("bundledeployment %s: %s", metadata["name"], note)

    def _kept(self, bd: dict[str, Any]) -> str | None:
        """Why ``bd``'s objects stay (an Event on it and on the input that wants them), or None
        (docs/pivot.md, "A child deleted by hand")."""
        kept = self.keep_on_delete(self.kube, bd)
        if kept is None:
            return None
        if self.recorder is not None:
            self.recorder.normal(bd, "ObjectsKept", "Delete", kept.message)
            self.recorder.normal(kept.input, "ObjectsKept", "Delete", kept.message)
        return kept.message

    def _uninstall(self, bd: dict[str, Any]) -> str:
        """Delete every installed object, as the service account; objects kept by policy (CRDs
        with custom resources) are orphaned with a Warning Event. Returns what it did."""
        spec = bd.get("spec") or {}
        applier = Applier(
            self._api_for(spec.get("serviceAccount")), Owner(KIND, bd["metadata"]["name"])
        )
        pruned = applier.prune(
            inventory_of(bd.get("status")),
            [],
            crd_policy=str(spec.get("crdDeletionPolicy") or "Keep"),
        )
        for ref, why in pruned.kept:
            self._warn(bd, "ObjectKept", f"kept {ref.kind} {where(ref)} on deletion: {why}")
            self._orphan(ref)
        return f"uninstalled {len(pruned.deleted)} objects, kept {len(pruned.kept)}"

    def _orphan(self, ref: ObjectRef) -> None:
        """Drop the owner labels of an object left behind, so no owner claims it any more."""
        try:
            resource = self.kube.resource(ref.api_version, ref.kind)
            patch = {"metadata": {"labels": {LABEL_OWNER_KIND: None, LABEL_OWNER_NAME: None}}}
            self.kube.merge_patch(resource, ref.name, patch, ref.namespace or None)
        except NotFound:
            pass

    # -- writes ------------------------------------------------------------------------------

    def _write_status(
        self, bd: dict[str, Any], status: dict[str, Any], found: list[Condition]
    ) -> None:
        """Write ``status`` with the conditions ``found`` in this pass set over the current
        ones (no write when nothing changed)."""
        generation = _generation(bd)
        conditions = [dict(c) for c in status.get("conditions") or []]
        set_conditions(conditions, found, generation=generation)
        new = {**status, "conditions": conditions, "observedGeneration": generation}
        if new == bd.get("status"):
            return  # nothing changed: no write, no watch event
        self.kube.patch_status(BUNDLE_DEPLOYMENTS, bd["metadata"]["name"], new)

    def _warn(self, bd: dict[str, Any], reason: str, note: str) -> None:
        log.warning("bundledeployment %s: %s: %s", bd["metadata"]["name"], reason, note)
        if self.recorder is not None:
            self.recorder.warning(bd, reason, "Reconcile", note)


def _waiting_for(bundle: Mapping[str, Any], status: Mapping[str, Any]) -> list[Condition]:
    """While ``bundle`` is not unpacked the previous content keeps running: ``HasValidBundle``
    says whether it is pending or failed; ``Installed`` is Unknown only if never set."""
    name = bundle["metadata"]["name"]
    unpacked = find((bundle.get("status") or {}).get("conditions"), rukpak.TYPE_UNPACKED)
    if unpacked is not None and unpacked.get("status") == FALSE:
        message = str(unpacked.get("message") or f"Failed to unpack the {name} Bundle")
        valid = Condition(rukpak.TYPE_HAS_VALID_BUNDLE, FALSE, rukpak.REASON_UNPACK_FAILED, message)
    else:
        message = f"Waiting for the {name} Bundle to be unpacked"
        valid = Condition(rukpak.TYPE_HAS_VALID_BUNDLE, TRUE, rukpak.REASON_UNPACK_PENDING, message)
    if find(status.get("conditions"), rukpak.TYPE_INSTALLED) is not None:
        return [valid]
    nothing = Condition(
        rukpak.TYPE_INSTALLED,
        UNKNOWN,
        rukpak.REASON_INSTALLATION_STATUS_UNKNOWN,
        "Nothing is installed yet: waiting for a valid bundle",
    )
    return [valid, nothing]


def _installed(status: dict[str, Any], bundle_name: str, outcome: _Outcome) -> list[Condition]:
    """After an apply: ``activeBundle`` and the inventory move to ``bundle_name`` and
    ``Installed`` says so (nothing applied: they stay)."""
    if not outcome.applied:
        return []
    status["activeBundle"] = bundle_name
    status["inventory"] = [ref.as_dict() for ref in outcome.refs]
    notes = f" ({'; '.join(outcome.notes)})" if outcome.notes else ""
    return [
        Condition(
            rukpak.TYPE_INSTALLED,
            TRUE,
            rukpak.REASON_INSTALLATION_SUCCEEDED,
            f"Instantiated bundle {bundle_name} successfully{notes}",
        )
    ]


def _generation(bd: Mapping[str, Any]) -> int:
    return int(bd["metadata"].get("generation") or 0)
