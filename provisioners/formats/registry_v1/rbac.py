"""ServiceAccounts and RBAC from a CSV's ``permissions`` and ``clusterPermissions``.

As OLM does: each service account's namespaced rules become a Role and RoleBinding in the install
namespace and in every target namespace, or, when the operator watches all namespaces, a
ClusterRole and ClusterRoleBinding (plus read access to namespaces); cluster rules become a
ClusterRole and ClusterRoleBinding. Entries naming the same service account are merged. Names are
``<csv>-<serviceaccount>`` (``-cluster`` for cluster rules), bounded to 63 characters. Called by
:mod:`~provisioners.formats.registry_v1.convert`.
"""

from __future__ import annotations

from typing import Any

from provisioners.formats.registry_v1.clusterserviceversion import (
    ClusterServiceVersion,
    PermissionSet,
)
from provisioners.formats.registry_v1.installmode import InstallTarget
from provisioners.formats.registry_v1.names import bounded_name

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
NAMESPACE_READER_RULE: dict[str, Any] = {
    "apiGroups": [""],
    "resources": ["namespaces"],
    "verbs": ["get", "list", "watch"],
}


def service_accounts(
    csv: ClusterServiceVersion, install: InstallTarget, shipped: set[str]
) -> list[dict[str, Any]]:
    """A ServiceAccount for every account the deployments and permissions name.

    ``default`` exists in every namespace and accounts the bundle ships itself (``shipped``)
    are left to the bundle's own manifest.
    """
    names: list[str] = []
    for account in (
        *(d.service_account for d in csv.deployments),
        *(p.service_account for p in csv.permissions),
        *(p.service_account for p in csv.cluster_permissions),
    ):
        if account != "default" and account not in shipped and account not in names:
            names.append(account)
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": install.install_namespace},
        }
        for name in names
    ]


def merged_rules(permissions: list[PermissionSet]) -> dict[str, list[dict[str, Any]]]:
    """Rules per service account, in declaration order, entries for one account merged."""
    merged: dict[str, list[dict[str, Any]]] = {}
    for permission in permissions:
        merged.setdefault(permission.service_account, []).extend(permission.rules)
    return merged


def role_name(csv: ClusterServiceVersion, account: str, *, cluster: bool) -> str:
    """The generated (Cluster)Role and binding name for ``account``."""
    return bounded_name(csv.name, account, "cluster" if cluster else "")


def rbac_objects(csv: ClusterServiceVersion, install: InstallTarget) -> list[dict[str, Any]]:
    """Roles, ClusterRoles and their bindings for the CSV's permissions."""
    objects: list[dict[str, Any]] = []
    for account, rules in merged_rules(csv.permissions).items():
        name = role_name(csv, account, cluster=False)
        if install.all_namespaces:
            objects.extend(
                _pair(
                    "ClusterRole",
                    name=name,
                    namespace=None,
                    rules=[*rules, NAMESPACE_READER_RULE],
                    account=account,
                    install=install,
                )
            )
            continue
        namespaces = [install.install_namespace]
        namespaces.extend(ns for ns in install.target_namespaces if ns not in namespaces)
        for namespace in namespaces:
            objects.extend(
                _pair(
                    "Role",
                    name=name,
                    namespace=namespace,
                    rules=rules,
                    account=account,
                    install=install,
                )
            )
    for account, rules in merged_rules(csv.cluster_permissions).items():
        name = role_name(csv, account, cluster=True)
        objects.extend(
            _pair(
                "ClusterRole",
                name=name,
                namespace=None,
                rules=rules,
                account=account,
                install=install,
            )
        )
    return objects


def _pair(
    kind: str,
    *,
    name: str,
    namespace: str | None,
    rules: list[dict[str, Any]],
    account: str,
    install: InstallTarget,
) -> list[dict[str, Any]]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    role = {"apiVersion": RBAC_API_VERSION, "kind": kind, "metadata": metadata, "rules": rules}
    binding = {
        "apiVersion": RBAC_API_VERSION,
        "kind": f"{kind}Binding",
        "metadata": dict(metadata),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
        "subjects": [
            {"kind": "ServiceAccount", "name": account, "namespace": install.install_namespace}
        ],
    }
    return [role, binding]
