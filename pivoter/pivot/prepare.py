"""Preparing a group before anything of it is applied: unpack every bundle, render its objects,
order the bundles, and run every object through a server-side dry run.

The Bundles a pivot needs are exactly the ones the BundleDeployment controller would generate
for the new child specs (same name, same owner and template-hash labels), so creating them
ahead of the children does not unpack anything twice: when a child's template changes, its
controller finds the Bundle already unpacked. Until the children exist the Bundles are owned by
the input (garbage-collected with it); :meth:`Preparer.hand_over` makes each child their
controller once it is applied, and :meth:`Preparer.release` deletes the ones a pivot that ended
does not use.

The dry run is done as the identity that will install (the input's service account), bundle by
bundle in apply order (:mod:`pivoter.pivot.order`). Objects that cannot be checked before their
providers exist (custom resources of a CRD another bundle of the group brings, objects in a
Namespace the group creates) are counted as deferred and named in the summary; everything else
must pass admission, validation, authorization and the ownership rules, or the pivot fails
naming the bundle before any child changes. Used by :mod:`pivoter.pivot.machine` (the
``Preparing`` phase) and by the input engine for the object-level plan of a Manual approval.

The dry run also says what it would change in the objects that exist
(:mod:`provisioners.apply.fieldchanges`): the changed fields of each, by package, and the
workloads whose pod template changes (their pods would be replaced), so a plan can show them
and a takeover can refuse to restart an operator. Reading the live objects costs what the
ownership check already reads, and for a bundle that adopts existing objects (which skips that
check) a GET per object (a list per collection holding many objects of the bundle).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pivoter.apis import rukpak
from pivoter.apis.conditions import FALSE, find
from pivoter.apis.resources import BUNDLES
from pivoter.controllers.bundle import BundleReconciler, bundle_format_for
from pivoter.controllers.bundlecontent import BundleContent, convert
from pivoter.controllers.generatedbundles import KIND, generated_bundle_name, template_hash
from pivoter.kube import Conflict, Kube, KubeError, NotFound, Object
from pivoter.kube.identities import Identities
from pivoter.pivot.naming import (
    ANNOTATION_BUNDLE,
    ANNOTATION_INPUT,
    ANNOTATION_PACKAGE,
    children_selector,
)
from pivoter.pivot.order import providers, waves
from pivoter.pivot.state import FailureCause
from pivoter.resolvesets import InputRef
from provisioners.apply.applier import Applier, ApplyError, Owner
from provisioners.apply.fieldchanges import FieldChanges
from provisioners.apply.objects import ObjectRef, ref_of
from provisioners.errors import ProvisionerError
from provisioners.formats.base import InvalidConfigError
from provisioners.store import StoreError

__all__ = ["Pending", "PrepareFailed", "Prepared", "Preparer"]

log = logging.getLogger(__name__)

NAMESPACES = "/api/v1/namespaces"


class PrepareFailed(Exception):
    """A bundle of the group cannot be installed; nothing of the group was applied. ``cause``
    says why as a fact (:attr:`FailureCause.INVALID_CONFIGURATION` when the bundle's format
    refused its ``spec.config``)."""

    def __init__(
        self,
        package: str,
        bundle: str,
        message: str,
        cause: FailureCause = FailureCause.BUNDLE_FAILED,
    ) -> None:
        super().__init__(message)
        self.package = package
        self.bundle = bundle
        self.cause = cause


@dataclass(frozen=True)
class Pending:
    """Some Bundles are still being unpacked."""

    waiting: tuple[str, ...]
    """The bundles (catalog names) not unpacked yet."""

    def summary(self) -> str:
        """One line for conditions and logs."""
        return f"waiting for {len(self.waiting)} bundles to unpack: {', '.join(self.waiting)}"


@dataclass(frozen=True)
class Prepared:
    """A group ready to apply: its order, its objects, and what the dry run checked."""

    waves: tuple[tuple[str, ...], ...]
    objects: Mapping[str, tuple[ObjectRef, ...]]
    """The objects each package's bundle installs, by package."""
    checked: int = 0
    deferred: tuple[str, ...] = ()
    """Objects left out of the dry run, each with why."""
    changes: Mapping[str, Mapping[ObjectRef, FieldChanges]] = field(default_factory=dict)
    """By package: the existing objects the apply would change, and which of their fields."""
    restarts: tuple[str, ...] = ()
    """The workloads (``Deployment ns/name``, StatefulSets, DaemonSets) whose ``spec.template``
    would change: their pods would be replaced."""
    unread: tuple[str, ...] = ()
    """Objects (``Kind ns/name``) of an adopting bundle that the installing identity may not
    read: what the apply would change in them is unknown."""

    def summary(self) -> str:
        """One line for the pivot's Event and record."""
        count = sum(len(refs) for refs in self.objects.values())
        order = " -> ".join("[" + ", ".join(w) + "]" for w in self.waves)
        text = f"{len(self.objects)} bundles, {count} objects"
        if self.checked or self.deferred:
            text += f"; {self.checked} passed a server-side dry run"
        if self.deferred:
            shown = "; ".join(self.deferred[:3])
            more = f" and {len(self.deferred) - 3} more" if len(self.deferred) > 3 else ""
            text += f", {len(self.deferred)} deferred until their providers exist ({shown}{more})"
        changing = sum(len(refs) for refs in self.changes.values())
        if changing:
            text += f"; {changing} existing objects would change"
            if self.restarts:
                shown = ", ".join(self.restarts[:3])
                more = f" and {len(self.restarts) - 3} more" if len(self.restarts) > 3 else ""
                text += f", replacing the pods of {shown}{more}"
        if self.unread:
            text += f"; {len(self.unread)} could not be read to compare"
        if len(self.waves) > 1:
            text += f"; apply order {order}"
        return text


@dataclass
class Preparer:
    """Unpacks, renders, orders and dry-runs the bundles of a group (see the module docstring)."""

    kube: Kube
    bundles: BundleReconciler
    identities: Identities

    def prepare(
        self,
        children: Sequence[Object],
        *,
        owner: Mapping[str, Any],
        requires: Mapping[str, Collection[str]] | None = None,
    ) -> Prepared | Pending:
        """Prepare the desired ``children`` (child BundleDeployments, not yet applied) of the
        input ``owner``, ordered by their objects and by the packages each ``requires`` (from the
        ResolveSet); raise :class:`PrepareFailed` naming the first bundle that cannot be
        installed."""
        found = [(child, self._bundle(child, owner)) for child in children]
        waiting = []
        for child, bundle in found:
            if self.bundles.is_current(bundle):
                continue
            self._raise_if_unpack_failed(child, bundle)
            waiting.append(_annotation(child, ANNOTATION_BUNDLE))
        if waiting:
            return Pending(tuple(waiting))
        contents: dict[str, BundleContent] = {}
        for child, bundle in found:
            contents[_annotation(child, ANNOTATION_PACKAGE)] = self._render(child, bundle)
        objects = {p: c.objects for p, c in contents.items()}
        order = waves(objects, requires)
        refs = {p: tuple(_refs(objs)) for p, objs in objects.items()}
        by_package = {_annotation(child, ANNOTATION_PACKAGE): child for child in children}
        checked, deferred, changes, unread = self._dry_run(order, objects, by_package)
        restarts = tuple(
            f"{ref.kind} {_where(ref)}"
            for package in (p for wave in order for p in wave)
            for ref, changed in changes.get(package, {}).items()
            if changed.replaces_pods
        )
        return Prepared(
            order,
            refs,
            checked=checked,
            deferred=tuple(deferred),
            changes=changes,
            restarts=restarts,
            unread=tuple(unread),
        )

    def hand_over(self, child: Object) -> None:
        """Make the applied ``child`` the controller of its prepared Bundle."""
        name = str(child["metadata"]["name"])
        bundle_name = generated_bundle_name(name, template_hash(child["spec"]["template"]))
        try:
            bundle = self.kube.get(BUNDLES, bundle_name)
        except NotFound:
            return  # the child's controller generates it
        reference = _controller_reference(child)
        if reference in (bundle["metadata"].get("ownerReferences") or []):
            return
        patch = {"metadata": {"ownerReferences": [reference]}}
        with contextlib.suppress(NotFound):
            self.kube.merge_patch(BUNDLES, bundle_name, patch)

    @staticmethod
    def bundle_names(children: Sequence[Object]) -> set[str]:
        """The names of the Bundles the (desired) ``children`` install."""
        return {
            generated_bundle_name(str(c["metadata"]["name"]), template_hash(c["spec"]["template"]))
            for c in children
        }

    def release(
        self, ref: InputRef, children: Mapping[str, Object], keep: Collection[str] = ()
    ) -> list[str]:
        """Delete the input's Bundles that no current child uses and that are not in ``keep``
        (prepared for a pivot that ended, or for a plan that was superseded); return their
        names."""
        used = set(keep)
        for bd in children.values():
            name = str(bd["metadata"]["name"])
            used.add(generated_bundle_name(name, template_hash(bd["spec"]["template"])))
            used.add(str((bd.get("status") or {}).get("activeBundle") or ""))
        bundles, _ = self.kube.list(BUNDLES, label_selector=children_selector(ref))
        released = []
        for bundle in bundles:
            name = str(bundle["metadata"]["name"])
            if name not in used and not bundle["metadata"].get("deletionTimestamp"):
                with contextlib.suppress(NotFound):
                    self.kube.delete(BUNDLES, name)
                released.append(name)
        return released

    # -- steps ---------------------------------------------------------------------------------

    def _bundle(self, child: Object, owner: Mapping[str, Any]) -> Object:
        """The Bundle the child's controller would generate for its template: found, or created
        now, owned by the input."""
        name = str(child["metadata"]["name"])
        template = child["spec"]["template"]
        hash_ = template_hash(template)
        bundle_name = generated_bundle_name(name, hash_)
        try:
            return self.kube.get(BUNDLES, bundle_name)
        except NotFound:
            pass
        meta = template.get("metadata") or {}
        owner_meta = owner.get("metadata") or {}
        body = {
            "apiVersion": rukpak.API_VERSION,
            "kind": "Bundle",
            "metadata": {
                "name": bundle_name,
                "labels": {
                    **(meta.get("labels") or {}),
                    rukpak.LABEL_OWNER_KIND: KIND,
                    rukpak.LABEL_OWNER_NAME: name,
                    rukpak.LABEL_TEMPLATE_HASH: hash_[:63],
                },
                "annotations": {
                    **(meta.get("annotations") or {}),
                    # The input is queued when its prepared Bundles change (see its controller).
                    ANNOTATION_INPUT: _annotation(child, ANNOTATION_INPUT),
                },
                "ownerReferences": [
                    {
                        "apiVersion": str(owner.get("apiVersion") or ""),
                        "kind": str(owner.get("kind") or ""),
                        "name": str(owner_meta.get("name") or ""),
                        "uid": str(owner_meta.get("uid") or ""),
                    }
                ],
            },
            "spec": template.get("spec") or {},
        }
        try:
            created = self.kube.create(BUNDLES, body)
        except Conflict:
            return self.kube.get(BUNDLES, bundle_name)
        log.info("prepared Bundle %s for %s", bundle_name, name)
        return created

    @staticmethod
    def _raise_if_unpack_failed(child: Object, bundle: Object) -> None:
        status = bundle.get("status") or {}
        unpacked = find(status.get("conditions"), rukpak.TYPE_UNPACKED)
        generation = (bundle.get("metadata") or {}).get("generation")
        if (
            unpacked is not None
            and unpacked.get("status") == FALSE
            and unpacked.get("observedGeneration") == generation
        ):
            raise PrepareFailed(
                _annotation(child, ANNOTATION_PACKAGE),
                _annotation(child, ANNOTATION_BUNDLE),
                str(unpacked.get("message") or f"Bundle {bundle['metadata']['name']} failed"),
            )

    def _render(self, child: Object, bundle: Object) -> BundleContent:
        spec = child["spec"]
        bundle_format = bundle_format_for(str(spec.get("provisionerClassName") or ""))
        package = _annotation(child, ANNOTATION_PACKAGE)
        name = _annotation(child, ANNOTATION_BUNDLE)
        if bundle_format is None:
            raise PrepareFailed(
                package, name, f"provisioner class {spec.get('provisionerClassName')!r} unknown"
            )
        api = self.identities.api_for(spec.get("serviceAccount"))
        try:
            stored = self.bundles.store.get(str(bundle["status"]["digest"]))
            return convert(bundle_format, stored.path, spec.get("config") or {}, api)
        except (StoreError, ProvisionerError, KubeError) as exc:
            cause = (
                FailureCause.INVALID_CONFIGURATION
                if isinstance(exc, InvalidConfigError)
                else FailureCause.BUNDLE_FAILED
            )
            raise PrepareFailed(
                package, name, f"bundle {name} cannot be rendered: {exc}", cause
            ) from exc

    def _dry_run(
        self,
        order: tuple[tuple[str, ...], ...],
        objects: Mapping[str, list[dict[str, Any]]],
        children: Mapping[str, Object],
    ) -> tuple[int, list[str], dict[str, dict[ObjectRef, FieldChanges]], list[str]]:
        """Dry-run each package's objects as its installing identity: how many passed, which
        were deferred (with why), what would change in the existing ones (by package), and
        which could not be read to compare."""
        by_key = {key: min(packages) for key, packages in providers(objects).items()}
        group_kinds = {(k[1], k[2]): p for k, p in by_key.items() if k[0] == "kind"}
        group_namespaces = {k[2]: p for k, p in by_key.items() if k[0] == "namespace"}
        missing_namespaces = {ns for ns in group_namespaces if not self._namespace_exists(ns)}
        checked, deferred = 0, []
        changes: dict[str, dict[ObjectRef, FieldChanges]] = {}
        unread: list[str] = []
        for package in (p for wave in order for p in wave):
            child = children[package]
            spec = child["spec"]
            api = self.identities.api_for(spec.get("serviceAccount"))
            check = []
            for obj in objects[package]:
                ref = ref_of(obj)
                why = ""
                provider = group_kinds.get((ref.group, ref.kind))
                if provider is not None and provider != package and not _served(api, ref):
                    why = f"its CRD comes with {provider}"
                elif ref.namespace in missing_namespaces and (
                    group_namespaces[ref.namespace] != package
                ):
                    why = f"namespace {ref.namespace} comes with {group_namespaces[ref.namespace]}"
                if why:
                    deferred.append(f"{ref.kind} {_where(ref)}: {why}")
                else:
                    check.append(obj)
            applier = Applier(api, Owner(KIND, str(child["metadata"]["name"])))
            try:
                result = applier.apply(
                    check, adopt=bool(spec.get("adoptExisting")), dry_run=True, changes=True
                )
            except (ApplyError, KubeError) as exc:
                bundle = _annotation(child, ANNOTATION_BUNDLE)
                raise PrepareFailed(
                    package, bundle, f"the server-side dry run of bundle {bundle} failed: {exc}"
                ) from exc
            checked += len(result.applied)
            deferred += [f"{r.kind} {_where(r)}: {why}" for r, why in result.skipped]
            if result.changes:
                changes[package] = result.changes
            unread += [f"{r.kind} {_where(r)}" for r in result.unread]
        return checked, deferred, changes, unread

    def _namespace_exists(self, name: str) -> bool:
        try:
            self.kube.request("GET", f"{NAMESPACES}/{name}")
        except NotFound:
            return False
        return True


def _served(api: Any, ref: ObjectRef) -> bool:
    try:
        api.resource(ref.api_version, ref.kind)
    except NotFound:
        return False
    return True


def _refs(objects: Sequence[Mapping[str, Any]]) -> list[ObjectRef]:
    refs = []
    for obj in objects:
        with contextlib.suppress(ValueError):
            refs.append(ref_of(obj))
    return refs


def _controller_reference(child: Object) -> dict[str, Any]:
    return {
        "apiVersion": rukpak.API_VERSION,
        "kind": KIND,
        "name": str(child["metadata"]["name"]),
        "uid": str(child["metadata"]["uid"]),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _annotation(child: Object, key: str) -> str:
    return str(((child.get("metadata") or {}).get("annotations") or {}).get(key) or "")


def _where(ref: ObjectRef) -> str:
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
