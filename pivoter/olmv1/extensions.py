"""A ClusterExtension read as a pivoter input: :func:`extension_spec` turns the object, read through
its typed view (:class:`pivoter.apis.views.ClusterExtensionView`, which names the field of an object
it cannot read), into the :class:`~pivoter.inputs.InputSpec` the shared engine works from.

Every upstream field keeps its meaning (docs/olm-v1.md has the table):

* ``spec.source.catalog``: one package request (``packageName``, ``channels``, ``version`` in
  OLM v1's range syntax, ``upgradeConstraintPolicy``) resolved from the ClusterCatalogs
  ``selector`` matches (all of them without one), never from pivoter's own Catalogs;
* ``spec.namespace``: every child's ``config.installNamespace``;
* ``spec.serviceAccount.name``: the install identity (the children apply as
  ``system:serviceaccount:<spec.namespace>:<name>``); without it, the daemon's own identity (or
  the one ``--cluster-extension-service-account`` names), which the admission webhook allows only
  to a user who may already do everything (docs/security.md);
* ``spec.config.inline``: ``watchNamespace`` and ``deploymentConfig`` go to the package's own
  child (its ``config``); other keys are refused there as OLM v1 refuses them;
* ``spec.install.preflight.crdUpgradeSafety.enforcement: None``: the children's CRD upgrade
  safety check is disabled;
* ``spec.progressDeadlineMinutes``: the pivot's deadline (12 hours, upstream's maximum, when
  absent: upstream has none).

pivoter's additions are opt-in annotations, never a new meaning for an upstream field:
:data:`ANNOTATION_DEPENDENCIES` (``Install``: resolve with pivoter's solver, install the
dependencies in the same group; default ``Refuse``, OLM v1's rule), :data:`ANNOTATION_APPROVAL`
(``Manual``: publish a plan, pivot after ``pivoter approve``), :data:`ANNOTATION_AUTO_ROLLBACK`
(``"true"``: a failed upgrade reverts the whole group), :data:`ANNOTATION_HISTORY_LIMIT`,
:data:`ANNOTATION_ADOPT_EXISTING` (take over objects another owner applied: the migration from
operator-controller), and the annotations every input has (``pivoter.io/pinned-revision`` from
``pivoter rollback``, ``pivoter.io/approved-revision``, ``pivoter.io/retry-now``). Pure
functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pivoter.apis.views import (
    ANNOTATION_ADOPT_EXISTING,
    ANNOTATION_APPROVAL,
    ANNOTATION_AUTO_ROLLBACK,
    ANNOTATION_DEPENDENCIES,
    ANNOTATION_HISTORY_LIMIT,
    ClusterExtensionView,
)
from pivoter.inputs import InputSpec
from pivoter.inputs.catalogs import CLUSTER_CATALOG
from pivoter.pivot import ChildSettings
from pivoter.resolvesets import InputRef
from resolver import profiles
from resolver.rules.inputs import PackageRequest

# The opt-in annotations are the view's (pivoter.apis.views); listed here because pivoter.olmv1
# exports them.
__all__ = [
    "ANNOTATION_ADOPT_EXISTING",
    "ANNOTATION_APPROVAL",
    "ANNOTATION_AUTO_ROLLBACK",
    "ANNOTATION_DEPENDENCIES",
    "ANNOTATION_HISTORY_LIMIT",
    "DEFAULT_DEADLINE_MINUTES",
    "INVALID_CONFIGURATION",
    "OLMV1_PROFILE",
    "ExtensionSettings",
    "extension_spec",
    "package_of",
]

OLMV1_PROFILE = "olmv1-filter"
"""OLM v1's bundle selection (resolver/profiles/olmv1_filter.py): what a ClusterExtension gets
unless it opts into dependencies."""
DEFAULT_DEADLINE_MINUTES = 720
INLINE_KEYS = ("watchNamespace", "deploymentConfig")
"""The keys of ``spec.config.inline`` OLM v1's registry+v1 schema knows."""
INVALID_CONFIGURATION = "invalidConfiguration"
"""``InputSpec.extra`` key: why ``spec.config`` cannot be used (the input is held back)."""


@dataclass(frozen=True, slots=True)
class ExtensionSettings:
    """How every ClusterExtension is installed when it names no service account (a flag of
    ``pivoter run``; None: the daemon's own identity)."""

    service_account: Mapping[str, str] | None = None


def package_of(obj: Mapping[str, object]) -> str:
    """``spec.source.catalog.packageName`` (raises
    :class:`~pivoter.apis.views.FieldError` when the object cannot be read)."""
    return ClusterExtensionView.parse(obj).catalog.package_name


def extension_spec(
    obj: Mapping[str, object], settings: ExtensionSettings | None = None
) -> InputSpec:
    """The :class:`InputSpec` of a ``ClusterExtension`` object (its view: raises
    :class:`~pivoter.apis.views.FieldError` for a field it cannot read)."""
    settings = settings or ExtensionSettings()
    view = ClusterExtensionView.parse(obj)
    catalog = view.catalog
    namespace = view.namespace
    request = PackageRequest(
        package=catalog.package_name,
        channels=catalog.channels,
        version_range=catalog.version,
        upgrade_policy=catalog.upgrade_constraint_policy,
    )
    service_account = (
        {"namespace": namespace, "name": view.service_account}
        if view.service_account
        else settings.service_account
    )
    primary = dict(view.inline_config or {})
    unknown = sorted(k for k in primary if k not in INLINE_KEYS)
    extra: dict[str, str] = {}
    if unknown:
        # Held back like a paused input: nothing is resolved into a pivot until it is fixed.
        extra[INVALID_CONFIGURATION] = (
            "invalid ClusterExtension configuration: invalid configuration: unknown field "
            + ", ".join(f'"{k}"' for k in unknown)
            + f" (registry+v1 bundles accept {' and '.join(INLINE_KEYS)})"
        )
        primary = {k: v for k, v in primary.items() if k in INLINE_KEYS}
    preflight = (
        {"crdUpgradeSafety": {"disabled": True}} if view.crd_upgrade_safety == "None" else None
    )
    minutes = view.progress_deadline_minutes or DEFAULT_DEADLINE_MINUTES
    return InputSpec(
        ref=InputRef("ClusterExtension", view.meta.name),
        requests=(request,),
        catalog_selector=catalog.selector.to_dict() if catalog.selector is not None else None,
        service_account=service_account,
        approval=view.approval,
        auto_rollback=view.auto_rollback,
        progress_deadline=float(minutes * 60),
        history_limit=view.history_limit,
        pinned=view.pinned,
        approved=view.approved,
        # A new generation is a retry: a changed spec.config, serviceAccount or preflight is
        # applied (a pivot to the same revision) even when the selected bundles stay the same.
        retry_token=f"{view.meta.retry}#{view.meta.generation}",
        primary_package=catalog.package_name,
        generation=view.meta.generation,
        paused=bool(extra),
        extra=extra,
        profile=profiles.DEFAULT if view.dependencies == "Install" else OLMV1_PROFILE,
        catalog_kind=CLUSTER_CATALOG,
        fallback_to_active=True,
        child_settings=ChildSettings(
            config={"installNamespace": namespace},
            primary_config=primary,
            preflight=preflight,
            adopt_existing=view.adopt_existing,
        ),
        # What operator-controller installed: a takeover keeps it first (the engine ignores it
        # once pivoter has installed anything for the extension).
        takeover=(view.installed,) if view.installed is not None else (),
    )
