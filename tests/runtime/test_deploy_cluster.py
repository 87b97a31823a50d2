"""deploy/ manifests: a server-side dry run against the control plane (kubectl and the client),
Pod Security ``restricted`` compliance, and RBAC: every right with the installer role, and
without it only what the daemon needs for its own work (tests/image runs the daemon under that).

The manifests are rewritten to names unique to this test (namespace, cluster-scoped RBAC) so
concurrent sessions on a shared cluster do not collide; otherwise they are applied as shipped.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pivoter.kube import Kube, NotFound, Resource, apply
from tests.cluster import TestCluster, session_labels, unique_name
from tests.tools import tool

pytestmark = pytest.mark.cluster

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NAMESPACES = Resource("v1", "Namespace", "namespaces", namespaced=False)


def _documents(*, installer: bool = True) -> list[dict[str, Any]]:
    """The objects of the files deploy/kustomization.yaml lists (without the installer role's
    file when ``installer`` is false)."""
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    docs = []
    for name in kustomization["resources"]:
        if not installer and name == "03-rbac-installer.yaml":
            continue
        docs += [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]
    return docs


def _rewritten(namespace: str, suffix: str, *, installer: bool = True) -> list[dict[str, Any]]:
    """The manifests with the namespace and cluster-scoped names made unique."""
    text = yaml.safe_dump_all(_documents(installer=installer))
    text = text.replace("pivoter-system", namespace)
    text = text.replace("name: pivoter-manager", f"name: pivoter-manager-{suffix}")
    text = text.replace("name: pivoter-installer", f"name: pivoter-installer-{suffix}")
    docs = list(yaml.safe_load_all(text))
    for doc in docs:
        if doc["kind"] in {"Namespace", "ClusterRole", "ClusterRoleBinding"}:
            doc["metadata"].setdefault("labels", {}).update(session_labels())
    return docs


@pytest.fixture
def deploy_namespace(kube: Kube) -> Iterator[str]:
    """A unique stand-in for pivoter-system, created for real (namespaced dry runs need it)."""
    name = unique_name("pivoter-system")
    ns = next(d for d in _rewritten(name, "x") if d["kind"] == "Namespace")
    kube.create(NAMESPACES, ns)
    yield name
    with contextlib.suppress(NotFound):
        kube.delete(NAMESPACES, name)


def test_the_manifests_are_complete() -> None:
    kinds = sorted(d["kind"] for d in _documents())
    assert kinds == sorted(
        [
            "Namespace",
            "ServiceAccount",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Role",
            "RoleBinding",
            "Deployment",
            "Service",
            "Service",
            "Job",
            "PodDisruptionBudget",
        ]
    )
    deployment = next(d for d in _documents() if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["args"][:2] == ["run", "--leader-elect"]
    assert "--webhook-service=pivoter-system/pivoter-webhook" in container["args"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert container["resources"]["requests"]["memory"]
    assert container["resources"]["limits"]["memory"]


def test_kubectl_server_side_dry_run_accepts_them_without_warnings(
    cluster: TestCluster, deploy_namespace: str, tmp_path: Path
) -> None:
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(yaml.safe_dump_all(_rewritten(deploy_namespace, unique_name("d"))))
    result = subprocess.run(
        [
            str(tool("kubectl")),
            "--kubeconfig",
            str(cluster.kubeconfig),
            "apply",
            "--dry-run=server",
            "--server-side",
            "--field-manager=pivoter-test",
            "-f",
            str(manifest),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("(server dry run)") == len(_documents())
    # The namespace enforces Pod Security "restricted": a non-compliant pod template would
    # produce "Warning: would violate PodSecurity" here.
    assert "Warning" not in result.stderr, result.stderr


def test_the_client_dry_run_accepts_them(kube: Kube, deploy_namespace: str) -> None:
    for doc in _rewritten(deploy_namespace, unique_name("d")):
        stored = apply(kube, doc, field_manager="pivoter-test", dry_run=True)
        assert stored["kind"] == doc["kind"]
    # Nothing was created.
    with pytest.raises(NotFound):
        kube.get(
            Resource("apps/v1", "Deployment", "deployments", True), "pivoter", deploy_namespace
        )


def _can(
    kube: Kube, user: str, verb: str, what: tuple[str, str], namespace: str, *, name: str = ""
) -> bool:
    group, resource = what
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": user,
            "groups": ["system:serviceaccounts"],
            "resourceAttributes": {
                "verb": verb,
                "group": group,
                "resource": resource,
                "namespace": namespace,
                "name": name,
            },
        },
    }
    reviews = Resource(
        "authorization.k8s.io/v1", "SubjectAccessReview", "subjectaccessreviews", namespaced=False
    )
    return bool(kube.create(reviews, review)["status"].get("allowed"))


def test_the_service_account_has_what_installing_bundles_needs(
    kube: Kube, deploy_namespace: str, namespace: str
) -> None:
    """The daemon installs any content (CRDs, RBAC, workloads) and impersonates service accounts:
    it holds every right, and the admission webhook keeps users from borrowing more than they
    have (docs/security.md)."""
    for doc in _rewritten(deploy_namespace, unique_name("d")):
        if doc["kind"] not in {"Namespace", "Deployment", "Job", "PodDisruptionBudget"}:
            apply(kube, doc, field_manager="pivoter-test")
    user = f"system:serviceaccount:{deploy_namespace}:pivoter"
    assert _can(kube, user, "update", ("coordination.k8s.io", "leases"), deploy_namespace)
    assert _can(kube, user, "create", ("events.k8s.io", "events"), namespace)
    assert _can(kube, user, "watch", ("pivoter.io", "catalogs"), namespace)
    assert _can(kube, user, "create", ("apiextensions.k8s.io", "customresourcedefinitions"), "")
    assert _can(kube, user, "escalate", ("rbac.authorization.k8s.io", "clusterroles"), "")
    assert _can(kube, user, "impersonate", ("", "serviceaccounts"), namespace)
    # Another service account of the same namespace gets none of it.
    other = f"system:serviceaccount:{deploy_namespace}:default"
    assert not _can(
        kube, other, "create", ("apiextensions.k8s.io", "customresourcedefinitions"), ""
    )


def test_without_the_installer_the_daemon_has_only_what_it_needs(
    kube: Kube, deploy_namespace: str, namespace: str
) -> None:
    """pivoter-manager and the Role pivoter alone (tests/image runs the daemon under exactly
    these): its own APIs, its namespace's Secrets, its one webhook configuration; nothing else."""
    for doc in _rewritten(deploy_namespace, unique_name("d"), installer=False):
        if doc["kind"] not in {"Namespace", "Deployment", "Job", "PodDisruptionBudget"}:
            apply(kube, doc, field_manager="pivoter-test")
    user = f"system:serviceaccount:{deploy_namespace}:pivoter"
    webhooks = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
    assert _can(kube, user, "watch", ("core.rukpak.io", "bundledeployments"), "")
    assert _can(kube, user, "get", ("", "secrets"), deploy_namespace)
    assert _can(kube, user, "patch", webhooks, "", name="pivoter-validating-webhooks")
    assert _can(kube, user, "impersonate", ("", "serviceaccounts"), namespace)
    assert not _can(kube, user, "get", ("", "secrets"), namespace)
    assert not _can(kube, user, "patch", webhooks, "", name="someone-elses-webhooks")
    assert not _can(kube, user, "create", ("apiextensions.k8s.io", "customresourcedefinitions"), "")
    assert not _can(kube, user, "escalate", ("rbac.authorization.k8s.io", "clusterroles"), "")
    assert not _can(kube, user, "create", ("authentication.k8s.io", "tokenreviews"), "")
    # OLM v1's kinds and OLM v0's CatalogSources are read; its own Pods labelled, no others.
    assert _can(kube, user, "watch", ("olm.operatorframework.io", "clusterextensions"), "")
    assert _can(kube, user, "patch", ("olm.operatorframework.io", "clustercatalogs/status"), "")
    assert not _can(kube, user, "create", ("olm.operatorframework.io", "clusterextensions"), "")
    assert _can(kube, user, "list", ("operators.coreos.com", "catalogsources"), namespace)
    assert _can(kube, user, "patch", ("", "pods"), deploy_namespace)
    assert not _can(kube, user, "patch", ("", "pods"), namespace)
    # The certificate Job's account may make its one Secret and read back only that one.
    job = f"system:serviceaccount:{deploy_namespace}:pivoter-webhook-cert"
    assert _can(kube, job, "get", ("", "secrets"), deploy_namespace, name="pivoter-webhook-cert")
    assert not _can(kube, job, "get", ("", "secrets"), deploy_namespace, name="another")
    assert not _can(kube, job, "list", ("", "secrets"), deploy_namespace)
