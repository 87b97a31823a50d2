"""Installing a BundleDeployment's bundle: the apply, the inventory it moves, and the
``HasValidBundle`` and ``Installed`` conditions that say where it stands.

Steps 2 and 3 of :mod:`pivoter.controllers.bundledeployment`: until the wanted Bundle is
unpacked the previous content keeps running (:func:`waiting_for`); once it is, :func:`install`
applies its content (:mod:`pivoter.controllers.contentapply`) over the inventory, for an install, an
upgrade or a drift correction, and the API server's warnings become Warning Events. After an apply
:func:`installed` moves ``activeBundle`` and the inventory; an install that stopped is
:func:`blocked`: what it created joins the inventory (so the next apply or the uninstall prunes it)
and the conditions say where it stopped. :class:`InstallResult` is what one reconcile's install or
drift check did, read by the conditions of each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pivoter.apis import rukpak
from pivoter.apis.conditions import FALSE, TRUE, UNKNOWN, Condition, find
from pivoter.apis.inventory import inventory_of
from pivoter.controllers import drift
from pivoter.controllers.bundlecontent import BundleContent
from pivoter.controllers.contentapply import Applied, InstallBlocked, apply_content
from pivoter.controllers.reporting import warn
from pivoter.kube import EventRecorder, Kube, Object
from provisioners.apply.objects import ObjectRef

__all__ = [
    "InstallResult",
    "blocked",
    "install",
    "installed",
    "not_generated",
    "unpacked",
    "waiting_for",
]


@dataclass(slots=True)
class InstallResult:
    """What one converge did: the installed objects, whether it applied, and drift found."""

    refs: list[ObjectRef]
    applied: bool
    notes: list[str] = field(default_factory=list)
    report: drift.DriftReport | None = None
    corrected: bool = False
    wait: bool = False
    """An object is still being deleted: look again shortly, then correct."""
    live: dict[ObjectRef, dict[str, Any]] = field(default_factory=dict)
    """The objects as this converge's apply left them (read by the health check first)."""


def install(
    api: Kube,
    bd: Object,
    bundle_name: str,
    content: BundleContent,
    *,
    run_hooks: bool,
    recorder: EventRecorder | None,
) -> Applied:
    """:func:`~pivoter.controllers.contentapply.apply_content` over ``bd``'s inventory; the API
    server's warnings become Warning Events."""
    applied = apply_content(
        api,
        bd,
        bundle_name,
        content,
        previous=inventory_of(bd.get("status")),
        run_hooks=run_hooks,
    )
    for warning in applied.warnings:
        warn(recorder, bd, "APIServerWarning", warning)
    return applied


def not_generated(exc: Exception) -> Condition:
    """``HasValidBundle`` when the generated Bundle could not be created or read."""
    return Condition(
        rukpak.TYPE_HAS_VALID_BUNDLE,
        UNKNOWN,
        rukpak.REASON_RECONCILE_FAILED,
        f"Failed to generate the Bundle: {exc}",
    )


def waiting_for(bundle: Mapping[str, Any], status: Mapping[str, Any]) -> list[Condition]:
    """While ``bundle`` is not unpacked the previous content keeps running: ``HasValidBundle``
    says whether it is pending or failed; ``Installed`` is Unknown only if never set."""
    name = bundle["metadata"]["name"]
    unpacked = find((bundle.get("status") or {}).get("conditions"), rukpak.TYPE_UNPACKED)
    if unpacked is not None and unpacked.get("status") == FALSE:
        message = str(unpacked.get("message") or f"Failed to unpack the {name} Bundle")
        valid = Condition(rukpak.TYPE_HAS_VALID_BUNDLE, FALSE, rukpak.REASON_UNPACK_FAILED, message)
    else:
        message = f"Waiting for the {name} Bundle to be unpacked"
        valid = Condition(rukpak.TYPE_HAS_VALID_BUNDLE, TRUE, rukpak.REASON_UNPACK_PENDING, message)
    if find(status.get("conditions"), rukpak.TYPE_INSTALLED) is not None:
        return [valid]
    nothing = Condition(
        rukpak.TYPE_INSTALLED,
        UNKNOWN,
        rukpak.REASON_INSTALLATION_STATUS_UNKNOWN,
        "Nothing is installed yet: waiting for a valid bundle",
    )
    return [valid, nothing]


def unpacked(bundle_name: str) -> Condition:
    """``HasValidBundle`` once the wanted Bundle is unpacked."""
    return Condition(
        rukpak.TYPE_HAS_VALID_BUNDLE,
        TRUE,
        rukpak.REASON_UNPACK_SUCCESSFUL,
        f"Successfully unpacked the {bundle_name} Bundle",
    )


def installed(status: dict[str, Any], bundle_name: str, outcome: InstallResult) -> list[Condition]:
    """After an apply: ``activeBundle`` and the inventory move to ``bundle_name`` and
    ``Installed`` says so (nothing applied: they stay)."""
    if not outcome.applied:
        return []
    status["activeBundle"] = bundle_name
    status["inventory"] = [ref.as_dict() for ref in outcome.refs]
    notes = f" ({'; '.join(outcome.notes)})" if outcome.notes else ""
    return [
        Condition(
            rukpak.TYPE_INSTALLED,
            TRUE,
            rukpak.REASON_INSTALLATION_SUCCEEDED,
            f"Instantiated bundle {bundle_name} successfully{notes}",
        )
    ]


def blocked(
    bd: Object, status: dict[str, Any], exc: InstallBlocked, recorder: EventRecorder | None
) -> list[Condition]:
    """Where the install stopped: objects it created go into the inventory (so that the
    next apply or the uninstall prunes them), a Warning Event, and the conditions."""
    if exc.partial:
        known = inventory_of(status)
        extra = [ref for ref in exc.partial if ref not in known]
        if extra:
            status["inventory"] = [ref.as_dict() for ref in known + extra]
    found = [Condition(exc.condition, FALSE, exc.reason, str(exc))]
    if exc.condition == rukpak.TYPE_INSTALLED:
        found.append(
            Condition(
                rukpak.TYPE_HEALTHY,
                FALSE,
                rukpak.REASON_INSTALLATION_STATUS_FALSE,
                "The bundle is not installed",
            )
        )
    warn(recorder, bd, exc.reason, str(exc))
    return found
