"""A ClusterExtension read as a pivoter input: :func:`extension_spec` turns the object into the
:class:`~pivoter.resolutions.InputSpec` the shared engine works from.

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
from typing import Any

from pivoter.apis import olmv1
from pivoter.apis import pivoter as pivoter_api
from pivoter.pivot import ChildSettings
from pivoter.resolutions import (
    ANNOTATION_APPROVED_REVISION,
    ANNOTATION_PINNED_REVISION,
    ANNOTATION_RETRY,
    InputSpec,
)
from pivoter.resolutions.catalogs import CLUSTER_CATALOG
from pivoter.resolvesets import InputRef
from resolver import profiles
from resolver.rules.inputs import PackageRequest

__all__ = [
    "ANNOTATION_ADOPT_EXISTING",
    "ANNOTATION_APPROVAL",
    "ANNOTATION_AUTO_ROLLBACK",
    "ANNOTATION_DEPENDENCIES",
    "ANNOTATION_HISTORY_LIMIT",
    "DEFAULT_DEADLINE_MINUTES",
    "INVALID_CONFIGURATION",
    "OLMV1_PROFILE",
    "Settings",
    "extension_spec",
    "package_of",
]

ANNOTATION_DEPENDENCIES = "pivoter.io/dependencies"
"""``Install``: dependencies are resolved and installed with the package; ``Refuse`` (default):
a bundle that declares one is refused, as OLM v1 does."""
ANNOTATION_APPROVAL = "pivoter.io/approval"
"""``Manual``: every new selection waits for ``pivoter approve`` (default ``Automatic``)."""
ANNOTATION_AUTO_ROLLBACK = "pivoter.io/auto-rollback"
"""``"true"``: a failed pivot reverts every bundle of the group to the last good revision."""
ANNOTATION_HISTORY_LIMIT = "pivoter.io/history-limit"
"""How many ResolveSet revisions to keep (default 10, at least 1)."""
ANNOTATION_ADOPT_EXISTING = "pivoter.io/adopt-existing"
"""``"true"``: the children take over objects already on the cluster that another owner applied
(the migration from operator-controller, whose Helm release owns them)."""

OLMV1_PROFILE = "olmv1-filter"
"""OLM v1's bundle selection (resolver/profiles/olmv1_filter.py): what a ClusterExtension gets
unless it opts into dependencies."""
DEFAULT_DEADLINE_MINUTES = 720
INLINE_KEYS = ("watchNamespace", "deploymentConfig")
"""The keys of ``spec.config.inline`` OLM v1's registry+v1 schema knows."""
INVALID_CONFIGURATION = "invalidConfiguration"
"""``InputSpec.extra`` key: why ``spec.config`` cannot be used (the input is held back)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """How every ClusterExtension is installed when it names no service account (a flag of
    ``pivoter run``; None: the daemon's own identity)."""

    service_account: Mapping[str, str] | None = None


def package_of(obj: Mapping[str, Any]) -> str:
    """``spec.source.catalog.packageName`` ("" when absent)."""
    return str(_catalog(obj).get("packageName") or "")


def _catalog(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    source = (obj.get("spec") or {}).get("source") or {}
    catalog = source.get("catalog") or {}
    return catalog if isinstance(catalog, Mapping) else {}


def _int(value: Any) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def extension_spec(obj: Mapping[str, Any], settings: Settings | None = None) -> InputSpec:
    """The :class:`InputSpec` of a ``ClusterExtension`` object."""
    settings = settings or Settings()
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    annotations = metadata.get("annotations") or {}
    catalog = _catalog(obj)
    package = package_of(obj)
    namespace = str(spec.get("namespace") or "")
    request = PackageRequest(
        package=package,
        channels=tuple(str(c) for c in catalog.get("channels") or ()),
        version_range=str(catalog.get("version") or ""),
        upgrade_policy=str(
            catalog.get("upgradeConstraintPolicy") or olmv1.UPGRADE_CATALOG_PROVIDED
        ),
    )
    account = str((spec.get("serviceAccount") or {}).get("name") or "")
    service_account = (
        {"namespace": namespace, "name": account} if account else settings.service_account
    )
    inline = ((spec.get("config") or {}).get("inline")) or {}
    primary = dict(inline) if isinstance(inline, Mapping) else {}
    unknown = sorted(k for k in primary if k not in INLINE_KEYS)
    extra: dict[str, Any] = {}
    if unknown:
        # Held back like a paused input: nothing is resolved into a pivot until it is fixed.
        extra[INVALID_CONFIGURATION] = (
            "invalid ClusterExtension configuration: invalid configuration: unknown field "
            + ", ".join(f'"{k}"' for k in unknown)
            + f" (registry+v1 bundles accept {' and '.join(INLINE_KEYS)})"
        )
        primary = {k: v for k, v in primary.items() if k in INLINE_KEYS}
    enforcement = (
        ((spec.get("install") or {}).get("preflight") or {}).get("crdUpgradeSafety") or {}
    ).get("enforcement")
    preflight = {"crdUpgradeSafety": {"disabled": True}} if enforcement == "None" else None
    minutes = _int(spec.get("progressDeadlineMinutes")) or DEFAULT_DEADLINE_MINUTES
    dependencies = str(annotations.get(ANNOTATION_DEPENDENCIES) or "Refuse")
    pinned = str(annotations.get(ANNOTATION_PINNED_REVISION) or "")
    return InputSpec(
        ref=InputRef("ClusterExtension", str(metadata["name"])),
        requests=(request,),
        catalog_selector=catalog.get("selector"),
        service_account=service_account,
        approval="Manual" if annotations.get(ANNOTATION_APPROVAL) == "Manual" else "Automatic",
        auto_rollback=str(annotations.get(ANNOTATION_AUTO_ROLLBACK) or "").lower() == "true",
        progress_deadline=float(minutes * 60),
        history_limit=max(
            1,
            _int(annotations.get(ANNOTATION_HISTORY_LIMIT)) or pivoter_api.DEFAULT_HISTORY_LIMIT,
        ),
        pinned=int(pinned) if pinned.isdigit() else None,
        approved=str(annotations.get(ANNOTATION_APPROVED_REVISION) or ""),
        # A new generation is a retry: a changed spec.config, serviceAccount or preflight is
        # applied (a pivot to the same revision) even when the selected bundles stay the same.
        retry_token=f"{annotations.get(ANNOTATION_RETRY) or ''}#{metadata.get('generation') or 0}",
        primary_package=package,
        generation=int(metadata.get("generation") or 0),
        paused=bool(extra),
        extra=extra,
        profile=profiles.DEFAULT if dependencies == "Install" else OLMV1_PROFILE,
        catalog_kind=CLUSTER_CATALOG,
        fallback_to_active=True,
        child_settings=ChildSettings(
            config={"installNamespace": namespace} if namespace else {},
            primary_config=primary,
            preflight=preflight,
            adopt_existing=str(annotations.get(ANNOTATION_ADOPT_EXISTING) or "").lower() == "true",
        ),
    )
