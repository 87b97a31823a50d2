"""What OLM v0 installed in a namespace, read once: one :class:`InstalledOperator` per
Subscription.

:func:`survey` reads the Subscriptions (all of a namespace, or one), their installed CSVs, the
namespace's OperatorGroups, the InstallPlans that belong to each Subscription and the CSVs no
Subscription installed. Everything :mod:`pivoter.olmv0.refusals` and
:mod:`pivoter.olmv0.mapping` decide is decided from these snapshots, without further reads.
Called by :mod:`pivoter.olmv0.handover` and ``pivoter adopt``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pivoter.kube import Kube, NotFound, Object
from pivoter.olmv0.resources import (
    ANNOTATION_TARGET_NAMESPACES,
    CSVS,
    INSTALL_PLANS,
    OPERATOR_GROUPS,
    SUBSCRIPTIONS,
)

__all__ = ["InstalledOperator", "NamespaceSurvey", "survey", "target_namespaces"]

COPIED_LABEL = "olm.copiedFrom"
"""On a copy OLM v0 makes of a CSV in each target namespace (never adopted itself)."""


@dataclass(frozen=True)
class InstalledOperator:
    """One Subscription and what OLM v0 installed for it."""

    namespace: str
    subscription: Object
    csv: Object | None
    """The installed CSV (before the first install: the one OLM v0 is installing, if any)."""
    operator_groups: tuple[Object, ...]
    install_plans: tuple[Object, ...]
    """The InstallPlans owned by this Subscription."""

    @property
    def name(self) -> str:
        """The Subscription's name."""
        return str(self.subscription["metadata"]["name"])

    @property
    def spec(self) -> Mapping[str, Any]:
        """The Subscription's spec."""
        return self.subscription.get("spec") or {}

    @property
    def package(self) -> str:
        """``spec.name``: the package."""
        return str(self.spec.get("name") or "")

    @property
    def channel(self) -> str:
        """``spec.channel`` ("" when the Subscription follows the default channel)."""
        return str(self.spec.get("channel") or "")

    @property
    def installed_csv(self) -> str:
        """``status.installedCSV`` ("" before the first install)."""
        return str((self.subscription.get("status") or {}).get("installedCSV") or "")

    @property
    def version(self) -> str:
        """The installed CSV's ``spec.version`` ("" without a CSV)."""
        return str(((self.csv or {}).get("spec") or {}).get("version") or "")

    @property
    def phase(self) -> str:
        """The installed CSV's phase ("" without a CSV)."""
        return str(((self.csv or {}).get("status") or {}).get("phase") or "")

    @property
    def ref(self) -> str:
        """``namespace/name`` of the Subscription."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class NamespaceSurvey:
    """Every Subscription of one namespace, and the CSVs none of them installed."""

    namespace: str
    installed: tuple[InstalledOperator, ...]
    unsubscribed: tuple[str, ...] = field(default=())
    """CSVs of the namespace (not copies) that no Subscription names as installed."""


def target_namespaces(csv: Mapping[str, Any]) -> list[str] | None:
    """The namespaces the CSV's OperatorGroup targets ([] for all; None: not annotated yet)."""
    annotations = (csv.get("metadata") or {}).get("annotations") or {}
    if ANNOTATION_TARGET_NAMESPACES not in annotations:
        return None
    value = str(annotations[ANNOTATION_TARGET_NAMESPACES] or "")
    return [] if not value else sorted(n for n in value.split(",") if n)


def _owned_by(obj: Mapping[str, Any], kind: str, name: str) -> bool:
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("kind") == kind and owner.get("name") == name:
            return True
    return False


def survey(kube: Kube, namespace: str, subscription: str = "") -> NamespaceSurvey:
    """Read OLM v0's objects of ``namespace`` (only ``subscription`` when given; NotFound when
    that Subscription does not exist)."""
    if subscription:
        subscriptions = [kube.get(SUBSCRIPTIONS, subscription, namespace)]
    else:
        subscriptions, _ = kube.list(SUBSCRIPTIONS, namespace)
    groups, _ = kube.list(OPERATOR_GROUPS, namespace)
    plans, _ = kube.list(INSTALL_PLANS, namespace)
    csvs, _ = kube.list(CSVS, namespace)
    by_name = {str(c["metadata"]["name"]): c for c in csvs}
    found: list[InstalledOperator] = []
    for sub in sorted(subscriptions, key=lambda s: str(s["metadata"]["name"])):
        name = str(sub["metadata"]["name"])
        status = sub.get("status") or {}
        installed = str(status.get("installedCSV") or "")
        # Before anything was installed, the CSV being installed (to report a failed one).
        current = installed or str(status.get("currentCSV") or "")
        csv = by_name.get(current) if current else None
        if installed and csv is None:
            try:
                csv = kube.get(CSVS, installed, namespace)
            except NotFound:
                csv = None
        found.append(
            InstalledOperator(
                namespace=namespace,
                subscription=sub,
                csv=csv,
                operator_groups=tuple(groups),
                install_plans=tuple(p for p in plans if _owned_by(p, "Subscription", name)),
            )
        )
    named = {i.installed_csv for i in found}
    if subscription:
        # Only the one Subscription was asked about: other CSVs are not this adoption's.
        named |= set(by_name)
    unsubscribed = tuple(
        sorted(
            n
            for n, c in by_name.items()
            if n not in named and COPIED_LABEL not in ((c["metadata"].get("labels")) or {})
        )
    )
    return NamespaceSurvey(namespace, tuple(found), unsubscribed)
