"""Typed, immutable views of the objects pivoter reads as inputs, each read once, at the edge:
:class:`ResolutionView` (``pivoter.io``), :class:`PlatformOperatorView` (``platform.openshift.io``)
and :class:`ClusterExtensionView` (``olm.operatorframework.io``), with the metadata that means
something to pivoter (name, generation, and the ``pivoter.io/`` annotations: pin, approval, retry,
the ClusterExtension opt-ins).

Each view's ``parse(obj)`` reads the whole object and checks every field it uses; anything it
cannot read raises :class:`FieldError` naming the field (``spec.source.catalog.version: expected
a string, got a list``). The CRD schemas refuse most such objects at the API server already; the
views refuse the rest (an object stored before a schema said so, a CRD without a schema, an
annotation, which no schema covers) in the same words every time, instead of a TypeError from
deep inside a controller. Absent and null fields take the API's default.

The pin (which ResolveSet revision an input stays on) is read in one place,
:func:`_pinned_revision`, whatever the kind keeps it in.

One module for the three kinds, beside the schema modules of their groups (:mod:`.pivoter`,
:mod:`.platform`, :mod:`.olmv1`, which say what the API server enforces): they share the
metadata and the pin, which is the point of reading them here. pivoter's
:class:`~pivoter.inputs.InputSpec` is built from these views by the readers of each kind
(:mod:`pivoter.inputs.spec`, :mod:`pivoter.olmv1.extensions`,
:mod:`pivoter.platformoperators.controller`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pivoter.apis import pivoter as api
from pivoter.apis._fields import Annotations, FieldError, Fields, describe
from resolver import safedata

__all__ = [
    "ANNOTATION_ADOPT_EXISTING",
    "ANNOTATION_APPROVAL",
    "ANNOTATION_APPROVED_REVISION",
    "ANNOTATION_AUTO_ROLLBACK",
    "ANNOTATION_DEPENDENCIES",
    "ANNOTATION_HISTORY_LIMIT",
    "ANNOTATION_PINNED_REVISION",
    "ANNOTATION_RETRY",
    "ANNOTATION_TAKEOVER",
    "APPROVALS",
    "CONFIG_TYPE_INLINE",
    "DELETION_POLICIES",
    "DEPENDENCIES",
    "ENFORCEMENTS",
    "SOURCE_TYPE_CATALOG",
    "UPGRADE_POLICIES",
    "Approval",
    "CatalogFilter",
    "ClusterExtensionView",
    "DeletionPolicy",
    "Dependencies",
    "Enforcement",
    "FieldError",
    "InputMeta",
    "InputView",
    "InstalledBundle",
    "LabelSelector",
    "PlatformOperatorView",
    "RequestedPackage",
    "ResolutionView",
    "SelectorRequirement",
    "ServiceAccountRef",
    "UpgradePolicy",
]

# Every input kind.
ANNOTATION_APPROVED_REVISION = "pivoter.io/approved-revision"
"""With Manual approval: the revision (number, or ``sha256:`` selection hash) approved to pivot."""
ANNOTATION_PINNED_REVISION = "pivoter.io/pinned-revision"
"""Pins a PlatformOperator or ClusterExtension (whose specs are upstream's) like a Resolution's
``spec.pinnedRevision``."""
ANNOTATION_RETRY = "pivoter.io/retry-now"
"""Any new value retries a failed pivot now, without editing the spec."""

# A ClusterExtension's opt-ins: pivoter's additions never give an upstream field a new meaning.
ANNOTATION_DEPENDENCIES = "pivoter.io/dependencies"
"""``Install``: dependencies are resolved and installed with the package; ``Refuse`` (default):
a bundle that declares one is refused, as OLM v1 does."""
ANNOTATION_APPROVAL = "pivoter.io/approval"
"""``Manual``: every new selection waits for ``pivoter approve`` (default ``Automatic``)."""
ANNOTATION_AUTO_ROLLBACK = "pivoter.io/auto-rollback"
"""``"true"``: a failed pivot reverts every bundle of the group to the last good revision."""
ANNOTATION_HISTORY_LIMIT = "pivoter.io/history-limit"
"""How many ResolveSet revisions to keep (default 10, at least 1)."""
ANNOTATION_TAKEOVER = "pivoter.io/takeover"
"""On a Resolution: the bundles another manager installed and runs now, as a JSON list of
``{"package": ..., "bundle": ..., "version": ...}`` (one object alone is read as a list of one;
``pivoter adopt`` writes it: an operator and the dependencies OLM v0 installed for it). A
ClusterExtension needs no annotation: operator-controller records it in
``status.install.bundle``. See :class:`InstalledBundle`."""
TAKEOVER_LIMITS = safedata.Limits(max_bytes=256 << 10, max_depth=4, max_nodes=1024)
"""The :data:`ANNOTATION_TAKEOVER` record is a few bundles of three short strings each
(annotations are anyone's)."""
ANNOTATION_ADOPT_EXISTING = "pivoter.io/adopt-existing"
"""``"true"``: the children take over objects already on the cluster that another owner applied
(the migration from operator-controller, whose Helm release owns them)."""

Approval = Literal["Automatic", "Manual"]
UpgradePolicy = Literal["CatalogProvided", "SelfCertified"]
DeletionPolicy = Literal["Delete", "Orphan"]
Dependencies = Literal["Refuse", "Install"]
Enforcement = Literal["Strict", "None"]

APPROVALS: tuple[Approval, ...] = ("Automatic", "Manual")
UPGRADE_POLICIES: tuple[UpgradePolicy, ...] = ("CatalogProvided", "SelfCertified")
"""OLM v1's (:data:`pivoter.apis.olmv1.UPGRADE_CATALOG_PROVIDED` and
:data:`~pivoter.apis.olmv1.UPGRADE_SELF_CERTIFIED`), which Resolutions share."""
DELETION_POLICIES: tuple[DeletionPolicy, ...] = ("Delete", "Orphan")
DEPENDENCIES: tuple[Dependencies, ...] = ("Refuse", "Install")
ENFORCEMENTS: tuple[Enforcement, ...] = ("Strict", "None")
SOURCE_TYPE_CATALOG = "Catalog"
"""The one ``spec.source.sourceType`` of a ClusterExtension (upstream's enum)."""
CONFIG_TYPE_INLINE = "Inline"
"""The one ``spec.config.configType`` of a ClusterExtension (upstream's enum)."""

_SELECTION_HASH = re.compile("sha256:[0-9a-f]{64}")


# ----------------------------------------------------------------------------- shared parts


@dataclass(frozen=True, slots=True)
class InstalledBundle:
    """The bundle another manager (OLM v0's CSV, operator-controller) installed and recorded:
    what runs now. The first revision of an input that takes it over keeps exactly this bundle
    (no approval, nothing moves); only the next one follows the catalog's upgrade edges from
    it."""

    package: str
    name: str
    version: str

    @classmethod
    def from_annotation(cls, annotations: Annotations) -> tuple[InstalledBundle, ...]:
        """:data:`ANNOTATION_TAKEOVER` (empty when unset)."""
        text = annotations.text(ANNOTATION_TAKEOVER)
        if not text:
            return ()
        where = annotations.where(ANNOTATION_TAKEOVER)
        try:
            value = safedata.load_json(text, limits=TAKEOVER_LIMITS)
        except safedata.SafeDataError:
            value = None
        entries = value if isinstance(value, list) else [value]
        keys = ("package", "bundle", "version")
        if not entries or not all(
            isinstance(e, dict) and all(isinstance(e.get(k), str) and e.get(k) for k in keys)
            for e in entries
        ):
            raise FieldError(
                where,
                'expected JSON [{"package": ..., "bundle": ..., "version": ...}], got '
                + describe(text),
            )
        return tuple(cls(str(e["package"]), str(e["bundle"]), str(e["version"])) for e in entries)

    @staticmethod
    def annotation_of(bundles: Sequence[InstalledBundle]) -> str:
        """The :data:`ANNOTATION_TAKEOVER` text for ``bundles``."""
        return json.dumps(
            [{"package": b.package, "bundle": b.name, "version": b.version} for b in bundles],
            sort_keys=True,
        )


@dataclass(frozen=True, slots=True)
class InputMeta:
    """The ``metadata`` of an input, as pivoter reads it."""

    name: str
    generation: int = 0
    retry: str = ""
    """:data:`ANNOTATION_RETRY` ("" when unset): any new value retries a failed pivot now."""


def _metadata(root: Fields) -> tuple[InputMeta, Annotations]:
    metadata = root.required_child("metadata")
    annotations = Annotations.of(metadata)
    meta = InputMeta(
        name=metadata.required_string("name"),
        generation=metadata.integer("generation", minimum=0) or 0,
        retry=annotations.text(ANNOTATION_RETRY),
    )
    return meta, annotations


def _pinned_revision(annotations: Annotations, spec: Fields | None = None) -> int | None:
    """The ResolveSet revision an input is pinned to (None: it follows its catalogs), read here
    and nowhere else. A Resolution keeps it in ``spec.pinnedRevision`` (pass its ``spec``); the
    kinds whose spec is upstream's, in the :data:`ANNOTATION_PINNED_REVISION` annotation. Both
    are what ``pivoter rollback`` writes; revisions are numbered from 1."""
    if spec is not None:
        return spec.integer("pinnedRevision", minimum=1)
    return annotations.number(ANNOTATION_PINNED_REVISION, minimum=1)


def _approved_revision(annotations: Annotations) -> str:
    """:data:`ANNOTATION_APPROVED_REVISION`: a revision number or a selection hash ("" when
    unset); a number is given without leading zeros, as a revision is compared."""
    key = ANNOTATION_APPROVED_REVISION
    text = annotations.text(key)
    if not text or _SELECTION_HASH.fullmatch(text):
        return text
    if not (text.isascii() and text.isdigit()):
        raise FieldError(
            annotations.where(key),
            f"expected a revision number or a sha256: selection hash, got {describe(text)}",
        )
    return str(annotations.number(key, minimum=1))


@dataclass(frozen=True, slots=True)
class SelectorRequirement:
    """One ``matchExpressions`` entry of a label selector (its operator is checked where the
    selector is used, as the API server's list call would)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A ``metav1.LabelSelector`` over catalogs."""

    match_labels: Mapping[str, str]
    match_expressions: tuple[SelectorRequirement, ...] = ()

    @classmethod
    def parse(cls, fields: Fields) -> LabelSelector:
        """The selector ``fields`` holds (other keys are ignored, as Kubernetes does)."""
        return cls(
            match_labels=fields.string_map("matchLabels"),
            match_expressions=tuple(
                SelectorRequirement(
                    key=e.required_string("key"),
                    operator=e.required_string("operator"),
                    values=e.strings("values"),
                )
                for e in fields.objects("matchExpressions")
            ),
        )

    def to_dict(self) -> dict[str, object]:
        """The selector as the API writes it (no empty parts)."""
        out: dict[str, object] = {}
        if self.match_labels:
            out["matchLabels"] = dict(self.match_labels)
        expressions = []
        for e in self.match_expressions:
            expression: dict[str, object] = {"key": e.key, "operator": e.operator}
            if e.values:
                expression["values"] = list(e.values)
            expressions.append(expression)
        if expressions:
            out["matchExpressions"] = expressions
        return out


def _selector(fields: Fields | None, name: str) -> LabelSelector | None:
    found = fields.child(name) if fields is not None else None
    return LabelSelector.parse(found) if found is not None else None


# ----------------------------------------------------------------------------- Resolution


@dataclass(frozen=True, slots=True)
class ServiceAccountRef:
    """A service account, by namespace and name."""

    name: str
    namespace: str


@dataclass(frozen=True, slots=True)
class RequestedPackage:
    """One entry of a Resolution's ``spec.packages``."""

    name: str
    channel: str = ""
    """Empty: the package's default channel."""
    version_range: str = ""
    upgrade_policy: UpgradePolicy = "CatalogProvided"
    config: Mapping[str, object] | None = None
    """The provisioner configuration of this package's child (checked by its provisioner);
    None when absent or empty."""

    @classmethod
    def parse(cls, fields: Fields) -> RequestedPackage:
        """The package entry ``fields`` holds."""
        config = fields.free_form("config")
        return cls(
            name=fields.required_string("name"),
            channel=fields.string("channel"),
            version_range=fields.string("versionRange"),
            upgrade_policy=fields.choice("upgradePolicy", UPGRADE_POLICIES, "CatalogProvided"),
            config=config or None,
        )


@dataclass(frozen=True, slots=True)
class ResolutionView:
    """A ``pivoter.io/v1alpha1`` Resolution: which packages to install, from which Catalogs,
    and how to roll them out."""

    meta: InputMeta
    packages: tuple[RequestedPackage, ...]
    catalog_selector: LabelSelector | None = None
    install_namespace: str = ""
    service_account: ServiceAccountRef | None = None
    approval: Approval = "Automatic"
    approved: str = ""
    """The approved revision: the :data:`ANNOTATION_APPROVED_REVISION` annotation, else
    ``spec.approvedRevision`` ("" when neither is set)."""
    pinned: int | None = None
    """``spec.pinnedRevision``."""
    paused: bool = False
    adopt_existing: bool = False
    auto_rollback: bool = True
    progress_deadline_seconds: int = api.DEFAULT_PROGRESS_DEADLINE_SECONDS
    history_limit: int = api.DEFAULT_HISTORY_LIMIT
    deletion_policy: DeletionPolicy = "Delete"
    takeover: tuple[InstalledBundle, ...] = ()
    """:data:`ANNOTATION_TAKEOVER`: what another manager runs now (an adoption)."""

    @classmethod
    def parse(cls, obj: Mapping[str, object]) -> ResolutionView:
        """Read a Resolution object; raise :class:`FieldError` naming the first bad field."""
        root = Fields.root(obj)
        meta, annotations = _metadata(root)
        spec = root.required_child("spec")
        packages = tuple(RequestedPackage.parse(p) for p in spec.objects("packages"))
        if not packages:
            raise FieldError(spec.where("packages"), "required: at least one package")
        account = spec.child("serviceAccount")
        annotated = _approved_revision(annotations)
        approved = spec.integer("approvedRevision", minimum=1)
        return cls(
            meta=meta,
            packages=packages,
            catalog_selector=_selector(spec, "catalogSelector"),
            install_namespace=spec.string("installNamespace"),
            service_account=(
                ServiceAccountRef(
                    name=account.required_string("name"),
                    namespace=account.required_string("namespace"),
                )
                if account is not None
                else None
            ),
            approval=spec.choice("approval", APPROVALS, "Automatic"),
            approved=annotated or (str(approved) if approved is not None else ""),
            pinned=_pinned_revision(annotations, spec),
            paused=spec.boolean("paused", False),
            adopt_existing=spec.boolean("adoptExisting", False),
            auto_rollback=spec.boolean("autoRollback", True),
            progress_deadline_seconds=spec.integer("progressDeadlineSeconds", minimum=1)
            or api.DEFAULT_PROGRESS_DEADLINE_SECONDS,
            history_limit=spec.integer("historyLimit", minimum=1) or api.DEFAULT_HISTORY_LIMIT,
            deletion_policy=spec.choice("deletionPolicy", DELETION_POLICIES, "Delete"),
            takeover=InstalledBundle.from_annotation(annotations),
        )


# ----------------------------------------------------------------------------- PlatformOperator


@dataclass(frozen=True, slots=True)
class PlatformOperatorView:
    """A ``platform.openshift.io/v1alpha1`` PlatformOperator: one package, by name."""

    meta: InputMeta
    package: str
    pinned: int | None = None
    """The :data:`ANNOTATION_PINNED_REVISION` annotation."""

    @classmethod
    def parse(cls, obj: Mapping[str, object]) -> PlatformOperatorView:
        """Read a PlatformOperator object; raise :class:`FieldError` naming the first bad
        field."""
        root = Fields.root(obj)
        meta, annotations = _metadata(root)
        package = root.required_child("spec").required_child("package")
        return cls(
            meta=meta,
            package=package.required_string("name"),
            pinned=_pinned_revision(annotations),
        )


# ----------------------------------------------------------------------------- ClusterExtension


@dataclass(frozen=True, slots=True)
class CatalogFilter:
    """A ClusterExtension's ``spec.source.catalog``: the package and which bundles of it."""

    package_name: str
    channels: tuple[str, ...] = ()
    version: str = ""
    """A version range in OLM v1's syntax ("" allows any)."""
    upgrade_constraint_policy: UpgradePolicy = "CatalogProvided"
    selector: LabelSelector | None = None
    """Which ClusterCatalogs it resolves from (None: all of them)."""

    @classmethod
    def parse(cls, fields: Fields) -> CatalogFilter:
        """The catalog source ``fields`` holds."""
        return cls(
            package_name=fields.required_string("packageName"),
            channels=fields.strings("channels"),
            version=fields.string("version"),
            upgrade_constraint_policy=fields.choice(
                "upgradeConstraintPolicy", UPGRADE_POLICIES, "CatalogProvided"
            ),
            selector=_selector(fields, "selector"),
        )


@dataclass(frozen=True, slots=True)
class ClusterExtensionView:
    """An ``olm.operatorframework.io/v1`` ClusterExtension, upstream's fields and pivoter's
    opt-in annotations (docs/olm-v1.md)."""

    meta: InputMeta
    namespace: str
    catalog: CatalogFilter
    service_account: str = ""
    """``spec.serviceAccount.name`` ("" when unset: the daemon's configured identity)."""
    inline_config: Mapping[str, object] | None = None
    """``spec.config.inline`` (its keys are checked by the reader: what a bundle takes)."""
    crd_upgrade_safety: Enforcement = "Strict"
    """``spec.install.preflight.crdUpgradeSafety.enforcement``."""
    progress_deadline_minutes: int | None = None
    """``spec.progressDeadlineMinutes`` (upstream has no default)."""
    dependencies: Dependencies = "Refuse"
    approval: Approval = "Automatic"
    approved: str = ""
    """The :data:`ANNOTATION_APPROVED_REVISION` annotation ("" when unset)."""
    auto_rollback: bool = False
    history_limit: int = api.DEFAULT_HISTORY_LIMIT
    adopt_existing: bool = False
    pinned: int | None = None
    """The :data:`ANNOTATION_PINNED_REVISION` annotation."""
    installed: InstalledBundle | None = None
    """``status.install.bundle``: what was installed for it, by operator-controller before a
    takeover or by pivoter after (the engine uses it only while pivoter has installed
    nothing for the extension)."""

    @classmethod
    def parse(cls, obj: Mapping[str, object]) -> ClusterExtensionView:
        """Read a ClusterExtension object; raise :class:`FieldError` naming the first bad
        field."""
        root = Fields.root(obj)
        meta, annotations = _metadata(root)
        spec = root.required_child("spec")
        source = spec.required_child("source")
        source_type = source.required_string("sourceType")
        if source_type != SOURCE_TYPE_CATALOG:
            raise FieldError(
                source.where("sourceType"),
                f"must be {SOURCE_TYPE_CATALOG}, got {describe(source_type)}",
            )
        account = spec.child("serviceAccount")
        config = spec.child("config")
        inline = None
        if config is not None:
            config_type = config.required_string("configType")
            if config_type != CONFIG_TYPE_INLINE:
                raise FieldError(
                    config.where("configType"),
                    f"must be {CONFIG_TYPE_INLINE}, got {describe(config_type)}",
                )
            inline = config.free_form("inline") or None
        install = spec.child("install")
        preflight = install.child("preflight") if install is not None else None
        safety = preflight.child("crdUpgradeSafety") if preflight is not None else None
        return cls(
            meta=meta,
            namespace=spec.required_string("namespace"),
            catalog=CatalogFilter.parse(source.required_child("catalog")),
            service_account=account.string("name") if account is not None else "",
            inline_config=inline,
            crd_upgrade_safety=(
                safety.choice("enforcement", ENFORCEMENTS, "Strict")
                if safety is not None
                else "Strict"
            ),
            progress_deadline_minutes=spec.integer("progressDeadlineMinutes", minimum=1),
            dependencies=annotations.choice(ANNOTATION_DEPENDENCIES, DEPENDENCIES, "Refuse"),
            approval=annotations.choice(ANNOTATION_APPROVAL, APPROVALS, "Automatic"),
            approved=_approved_revision(annotations),
            auto_rollback=annotations.flag(ANNOTATION_AUTO_ROLLBACK),
            history_limit=annotations.number(ANNOTATION_HISTORY_LIMIT, minimum=1)
            or api.DEFAULT_HISTORY_LIMIT,
            adopt_existing=annotations.flag(ANNOTATION_ADOPT_EXISTING),
            pinned=_pinned_revision(annotations),
            installed=_installed_bundle(root, source.required_child("catalog")),
        )


def _installed_bundle(root: Fields, catalog: Fields) -> InstalledBundle | None:
    """``status.install.bundle`` of a ClusterExtension (None when nothing was installed)."""
    status = root.child("status")
    install = status.child("install") if status is not None else None
    bundle = install.child("bundle") if install is not None else None
    if bundle is None:
        return None
    return InstalledBundle(
        package=catalog.required_string("packageName"),
        name=bundle.required_string("name"),
        version=bundle.required_string("version"),
    )


# ----------------------------------------------------------------------------- any input

InputView = ResolutionView | PlatformOperatorView | ClusterExtensionView
"""Any input; each has ``meta`` and ``pinned``."""
