"""What an input asks for, read once from its object: :class:`InputSpec`.

Every input kind is read through its typed view (:mod:`pivoter.apis.views`) and becomes one
:class:`InputSpec`, so the shared engine (:mod:`pivoter.inputs.engine`) never reads raw
objects: :func:`from_resolution` here, a ClusterExtension in :mod:`pivoter.olmv1.extensions`,
a PlatformOperator in :mod:`pivoter.platformoperators`. An object its view cannot read raises
:class:`~pivoter.apis.views.FieldError`, naming the field. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pivoter.apis import pivoter as api
from pivoter.apis.views import (
    ANNOTATION_APPROVED_REVISION,
    ANNOTATION_PINNED_REVISION,
    ANNOTATION_RETRY,
    InstalledBundle,
    ResolutionView,
)
from pivoter.pivot import ChildSettings
from pivoter.resolvesets import InputRef
from resolver import profiles
from resolver.rules.inputs import PackageRequest

# The annotations every input has are the views' (pivoter.apis.views); listed here because
# pivoter.inputs exports them to the CLI.
__all__ = [
    "ANNOTATION_APPROVED_REVISION",
    "ANNOTATION_PINNED_REVISION",
    "ANNOTATION_RETRY",
    "InputSpec",
    "from_resolution",
]


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
    takeover: tuple[InstalledBundle, ...] = ()
    """What another manager installed and runs now (OLM v1's ``status.install.bundle``, the
    CSV an OLM v0 adoption takes over). While the input has installed nothing itself, its
    first revision is exactly this bundle, taken as installed: it needs no approval and moves
    nothing; the next revision follows the upgrade edges from it (docs/pivot.md,
    "Takeovers")."""

    @property
    def packages(self) -> list[str]:
        """The requested package names."""
        return [r.package for r in self.requests]

    def approves(self, revision: int, selection_hash: str) -> bool:
        """Whether the recorded approval names ``revision`` (or its selection hash)."""
        return bool(self.approved) and self.approved in (str(revision), selection_hash)


def from_resolution(obj: Mapping[str, object]) -> InputSpec:
    """The :class:`InputSpec` of a ``Resolution`` object (its view: raises
    :class:`~pivoter.apis.views.FieldError` for a field it cannot read)."""
    view = ResolutionView.parse(obj)
    requests = tuple(
        PackageRequest(
            package=p.name,
            channels=(p.channel,) if p.channel else (),
            version_range=p.version_range,
            upgrade_policy=p.upgrade_policy,
        )
        for p in view.packages
    )
    settings = ChildSettings(
        config={"installNamespace": view.install_namespace} if view.install_namespace else {},
        adopt_existing=view.adopt_existing,
        package_config={p.name: dict(p.config) for p in view.packages if p.config},
    )
    account = view.service_account
    return InputSpec(
        ref=InputRef("Resolution", view.meta.name),
        requests=requests,
        catalog_selector=(
            view.catalog_selector.to_dict() if view.catalog_selector is not None else None
        ),
        service_account=(
            {"name": account.name, "namespace": account.namespace} if account else None
        ),
        approval=view.approval,
        paused=view.paused,
        auto_rollback=view.auto_rollback,
        progress_deadline=float(view.progress_deadline_seconds),
        history_limit=view.history_limit,
        pinned=view.pinned,
        approved=view.approved,
        retry_token=view.meta.retry,
        generation=view.meta.generation,
        child_settings=settings if settings != ChildSettings() else None,
        takeover=view.takeover,
    )
