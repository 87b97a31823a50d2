"""What an input asks for, read once from its object: :class:`InputSpec`.

A Resolution's spec and annotations (and a PlatformOperator's single package, see
:mod:`pivoter.platformoperators`) become one :class:`InputSpec`, so the shared engine
(:mod:`pivoter.resolutions.engine`) never reads raw objects. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pivoter.apis import pivoter as api
from pivoter.pivot import ChildSettings
from pivoter.resolvesets import InputRef
from resolver import profiles
from resolver.rules.inputs import PackageRequest

__all__ = [
    "ANNOTATION_APPROVED_REVISION",
    "ANNOTATION_PINNED_REVISION",
    "ANNOTATION_RETRY",
    "InputSpec",
    "from_resolution",
]

ANNOTATION_APPROVED_REVISION = "pivoter.io/approved-revision"
"""With Manual approval: the revision (number, or ``sha256:`` selection hash) approved to pivot."""
ANNOTATION_PINNED_REVISION = "pivoter.io/pinned-revision"
"""Pins a PlatformOperator (whose spec is the reference's) like a Resolution's
``spec.pinnedRevision``."""
ANNOTATION_RETRY = "pivoter.io/retry-now"
"""Any new value retries a failed pivot now, without editing the spec."""


@dataclass(frozen=True, slots=True)
class InputSpec:
    """Everything the engine needs to know about one input."""

    ref: InputRef
    requests: tuple[PackageRequest, ...]
    catalog_selector: Mapping[str, Any] | None = None
    service_account: Mapping[str, str] | None = None
    approval: str = "Automatic"
    paused: bool = False
    auto_rollback: bool = True
    progress_deadline: float = float(api.DEFAULT_PROGRESS_DEADLINE_SECONDS)
    history_limit: int = api.DEFAULT_HISTORY_LIMIT
    pinned: int | None = None
    approved: str = ""
    retry_token: str = ""
    primary_package: str = ""
    generation: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)
    profile: str = profiles.DEFAULT
    """The resolver profile (docs/resolution.md): ``pivoter``, or ``olmv1-filter`` for a
    ClusterExtension that keeps OLM v1's rules (no dependencies)."""
    catalog_kind: str = "Catalog"
    """Which catalogs of the cache it resolves from: pivoter's ``Catalog`` objects (and the
    foreign ones), or only ``ClusterCatalog`` objects (a ClusterExtension)."""
    child_settings: ChildSettings | None = None
    """Install settings of its children (a ClusterExtension's namespace, config, preflight)."""
    fallback_to_active: bool = False
    """When every catalog it resolves from was deleted, keep the active revision as the target
    (OLM v1's rule for ClusterExtensions) instead of reporting it unresolved."""

    @property
    def packages(self) -> list[str]:
        """The requested package names."""
        return [r.package for r in self.requests]

    def approves(self, revision: int, selection_hash: str) -> bool:
        """Whether the recorded approval names ``revision`` (or its selection hash)."""
        return bool(self.approved) and self.approved in (str(revision), selection_hash)


def _int(value: Any) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def from_resolution(obj: Mapping[str, Any]) -> InputSpec:
    """The :class:`InputSpec` of a ``Resolution`` object."""
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    annotations = metadata.get("annotations") or {}
    requests = tuple(
        PackageRequest(
            package=str(p["name"]),
            channels=(str(p["channel"]),) if p.get("channel") else (),
            version_range=str(p.get("versionRange") or ""),
            upgrade_policy=str(p.get("upgradePolicy") or "CatalogProvided"),
        )
        for p in spec.get("packages") or []
    )
    package_config = {
        str(p["name"]): dict(p["config"])
        for p in spec.get("packages") or []
        if isinstance(p.get("config"), Mapping) and p["config"]
    }
    namespace = str(spec.get("installNamespace") or "")
    settings = ChildSettings(
        config={"installNamespace": namespace} if namespace else {},
        adopt_existing=spec.get("adoptExisting") is True,
        package_config=package_config,
    )
    approved = str(annotations.get(ANNOTATION_APPROVED_REVISION) or "")
    if not approved and spec.get("approvedRevision"):
        approved = str(spec["approvedRevision"])
    return InputSpec(
        ref=InputRef("Resolution", str(metadata["name"])),
        requests=requests,
        catalog_selector=spec.get("catalogSelector"),
        service_account=spec.get("serviceAccount"),
        approval=str(spec.get("approval") or "Automatic"),
        paused=bool(spec.get("paused")),
        auto_rollback=spec.get("autoRollback", True) is not False,
        progress_deadline=float(
            spec.get("progressDeadlineSeconds") or api.DEFAULT_PROGRESS_DEADLINE_SECONDS
        ),
        history_limit=max(1, int(spec.get("historyLimit") or api.DEFAULT_HISTORY_LIMIT)),
        pinned=_int(spec.get("pinnedRevision")),
        approved=approved,
        retry_token=str(annotations.get(ANNOTATION_RETRY) or ""),
        generation=int(metadata.get("generation") or 0),
        child_settings=settings if settings != ChildSettings() else None,
    )
