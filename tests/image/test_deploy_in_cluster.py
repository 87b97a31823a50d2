"""deploy/ on a private control plane, and the image under deploy/'s own RBAC (issue 17, steps 2-4).

- ``kubectl apply -k deploy/`` works (server-side dry run without Pod Security warnings, then for
  real); its pods are scheduled on the simulated kwok node, where nothing executes: a real node
  could not run here (docs/image.md, "A real node").
- The webhook certificate Job's script, run from the image as its own service account, makes the
  Secret once, for the Service's names, and keeps it afterwards.
- Least privilege: the image runs with only pivoter-manager and the Role pivoter bound (the
  installer's every-right binding deleted, read access to the one kind its bundle installs
  added, as deploy/03-rbac-installer.yaml says), starts, leads, registers its webhook and
  installs a BundleDeployment that names a service account (impersonated); any 403 fails.
"""

from __future__ import annotations

import base64
import contextlib
import re
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from pivoter.kube import Kube, NotFound, Resource
from tests.cluster import TestCluster, wait_for
from tests.e2e.daemon import free_ports
from tests.image.images import REPO, BuiltImage
from tests.tools import tool

pytestmark = [pytest.mark.cluster, pytest.mark.tools, pytest.mark.slow, pytest.mark.timeout(1800)]

RUN = REPO / "hack" / "image" / "run.sh"
NAMESPACE = "pivoter-system"
SERVICE_ACCOUNT = f"system:serviceaccount:{NAMESPACE}:pivoter"
SECRETS = Resource("v1", "Secret", "secrets", namespaced=True)
CONFIG_MAPS = Resource("v1", "ConfigMap", "configmaps", namespaced=True)
DEPLOYMENTS = Resource("apps/v1", "Deployment", "deployments", namespaced=True)
BUNDLE_DEPLOYMENTS = Resource(
    "core.rukpak.io/v1alpha1", "BundleDeployment", "bundledeployments", namespaced=False
)
CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)


@pytest.fixture(scope="module")
def private_cluster() -> Iterator[TestCluster]:
    """A control plane of this module's own: deploy/ uses fixed cluster-scoped names."""
    handle = TestCluster.start()
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def kube(private_cluster: TestCluster) -> Kube:
    return Kube(private_cluster.api_client())


def kubectl(cluster: TestCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tool("kubectl")), "--kubeconfig", str(cluster.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def deployed(private_cluster: TestCluster) -> str:
    """The CRDs, then ``kubectl apply -k deploy/``; its output."""
    crds = kubectl(private_cluster, "apply", "--server-side", "-f", str(REPO / "crds"))
    assert crds.returncode == 0, crds.stderr
    # A server-side dry run of namespaced objects needs their namespace to exist.
    namespace = kubectl(private_cluster, "apply", "-f", str(REPO / "deploy" / "00-namespace.yaml"))
    assert namespace.returncode == 0, namespace.stderr
    dry = kubectl(private_cluster, "apply", "-k", str(REPO / "deploy"), "--dry-run=server")
    assert dry.returncode == 0, dry.stderr
    # The namespace enforces Pod Security "restricted": a non-compliant pod template (the
    # Deployment's or the Job's) would print "Warning: would violate PodSecurity".
    assert "Warning" not in dry.stderr, dry.stderr
    applied = kubectl(private_cluster, "apply", "-k", str(REPO / "deploy"))
    assert applied.returncode == 0, applied.stderr
    return applied.stdout


def test_kubectl_apply_k_deploy_creates_everything(deployed: str, kube: Kube) -> None:
    created = sorted(line.split()[0] for line in deployed.splitlines())
    assert "namespace/pivoter-system unchanged" in deployed
    assert created == sorted(
        [
            "namespace/pivoter-system",  # unchanged: applied first for the dry run
            "serviceaccount/pivoter",
            "serviceaccount/pivoter-webhook-cert",
            "role.rbac.authorization.k8s.io/pivoter",
            "role.rbac.authorization.k8s.io/pivoter-webhook-cert",
            "clusterrole.rbac.authorization.k8s.io/pivoter-installer",
            "clusterrole.rbac.authorization.k8s.io/pivoter-manager",
            "rolebinding.rbac.authorization.k8s.io/pivoter",
            "rolebinding.rbac.authorization.k8s.io/pivoter-webhook-cert",
            "clusterrolebinding.rbac.authorization.k8s.io/pivoter-installer",
            "clusterrolebinding.rbac.authorization.k8s.io/pivoter-manager",
            "service/pivoter-webhook",
            "service/pivoter-catalogd",
            "deployment.apps/pivoter",
            "poddisruptionbudget.policy/pivoter",
            "job.batch/pivoter-webhook-cert",
        ]
    )

    # On the kwok node the two replicas are "running" (simulated: nothing executes there).
    def available() -> bool:
        status = kube.get(DEPLOYMENTS, "pivoter", NAMESPACE).get("status") or {}
        return status.get("availableReplicas") == 2

    wait_for(available, timeout=120, what="deploy/'s Deployment to be Available on kwok")


def _job_script() -> str:
    docs = list(yaml.safe_load_all((REPO / "deploy" / "05-webhook.yaml").read_text()))
    job = next(doc for doc in docs if doc["kind"] == "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python3", "-c"]
    return str(container["args"][0])


def _run_image(
    cluster: TestCluster, image: BuiltImage, *args: str, account: str, entrypoint: str = ""
) -> subprocess.CompletedProcess[str]:
    flags = ["--entrypoint", entrypoint] if entrypoint else []
    argv = [str(RUN), "--kubeconfig", str(cluster.kubeconfig), "--service-account", account]
    argv += ["--name", "pivoter-test-job", *flags, image.tag, *args]
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_webhook_certificate_job_makes_the_secret_once(
    deployed: str, private_cluster: TestCluster, built_image: BuiltImage, kube: Kube
) -> None:
    account = f"{NAMESPACE}/pivoter-webhook-cert"
    script = _job_script()
    first = _run_image(
        private_cluster, built_image, "-c", script, account=account, entrypoint="python3"
    )
    assert first.returncode == 0, first.stderr
    assert "created for pivoter-webhook.pivoter-system.svc" in first.stdout
    secret = kube.get(SECRETS, "pivoter-webhook-cert", NAMESPACE)
    assert secret["type"] == "kubernetes.io/tls"
    data = {key: base64.b64decode(value) for key, value in secret["data"].items()}
    cert = x509.load_pem_x509_certificate(data["tls.crt"])
    ca = x509.load_pem_x509_certificate(data["ca.crt"])
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [
        "pivoter-webhook.pivoter-system.svc",
        "pivoter-webhook.pivoter-system.svc.cluster.local",
    ]
    cert.verify_directly_issued_by(ca)
    # A second run (the Job retried, or applied again) keeps it: both replicas must agree.
    second = _run_image(
        private_cluster, built_image, "-c", script, account=account, entrypoint="python3"
    )
    assert second.returncode == 0, second.stderr
    assert "exists; kept" in second.stdout
    kept = kube.get(SECRETS, "pivoter-webhook-cert", NAMESPACE)
    assert kept["metadata"]["resourceVersion"] == secret["metadata"]["resourceVersion"]


def _source_config_map() -> dict[str, Any]:
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "least-privilege", "namespace": "lp-app"},
        "data": {"installed": "as the service account lp-app/installer"},
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "lp-bundle", "namespace": NAMESPACE},
        "immutable": True,
        "data": {"configmap.yaml": yaml.safe_dump(manifest)},
    }


def _installer_account(private_cluster: TestCluster) -> None:
    """lp-app/installer may write ConfigMaps in lp-app, and nothing else; pivoter may read the
    kinds it installs (ConfigMaps: drift and health are watched with its own identity), as
    deploy/03-rbac-installer.yaml tells an admin who leaves the installer out."""
    text = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: pivoter-content-reader}
rules:
  - {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: pivoter-content-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pivoter-content-reader}
subjects: [{kind: ServiceAccount, name: pivoter, namespace: pivoter-system}]
---
apiVersion: v1
kind: Namespace
metadata: {name: lp-app}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: installer, namespace: lp-app}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: installer, namespace: lp-app}
rules:
  - {apiGroups: [""], resources: [configmaps], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: installer, namespace: lp-app}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: installer}
subjects: [{kind: ServiceAccount, name: installer, namespace: lp-app}]
"""
    created = subprocess.run(
        [str(tool("kubectl")), "--kubeconfig", str(private_cluster.kubeconfig), "apply", "-f", "-"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert created.returncode == 0, created.stderr


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return int(response.status) == 200
    except OSError:
        return False


def test_the_daemon_needs_nothing_beyond_its_own_roles(
    deployed: str, private_cluster: TestCluster, built_image: BuiltImage, kube: Kube, tmp_path: Path
) -> None:
    with contextlib.suppress(NotFound):
        kube.delete(CLUSTER_ROLE_BINDINGS, "pivoter-installer")
    _installer_account(private_cluster)
    kube.create(CONFIG_MAPS, _source_config_map(), NAMESPACE)
    probes, webhook = free_ports(2)
    log = tmp_path / "pivoter.log"
    argv = [str(RUN), "--kubeconfig", str(private_cluster.kubeconfig), "--name", "pivoter-lp"]
    argv += [built_image.tag, "run", "--leader-elect", "--log-format", "text"]
    argv += ["--metrics-bind-address", "0", "--health-probe-bind-address", f"127.0.0.1:{probes}"]
    argv += ["--webhook-bind-address", f"127.0.0.1:{webhook}"]
    argv += ["--webhook-url", f"https://127.0.0.1:{webhook}"]
    with log.open("wb") as sink:
        daemon = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: _ready(probes), timeout=90, what="pivoter in the image to be ready")
        kube.create(
            BUNDLE_DEPLOYMENTS,
            {
                "apiVersion": "core.rukpak.io/v1alpha1",
                "kind": "BundleDeployment",
                "metadata": {"name": "least-privilege"},
                "spec": {
                    "provisionerClassName": "core-rukpak-io-plain",
                    "serviceAccount": {"name": "installer", "namespace": "lp-app"},
                    "template": {
                        "spec": {
                            "provisionerClassName": "core-rukpak-io-plain",
                            "source": {
                                "type": "configMaps",
                                "configMaps": [
                                    {"configMap": {"name": "lp-bundle"}, "path": "manifests"}
                                ],
                            },
                        }
                    },
                },
            },
        )

        def installed() -> bool:
            status = kube.get(BUNDLE_DEPLOYMENTS, "least-privilege").get("status") or {}
            conditions = status.get("conditions") or []
            return any(c["type"] == "Installed" and c["status"] == "True" for c in conditions)

        try:
            wait_for(installed, timeout=120, what="the BundleDeployment to be Installed")
        except AssertionError as exc:
            status = kube.get(BUNDLE_DEPLOYMENTS, "least-privilege").get("status")
            tail = log.read_text(errors="replace")[-3000:]
            raise AssertionError(f"{exc}\nstatus: {status}\nlog: {tail}") from None
        made = kube.get(CONFIG_MAPS, "least-privilege", "lp-app")
        assert made["data"] == {"installed": "as the service account lp-app/installer"}
    finally:
        daemon.send_signal(signal.SIGTERM)
        code = daemon.wait(60)
    text = log.read_text(errors="replace")
    assert code == 0, text[-3000:]
    assert not re.search(rf'"{re.escape(SERVICE_ACCOUNT)}" cannot \w+ resource', text), text
    assert "403" not in text, text
    assert "admission webhooks registered" in text
    assert "released lease" in text
