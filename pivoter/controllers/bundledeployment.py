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
   generated Bundles deleted. In the steady state (nothing new to install) drift is looked for
   instead, and corrected or reported.
4. ``Healthy`` is recomputed from the installed objects on every reconcile.

Deletion runs the uninstall finalizer: every installed object is removed, except CRDs that still
have custom resources under the ``Keep`` policy, which are orphaned and reported in an Event.
Whether the objects stay altogether is a question the wiring answers (:data:`KeepOnDelete`,
:func:`pivoter.pivot.children.keep_on_delete` in the daemon): the controllers never import the
pivot, which builds on them.

This module is the loop: it observes the BundleDeployment, picks the one action its state calls
for, runs it, writes every condition found in one status write, and says when to look again.
Each action is a module of its own: step 1 is :mod:`pivoter.controllers.generatedbundles`; steps
2 and 3 are :mod:`pivoter.controllers.install` (over :mod:`pivoter.controllers.contentapply`);
drift is :mod:`pivoter.controllers.driftcorrection` (over :mod:`pivoter.controllers.drift`);
step 4 is :mod:`pivoter.controllers.health`; deletion is :mod:`pivoter.controllers.uninstall`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pivoter.apis import rukpak
from pivoter.apis.conditions import TRUE, Condition, find, set_conditions
from pivoter.apis.inventory import inventory_of
from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, BUNDLES
from pivoter.controllers import health
from pivoter.controllers.bundle import BundleReconciler, bundle_format_for
from pivoter.controllers.bundlecontent import BundleContent
from pivoter.controllers.contentapply import InstallBlocked, load_content
from pivoter.controllers.driftcorrection import DriftCorrection, Wanted, drift_conditions
from pivoter.controllers.generatedbundles import (
    delete_other_bundles,
    desired_bundle,
)
from pivoter.controllers.install import (
    InstallResult,
    blocked,
    install,
    installed,
    not_generated,
    unpacked,
    waiting_for,
)
from pivoter.controllers.managedobjects import ManagedObjects
from pivoter.controllers.uninstall import KeepOnDelete, KeptObjects, add_finalizer, finalize
from pivoter.kube import EventRecorder, Kube, KubeError, NotFound, Object
from pivoter.kube.identities import Identities
from pivoter.runtime.controller import Result
from pivoter.runtime.readcache import ReadYourWrites
from provisioners.apply.objects import ObjectRef
from provisioners.store import BundleStore

log = logging.getLogger(__name__)

__all__ = [
    "BundleDeploymentReconciler",
    "KeepOnDelete",
    "KeptObjects",
]

FINALIZING_RECHECK_SECONDS = 1.0


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
    """How often the bundle is converted again (webhook certificates renewed) and the installed
    objects compared with it even if no watch said they changed: as the shared caches hold them
    (no request), and from the API where no cache holds them."""
    managed: ManagedObjects | None = None
    """Shared watches on the installed objects (set by the wiring); None: read the API."""
    keep_on_delete: KeepOnDelete = field(kw_only=True)
    """Whether a BundleDeployment being deleted keeps its objects (see :data:`KeepOnDelete`)."""
    cached: ReadYourWrites | None = None
    """The BundleDeployments from the shared informer, with this reconciler's own writes read
    back (set by the wiring): a pass with nothing to do makes no request. None: read the API."""
    generated: Callable[[str], list[Object]] | None = None
    """The Bundles a BundleDeployment generated, from the shared informer (set by the wiring);
    None: listed from the API."""
    _identities: Identities = field(init=False)
    _drift: DriftCorrection = field(init=False, default_factory=DriftCorrection)

    def __post_init__(self) -> None:
        self._identities = Identities(self.kube)

    def reconcile(self, name: str) -> Result | None:
        """Converge one BundleDeployment; say when to look again (None: when something changes)."""
        bd = self._read(name)
        if bd is None:
            self._drift.forget(name)
            return None
        spec = bd.get("spec") or {}
        if bundle_format_for(str(spec.get("provisionerClassName") or "")) is None:
            return None
        if bd["metadata"].get("deletionTimestamp"):
            self._drift.forget(name)
            bd = self._observe_deletion(bd)
            finalize(
                self.kube,
                bd,
                identities=self._identities,
                keep_on_delete=self.keep_on_delete,
                recorder=self.recorder,
            )
            return None
        return self._install(self._wrote(bd, add_finalizer(self.kube, bd)))

    def _read(self, name: str) -> Object | None:
        """The BundleDeployment, from the cache when the wiring gave one."""
        if self.cached is not None:
            return self.cached.get(name)
        try:
            return self.kube.get(BUNDLE_DEPLOYMENTS, name)
        except NotFound:
            return None

    def _wrote(self, before: Object, after: Object) -> Object:
        """``after`` (the answer to a write made on ``before``), remembered until the cache
        has it."""
        if self.cached is not None and after is not before:
            self.cached.wrote(str(before["metadata"]["name"]), before, after)
        return after

    def _observe_deletion(self, bd: Object) -> Object:
        """Say in ``status.observedGeneration`` that the deletion was seen (deleting a custom
        resource raises its generation). Reconciles of one BundleDeployment never overlap, so
        from then on no reconcile that began before the deletion can still be installing or
        correcting drift: whoever made the child inert (an ``adopt --undo``) waits for this
        before anything else touches what it installed. Returns the object as written."""
        generation = _generation(bd)
        if (bd.get("status") or {}).get("observedGeneration") == generation:
            return bd
        patch = {"observedGeneration": generation}
        try:
            # The answer is the object as it is now: what the finalizer write below must match.
            written = self.kube.patch_status(BUNDLE_DEPLOYMENTS, bd["metadata"]["name"], patch)
            return self._wrote(bd, written)
        except NotFound:
            return bd  # already gone: the finalizer write finds that too

    def _install(self, bd: Object) -> Result | None:
        """Steps 1 and 2 of the module docstring: the generated Bundle, until it is unpacked."""
        status: dict[str, Any] = dict(bd.get("status") or {})
        try:
            bundle = desired_bundle(self.kube, bd, generated=self.generated)
        except KubeError as exc:
            self._write_status(bd, status, [not_generated(exc)])
            return Result(requeue=True)
        bundle = self._restored(bundle)
        if not self.bundles.is_current(bundle):
            self._write_status(bd, status, waiting_for(bundle, status))
            return None  # the Bundle's status change triggers the next reconcile
        return self._install_unpacked(bd, status, bundle)

    def _install_unpacked(
        self, bd: Object, status: dict[str, Any], bundle: Object
    ) -> Result | None:
        """Steps 3 and 4: converge, then write every condition found once (:meth:`_write_status`)
        and say when to look again."""
        bundle_name = bundle["metadata"]["name"]
        valid = unpacked(bundle_name)
        try:
            outcome = self._converge(bd, bundle)
        except InstallBlocked as exc:
            self._write_status(bd, status, [valid, *blocked(bd, status, exc, self.recorder)])
            return Result(requeue=True)
        found = [
            valid,
            *installed(status, bundle_name, outcome),
            *drift_conditions(bd, outcome, self.recorder),
        ]
        healthy, failing = self._health(outcome)
        self._write_status(bd, status, [*found, healthy])
        if outcome.applied:
            delete_other_bundles(
                self.kube, bd["metadata"]["name"], bundle_name, generated=self.generated
            )
        if self.managed is not None:
            self.managed.track(outcome.refs)
        return self._next_look(outcome, failing)

    def _restored(self, bundle: Object) -> Object:
        """``bundle``, unpacked again when it is Unpacked but the store lost it (e.g. a new
        leader on another node)."""
        phase = (bundle.get("status") or {}).get("phase")
        if phase == rukpak.PHASE_UNPACKED and not self.bundles.is_current(bundle):
            name = bundle["metadata"]["name"]
            self.bundles.reconcile(name)
            return self.kube.get(BUNDLES, name)
        return bundle

    def _converge(self, bd: Object, bundle: Object) -> InstallResult:
        """Pick the action the BundleDeployment's state calls for and run it: none (steady and
        unchanged in the caches), a drift check (steady), or a planned install."""
        wanted = Wanted(bd["metadata"]["name"], bundle["metadata"]["name"], _generation(bd))
        inventory = inventory_of(bd.get("status"))
        steady = _steady(bd, wanted.bundle)
        if steady and self._drift.unchanged(
            wanted, inventory, managed=self.managed, max_age=self.full_check_interval_seconds
        ):
            return InstallResult(refs=inventory, applied=False)
        api = self._identities.api_for((bd.get("spec") or {}).get("serviceAccount"))
        content = load_content(self.store, bd, bundle, api)
        if steady and not content.rotated:
            if self._drift.unchanged(wanted, inventory, managed=self.managed, max_age=math.inf):
                # The full check: every object is, in the shared caches, as it was when it was
                # last found to match (an object no cache holds is compared from the API).
                self._drift.renewed(wanted)
                return InstallResult(refs=inventory, applied=False)
            return self._drift.correct(
                api, bd, wanted, content, inventory=inventory, recorder=self.recorder
            )
        # A new bundle or spec (hooks run), or renewed webhook certificates (they do not).
        return self._apply_planned(api, bd, wanted, content, run_hooks=not steady)

    def _apply_planned(
        self, api: Kube, bd: Object, wanted: Wanted, content: BundleContent, *, run_hooks: bool
    ) -> InstallResult:
        """Apply a change someone asked for (install, upgrade, new spec, renewed certificates)."""
        self._drift.invalidate(wanted.name)
        log.info(
            "bundledeployment %s: applying bundle %s (generation %d%s)",
            wanted.name,
            wanted.bundle,
            wanted.generation,
            ", hooks run" if run_hooks else "",
        )
        applied = install(
            api, bd, wanted.bundle, content, run_hooks=run_hooks, recorder=self.recorder
        )
        # What the apply answered is what a comparison would find now: the first check after
        # an install reads the caches, not the API (it was four of every pivot's requests).
        self._drift.applied(wanted, applied.live)
        # A drift correction that failed half-way (e.g. a CRD gone mid-apply) and was retried
        # as this plain apply is still reported as the correction it is.
        pending = self._drift.pending(wanted)
        return InstallResult(
            refs=applied.refs,
            applied=True,
            live=applied.live,
            notes=applied.notes + content.rotated,
            report=pending,
            corrected=pending is not None,
        )

    def _health(self, outcome: InstallResult) -> tuple[Condition, list[tuple[ObjectRef, str]]]:
        """The ``Healthy`` condition of the installed objects, and the failing ones."""
        # Just applied: the apply's answers are the freshest copies (the caches may lag).
        live = outcome.live
        return health.healthy_condition(
            self.kube, outcome.refs, read=lambda ref: live.get(ref) or self._cached_object(ref)
        )

    def _cached_object(self, ref: ObjectRef) -> Object | None:
        """A managed object from the shared caches, if they hold it (health reads it there)."""
        if self.managed is None:
            return None
        _, obj = self.managed.cached(ref)
        return obj

    def _next_look(self, outcome: InstallResult, failing: list[tuple[ObjectRef, str]]) -> Result:
        """When to look again: shortly while an object is still being deleted; while some
        object is unhealthy, after the health interval until the shared caches watch every
        failing one (from then on each change that can heal it queues the BundleDeployment, and
        polling would only repeat the same verdict); otherwise after the full-check interval
        (webhook certificates are renewed by a fresh conversion)."""
        if outcome.wait:
            return Result(requeue_after=FINALIZING_RECHECK_SECONDS)
        managed = self.managed
        if failing and (managed is None or not all(managed.cached(ref)[0] for ref, _ in failing)):
            return Result(requeue_after=self.health_interval_seconds)
        return Result(requeue_after=self.full_check_interval_seconds)

    def _write_status(self, bd: Object, status: dict[str, Any], found: list[Condition]) -> None:
        """Write ``status`` with the conditions ``found`` in this pass set over the current
        ones (no write when nothing changed)."""
        generation = _generation(bd)
        conditions = [dict(c) for c in status.get("conditions") or []]
        set_conditions(conditions, found, generation=generation)
        new = {**status, "conditions": conditions, "observedGeneration": generation}
        if new == bd.get("status"):
            return  # nothing changed: no write, no watch event
        self._wrote(bd, self.kube.patch_status(BUNDLE_DEPLOYMENTS, bd["metadata"]["name"], new))


def _steady(bd: Object, bundle_name: str) -> bool:
    """Whether the bundle and spec now wanted are the ones installed last time (no pivot, no
    spec change): then only drift can make a difference."""
    status = bd.get("status") or {}
    installed_now = find(status.get("conditions"), rukpak.TYPE_INSTALLED)
    return (
        status.get("activeBundle") == bundle_name
        and status.get("observedGeneration") == bd["metadata"].get("generation")
        and installed_now is not None
        and installed_now.get("status") == TRUE
        and status.get("inventory") is not None
    )


def _generation(bd: Object) -> int:
    return int(bd["metadata"].get("generation") or 0)
