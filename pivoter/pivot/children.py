"""The child BundleDeployments of an input: build, apply, list, delete, and read their state.

A child installs one bundle of a ResolveSet revision: its template's source is the bundle's image,
its provisioner class comes from the bundle's media type (recorded in the ResolveSet), it applies
as the input's service account, and it is owned by the input (controller ownerReference), so
deleting the input garbage-collects it. What a child reports is summarised as a
:class:`ChildState` from its ``HasValidBundle``/``Installed``/``Healthy`` conditions, counted only
when computed for the child's current generation. Used by :mod:`pivoter.pivot.machine` and the
input controllers.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pivoter.apis import rukpak
from pivoter.apis.conditions import FALSE, TRUE, find
from pivoter.apis.inputs import ActiveRevision, SelectedPackages, Wanted, input_kind
from pivoter.apis.resources import BUNDLE_DEPLOYMENTS
from pivoter.kube import Conflict, Kube, NotFound, Object
from pivoter.pivot.naming import (
    ANNOTATION_BUNDLE,
    ANNOTATION_INPUT,
    ANNOTATION_PACKAGE,
    ANNOTATION_REVISION,
    ANNOTATION_VERSION,
    child_labels,
    child_name,
    children_selector,
)
from pivoter.pivot.state import Phase
from pivoter.registries.names import ANNOTATION_PULL_SERVICE_ACCOUNT
from pivoter.resolvesets import InputRef
from resolver.resolveset import Entry

__all__ = [
    "ANNOTATION_UNINSTALL",
    "REASON_CHILD_MISSING",
    "ChildReport",
    "ChildSettings",
    "ChildState",
    "Children",
    "KeepObjects",
    "UninstallableBundle",
    "desired_child",
    "keep_on_delete",
    "state_of",
]

ANNOTATION_UNINSTALL = "pivoter.io/uninstall"
"""Set by the input on a child it deletes itself (pruned, rolled back, the input deleted): its
finalizer uninstalls. A child deleted without it by someone else keeps its objects while its
input still wants it (:func:`keep_on_delete`)."""
REASON_CHILD_MISSING = "ChildMissing"
OPTIONAL_SPEC_KEYS = ("serviceAccount", "config", "preflight", "adoptExisting")
"""Child spec fields an input may set and later drop (see :meth:`Children.apply`)."""
FAILED_INSTALL_REASONS = frozenset(
    {
        rukpak.REASON_INSTALL_FAILED,
        rukpak.REASON_UPGRADE_FAILED,
        rukpak.REASON_BUNDLE_LOAD_FAILED,
    }
)


@dataclass(frozen=True, slots=True)
class ChildSettings:
    """How an input wants its children installed beyond the bundle itself (a ClusterExtension's
    install namespace, watch namespace, preflight and adoption): ``config`` goes to every child's
    ``spec.config``, ``primary_config`` is merged into the input's own package's, ``preflight``
    is every child's ``spec.preflight``."""

    config: Mapping[str, Any] = field(default_factory=dict)
    primary_config: Mapping[str, Any] = field(default_factory=dict)
    preflight: Mapping[str, Any] | None = None
    adopt_existing: bool = False
    """Every child's ``spec.adoptExisting``: take over objects another owner (or none) applied,
    e.g. what operator-controller installed before pivoter took over (docs/olm-v1.md)."""

    package_config: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per package: merged into that package's child's ``spec.config`` (a Resolution's
    ``spec.packages[].config``)."""

    def config_for(self, primary: bool, package: str = "") -> dict[str, Any]:
        """The ``spec.config`` of a child (``primary``: of the input's own package)."""
        return {
            **self.config,
            **(self.primary_config if primary else {}),
            **self.package_config.get(package, {}),
        }


class UninstallableBundle(ValueError):
    """A bundle of the ResolveSet that pivoter cannot install (e.g. the catalog names no image);
    the pivot fails on it and the message says what the catalog must provide."""

    def __init__(self, bundle: str, message: str) -> None:
        super().__init__(message)
        self.bundle = bundle


class ChildState(enum.Enum):
    """Where one child BundleDeployment stands for its current spec."""

    MISSING = "Missing"
    PENDING = "Pending"
    UNPACK_PENDING = "UnpackPending"
    UNHEALTHY = "Unhealthy"
    FAILED = "Failed"
    READY = "Ready"


@dataclass(frozen=True, slots=True)
class ChildReport:
    """A child's state and the message that explains it (the child's own words)."""

    package: str
    name: str
    state: ChildState
    message: str
    reason: str = ""


def desired_child(
    ref: InputRef,
    entry: Entry,
    *,
    revision: int,
    owner: Mapping[str, Any],
    service_account: Mapping[str, str] | None = None,
    primary: bool = False,
    settings: ChildSettings | None = None,
) -> Object:
    """The child BundleDeployment that installs ``entry`` of revision ``revision``."""
    if not entry.image:
        raise UninstallableBundle(
            entry.bundle,
            f"bundle {entry.bundle} of package {entry.package} has no image; the catalog must "
            "name the bundle image for pivoter to install it",
        )
    name = child_name(ref, entry.package, primary=primary)
    labels = child_labels(ref, entry.package)
    # By digest where the revision pinned it (its signatures verified): never the tag again.
    source = {"type": rukpak.SOURCE_IMAGE, "image": {"ref": entry.pinned_image}}
    spec: dict[str, Any] = {
        "provisionerClassName": entry.provisioner_class,
        "template": {
            "metadata": {"labels": dict(labels)},
            "spec": {"provisionerClassName": entry.provisioner_class, "source": source},
        },
    }
    if settings is not None:
        config = settings.config_for(primary, entry.package)
        if config:
            spec["config"] = config
        if settings.preflight is not None:
            spec["preflight"] = dict(settings.preflight)
        if settings.adopt_existing:
            spec["adoptExisting"] = True
    if service_account:
        spec["serviceAccount"] = {
            "name": service_account["name"],
            "namespace": service_account["namespace"],
        }
        # The account's imagePullSecrets are offered for the bundle image (the Kubernetes
        # convention), by the Bundle controller, on the prepared and the generated Bundle alike.
        spec["template"]["metadata"]["annotations"] = {
            ANNOTATION_PULL_SERVICE_ACCOUNT: (
                f"{service_account['namespace']}/{service_account['name']}"
            )
        }
    metadata = owner.get("metadata") or {}
    return {
        "apiVersion": rukpak.API_VERSION,
        "kind": "BundleDeployment",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                ANNOTATION_INPUT: str(ref),
                ANNOTATION_PACKAGE: entry.package,
                ANNOTATION_BUNDLE: entry.bundle,
                ANNOTATION_VERSION: entry.version,
                ANNOTATION_REVISION: str(revision),
            },
            "ownerReferences": [
                {
                    "apiVersion": str(owner.get("apiVersion") or ""),
                    "kind": ref.kind,
                    "name": ref.name,
                    "uid": str(metadata.get("uid") or ""),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }


def state_of(bd: Mapping[str, Any]) -> tuple[ChildState, str, str]:
    """The state of one child for its current generation, with the reason and message."""
    generation = int((bd.get("metadata") or {}).get("generation") or 0)
    conditions = (bd.get("status") or {}).get("conditions") or []

    def current(type_: str) -> dict[str, Any] | None:
        condition = find(conditions, type_)
        if condition is None or int(condition.get("observedGeneration") or 0) != generation:
            return None
        return condition

    valid = current(rukpak.TYPE_HAS_VALID_BUNDLE)
    installed = current(rukpak.TYPE_INSTALLED)
    healthy = current(rukpak.TYPE_HEALTHY)
    if valid is not None and valid.get("status") == FALSE:
        return ChildState.FAILED, str(valid.get("reason")), str(valid.get("message") or "")
    if installed is not None and installed.get("status") == FALSE:
        reason = str(installed.get("reason"))
        if reason in FAILED_INSTALL_REASONS:
            return ChildState.FAILED, reason, str(installed.get("message") or "")
    if installed is not None and installed.get("status") == TRUE:
        if healthy is not None and healthy.get("status") == TRUE:
            return ChildState.READY, str(healthy.get("reason")), str(installed.get("message"))
        message = str((healthy or {}).get("message") or "health not reported yet")
        return ChildState.UNHEALTHY, str((healthy or {}).get("reason") or ""), message
    if valid is not None and valid.get("reason") == rukpak.REASON_UNPACK_PENDING:
        return ChildState.UNPACK_PENDING, rukpak.REASON_UNPACK_PENDING, str(valid.get("message"))
    return ChildState.PENDING, "", "waiting for the BundleDeployment controller"


@dataclass
class Children:
    """The child BundleDeployments of one input, read from and written to the API server."""

    kube: Kube
    ref: InputRef
    primary: str = ""
    """The input's own package (a PlatformOperator's or a ClusterExtension's), whose child is
    named after the input."""

    def name_of(self, package: str) -> str:
        """The name of ``package``'s child."""
        return child_name(self.ref, package, primary=bool(self.primary) and package == self.primary)

    def list(self) -> dict[str, Object]:
        """The input's children by package (read from the API server, not a cache)."""
        items, _ = self.kube.list(BUNDLE_DEPLOYMENTS, label_selector=children_selector(self.ref))
        found: dict[str, Object] = {}
        for bd in items:
            annotations = bd["metadata"].get("annotations") or {}
            if annotations.get(ANNOTATION_INPUT) == str(self.ref):
                found[str(annotations.get(ANNOTATION_PACKAGE) or "")] = bd
        return found

    def apply(self, desired: Object) -> Object:
        """Update the child's labels, annotations, owner and spec in place, or create it (one
        request either way in the common case: a pivot mostly updates existing children)."""
        name = desired["metadata"]["name"]
        patch = {"metadata": {k: desired["metadata"][k] for k in ("labels", "annotations")}}
        # A child kept after all (a rollback re-applies one being pruned) loses the mark.
        patch["metadata"]["annotations"] = {
            **desired["metadata"]["annotations"],
            ANNOTATION_UNINSTALL: None,
        }
        patch["metadata"]["ownerReferences"] = desired["metadata"]["ownerReferences"]
        # A merge patch keeps keys it does not name: the optional settings the input dropped
        # (a cleared service account, config or preflight) are removed explicitly.
        patch["spec"] = {**dict.fromkeys(OPTIONAL_SPEC_KEYS), **desired["spec"]}
        for _ in range(2):
            try:
                return self.kube.merge_patch(BUNDLE_DEPLOYMENTS, name, patch)
            except NotFound:
                pass
            try:
                return self.kube.create(BUNDLE_DEPLOYMENTS, desired)
            except Conflict:
                continue  # created meanwhile (another worker, a new leader): patch it
        return self.kube.merge_patch(BUNDLE_DEPLOYMENTS, name, patch)

    def record_revision(self, revision: int) -> None:
        """Annotate every child with ``revision`` (the revision that now records what they
        install, after the one they name was lost)."""
        for bd in self.list().values():
            patch = {"metadata": {"annotations": {ANNOTATION_REVISION: str(revision)}}}
            with contextlib.suppress(NotFound):
                self.kube.merge_patch(BUNDLE_DEPLOYMENTS, str(bd["metadata"]["name"]), patch)

    def delete(self, name: str) -> None:
        """Delete one child; its finalizer uninstalls what it installed. The child is first
        marked as removed by its input (:data:`ANNOTATION_UNINSTALL`): a child deleted by
        anyone else while its input still wants it keeps its objects (:func:`keep_on_delete`)."""
        with contextlib.suppress(NotFound):
            marker = {"metadata": {"annotations": {ANNOTATION_UNINSTALL: "true"}}}
            self.kube.merge_patch(BUNDLE_DEPLOYMENTS, name, marker)
            self.kube.delete(BUNDLE_DEPLOYMENTS, name)

    def orphan(self, name: str) -> None:
        """Release a child from its input: it keeps running, unowned and unlabelled."""
        patch = {
            "metadata": {
                "ownerReferences": None,
                "labels": dict.fromkeys(child_labels(self.ref, "x"), None),
                "annotations": {ANNOTATION_INPUT: None},
            }
        }
        with contextlib.suppress(NotFound):
            self.kube.merge_patch(BUNDLE_DEPLOYMENTS, name, patch)

    def report(
        self, package: str, bd: Object | None, *, bundle: str = "", missing: str = "is missing"
    ) -> ChildReport:
        """The :class:`ChildReport` of ``package``'s child. When ``bd`` is None it is MISSING,
        and the message names the child, its ``bundle`` and what happened (``missing``)."""
        if bd is None:
            name = self.name_of(package)
            of = f" (bundle {bundle})" if bundle else f" (package {package})"
            message = f"BundleDeployment {name}{of} {missing}"
            return ChildReport(package, name, ChildState.MISSING, message, REASON_CHILD_MISSING)
        name = str(bd["metadata"]["name"])
        if bd["metadata"].get("deletionTimestamp"):
            # Its conditions describe what it was: being deleted, it is not ready whatever they
            # say (its finalizer uninstalls, or keeps the objects for its re-created self).
            of = f" (bundle {bundle})" if bundle else f" (package {package})"
            message = f"BundleDeployment {name}{of} is being deleted"
            return ChildReport(package, name, ChildState.PENDING, message, "Deleting")
        state, reason, message = state_of(bd)
        return ChildReport(package, name, state, message, reason)


@dataclass(frozen=True, slots=True)
class KeepObjects:
    """A child being deleted whose objects stay for its re-created self: why, and its input."""

    message: str
    input: Object


def keep_on_delete(kube: Kube, bd: Mapping[str, Any]) -> KeepObjects | None:
    """Whether the child ``bd``, being deleted, should leave its objects in place, and why
    (None: uninstall them as usual).

    A child deleted by someone other than its input (no :data:`ANNOTATION_UNINSTALL`) is
    re-created by the input at once when the input still wants it: then its objects stay, under
    the same owner labels and field manager, so the re-created child (same name) adopts them
    with no outage. That holds when the controlling input (by ownerReference uid) is of an input
    kind (:data:`pivoter.apis.inputs.INPUT_KINDS`), exists, is not being deleted, and its status
    still wants the child (as its kind reads it: :attr:`~pivoter.apis.inputs.InputKind.wanted`).
    A failed read of the input raises (the finalizer is retried), so a flaky API server never
    makes a wrong uninstall."""
    metadata = bd.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    if annotations.get(ANNOTATION_UNINSTALL):
        return None
    kind, _, name = str(annotations.get(ANNOTATION_INPUT) or "").partition("/")
    package = str(annotations.get(ANNOTATION_PACKAGE) or "")
    parent_kind = input_kind(kind)
    owner = next(
        (
            o
            for o in metadata.get("ownerReferences") or []
            if o.get("controller") and o.get("kind") == kind and o.get("name") == name
        ),
        None,
    )
    if parent_kind is None or owner is None or not owner.get("uid") or not name or not package:
        return None
    try:
        parent = kube.get(parent_kind.resource, name)
    except NotFound:
        return None
    parent_meta = parent.get("metadata") or {}
    if parent_meta.get("uid") != owner["uid"] or parent_meta.get("deletionTimestamp"):
        return None
    wanted = parent_kind.wanted(parent.get("status") or {})
    if not _wants(wanted, package, str(annotations.get(ANNOTATION_REVISION) or "")):
        return None
    bundle = annotations.get(ANNOTATION_BUNDLE) or package
    child = metadata.get("name")
    message = (
        f"BundleDeployment {child} (bundle {bundle}) was deleted while {kind} {name} still "
        f"installs it: its objects stay in place for the BundleDeployment {kind} {name} "
        "re-creates under the same name, which adopts them with no outage"
    )
    return KeepObjects(message, parent)


def _wants(wanted: Wanted, package: str, revision: str) -> bool:
    """Whether the child of ``package`` recorded at ``revision`` is one ``wanted`` includes."""
    match wanted:
        case SelectedPackages(packages):
            return package in packages
        case ActiveRevision(active, phase):
            pivoting = phase in {p.value for p in Phase if not p.terminal}
            return not pivoting and active is not None and revision == str(active)
