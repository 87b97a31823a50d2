"""ServiceAccounts and RBAC from a CSV's ``permissions`` and ``clusterPermissions``.

As OLM does: each service account's namespaced rules become a Role and RoleBinding in the install
namespace and in every target namespace, or, when the operator watches all namespaces, a
ClusterRole and ClusterRoleBinding (plus read access to namespaces); cluster rules become a
ClusterRole and ClusterRoleBinding. Entries naming the same service account are merged. Names are
``<csv>-<serviceaccount>`` (``-cluster`` for cluster rules), bounded to 63 characters. Called by
:mod:`~provisioners.formats.registry_v1.convert`.

A Deployment serving an APIService is an aggregated API server: it checks the callers the API
server forwards with the API server's delegated authentication, so its service account gets what
OLM v0 gives it (:func:`auth_delegation_objects`), under OLM v0's names so that an adoption takes
them over: a ClusterRoleBinding ``<service>-system:auth-delegator`` to ``system:auth-delegator``
and a RoleBinding ``kube-system/<service>-auth-reader`` to
``extension-apiserver-authentication-reader``. Called by
:mod:`~provisioners.formats.registry_v1.apiservices`.
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
AUTH_DELEGATOR_ROLE = "system:auth-delegator"
"""The ClusterRole that lets an aggregated API server create TokenReviews and
SubjectAccessReviews (the API server's delegated authentication and authorization)."""
AUTH_READER_ROLE = "extension-apiserver-authentication-reader"
"""The Role in ``kube-system`` that lets it read the ``extension-apiserver-authentication``
ConfigMap (the client CA and the request-header settings of the API server)."""
KUBE_SYSTEM = "kube-system"
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


def auth_delegator_binding_name(service: str) -> str:
    """OLM v0's name for the ClusterRoleBinding of ``service``'s server to
    ``system:auth-delegator``."""
    return f"{service}-{AUTH_DELEGATOR_ROLE}"


def auth_reader_binding_name(service: str) -> str:
    """OLM v0's name for the RoleBinding (in ``kube-system``) of ``service``'s server to
    ``extension-apiserver-authentication-reader``."""
    return f"{service}-auth-reader"


def auth_delegation_objects(
    service: str, account: str, install: InstallTarget
) -> list[dict[str, Any]]:
    """The bindings that let ``account``, serving APIServices behind ``service``, authenticate
    and authorize the requests the API server forwards to it."""
    subjects = [{"kind": "ServiceAccount", "name": account, "namespace": install.install_namespace}]
    return [
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": auth_delegator_binding_name(service)},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": AUTH_DELEGATOR_ROLE,
            },
            "subjects": subjects,
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "RoleBinding",
            "metadata": {"name": auth_reader_binding_name(service), "namespace": KUBE_SYSTEM},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": AUTH_READER_ROLE,
            },
            "subjects": [dict(s) for s in subjects],
        },
    ]
