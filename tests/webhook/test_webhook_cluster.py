"""The admission webhook registered by URL on the real API server (the daemon outside the cluster).

The API server calls the webhook over TLS with the CA pivoter generated; decisions use real
SubjectAccessReviews against RBAC.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, BUNDLES, PLATFORM_OPERATORS, RESOLUTIONS
from pivoter.kube import Forbidden, Invalid, Kube, KubeError, NotFound, apply, load_client
from pivoter.webhook.registration import NAME, configuration
from pivoter.webhook.server import WebhookServer
from provisioners.certs import issue_serving_certificate
from tests.cluster import TestCluster, session_labels, unique_name, wait_for

pytestmark = pytest.mark.cluster

WEBHOOK_CONFIGS = "admissionregistration.k8s.io/v1"


@pytest.fixture
def admin(cluster: TestCluster, rukpak_crds: None) -> Iterator[Kube]:
    api_client = load_client(kubeconfig=str(cluster.kubeconfig))
    yield Kube(api_client)
    api_client.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def webhook(admin: Kube, namespace: str, tmp_path: Path) -> Iterator[WebhookServer]:
    issued = issue_serving_certificate(
        ["127.0.0.1"], ca_name="pivoter webhook test CA", validity=timedelta(hours=1)
    )
    (tmp_path / "tls.crt").write_bytes(issued.certificate)
    (tmp_path / "tls.key").write_bytes(issued.private_key)
    server = WebhookServer(
        admin,
        system_namespace=namespace,
        cert=tmp_path / "tls.crt",
        key=tmp_path / "tls.key",
        host="127.0.0.1",
        port=0,
    )
    server.start()
    config = configuration(
        ca_bundle=issued.ca, system_namespace=namespace, url=f"https://127.0.0.1:{server.port}"
    )
    apply(admin, config, field_manager="pivoter-test", force=True)
    try:
        yield server
    finally:
        resource = admin.resource(WEBHOOK_CONFIGS, "ValidatingWebhookConfiguration")
        try:
            admin.delete(resource, NAME)
        finally:
            server.stop()


def _eventually_denied(action: Any, fragment: str) -> KubeError:
    """The webhook configuration takes a moment to reach the API server's admission chain."""

    def denial() -> KubeError | None:
        try:
            action()
        except (Forbidden, Invalid, KubeError) as exc:
            if fragment in str(exc):
                return exc
            raise
        return None

    result: KubeError = wait_for(
        denial, timeout=30, interval=0.5, what=f"a denial with {fragment!r}"
    )
    return result


def _config_map(name: str, immutable: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": session_labels()},
        "data": {"a.yaml": "kind: ConfigMap"},
        "immutable": immutable,
    }


def test_bundle_rules(admin: Kube, namespace: str, webhook: WebhookServer) -> None:
    cms = admin.resource("v1", "ConfigMap")
    admin.create(cms, _config_map("content"), namespace=namespace)
    name = unique_name("b")
    bundle = {
        "apiVersion": "core.rukpak.io/v1alpha1",
        "kind": "Bundle",
        "metadata": {"name": name, "labels": session_labels()},
        "spec": {
            "provisionerClassName": "core-rukpak-io-plain",
            "source": {"type": "configMaps", "configMaps": [{"configMap": {"name": "content"}}]},
        },
    }
    mutable = {**bundle, "metadata": {"name": unique_name("b"), "labels": session_labels()}}
    mutable["spec"] = {
        **bundle["spec"],
        "source": {"type": "configMaps", "configMaps": [{"configMap": {"name": "loose"}}]},
    }
    _eventually_denied(lambda: admin.create(BUNDLES, mutable), "ConfigMap 'loose' not found")
    admin.create(BUNDLES, bundle)
    try:
        patch = {"spec": {"source": {"configMaps": [{"configMap": {"name": "other"}}]}}}
        denied = _eventually_denied(
            lambda: admin.merge_patch(BUNDLES, name, patch), "bundle.spec is immutable"
        )
        assert "vbundles.core.rukpak.io" in str(denied)
        admin.merge_patch(BUNDLES, name, {"metadata": {"labels": {"extra": "ok"}}})
        _eventually_denied(
            lambda: admin.delete(cms, "content", namespace), "in use by Bundle(s) " + name
        )
    finally:
        admin.delete(BUNDLES, name)
    # No Bundle uses it any more: deletion goes through.
    admin.delete(cms, "content", namespace)
    with pytest.raises(NotFound):
        admin.get(cms, "content", namespace)


def test_bundle_deployment_least_privilege(
    cluster: TestCluster, admin: Kube, namespace: str, webhook: WebhookServer
) -> None:
    user = unique_name("user")
    sa = unique_name("sa")
    role = unique_name("bd-writer")
    rbac = "rbac.authorization.k8s.io/v1"
    admin.create(
        admin.resource(rbac, "ClusterRole"),
        {
            "apiVersion": rbac,
            "kind": "ClusterRole",
            "metadata": {"name": role, "labels": session_labels()},
            "rules": [
                {
                    "apiGroups": ["core.rukpak.io"],
                    "resources": ["bundledeployments"],
                    "verbs": ["create", "get"],
                },
                {
                    "apiGroups": [""],
                    "resources": ["serviceaccounts"],
                    "verbs": ["impersonate"],
                    "resourceNames": [sa],
                },
            ],
        },
    )
    admin.create(
        admin.resource(rbac, "ClusterRoleBinding"),
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role, "labels": session_labels()},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role,
            },
            "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
        },
    )
    user_client = load_client(kubeconfig=str(cluster.user_kubeconfig(user)))
    as_user = Kube(user_client)

    def bd(name: str, account: str | None) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "provisionerClassName": "core-rukpak-io-plain",
            "template": {
                "spec": {
                    "provisionerClassName": "core-rukpak-io-plain",
                    "source": {"type": "image", "image": {"ref": "example.invalid/x:1"}},
                }
            },
        }
        if account:
            spec["serviceAccount"] = {"name": account, "namespace": namespace}
        return {
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {"name": name, "labels": session_labels()},
            "spec": spec,
        }

    created = []
    try:
        denied = _eventually_denied(
            lambda: as_user.create(BUNDLE_DEPLOYMENTS, bd(unique_name("bd"), None)),
            "without spec.serviceAccount",
        )
        assert user in str(denied)
        other = _eventually_denied(
            lambda: as_user.create(BUNDLE_DEPLOYMENTS, bd(unique_name("bd"), "cluster-admin-sa")),
            "may not impersonate",
        )
        assert "cluster-admin-sa" in str(other)
        allowed = as_user.create(BUNDLE_DEPLOYMENTS, bd(unique_name("bd"), sa))
        created.append(allowed["metadata"]["name"])
        # The cluster admin may do everything, so may create one without a service account.
        bare = admin.create(BUNDLE_DEPLOYMENTS, bd(unique_name("bd"), None))
        created.append(bare["metadata"]["name"])
    finally:
        for name in created:
            admin.delete(BUNDLE_DEPLOYMENTS, name)
        user_client.close()  # type: ignore[no-untyped-call]


def _grant(admin: Kube, user: str, rules: list[dict[str, Any]]) -> str:
    """A ClusterRole with ``rules`` bound to ``user``; returns its name."""
    role = unique_name("writer")
    group = "rbac.authorization.k8s.io"
    rbac = f"{group}/v1"
    admin.create(
        admin.resource(rbac, "ClusterRole"),
        {
            "apiVersion": rbac,
            "kind": "ClusterRole",
            "metadata": {"name": role, "labels": session_labels()},
            "rules": rules,
        },
    )
    admin.create(
        admin.resource(rbac, "ClusterRoleBinding"),
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role, "labels": session_labels()},
            "roleRef": {"apiGroup": group, "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "User", "name": user, "apiGroup": group}],
        },
    )
    return role


def test_inputs_least_privilege(
    cluster: TestCluster, admin: Kube, namespace: str, webhook: WebhookServer
) -> None:
    """Writing a Resolution or a PlatformOperator never installs with more than the writer's own
    rights: naming a service account needs the right to impersonate it, naming none (and every
    PlatformOperator) installs as pivoter, which only a user allowed everything may ask for."""
    user = unique_name("user")
    sa = unique_name("sa")
    _grant(
        admin,
        user,
        [
            {"apiGroups": ["pivoter.io"], "resources": ["resolutions"], "verbs": ["create"]},
            {
                "apiGroups": ["platform.openshift.io"],
                "resources": ["platformoperators"],
                "verbs": ["create"],
            },
            {
                "apiGroups": [""],
                "resources": ["serviceaccounts"],
                "verbs": ["impersonate"],
                "resourceNames": [sa],
            },
        ],
    )
    user_client = load_client(kubeconfig=str(cluster.user_kubeconfig(user)))
    as_user = Kube(user_client)

    def resolution(name: str, account: str | None) -> dict[str, Any]:
        spec: dict[str, Any] = {"packages": [{"name": "p"}], "paused": True}
        if account:
            spec["serviceAccount"] = {"name": account, "namespace": namespace}
        return {
            "apiVersion": "pivoter.io/v1alpha1",
            "kind": "Resolution",
            "metadata": {"name": name, "labels": session_labels()},
            "spec": spec,
        }

    operator = {
        "apiVersion": "platform.openshift.io/v1alpha1",
        "kind": "PlatformOperator",
        "metadata": {"name": unique_name("po"), "labels": session_labels()},
        "spec": {"package": {"name": "p"}},
    }
    created: list[tuple[Any, str]] = []
    try:
        denied = _eventually_denied(
            lambda: as_user.create(RESOLUTIONS, resolution(unique_name("res"), None)),
            "may not create a Resolution without spec.serviceAccount",
        )
        assert user in str(denied)
        other = _eventually_denied(
            lambda: as_user.create(RESOLUTIONS, resolution(unique_name("res"), "admin-sa")),
            "may not impersonate service account",
        )
        assert f"{namespace}/admin-sa" in str(other)
        allowed = as_user.create(RESOLUTIONS, resolution(unique_name("res"), sa))
        created.append((RESOLUTIONS, allowed["metadata"]["name"]))
        refused = _eventually_denied(
            lambda: as_user.create(PLATFORM_OPERATORS, operator),
            "may not create a PlatformOperator",
        )
        assert "use a Resolution naming a service account" in str(refused)
        # The cluster admin may do everything, so may ask pivoter to install as itself.
        bare = admin.create(RESOLUTIONS, resolution(unique_name("res"), None))
        created.append((RESOLUTIONS, bare["metadata"]["name"]))
        by_admin = admin.create(PLATFORM_OPERATORS, operator)
        created.append((PLATFORM_OPERATORS, by_admin["metadata"]["name"]))
    finally:
        for resource, name in created:
            admin.delete(resource, name)
        user_client.close()  # type: ignore[no-untyped-call]
