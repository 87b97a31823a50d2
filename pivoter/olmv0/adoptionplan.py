"""What an adoption will do, before it does anything: the plan ``pivoter adopt --dry-run``
prints.

The plan names the Resolution and its spec (:mod:`pivoter.olmv0.mapping`), the steps in their
order (:mod:`pivoter.olmv0.handover`), the objects OLM v0 made for the installed CSV that the
adoption takes over in place (every object in the namespaces involved, and every cluster-scoped
one, that carries OLM v0's owner labels or an ownerReference to the CSV), and OLM v0's own
records that are removed (the Subscription, its InstallPlans, the CSV, its OperatorCondition).
Called by ``pivoter adopt``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pivoter.kube import Kube, NotFound
from pivoter.olmv0.mapping import resolution_for, resolution_name
from pivoter.olmv0.refusals import install_mode
from pivoter.olmv0.resources import (
    LABEL_OWNER,
    LABEL_OWNER_NAMESPACE,
    OWNED_CLUSTER,
    OWNED_NAMESPACED,
)
from pivoter.olmv0.survey import InstalledOperator, target_namespaces

__all__ = ["plan_for"]


def _olm_owned(kube: Kube, installed: InstalledOperator) -> list[str]:
    csv = installed.installed_csv
    selector = f"{LABEL_OWNER}={csv},{LABEL_OWNER_NAMESPACE}={installed.namespace}"
    found: list[str] = []
    namespaces = [installed.namespace]
    if installed.csv is not None:
        namespaces += [n for n in target_namespaces(installed.csv) or [] if n not in namespaces]
    for resource in OWNED_NAMESPACED:
        for namespace in namespaces:
            items, _ = kube.list(resource, namespace)
            for obj in items:
                meta = obj["metadata"]
                owners = meta.get("ownerReferences") or []
                labels = meta.get("labels") or {}
                if labels.get(LABEL_OWNER) == csv or any(
                    o.get("kind") == "ClusterServiceVersion" and o.get("name") == csv
                    for o in owners
                ):
                    found.append(f"{resource.kind} {namespace}/{meta['name']}")
    for resource in OWNED_CLUSTER:
        try:
            items, _ = kube.list(resource, label_selector=selector)
        except NotFound:
            continue
        found += [f"{resource.kind} {o['metadata']['name']}" for o in items]
    return found


def plan_for(
    kube: Kube, installed: InstalledOperator, dependencies: Sequence[InstalledOperator] = ()
) -> dict[str, Any]:
    """The plan for adopting ``installed`` with the ``dependencies`` OLM v0 installed for it
    (all of which passed the refusal checks)."""
    name = resolution_name(installed.namespace, installed.name)
    resolution = resolution_for(
        installed, name=name, adoption_step="Planning", dependencies=dependencies
    )
    assert installed.csv is not None
    targets = target_namespaces(installed.csv) or []
    members = [installed, *dependencies]
    released: list[str] = []
    for member in members:
        released += [f"Subscription {member.ref}"]
        released += [
            f"InstallPlan {member.namespace}/{p['metadata']['name']}" for p in member.install_plans
        ]
    for member in members:
        csv = member.installed_csv
        released += [
            f"ClusterServiceVersion {member.namespace}/{csv}, after OLM v0's marks are removed "
            "from what pivoter took over; what OLM v0 made only for itself goes with it",
            f"OperatorCondition {member.namespace}/{csv}",
        ]
    bundles = ", ".join(f"{m.package} {m.version}" for m in members)
    csvs = ", ".join(m.installed_csv for m in members)
    subscriptions = ", ".join(m.ref for m in members)
    taken: list[str] = []
    for member in members:
        taken += _olm_owned(kube, member)
    plan: dict[str, Any] = {
        "subscription": installed.ref,
        "csv": installed.installed_csv,
        "mode": install_mode(installed.namespace, targets),
        "resolution": resolution,
        "steps": [
            f"create Resolution {name} paused, pinned to {bundles}; stop here, changing nothing, "
            f"if no pivoter catalog offers {csvs} or if pulling, unpacking, converting or a "
            "server-side dry run of the takeover fails (or it would replace pods)",
            f"delete Subscription {subscriptions} and their InstallPlans (OLM v0 stops upgrading; "
            "its CSVs keep the operators running)",
            "unpause: the child BundleDeployments apply the same bundles with adoptExisting, "
            "taking the objects over in place; wait until they are installed and healthy",
            "remove OLM v0's owner labels and CSV ownerReferences from what the children manage; "
            f"delete CSV {csvs} and their OperatorConditions",
            "lift the version pins and adoptExisting: the next catalog version is a pivot",
        ],
        "takenOver": taken,
        "released": released,
    }
    if dependencies:
        plan["dependencies"] = [d.ref for d in dependencies]
    return plan
