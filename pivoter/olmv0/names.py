"""The names OLM v0 gave the objects it generated for a CSV, as pivoter's ``objectNames``.

OLM v0 names generated RBAC ``<csv>-<serviceaccount>-<hash>`` and webhook configurations
``<generateName>-<random>``; pivoter's conversion names them ``<csv>-<serviceaccount>``
(``-cluster`` for cluster rules) and ``<csv>-<generateName>``. So that an adoption takes the
existing objects over instead of creating twins, the adoption's child gets the registry+v1
config ``objectNames`` mapping each pivoter name to OLM v0's, found from the live objects:

* a Role OLM v0 generated from ``permissions`` (owner labels, ``olm.permissions.hash``), its
  RoleBinding's service account ``sa``: ``Role/<csv>-<sa>`` and ``RoleBinding/<csv>-<sa>``; in
  AllNamespaces mode OLM v0 copies it to a ClusterRole and ClusterRoleBinding of the same name,
  pivoter's ``ClusterRole/<csv>-<sa>`` (and its binding). That copy is mapped from the Role,
  whether or not it exists yet: OLM v0 makes it at some later sync of the CSV, which may come
  after the CSV succeeded and even after the adoption began (seen in CI); the child then
  creates it under the name OLM v0 would give it, and OLM v0, finding it, makes no twin;
* any other generated ClusterRole (from ``clusterPermissions``): ``ClusterRole/<csv>-<sa>-cluster``;
* a webhook configuration labelled ``olm.webhook-description-generate-name: <g>``:
  ``<Kind>/<csv>-<g>``.

When several OLM v0 roles map to one pivoter name (a CSV listing one service account twice,
which pivoter merges), the first is kept; the others are left to OLM v0, which removes them.
Called by :mod:`pivoter.olmv0.handover` when an adoption starts (for the plan) and again once
OLM v0 has stopped writing the CSV's objects, just before the child applies (an InstallPlan
sync under way when the adoption began may still have been making some).
"""

from __future__ import annotations

from pivoter.kube import Kube, NotFound, Object
from pivoter.olmv0.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    LABEL_OWNER,
    LABEL_OWNER_NAMESPACE,
    LABEL_WEBHOOK_GENERATE_NAME,
    ROLE_BINDINGS,
    ROLES,
    WEBHOOK_CONFIGURATIONS,
)
from provisioners.formats.registry_v1.names import bounded_name

__all__ = ["object_names"]

PERMISSIONS_HASH = "olm.permissions.hash"


def _account(binding: Object | None) -> str:
    for subject in (binding or {}).get("subjects") or []:
        if subject.get("kind") == "ServiceAccount":
            return str(subject.get("name") or "")
    return ""


def _put(names: dict[str, str], kind: str, generated: str, existing: str) -> None:
    names.setdefault(f"{kind}/{generated}", existing)


def object_names(kube: Kube, csv: str, namespace: str) -> dict[str, str]:
    """``objectNames`` for the child that adopts the CSV ``csv`` in ``namespace``."""
    selector = f"{LABEL_OWNER}={csv},{LABEL_OWNER_NAMESPACE}={namespace},{PERMISSIONS_HASH}"
    names: dict[str, str] = {}
    roles, _ = kube.list(ROLES, namespace, label_selector=selector)
    bindings = {b["metadata"]["name"]: b for b in kube.list(ROLE_BINDINGS, namespace)[0]}
    role_names = set()
    for role in sorted(roles, key=lambda r: str(r["metadata"]["name"])):
        name = str(role["metadata"]["name"])
        role_names.add(name)
        account = _account(bindings.get(name))
        if account:
            for kind in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"):
                _put(names, kind, bounded_name(csv, account), name)
    cluster_roles, _ = kube.list(CLUSTER_ROLES, label_selector=selector)
    cluster_bindings = {
        b["metadata"]["name"]: b
        for b in kube.list(CLUSTER_ROLE_BINDINGS, label_selector=selector)[0]
    }
    for role in sorted(cluster_roles, key=lambda r: str(r["metadata"]["name"])):
        name = str(role["metadata"]["name"])
        account = _account(cluster_bindings.get(name))
        if account and name not in role_names:  # (a Role's copy is mapped above)
            _put(names, "ClusterRole", bounded_name(csv, account, "cluster"), name)
            _put(names, "ClusterRoleBinding", bounded_name(csv, account, "cluster"), name)
    owner = f"{LABEL_OWNER}={csv},{LABEL_OWNER_NAMESPACE}={namespace}"
    for resource in WEBHOOK_CONFIGURATIONS:
        try:
            items, _ = kube.list(resource, label_selector=owner)
        except NotFound:
            continue
        for config in items:
            generate = (config["metadata"].get("labels") or {}).get(LABEL_WEBHOOK_GENERATE_NAME)
            if generate:
                _put(names, resource.kind, bounded_name(csv, generate), config["metadata"]["name"])
    return names
