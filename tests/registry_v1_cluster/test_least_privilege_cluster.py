"""Impersonation: a registry+v1 BundleDeployment installs as its service account, or not at all.

The service account may do everything in its namespace and create CRDs, but not ClusterRoles;
kube-green's CSV asks for cluster permissions. The install fails with ``InstallFailed`` naming the
missing right, and nothing at all is created: the daemon first applies the whole bundle as a dry
run as that account, so authorization fails before the first write.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from pivoter.kube import NotFound, Resource
from tests.cluster import session_labels, unique_name
from tests.drift.running import Pivoter, condition
from tests.registry_v1.helpers import bundle

pytestmark = pytest.mark.cluster

CLUSTER_ROLES = Resource(
    "rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", namespaced=False
)
CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)
ROLES = Resource("rbac.authorization.k8s.io/v1", "Role", "roles", namespaced=True)
ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", namespaced=True
)
SERVICE_ACCOUNTS = Resource("v1", "ServiceAccount", "serviceaccounts", namespaced=True)


def _grant(pivoter: Pivoter, namespace: str, sa: str) -> list[tuple[Resource, str]]:
    """Everything in ``namespace`` and CRDs cluster-wide; no ClusterRoles. Returns what to
    delete afterwards (the cluster-scoped part)."""
    subject = [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}]
    crd_role = unique_name("crd-installer")
    pivoter.kube.create(
        CLUSTER_ROLES,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": crd_role, "labels": session_labels()},
            "rules": [
                {
                    "apiGroups": ["apiextensions.k8s.io"],
                    "resources": ["customresourcedefinitions"],
                    "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
                }
            ],
        },
    )
    pivoter.kube.create(
        CLUSTER_ROLE_BINDINGS,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": crd_role, "labels": session_labels()},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": crd_role,
            },
            "subjects": subject,
        },
    )
    pivoter.kube.create(
        ROLES,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "everything-here"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        },
        namespace,
    )
    pivoter.kube.create(
        ROLE_BINDINGS,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "everything-here"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "everything-here",
            },
            "subjects": subject,
        },
        namespace,
    )
    return [(CLUSTER_ROLE_BINDINGS, crd_role), (CLUSTER_ROLES, crd_role)]


def test_service_account_without_cluster_role_rights_creates_nothing(
    pivoter: Pivoter, make_namespace: Callable[[], str]
) -> None:
    namespace = make_namespace()
    sa = unique_name("installer")
    pivoter.kube.create(
        SERVICE_ACCOUNTS,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}},
        namespace,
    )
    cleanup = _grant(pivoter, namespace, sa)
    try:
        name = unique_name("green")
        sources = pivoter.registry_bundle(unique_name("green"), bundle("kube-green"))
        pivoter.bundle_deployment(
            name,
            sources,
            provisioner="core-rukpak-io-registry",
            config={"installNamespace": namespace},
            serviceAccount={"name": sa, "namespace": namespace},
        )
        bd = pivoter.wait(name, "Installed", "False", reason="InstallFailed")
        message = condition(bd, "Installed")["message"]
        assert "forbidden" in message.lower(), message
        assert "clusterroles" in message, message
        assert f"system:serviceaccount:{namespace}:{sa}" in message, message
        assert condition(bd, "Healthy")["status"] == "False"
        assert not bd["status"].get("inventory")

        # Nothing was created: no object anywhere carries this BundleDeployment's owner label.
        selector = f"core.rukpak.io/owner-name={name}"
        for api_version, kind in (
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("rbac.authorization.k8s.io/v1", "Role"),
            ("v1", "ServiceAccount"),
            ("v1", "Secret"),
            ("v1", "Service"),
            ("v1", "ConfigMap"),
            ("apps/v1", "Deployment"),
            ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
        ):
            found: list[dict[str, Any]] = pivoter.kube.list(
                pivoter.kube.resource(api_version, kind), label_selector=selector
            )[0]
            assert not found, f"{kind} created despite the failed install: {found}"
    finally:
        for resource, obj_name in cleanup:
            with contextlib.suppress(NotFound):
                pivoter.kube.delete(resource, obj_name)
