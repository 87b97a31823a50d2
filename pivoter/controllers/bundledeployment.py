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
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client import ApiClient

from pivoter.apis import rukpak
from pivoter.controller.controller import Result
from pivoter.controllers import health
from pivoter.controllers.bundle import BUNDLES, BundleReconciler, bundle_format_for
from pivoter.controllers.conditions import FALSE, TRUE, UNKNOWN, find, set_condition
from pivoter.kube import MERGE_PATCH, EventRecorder, Kube, KubeError, NotFound, Resource
from provisioners.apply.applier import Applier, ApplyError, Owner
from provisioners.apply.kubeapi import KubeAPI
from provisioners.apply.objects import LABEL_OWNER_KIND, LABEL_OWNER_NAME, ObjectRef, ref_of
from provisioners.errors import ProvisionerError
from provisioners.store import BundleStore, StoreError

__all__ = [
    "BUNDLE_DEPLOYMENTS",
    "FINALIZER",
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

    def __init__(self, condition: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.condition = condition
        self.reason = reason


@dataclass
class BundleDeploymentReconciler:
    """Installs and pivots BundleDeployments of pivoter's provisioner classes."""

    kube: Kube
    store: BundleStore
    bundles: BundleReconciler
    recorder: EventRecorder | None = None
    health_interval_seconds: float = 10.0
    _apis: dict[str, KubeAPI] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- entry point -------------------------------------------------------------------------

    def reconcile(self, name: str) -> Result | None:
        """Converge one BundleDeployment; say when to look again (None: when something changes)."""
        try:
            bd = self.kube.get(BUNDLE_DEPLOYMENTS, name)
        except NotFound:
            return None
        spec = bd.get("spec") or {}
        if bundle_format_for(str(spec.get("provisionerClassName") or "")) is None:
            return None
        metadata = bd["metadata"]
        if metadata.get("deletionTimestamp"):
            self._finalize(bd)
            return None
        if FINALIZER not in (metadata.get("finalizers") or []):
            bd = self._set_finalizers(bd, [*(metadata.get("finalizers") or []), FINALIZER])
        return self._install(bd)

    # -- install -----------------------------------------------------------------------------

    def _install(self, bd: dict[str, Any]) -> Result | None:
        generation = int(bd["metadata"].get("generation") or 0)
        status: dict[str, Any] = dict(bd.get("status") or {})
        conditions: list[dict[str, Any]] = [dict(c) for c in status.get("conditions") or []]

        def condition(type_: str, state: str, reason: str, message: str) -> None:
            set_condition(conditions, type_, state, reason, message, generation=generation)

        try:
            bundle = self._desired_bundle(bd)
        except KubeError as exc:
            condition(
                rukpak.TYPE_HAS_VALID_BUNDLE,
                UNKNOWN,
                rukpak.REASON_RECONCILE_FAILED,
                f"Failed to generate the Bundle: {exc}",
            )
            self._write_status(bd, status, conditions, generation)
            return Result(requeue=True)
        bundle_name = bundle["metadata"]["name"]
        phase = (bundle.get("status") or {}).get("phase")
        if phase == rukpak.PHASE_UNPACKED and not self.bundles.is_current(bundle):
            # Unpacked, but the store lost it (e.g. a new leader on another node).
            self.bundles.reconcile(bundle_name)
            bundle = self.kube.get(BUNDLES, bundle_name)
        if not self.bundles.is_current(bundle):
            unpacked = find((bundle.get("status") or {}).get("conditions"), rukpak.TYPE_UNPACKED)
            if unpacked is not None and unpacked.get("status") == FALSE:
                condition(
                    rukpak.TYPE_HAS_VALID_BUNDLE,
                    FALSE,
                    rukpak.REASON_UNPACK_FAILED,
                    str(unpacked.get("message") or f"Failed to unpack the {bundle_name} Bundle"),
                )
            else:
                condition(
                    rukpak.TYPE_HAS_VALID_BUNDLE,
                    TRUE,
                    rukpak.REASON_UNPACK_PENDING,
                    f"Waiting for the {bundle_name} Bundle to be unpacked",
                )
            if find(conditions, rukpak.TYPE_INSTALLED) is None:
                condition(
                    rukpak.TYPE_INSTALLED,
                    UNKNOWN,
                    rukpak.REASON_INSTALLATION_STATUS_UNKNOWN,
                    "Nothing is installed yet: waiting for a valid bundle",
                )
            self._write_status(bd, status, conditions, generation)
            return None  # the Bundle's status change triggers the next reconcile
        condition(
            rukpak.TYPE_HAS_VALID_BUNDLE,
            TRUE,
            rukpak.REASON_UNPACK_SUCCESSFUL,
            f"Successfully unpacked the {bundle_name} Bundle",
        )
        try:
            refs, notes = self._apply(bd, bundle)
        except InstallBlocked as exc:
            condition(exc.condition, FALSE, exc.reason, str(exc))
            if exc.condition == rukpak.TYPE_INSTALLED:
                condition(
                    rukpak.TYPE_HEALTHY,
                    FALSE,
                    rukpak.REASON_INSTALLATION_STATUS_FALSE,
                    "The bundle is not installed",
                )
            self._warn(bd, exc.reason, str(exc))
            self._write_status(bd, status, conditions, generation)
            return Result(requeue=True)
        status["activeBundle"] = bundle_name
        status["inventory"] = [ref.as_dict() for ref in refs]
        condition(
            rukpak.TYPE_INSTALLED,
            TRUE,
            rukpak.REASON_INSTALLATION_SUCCEEDED,
            f"Instantiated bundle {bundle_name} successfully"
            + (f" ({'; '.join(notes)})" if notes else ""),
        )
        failing = health.check(self.kube, refs)
        if failing:
            condition(
                rukpak.TYPE_HEALTHY,
                FALSE,
                rukpak.REASON_UNHEALTHY,
                "; ".join(f"{ref.kind} {_where(ref)}: {why}" for ref, why in failing[:10])
                + (f" (and {len(failing) - 10} more)" if len(failing) > 10 else ""),
            )
        else:
            condition(
                rukpak.TYPE_HEALTHY,
                TRUE,
                rukpak.REASON_HEALTHY,
                f"All {len(refs)} installed objects are healthy",
            )
        self._write_status(bd, status, conditions, generation)
        self._delete_other_bundles(bd, bundle_name)
        return Result(requeue_after=self.health_interval_seconds) if failing else None

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

    def _apply(
        self, bd: dict[str, Any], bundle: dict[str, Any]
    ) -> tuple[list[ObjectRef], list[str]]:
        spec = bd.get("spec") or {}
        name = bd["metadata"]["name"]
        bundle_name = bundle["metadata"]["name"]
        bundle_format = bundle_format_for(str(spec.get("provisionerClassName")))
        assert bundle_format is not None  # checked by reconcile
        try:
            stored = self.store.get(str(bundle["status"]["digest"]))
            converted = bundle_format.convert(stored.path, spec.get("config") or {})
        except (StoreError, ProvisionerError) as exc:
            raise InstallBlocked(
                rukpak.TYPE_HAS_VALID_BUNDLE,
                rukpak.REASON_BUNDLE_LOAD_FAILED,
                f"Failed to load the {bundle_name} Bundle: {exc}",
            ) from exc
        applier = Applier(self._api_for(spec.get("serviceAccount")), Owner(KIND, name))
        previous = [ObjectRef.from_dict(d) for d in (bd.get("status") or {}).get("inventory") or []]
        upgrading = bool((bd.get("status") or {}).get("activeBundle"))
        try:
            result = applier.apply(converted.objects, adopt=bool(spec.get("adoptExisting")))
            refs = [ref_of(obj) for obj in converted.objects]
            pruned = applier.prune(
                previous, refs, crd_policy=str(spec.get("crdDeletionPolicy") or "Keep")
            )
        except (ApplyError, KubeError) as exc:
            raise InstallBlocked(
                rukpak.TYPE_INSTALLED,
                rukpak.REASON_UPGRADE_FAILED if upgrading else rukpak.REASON_INSTALL_FAILED,
                f"Failed to {'upgrade to' if upgrading else 'install'} bundle {bundle_name}: {exc}",
            ) from exc
        for warning in result.warnings:
            self._warn(bd, "APIServerWarning", warning)
        notes = []
        if pruned.deleted:
            notes.append(f"pruned {len(pruned.deleted)} objects the bundle no longer has")
        for ref, why in pruned.kept:
            notes.append(f"kept {ref.kind} {_where(ref)}: {why}")
        return refs, notes

    # -- identities --------------------------------------------------------------------------

    def _api_for(self, service_account: Mapping[str, Any] | None) -> KubeAPI:
        """The daemon's own API access, or one that impersonates the named service account."""
        user = ""
        if service_account:
            user = f"system:serviceaccount:{service_account['namespace']}:{service_account['name']}"
        with self._lock:
            api = self._apis.get(user)
            if api is None:
                client = ApiClient(self.kube.api_client.configuration)
                if user:
                    # The API server adds the service account's groups when none are given.
                    client.set_default_header("Impersonate-User", user)  # type: ignore[no-untyped-call]
                api = self._apis[user] = KubeAPI(client)
            return api

    # -- deletion ----------------------------------------------------------------------------

    def _finalize(self, bd: dict[str, Any]) -> None:
        metadata = bd["metadata"]
        if FINALIZER not in (metadata.get("finalizers") or []):
            return
        spec = bd.get("spec") or {}
        inventory = [
            ObjectRef.from_dict(d) for d in (bd.get("status") or {}).get("inventory") or []
        ]
        applier = Applier(self._api_for(spec.get("serviceAccount")), Owner(KIND, metadata["name"]))
        pruned = applier.prune(
            inventory, [], crd_policy=str(spec.get("crdDeletionPolicy") or "Keep")
        )
        for ref, why in pruned.kept:
            self._warn(bd, "ObjectKept", f"kept {ref.kind} {_where(ref)} on deletion: {why}")
            self._orphan(ref)
        self._set_finalizers(bd, [f for f in metadata["finalizers"] if f != FINALIZER])
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

    def _set_finalizers(self, bd: dict[str, Any], finalizers: list[str]) -> dict[str, Any]:
        patch = {
            "metadata": {
                "finalizers": finalizers,
                "resourceVersion": bd["metadata"]["resourceVersion"],
            }
        }
        return self.kube.merge_patch(BUNDLE_DEPLOYMENTS, bd["metadata"]["name"], patch)

    def _write_status(
        self,
        bd: dict[str, Any],
        status: dict[str, Any],
        conditions: list[dict[str, Any]],
        generation: int,
    ) -> None:
        new = {**status, "conditions": conditions, "observedGeneration": generation}
        if new == bd.get("status"):
            return  # nothing changed: no write, no watch event
        name = bd["metadata"]["name"]
        body = {"status": new}
        self.kube.request(
            "PATCH",
            BUNDLE_DEPLOYMENTS.path(None, name) + "/status",
            body=body,
            content_type=MERGE_PATCH,
        )

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


def _where(ref: ObjectRef) -> str:
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
