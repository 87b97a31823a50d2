"""Loading and applying a BundleDeployment's content: the steps of an install that can stop it.

The BundleDeployment controller calls :func:`load_content` (the unpacked Bundle from the store,
converted by the provisioner class's format), then :func:`pivoter.controllers.install.install`
calls :func:`apply_content` for an install, an upgrade or a drift correction. An apply is, in
order: the CRD upgrade preflight (:mod:`pivoter.controllers.crdupgrade`); a dry run when a
service account installs (the API server authorizes every object as that account, so a missing
right fails before anything is created); the pre hooks; a server-side apply under the
BundleDeployment's field manager; a prune of what the previous content had and this one does
not; the post hooks. Hooks run only for an install or upgrade, never for a drift correction.

A step that cannot go on raises :class:`InstallBlocked`, which names the condition and reason to
report and the objects already created (:func:`pivoter.controllers.install.blocked` adds them to
the inventory).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pivoter.apis import rukpak
from pivoter.controllers import bundlecontent, crdupgrade
from pivoter.controllers.bundle import bundle_format_for
from pivoter.controllers.generatedbundles import KIND
from pivoter.controllers.reporting import where
from pivoter.kube import Kube, KubeError
from provisioners.apply.applier import Applier, ApplyError, ApplyResult, Owner, PruneResult
from provisioners.apply.hooks import HookRunner
from provisioners.apply.objects import ObjectRef, ref_of
from provisioners.crdsafety import UnsafeCRDChange
from provisioners.errors import ProvisionerError
from provisioners.store import BundleStore, StoreError

__all__ = ["Applied", "InstallBlocked", "apply_content", "load_content"]


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
class Applied:
    """What one apply installed: the objects, notes for the ``Installed`` message, the objects
    as the API server returned them, and the API server's warnings."""

    refs: list[ObjectRef]
    notes: list[str]
    live: dict[ObjectRef, dict[str, Any]]
    warnings: list[str]


def load_content(
    store: BundleStore, bd: Mapping[str, Any], bundle: Mapping[str, Any], api: Kube
) -> bundlecontent.BundleContent:
    """The unpacked ``bundle`` converted by ``bd``'s provisioner class, with its config."""
    spec = bd.get("spec") or {}
    bundle_format = bundle_format_for(str(spec.get("provisionerClassName")))
    assert bundle_format is not None  # checked by reconcile
    try:
        stored = store.get(str(bundle["status"]["digest"]))
        return bundlecontent.convert(bundle_format, stored.path, spec.get("config") or {}, api)
    except (StoreError, ProvisionerError) as exc:
        raise InstallBlocked(
            rukpak.TYPE_HAS_VALID_BUNDLE,
            rukpak.REASON_BUNDLE_LOAD_FAILED,
            f"Failed to load the {bundle['metadata']['name']} Bundle: {exc}",
        ) from exc


def apply_content(
    api: Kube,
    bd: Mapping[str, Any],
    bundle_name: str,
    content: bundlecontent.BundleContent,
    *,
    previous: list[ObjectRef],
    run_hooks: bool,
) -> Applied:
    """Apply ``content`` for ``bd`` and prune what ``previous`` (its inventory) has and the
    content does not; with ``run_hooks`` its hooks run before and after (see the module
    docstring)."""
    attempt = _Attempt.of(api, bd, bundle_name, content, previous, run_hooks=run_hooks)
    try:
        migrated = attempt.preflight()
        ran = attempt.hooks("pre")
        result = attempt.apply()
        refs = [ref_of(obj) for obj in content.objects]
        pruned = attempt.prune(refs)
        ran += attempt.post_hooks(refs)
    except (ApplyError, KubeError, UnsafeCRDChange) as exc:
        raise attempt.blocked(exc) from exc
    notes = [*content.notes, *migrated, *ran, *_pruned_notes(pruned)]
    return Applied(refs, notes, result.objects, result.warnings)


@dataclass(frozen=True, slots=True)
class _Attempt:
    """One apply of one bundle's content for one BundleDeployment, step by step."""

    api: Kube
    applier: Applier
    spec: Mapping[str, Any]
    bundle_name: str
    content: bundlecontent.BundleContent
    previous: list[ObjectRef]
    upgrading: bool
    runner: HookRunner | None

    @classmethod
    def of(
        cls,
        api: Kube,
        bd: Mapping[str, Any],
        bundle_name: str,
        content: bundlecontent.BundleContent,
        previous: list[ObjectRef],
        *,
        run_hooks: bool,
    ) -> _Attempt:
        applier = Applier(api, Owner(KIND, bd["metadata"]["name"]))
        return cls(
            api=api,
            applier=applier,
            spec=bd.get("spec") or {},
            bundle_name=bundle_name,
            content=content,
            previous=previous,
            upgrading=bool((bd.get("status") or {}).get("activeBundle")),
            runner=HookRunner(applier) if run_hooks and content.hooks else None,
        )

    def blocked(self, exc: Exception, partial: list[ObjectRef] | None = None) -> InstallBlocked:
        """The ``Installed`` failure for ``exc``, with the objects it left behind."""
        return InstallBlocked(
            rukpak.TYPE_INSTALLED,
            rukpak.REASON_UPGRADE_FAILED if self.upgrading else rukpak.REASON_INSTALL_FAILED,
            f"Failed to {'upgrade to' if self.upgrading else 'install'} bundle "
            f"{self.bundle_name}: {exc}",
            partial=partial,
        )

    def preflight(self) -> list[str]:
        """The CRD upgrade check (notes on CRDs migrated) and, for a service account, a dry run
        of the whole apply as that account."""
        safety = (self.spec.get("preflight") or {}).get("crdUpgradeSafety") or {}
        migrated = crdupgrade.preflight(
            self.api, self.content.objects, disabled=bool(safety.get("disabled"))
        )
        if self.spec.get("serviceAccount"):
            self.applier.apply(
                self.content.objects, adopt=self._adopt, dry_run=True, owned=self.previous
            )
        return migrated

    def hooks(self, when: str) -> list[str]:
        """Run the hooks of ``when`` (pre or post) this install or upgrade; notes on each."""
        if self.runner is None:
            return []
        event = "upgrade" if self.upgrading else "install"
        return self.runner.run(self.content.hooks, f"{when}-{event}")

    def apply(self) -> ApplyResult:
        """The server-side apply; a failure records the objects it created."""
        try:
            return self.applier.apply(self.content.objects, adopt=self._adopt, owned=self.previous)
        except ApplyError as exc:
            raise self.blocked(exc, partial=exc.applied) from exc

    def prune(self, refs: list[ObjectRef]) -> PruneResult:
        """Delete what the previous content had and ``refs`` does not (CRDs by policy)."""
        policy = str(self.spec.get("crdDeletionPolicy") or "Keep")
        return self.applier.prune(self.previous, refs, crd_policy=policy)

    def post_hooks(self, refs: list[ObjectRef]) -> list[str]:
        """The post hooks; a failure still records ``refs``, which are applied."""
        try:
            return self.hooks("post")
        except ApplyError as exc:
            raise self.blocked(exc, partial=refs) from exc

    @property
    def _adopt(self) -> bool:
        return bool(self.spec.get("adoptExisting"))


def _pruned_notes(pruned: PruneResult) -> list[str]:
    notes = []
    if pruned.deleted:
        notes.append(f"pruned {len(pruned.deleted)} objects the bundle no longer has")
    notes.extend(f"kept {ref.kind} {where(ref)}: {why}" for ref, why in pruned.kept)
    return notes
