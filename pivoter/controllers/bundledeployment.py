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
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pivoter.apis import rukpak
from pivoter.controllers import bundlecontent, crdupgrade, drift, health
from pivoter.controllers.bundle import BUNDLES, BundleReconciler, bundle_format_for
from pivoter.controllers.conditions import (
    FALSE,
    TRUE,
    UNKNOWN,
    Condition,
    find,
    set_conditions,
)
from pivoter.controllers.managedobjects import ManagedObjects
from pivoter.kube import EventRecorder, Kube, KubeAPI, KubeError, NotFound, Resource
from pivoter.kube.identities import Identities
from pivoter.runtime.controller import Result
from provisioners.apply.applier import Applier, ApplyError, Owner
from provisioners.apply.hooks import HookRunner
from provisioners.apply.objects import LABEL_OWNER_KIND, LABEL_OWNER_NAME, ObjectRef, ref_of
from provisioners.crdsafety import UnsafeCRDChange
from provisioners.errors import ProvisionerError
from provisioners.store import BundleStore, StoreError

__all__ = [
    "BUNDLE_DEPLOYMENTS",
    "DRIFT_REPORT",
    "FINALIZER",
    "REASON_DRIFT_CORRECTED",
    "REASON_DRIFT_DETECTED",
    "TYPE_DRIFTED",
    "BundleDeploymentReconciler",
    "generated_bundle_name",
    "template_hash",
]

log = logging.getLogger(__name__)

BUNDLE_DEPLOYMENTS = Resource(
    rukpak.API_VERSION, "BundleDeployment", "bundledeployments", namespaced=False
)
FINALIZER = "core.rukpak.io/uninstall"
MAX_GENERATED_BUNDLES = 4  # rukpak's ErrMaxGeneratedLimit
KIND = "BundleDeployment"

DRIFT_REPORT = "Report"  # spec.driftPolicy: report drift, leave it alone (default: Correct)
TYPE_DRIFTED = "Drifted"  # pivoter's condition: True while reported drift remains
REASON_NO_DRIFT = "NoDrift"
REASON_DRIFT_CORRECTED = "DriftCorrected"
REASON_DRIFT_DETECTED = "DriftDetected"
FINALIZING_RECHECK_SECONDS = 1.0


def template_hash(template: Mapping[str, Any]) -> str:
    """A stable hash of a BundleDeployment template (sha224, base32 lower-case, no padding)."""
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    digest = hashlib.sha224(canonical).digest()
    return base64.b32encode(digest).decode().rstrip("=").lower()


def generated_bundle_name(bd_name: str, hash_: str) -> str:
    """``<bd>-<hash>``, within the Bundle name limit (BundleDeployment names are at most 45)."""
    room = rukpak.BUNDLE_NAME_MAX - len(bd_name) - 1
    return f"{bd_name}-{hash_[: max(room, 6)]}"


class InstallBlocked(Exception):
    """The reconcile cannot go on; ``condition`` and ``reason`` say where it stopped."""

    def __init__(
        self, condition: str, reason: str, message: str, partial: list[ObjectRef] | None = None
    ) -> None:
        super().__init__(message)
        self.condition = condition
        self.reason = reason
        self.partial = partial or []
        """Objects a failed apply created before it stopped: added to the inventory, so that
        the next successful apply (or the uninstall) prunes them."""


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
            bundle = self._desired_bundle(bd)
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
            self._delete_other_bundles(bd, bundle_name)
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
        message = "; ".join(f"{ref.kind} {_where(ref)}: {why}" for ref, why in failing[:10]) + (
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

    def _desired_bundle(self, bd: dict[str, Any]) -> dict[str, Any]:
        name = bd["metadata"]["name"]
        template = (bd.get("spec") or {}).get("template") or {}
        hash_ = template_hash(template)
        owned, _ = self.kube.list(
            BUNDLES, label_selector=f"{LABEL_OWNER_KIND}={KIND},{LABEL_OWNER_NAME}={name}"
        )
        for bundle in owned:
            if (bundle["metadata"].get("labels") or {}).get(rukpak.LABEL_TEMPLATE_HASH) == hash_[
                :63
            ]:
                return bundle
        if len(owned) >= MAX_GENERATED_BUNDLES:
            raise KubeError(
                429,
                "TooManyBundles",
                f"reached the maximum generated Bundle limit ({MAX_GENERATED_BUNDLES}); "
                "earlier Bundles are deleted once a new one installs",
            )
        meta = template.get("metadata") or {}
        labels = {
            **(meta.get("labels") or {}),
            LABEL_OWNER_KIND: KIND,
            LABEL_OWNER_NAME: name,
            rukpak.LABEL_TEMPLATE_HASH: hash_[:63],
        }
        body = {
            "apiVersion": rukpak.API_VERSION,
            "kind": "Bundle",
            "metadata": {
                "name": generated_bundle_name(name, hash_),
                "labels": labels,
                "annotations": meta.get("annotations") or {},
                "ownerReferences": [
                    {
                        "apiVersion": rukpak.API_VERSION,
                        "kind": KIND,
                        "name": name,
                        "uid": bd["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": template.get("spec") or {},
        }
        created = self.kube.create(BUNDLES, body)
        log.info("bundledeployment %s: generated Bundle %s", name, created["metadata"]["name"])
        return created

    def _converge(self, bd: dict[str, Any], bundle: dict[str, Any], *, steady: bool) -> _Outcome:
        """Install or upgrade; in the steady state correct (or report) drift instead."""
        name = bd["metadata"]["name"]
        generation = int(bd["metadata"].get("generation") or 0)
        inventory = inventory_of(bd.get("status"))
        if steady and self._unchanged(name, bundle["metadata"]["name"], generation, inventory):
            return _Outcome(refs=inventory, applied=False)
        spec = bd.get("spec") or {}
        api = self._api_for(spec.get("serviceAccount"))
        content = self._content(bd, bundle, api)
        if not steady or content.rotated:
            self._verified.pop(name, None)
            refs, notes, live = self._apply(bd, bundle, api, content, run_hooks=not steady)
            # A drift correction that failed half-way (e.g. a CRD gone mid-apply) and was
            # retried as a plain apply is still reported as the correction it is.
            pending = self._pending_drift.pop(name, None)
            if pending is not None and not pending.matches(bundle["metadata"]["name"], generation):
                pending = None
            return _Outcome(
                refs=refs,
                applied=True,
                live=live,
                notes=notes + content.rotated,
                report=pending.report if pending else None,
                corrected=pending is not None,
            )
        owner = Owner(KIND, name)
        verified = self._verified.get(name)
        known = (
            verified.versions
            if verified and verified.matches(bundle["metadata"]["name"], generation)
            else None
        )
        try:
            report = drift.detect(
                api,
                content.objects,
                owner_kind=KIND,
                owner_name=name,
                field_manager=owner.field_manager,
                known=known,
            )
        except KubeError as exc:
            raise InstallBlocked(
                rukpak.TYPE_INSTALLED,
                rukpak.REASON_UPGRADE_FAILED,
                f"Failed to compare the installed objects with bundle "
                f"{bundle['metadata']['name']}: {exc}",
            ) from exc
        if not report.drifts:
            self._verified[name] = _Verified(
                bundle["metadata"]["name"], generation, report.matching, time.monotonic()
            )
            return _Outcome(refs=inventory, applied=False)
        self._verified.pop(name, None)
        if spec.get("driftPolicy") == DRIFT_REPORT:
            return _Outcome(refs=inventory, applied=False, report=report)
        if report.finalizing:
            # Applying now would write to an object about to vanish; its deletion queues the
            # next reconcile (and the requeue is a safety net).
            return _Outcome(refs=inventory, applied=False, wait=True)
        try:
            refs, notes, live = self._apply(bd, bundle, api, content, run_hooks=False)
        except InstallBlocked:
            self._pending_drift[name] = _PendingDrift(
                bundle["metadata"]["name"], generation, report
            )
            raise
        return _Outcome(
            refs=refs, applied=True, notes=notes, report=report, corrected=True, live=live
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

    def _content(
        self, bd: dict[str, Any], bundle: dict[str, Any], api: KubeAPI
    ) -> bundlecontent.BundleContent:
        spec = bd.get("spec") or {}
        bundle_format = bundle_format_for(str(spec.get("provisionerClassName")))
        assert bundle_format is not None  # checked by reconcile
        try:
            stored = self.store.get(str(bundle["status"]["digest"]))
            return bundlecontent.convert(bundle_format, stored.path, spec.get("config") or {}, api)
        except (StoreError, ProvisionerError) as exc:
            raise InstallBlocked(
                rukpak.TYPE_HAS_VALID_BUNDLE,
                rukpak.REASON_BUNDLE_LOAD_FAILED,
                f"Failed to load the {bundle['metadata']['name']} Bundle: {exc}",
            ) from exc

    def _apply(
        self,
        bd: dict[str, Any],
        bundle: dict[str, Any],
        api: KubeAPI,
        content: bundlecontent.BundleContent,
        *,
        run_hooks: bool = True,
    ) -> tuple[list[ObjectRef], list[str], dict[ObjectRef, dict[str, Any]]]:
        """Apply ``content`` and prune what it dropped; with ``run_hooks`` (an install or an
        upgrade, not a drift correction) its hooks run before and after. Returns the installed
        objects, notes for the ``Installed`` message, and the objects as applied."""
        spec = bd.get("spec") or {}
        name = bd["metadata"]["name"]
        bundle_name = bundle["metadata"]["name"]
        applier = Applier(api, Owner(KIND, name))
        hooks = HookRunner(applier) if run_hooks and content.hooks else None
        previous = inventory_of(bd.get("status"))
        upgrading = bool((bd.get("status") or {}).get("activeBundle"))
        safety = ((spec.get("preflight") or {}).get("crdUpgradeSafety") or {}).get("disabled")

        def blocked(exc: Exception, partial: list[ObjectRef] | None = None) -> InstallBlocked:
            return InstallBlocked(
                rukpak.TYPE_INSTALLED,
                rukpak.REASON_UPGRADE_FAILED if upgrading else rukpak.REASON_INSTALL_FAILED,
                f"Failed to {'upgrade to' if upgrading else 'install'} bundle {bundle_name}: {exc}",
                partial=partial,
            )

        try:
            migrated = crdupgrade.preflight(api, content.objects, disabled=bool(safety))
            adopt = bool(spec.get("adoptExisting"))
            if spec.get("serviceAccount"):
                # A dry run first: the API server authorizes every object as the service
                # account, so a missing right fails the install before anything is created.
                applier.apply(content.objects, adopt=adopt, dry_run=True, owned=previous)
            event = "upgrade" if upgrading else "install"
            ran = hooks.run(content.hooks, f"pre-{event}") if hooks else []
            try:
                result = applier.apply(content.objects, adopt=adopt, owned=previous)
            except ApplyError as exc:
                raise blocked(exc, partial=exc.applied) from exc
            refs = [ref_of(obj) for obj in content.objects]
            pruned = applier.prune(
                previous, refs, crd_policy=str(spec.get("crdDeletionPolicy") or "Keep")
            )
            try:
                ran += hooks.run(content.hooks, f"post-{event}") if hooks else []
            except ApplyError as exc:  # the objects are applied: record them
                raise blocked(exc, partial=refs) from exc
        except (ApplyError, KubeError, UnsafeCRDChange) as exc:
            raise blocked(exc) from exc
        for warning in result.warnings:
            self._warn(bd, "APIServerWarning", warning)
        notes = [*content.notes, *migrated, *ran]
        if pruned.deleted:
            notes.append(f"pruned {len(pruned.deleted)} objects the bundle no longer has")
        for ref, why in pruned.kept:
            notes.append(f"kept {ref.kind} {_where(ref)}: {why}")
        return refs, notes, result.objects

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

    def _api_for(self, service_account: Mapping[str, Any] | None) -> KubeAPI:
        """The daemon's own API access, or one that impersonates the named service account."""
        return self._identities.api_for(service_account)

    # -- deletion ----------------------------------------------------------------------------

    def _finalize(self, bd: dict[str, Any]) -> None:
        metadata = bd["metadata"]
        if FINALIZER not in (metadata.get("finalizers") or []):
            return
        # Imported here: pivoter.pivot builds on this module. A pivot input's own child that
        # someone else deleted while the input still wants it keeps its objects for the child
        # the input re-creates (docs/pivot.md, "A child deleted by hand").
        from pivoter.pivot.children import keep_on_delete

        kept = keep_on_delete(self.kube, bd)
        if kept is not None:
            if self.recorder is not None:
                self.recorder.normal(bd, "ObjectsKept", "Delete", kept.message)
                self.recorder.normal(kept.input, "ObjectsKept", "Delete", kept.message)
            self.kube.set_finalizers(
                BUNDLE_DEPLOYMENTS, bd, [f for f in metadata["finalizers"] if f != FINALIZER]
            )
            log.info("bundledeployment %s: %s", metadata["name"], kept.message)
            return
        spec = bd.get("spec") or {}
        inventory = inventory_of(bd.get("status"))
        applier = Applier(self._api_for(spec.get("serviceAccount")), Owner(KIND, metadata["name"]))
        pruned = applier.prune(
            inventory, [], crd_policy=str(spec.get("crdDeletionPolicy") or "Keep")
        )
        for ref, why in pruned.kept:
            self._warn(bd, "ObjectKept", f"kept {ref.kind} {_where(ref)} on deletion: {why}")
            self._orphan(ref)
        self.kube.set_finalizers(
            BUNDLE_DEPLOYMENTS, bd, [f for f in metadata["finalizers"] if f != FINALIZER]
        )
        log.info(
            "bundledeployment %s: uninstalled %d objects, kept %d",
            metadata["name"],
            len(pruned.deleted),
            len(pruned.kept),
        )

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
        generation = int(bd["metadata"].get("generation") or 0)
        conditions = [dict(c) for c in status.get("conditions") or []]
        set_conditions(conditions, found, generation=generation)
        new = {**status, "conditions": conditions, "observedGeneration": generation}
        if new == bd.get("status"):
            return  # nothing changed: no write, no watch event
        self.kube.patch_status(BUNDLE_DEPLOYMENTS, bd["metadata"]["name"], new)

    def _delete_other_bundles(self, bd: dict[str, Any], keep: str) -> None:
        name = bd["metadata"]["name"]
        owned, _ = self.kube.list(
            BUNDLES, label_selector=f"{LABEL_OWNER_KIND}={KIND},{LABEL_OWNER_NAME}={name}"
        )
        for bundle in owned:
            other = bundle["metadata"]["name"]
            if other != keep:
                with contextlib.suppress(NotFound):
                    self.kube.delete(BUNDLES, other)

    def _warn(self, bd: dict[str, Any], reason: str, note: str) -> None:
        log.warning("bundledeployment %s: %s: %s", bd["metadata"]["name"], reason, note)
        if self.recorder is not None:
            self.recorder.warning(bd, reason, "Reconcile", note)


def inventory_of(status: Mapping[str, Any] | None) -> list[ObjectRef]:
    """The objects a BundleDeployment's ``status.inventory`` lists (none without a status): what
    it installed, which the next apply and the uninstall prune against."""
    return [ObjectRef.from_dict(ref) for ref in (status or {}).get("inventory") or []]


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


def _where(ref: ObjectRef) -> str:
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
