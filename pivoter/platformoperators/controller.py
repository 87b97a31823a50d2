"""The PlatformOperator controller: ``platform.openshift.io/v1alpha1`` objects accepted unchanged
and driven through the same path as Resolutions.

A PlatformOperator names one package; it is resolved from every Catalog by priority (or those a
configured selector picks), installed by a service account the daemon is configured with, with
automatic approval and rollback and pivoter's default history. Its own package's
BundleDeployment carries the PlatformOperator's name (as the reference controller's does);
dependencies get their own. Unlike the reference, pivoter upgrades it along its channel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pivoter.apis.resources import PLATFORM_OPERATORS
from pivoter.apis.views import PlatformOperatorView
from pivoter.catalogs import CatalogCache
from pivoter.inputs import InputReconciler, InputSpec, Kind
from pivoter.inputs.controller import register
from pivoter.kube import EventRecorder
from pivoter.pivot import Preparer
from pivoter.platformoperators.status import platform_operator_status
from pivoter.resolvesets import InputRef, RevisionStore
from pivoter.runtime.manager import Manager
from resolver.rules.inputs import PackageRequest

__all__ = [
    "CONTROLLER_NAME",
    "PLATFORM_OPERATORS",
    "PlatformOperatorSettings",
    "platform_operator_kind",
    "setup",
]

CONTROLLER_NAME = "platformoperators"


@dataclass(frozen=True, slots=True)
class PlatformOperatorSettings:
    """How every PlatformOperator is installed (flags of ``pivoter run``)."""

    service_account: Mapping[str, str] | None = None
    catalog_selector: Mapping[str, Any] | None = None


def platform_operator_kind(settings: PlatformOperatorSettings) -> Kind:
    """How the shared reconciler reads and writes PlatformOperators."""

    def spec_of(obj: Mapping[str, object]) -> InputSpec:
        """The object through its view (:class:`~pivoter.apis.views.FieldError` for a field it
        cannot read); the rest is how this daemon installs every PlatformOperator."""
        view = PlatformOperatorView.parse(obj)
        return InputSpec(
            ref=InputRef("PlatformOperator", view.meta.name),
            requests=(PackageRequest(package=view.package),),
            catalog_selector=settings.catalog_selector,
            service_account=settings.service_account,
            primary_package=view.package,
            pinned=view.pinned,
            retry_token=view.meta.retry,
            generation=view.meta.generation,
        )

    return Kind(PLATFORM_OPERATORS, spec_of, platform_operator_status, lambda _: "Delete")


def setup(
    manager: Manager,
    *,
    cache: CatalogCache,
    store: RevisionStore,
    preparer: Preparer,
    settings: PlatformOperatorSettings | None = None,
    recorder: EventRecorder | None = None,
    workers: int = 1,
) -> InputReconciler:
    """Register the PlatformOperator controller; return its reconciler."""
    return register(
        manager,
        platform_operator_kind(settings or PlatformOperatorSettings()),
        name=CONTROLLER_NAME,
        cache=cache,
        store=store,
        preparer=preparer,
        recorder=recorder,
        workers=workers,
    )
