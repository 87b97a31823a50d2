"""The Bundle controller: unpack a Bundle's source into the content store and say so in status.

``reconcile(name)`` reads the Bundle and converges: a Bundle of one of pivoter's provisioner
classes whose content is not in the store (new, changed generation, or a new leader whose store
is empty) is fetched, checked by its format and published; status then carries ``phase``,
``resolvedSource``, the store ``digest``, ``contentURL`` and the ``Unpacked`` condition with
rukpak's reasons, and ``Verified`` when the cluster's verification policy checked the image's
signatures (:mod:`pivoter.registries.verification`; under ``enforce`` a refused image is never
unpacked). A Bundle that is gone releases its content: store entries no Bundle refers to
are garbage-collected (after a grace period that protects content being published).

Bundles are immutable (the admission webhook enforces it), so once ``Unpacked`` for the current
generation a Bundle needs no work unless its content vanished from the store.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pivoter.apis import rukpak
from pivoter.apis.conditions import FALSE, TRUE, UNKNOWN, set_condition
from pivoter.apis.resources import BUNDLES, CONFIG_MAPS, SECRETS
from pivoter.controllers.sourcespec import source_spec
from pivoter.kube import EventRecorder, Kube, NotFound
from pivoter.registries import RegistryAccessProvider
from pivoter.registries.names import bundle_pull_secrets
from pivoter.registries.secrets import UnusablePullSecret
from pivoter.registries.verification import named_policy
from pivoter.runtime.controller import Result
from pivoter.runtime.throttle import Throttle
from provisioners.content import unpack_bundle
from provisioners.errors import AuthenticationError, ProvisionerError
from provisioners.formats import FORMATS, BundleFormat
from provisioners.registries import PullFailedEverywhere
from provisioners.sources import FetchOptions, ImageSpec
from provisioners.store import BundleStore, StoreError
from provisioners.verification import (
    ImageNotVerifiedError,
    SignatureRefused,
    Verdict,
    VerificationPolicyError,
)

__all__ = [
    "BUNDLES",
    "CLASS_FORMATS",
    "REASON_NOT_VERIFIED",
    "REASON_VERIFIED",
    "TYPE_VERIFIED",
    "BundleReconciler",
    "bundle_format_for",
]

log = logging.getLogger(__name__)

CREDENTIAL_FAILURES = (
    AuthenticationError,
    UnusablePullSecret,
    PullFailedEverywhere,
    ImageNotVerifiedError,
    VerificationPolicyError,
)
"""Unpack failures that a change to a Secret, a mirror set or the verification policy (a key
added, a signature pushed) can fix."""
CREDENTIAL_RETRY_SECONDS = 15.0
"""How soon a Bundle that failed for one of :data:`CREDENTIAL_FAILURES` is tried again (one
manifest request per place)."""


TYPE_VERIFIED = "Verified"
"""The Bundle's image signatures, checked against the cluster's verification policy
(docs/verification.md); absent when nothing was checked."""
REASON_VERIFIED = "Verified"
REASON_NOT_VERIFIED = "NotVerified"


CLASS_FORMATS = {
    rukpak.CLASS_PLAIN: "plain+v0",
    rukpak.CLASS_REGISTRY: "registry+v1",
    rukpak.CLASS_HELM: "helm",
}
"""Provisioner class name -> bundle format, for the classes pivoter serves."""


def bundle_format_for(class_name: str) -> BundleFormat | None:
    """The format a provisioner class unpacks, or None when pivoter does not serve the class."""
    name = CLASS_FORMATS.get(class_name)
    return FORMATS.get(name) if name else None


@dataclass
class BundleReconciler:
    """Unpacks Bundles of pivoter's provisioner classes into ``store``."""

    kube: Kube
    store: BundleStore
    system_namespace: str
    content_url_base: str = ""
    """Base URL of the content server (``<base>/bundles/<name>.tgz``); empty: no contentURL."""
    fetch_options: FetchOptions | None = None
    gc_grace_seconds: float = 300.0
    registries: RegistryAccessProvider | None = None
    """The pull secrets and mirrors of image sources (None: the Bundle's own pull secret only,
    read from the system namespace)."""
    recorder: EventRecorder | None = None
    """Events about Bundles (a pull a mirror served); None: none."""
    live_bundles: Callable[[], Iterable[Mapping[str, Any]]] | None = None
    """The Bundles as the daemon's informer caches them, where the garbage collection reads
    which digests are live (None: listed from the API server). It runs at every deleted Bundle,
    and a LIST of every Bundle each time made n deletions cost n² objects (23 % of the daemon's
    samples during a catalog change at 3x, docs/benchmarks/daemon-scale.md). A lagging cache
    is safe here: only entries older than the grace period are removed, and controllers start
    once the caches have synced."""
    gc_interval_seconds: float = 10.0
    """A deleted Bundle asks for a collection; asks within this many seconds of the last one
    make one collection at the interval's end (a change that deletes n Bundles scanned the n
    entries of the store n times: 10 % of the daemon's samples in a change of 300 inputs)."""
    _gc: Throttle = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._gc = Throttle(self.collect_garbage, self.gc_interval_seconds)

    def reconcile(self, name: str) -> Result | None:
        """Converge one Bundle; say when to look again (None: when something changes)."""
        try:
            bundle = self.kube.get(BUNDLES, name)
        except NotFound:
            self._gc.ask()
            return None
        spec = bundle.get("spec") or {}
        bundle_format = bundle_format_for(str(spec.get("provisionerClassName") or ""))
        if bundle_format is None:
            return None  # another provisioner's Bundle, or a format not built in yet
        if (bundle.get("metadata") or {}).get("deletionTimestamp"):
            return None
        if self.is_current(bundle):
            return None
        return self._unpack(bundle, bundle_format)

    def is_current(self, bundle: Mapping[str, Any]) -> bool:
        """Whether the Bundle's current generation is unpacked and its content is in the store."""
        status = bundle.get("status") or {}
        generation = (bundle.get("metadata") or {}).get("generation")
        if (
            status.get("phase") != rukpak.PHASE_UNPACKED
            or status.get("observedGeneration") != generation
        ):
            return False
        digest = str(status.get("digest") or "")
        if not digest:
            return False
        try:
            self.store.get(digest)
        except StoreError:
            return False  # e.g. a new leader on another node: unpack again
        return True

    def _read(self, kind: str, name: str) -> Mapping[str, Any] | None:
        resource = SECRETS if kind == "Secret" else CONFIG_MAPS
        try:
            return self.kube.get(resource, name, self.system_namespace)
        except NotFound:
            return None

    def _unpack(self, bundle: dict[str, Any], bundle_format: BundleFormat) -> Result | None:
        name = bundle["metadata"]["name"]
        generation = int(bundle["metadata"].get("generation") or 0)
        status: dict[str, Any] = dict(bundle.get("status") or {})
        conditions: list[dict[str, Any]] = [dict(c) for c in status.get("conditions") or []]
        # A retry of this generation's failed unpack keeps saying it failed until it succeeds:
        # flipping to Unpacking and back would change status on every attempt, and each status
        # write is a watch event that queues the Bundle again at once, past its backoff. Where it
        # stands is the Bundle's phase (rukpak's enum), written with each condition.
        phase = status.get("phase")
        retrying = phase == rukpak.PHASE_FAILING and status.get("observedGeneration") == generation
        if not retrying and phase != rukpak.PHASE_UNPACKING:
            set_condition(
                conditions,
                rukpak.TYPE_UNPACKED,
                UNKNOWN,
                rukpak.REASON_UNPACKING,
                f"Unpacking the {name} Bundle",
                generation=generation,
            )
            self._write_status(
                name, {**status, "phase": rukpak.PHASE_UNPACKING, "conditions": conditions}
            )
        try:
            spec = source_spec((bundle.get("spec") or {}).get("source") or {}, self._read)
            if isinstance(spec, ImageSpec):
                registries = self.registries or RegistryAccessProvider(
                    self.kube, self.system_namespace
                )
                secrets = bundle_pull_secrets(self.kube, bundle, self.system_namespace)
                secrets += registries.catalog_secrets.for_image(spec.ref)
                spec = dataclasses.replace(
                    spec,
                    access=registries.access(secrets),
                    verification=registries.verification_policies(named_policy(bundle, "Bundle")),
                )
            unpacked = unpack_bundle(
                spec, self.store, self.fetch_options, bundle_format=bundle_format
            )
        except ProvisionerError as exc:
            log.info("bundle %s: unpack failed: %s", name, exc)
            self._verified(bundle, conditions, exc, generation)
            set_condition(
                conditions,
                rukpak.TYPE_UNPACKED,
                FALSE,
                rukpak.REASON_UNPACK_FAILED,
                f"Failed to unpack the {name} Bundle: {exc}",
                generation=generation,
            )
            self._write_status(
                name,
                {
                    **status,
                    "phase": rukpak.PHASE_FAILING,
                    "conditions": conditions,
                    "observedGeneration": generation,
                },
            )
            if isinstance(exc, CREDENTIAL_FAILURES):
                # Fixing a Secret (or a mirror) fixes it, and nothing else will tell this
                # Bundle: look again soon rather than after a backoff grown to many minutes.
                return Result(requeue_after=CREDENTIAL_RETRY_SECONDS)
            return Result(requeue=True)  # back off per key, as a failed reconcile does
        message = f"Successfully unpacked the {name} Bundle ({unpacked.fetched.revision})"
        if unpacked.fetched.served_by:
            message += f" from mirror {unpacked.fetched.served_by}"
        if unpacked.fetched.warnings:
            message += "; warning: " + "; ".join(unpacked.fetched.warnings)
        set_condition(
            conditions,
            rukpak.TYPE_UNPACKED,
            TRUE,
            rukpak.REASON_UNPACK_SUCCESSFUL,
            message,
            generation=generation,
        )
        self._verified(bundle, conditions, unpacked.fetched.verification, generation)
        new_status: dict[str, Any] = {
            **status,
            "phase": rukpak.PHASE_UNPACKED,
            "resolvedSource": unpacked.fetched.resolved_source,
            "digest": unpacked.stored.key,
            "conditions": conditions,
            "observedGeneration": generation,
        }
        if self.content_url_base:
            new_status["contentURL"] = f"{self.content_url_base.rstrip('/')}/bundles/{name}.tgz"
        self._write_status(name, new_status)
        if unpacked.fetched.served_by and self.recorder is not None:
            self.recorder.normal(
                bundle,
                "PulledFromMirror",
                "Unpack",
                f"the image was pulled from mirror {unpacked.fetched.served_by}",
            )
        log.info(
            "bundle %s: unpacked %s as %s", name, unpacked.fetched.revision, unpacked.stored.key
        )
        return None

    def _verified(
        self,
        bundle: dict[str, Any],
        conditions: list[dict[str, Any]],
        outcome: tuple[Verdict, ...] | ProvisionerError,
        generation: int,
    ) -> None:
        """Set the ``Verified`` condition from the pull's signature check: True with the digest
        and who signed it; False when the policy refused the image (under ``enforce`` nothing
        was unpacked; under ``warn`` it was, and a Warning Event says so); removed when nothing
        was checked (mode ``off``, not an image, or the pull failed before the check)."""
        if isinstance(outcome, ImageNotVerifiedError):
            verdicts: tuple[Verdict, ...] = (outcome.refusal,)
        elif isinstance(outcome, ProvisionerError):
            verdicts = ()
        else:
            verdicts = outcome
        if not verdicts:
            conditions[:] = [c for c in conditions if c.get("type") != TYPE_VERIFIED]
            return
        refused = [v for v in verdicts if isinstance(v, SignatureRefused)]
        message = "; ".join(v.message for v in refused or verdicts)
        status, reason = (FALSE, REASON_NOT_VERIFIED) if refused else (TRUE, REASON_VERIFIED)
        set_condition(conditions, TYPE_VERIFIED, status, reason, message, generation=generation)
        if refused and self.recorder is not None:
            self.recorder.warning(bundle, REASON_NOT_VERIFIED, "Verify", message)

    def _write_status(self, name: str, status: dict[str, Any]) -> None:
        try:
            self.kube.patch_status(BUNDLES, name, status)
        except NotFound:
            # Deleted while unpacking (e.g. a pivot superseded it): nothing left to report on,
            # and the next reconcile of the name collects its content.
            log.debug("bundle %s: deleted before its status could be written", name)

    def collect_garbage(self) -> list[str]:
        """Remove store entries no Bundle refers to (older than the grace period)."""
        bundles: Iterable[Mapping[str, Any]]
        if self.live_bundles is not None:
            bundles = self.live_bundles()
        else:
            bundles, _ = self.kube.list(BUNDLES)
        live = {str((b.get("status") or {}).get("digest") or "") for b in bundles} - {""}
        removed = self.store.gc(live, grace_seconds=self.gc_grace_seconds)
        if removed:
            log.info("content store: released %d entries no Bundle refers to", len(removed))
        return removed
