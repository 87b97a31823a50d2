"""What pivoter refuses to adopt from OLM v0, and why: pure checks over a survey.

An adoption takes over running objects in place; it is only safe when OLM v0 is at rest and the
install is one pivoter can express. Each check returns one-line reasons that say what to do
(docs/migrate-from-olm-v0.md lists them):

* the Subscription has no installed CSV yet, or its CSV is missing;
* the CSV is not ``Succeeded`` (``Failed``: pivoter would take over a broken install; any other
  phase: OLM v0 is still working on it);
* the Subscription has an InstallPlan that is not finished (approved and installing; one of a
  Manual Subscription that nobody approved is no reason: OLM v0 does nothing with it):
  OLM v0 is in the middle of an install or upgrade;
* the namespace has no OperatorGroup, or more than one (OLM v0 itself stops then), or its
  OperatorGroup picks its target namespaces with a label selector (the targets change with
  labels; a pivoter install has a fixed list), or the CSV was not given its targets yet;
* the CSV does not support the install mode its targets imply (pivoter's conversion would
  refuse it; OLM v0 shows this as a failed CSV);
* the Subscription's ``spec.config`` has keys pivoter's ``deploymentConfig`` does not take;
* adopting a whole namespace that has CSVs no Subscription installed (nothing would manage
  them afterwards).

Called by ``pivoter adopt`` and :mod:`pivoter.olmv0.handover`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pivoter.olmv0.survey import InstalledOperator, NamespaceSurvey, target_namespaces

__all__ = [
    "DEPLOYMENT_CONFIG_KEYS",
    "FINISHED_PLAN_PHASES",
    "install_mode",
    "namespace_refusals",
    "refusals",
]

FINISHED_PLAN_PHASES = frozenset({"Complete"})
DEPLOYMENT_CONFIG_KEYS = (
    "env",
    "envFrom",
    "volumes",
    "volumeMounts",
    "tolerations",
    "resources",
    "nodeSelector",
    "affinity",
    "annotations",
)
"""The keys of an OLM v0 ``SubscriptionConfig`` that pivoter's ``deploymentConfig`` takes
(``selector`` is deprecated and ignored by OLM v0 itself, so it is dropped)."""
IGNORED_CONFIG_KEYS = ("selector",)


def install_mode(namespace: str, targets: list[str]) -> str:
    """The install mode OLM v0 (and pivoter) derive from the target namespaces."""
    if not targets:
        return "AllNamespaces"
    if targets == [namespace]:
        return "OwnNamespace"
    return "SingleNamespace" if len(targets) == 1 else "MultiNamespace"


def _supported_modes(csv: Mapping[str, Any]) -> set[str]:
    modes = (csv.get("spec") or {}).get("installModes") or []
    return {str(m.get("type")) for m in modes if m.get("supported")}


def _plan_reason(plan: Mapping[str, Any]) -> str | None:
    status = plan.get("status") or {}
    phase = str(status.get("phase") or "Planning")
    if phase in FINISHED_PLAN_PHASES:
        return None
    name = plan["metadata"]["name"]
    csvs = ", ".join((plan.get("spec") or {}).get("clusterServiceVersionNames") or []) or "?"
    if phase == "Failed":
        return None  # a failed plan changes nothing any more; OLM v0 has given up on it
    if _waits_for_approval(plan):
        # A Manual upgrade nobody approved: OLM v0 does nothing with it. The adoption deletes
        # it; pivoter's next revision waits for approval in its place.
        return None
    what = "approved, not yet installed" if phase == "RequiresApproval" else f"in phase {phase}"
    return (
        f"InstallPlan {name} (for {csvs}) is {what}: OLM v0 is in the middle of an install or "
        "upgrade; approve it and let it finish, or delete it, then adopt"
    )


def _waits_for_approval(plan: Mapping[str, Any]) -> bool:
    """An InstallPlan of a Manual Subscription that waits for an approval nobody gave."""
    phase = str((plan.get("status") or {}).get("phase") or "")
    return phase == "RequiresApproval" and not (plan.get("spec") or {}).get("approved")


def _group_reasons(installed: InstalledOperator) -> list[str]:
    groups = installed.operator_groups
    if not groups:
        return [
            f"namespace {installed.namespace} has no OperatorGroup: OLM v0 has not given the "
            "operator its target namespaces"
        ]
    if len(groups) > 1:
        names = ", ".join(sorted(str(g["metadata"]["name"]) for g in groups))
        return [
            f"namespace {installed.namespace} has {len(groups)} OperatorGroups ({names}): "
            "OLM v0 itself stops installing there; keep one"
        ]
    group = groups[0]
    spec = group.get("spec") or {}
    if spec.get("selector"):
        return [
            f"OperatorGroup {group['metadata']['name']} picks its target namespaces with a label "
            "selector, so they change whenever namespace labels do; a pivoter install watches a "
            "fixed list: replace the selector with spec.targetNamespaces, then adopt"
        ]
    return []


def _phase_reasons(installed: InstalledOperator) -> list[str]:
    """Why the CSV's phase does not allow an adoption."""
    csv = installed.csv
    if csv is None:
        return []
    name = csv["metadata"]["name"]
    phase = installed.phase or "(none)"
    if phase == "Failed":
        status = csv.get("status") or {}
        return [
            f"CSV {name} is in phase Failed ({status.get('reason', '')}: "
            f"{status.get('message', '')}): pivoter would take over a broken install; fix it "
            "with OLM v0 (or delete it) first"
        ]
    if phase != "Succeeded":
        return [
            f"CSV {name} is in phase {phase}, not Succeeded: OLM v0 is still working on it; "
            "adopt once it has succeeded"
        ]
    return []


def refusals(installed: InstalledOperator) -> list[str]:
    """Why ``installed`` cannot be adopted safely (empty: it can)."""
    where = f"Subscription {installed.ref}"
    reasons = _group_reasons(installed)
    reasons += [r for p in installed.install_plans if (r := _plan_reason(p))]
    if not installed.installed_csv:
        first = [
            f"{where} has no installed CSV yet (status.installedCSV is empty): adopt it once "
            "OLM v0 has installed it"
        ]
        return first + _phase_reasons(installed) + reasons
    if installed.csv is None:
        return [f"{where} names CSV {installed.installed_csv}, which does not exist", *reasons]
    csv = installed.csv
    reasons += _phase_reasons(installed)
    state = str((installed.subscription.get("status") or {}).get("state") or "")
    unfinished = [
        p
        for p in installed.install_plans
        if str((p.get("status") or {}).get("phase") or "Planning") not in FINISHED_PLAN_PHASES
    ]
    # A Manual upgrade waiting for approval keeps a Subscription UpgradePending; OLM v0 does
    # nothing until someone approves, so that state alone is no reason.
    if state == "UpgradePending" and not (
        unfinished and all(_waits_for_approval(p) for p in unfinished)
    ):
        reasons.append(
            f"{where} is in state UpgradePending: OLM v0 is upgrading it; adopt once it is "
            "AtLatestKnown"
        )
    targets = target_namespaces(csv)
    if targets is None:
        reasons.append(
            f"CSV {installed.installed_csv} has no olm.targetNamespaces annotation yet: OLM v0's "
            "OperatorGroup controller has not processed it"
        )
    else:
        mode = install_mode(installed.namespace, targets)
        if mode not in _supported_modes(csv):
            reasons.append(
                f"OperatorGroup targets {', '.join(targets) or 'all namespaces'} ({mode}), which "
                f"CSV {installed.installed_csv} does not support "
                f"({', '.join(sorted(_supported_modes(csv))) or 'none'}): pivoter's install "
                "mode cannot express it"
            )
    config = installed.spec.get("config") or {}
    unknown = sorted(
        k for k in config if k not in DEPLOYMENT_CONFIG_KEYS and k not in IGNORED_CONFIG_KEYS
    )
    if unknown:
        reasons.append(
            f"{where} spec.config has {', '.join(unknown)}, which pivoter's deploymentConfig "
            f"does not take ({', '.join(DEPLOYMENT_CONFIG_KEYS)})"
        )
    return reasons


def namespace_refusals(found: NamespaceSurvey) -> list[str]:
    """Why the namespace as a whole cannot be adopted (beyond each Subscription's reasons)."""
    reasons: list[str] = []
    if not found.installed:
        reasons.append(f"namespace {found.namespace} has no Subscription to adopt")
    if found.unsubscribed:
        reasons.append(
            f"namespace {found.namespace} has CSVs no Subscription installed "
            f"({', '.join(found.unsubscribed)}): nothing would manage them after OLM v0 lets "
            "go; delete them or give them a Subscription first"
        )
    return reasons
