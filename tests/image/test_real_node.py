"""Step 3 of issue 17: pivoter's image as real pods on a real node, deployed with deploy/.

A control plane without kwok and one real node (:mod:`tests.image.realnode`: containerd, runc and
a kubelet built from the Kubernetes Go modules) pulling the image from the test registry; then
``kubectl apply -k`` of deploy/ (through an overlay that only sets the image, pins the pods to the
node and gives them the API server's address, see :func:`tests.image.realnode.api_access_patch`):

- the webhook certificate Job runs and makes the Secret; both replicas become Ready by their
  readiness probes and stay alive by their liveness probes; one holds the Lease;
- the admission webhook is reached by the API server through its Service;
- a rolling update of pivoter to another image while a pivot is in flight: the pivot completes,
  the Lease moves to a new pod.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pivoter.kube import Kube, NotFound, Resource
from tests.cluster import TestCluster, wait_for
from tests.image.images import REPO, BuiltImage, podman
from tests.image.realnode import RealNode, api_access_patch, real_node
from tests.provisioners.servers import Registry
from tests.tools import tool

pytestmark = [pytest.mark.cluster, pytest.mark.tools, pytest.mark.slow, pytest.mark.timeout(1800)]

NAMESPACE = "pivoter-system"
PODS = Resource("v1", "Pod", "pods", namespaced=True)
JOBS = Resource("batch/v1", "Job", "jobs", namespaced=True)
SECRETS = Resource("v1", "Secret", "secrets", namespaced=True)
LEASES = Resource("coordination.k8s.io/v1", "Lease", "leases", namespaced=True)
DEPLOYMENTS = Resource("apps/v1", "Deployment", "deployments", namespaced=True)
CONFIG_MAPS = Resource("v1", "ConfigMap", "configmaps", namespaced=True)
BUNDLE_DEPLOYMENTS = Resource(
    "core.rukpak.io/v1alpha1", "BundleDeployment", "bundledeployments", namespaced=False
)


@pytest.fixture(scope="module")
def node_cluster() -> Iterator[TestCluster]:
    handle = TestCluster.start(kwok=False)  # kwok would answer for the real node's pods too
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def kube(node_cluster: TestCluster) -> Kube:
    return Kube(node_cluster.api_client())


@pytest.fixture(scope="module")
def node(
    node_cluster: TestCluster,
    kube: Kube,
    image_registry: Registry,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RealNode]:
    with real_node(
        node_cluster, kube, image_registry.host, tmp_path_factory.mktemp("node")
    ) as running:
        yield running


def kubectl(cluster: TestCluster, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        [str(tool("kubectl")), "--kubeconfig", str(cluster.kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


def _overlay(directory: Path, image: str, node: RealNode) -> Path:
    """deploy/ with the image, the node and the API server's address set, nothing else."""
    shutil.copytree(REPO / "deploy", directory / "base")
    name, _, tag = image.rpartition(":")
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["base"],
        "images": [{"name": "ghcr.io/pivoter/pivoter", "newName": name, "newTag": tag}],
        "patches": [
            api_access_patch("Deployment", "pivoter", node),
            api_access_patch("Job", "pivoter-webhook-cert", node),
        ],
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return directory


def _condition(obj: dict[str, Any], kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == kind and c["status"] == "True" for c in conditions)


def _pods(kube: Kube) -> list[dict[str, Any]]:
    return kube.list(PODS, NAMESPACE, label_selector="app.kubernetes.io/name=pivoter")[0]


def _holder(kube: Kube) -> tuple[str, int]:
    lease = kube.get(LEASES, "pivoter-leader.pivoter.io", NAMESPACE)["spec"]
    return str(lease.get("holderIdentity") or ""), int(lease.get("leaseTransitions") or 0)


def _bundle_deployment(version: str) -> str:
    source = {
        "type": "configMaps",
        "configMaps": [{"configMap": {"name": f"greeter-{version}"}, "path": "manifests"}],
    }
    return yaml.safe_dump(
        {
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {"name": "greeter"},
            "spec": {
                "provisionerClassName": "core-rukpak-io-plain",
                "template": {
                    "spec": {"provisionerClassName": "core-rukpak-io-plain", "source": source}
                },
            },
        }
    )


def _publish_demo_bundles(cluster: TestCluster) -> None:
    """hack/demo's two versions of greeter, as the demo publishes them (immutable ConfigMaps)."""
    for version in ("v1", "v2"):
        manifests = REPO / "hack" / "demo" / f"bundle-{version}" / "manifests"
        config_map = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"greeter-{version}", "namespace": NAMESPACE},
            "immutable": True,
            "data": {path.name: path.read_text() for path in sorted(manifests.iterdir())},
        }
        kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump(config_map))


def test_pivoter_runs_as_real_pods_with_deploy(
    node_cluster: TestCluster,
    kube: Kube,
    node: RealNode,
    *,
    built_image: BuiltImage,
    image_registry: Registry,
    tmp_path: Path,
) -> None:
    kubectl(node_cluster, "apply", "--server-side", "-f", str(REPO / "crds"))
    overlay = _overlay(tmp_path / "overlay", built_image.pushed, node)
    kubectl(node_cluster, "apply", "-k", str(overlay))

    # The Job made the webhook's certificate; both replicas pass their readiness probes.
    wait_for(
        lambda: _condition(kube.get(JOBS, "pivoter-webhook-cert", NAMESPACE), "Complete"),
        timeout=240,
        what="the certificate Job",
    )
    assert kube.get(SECRETS, "pivoter-webhook-cert", NAMESPACE)["type"] == "kubernetes.io/tls"

    def available() -> bool:
        status = kube.get(DEPLOYMENTS, "pivoter", NAMESPACE).get("status") or {}
        return status.get("readyReplicas") == 2 and status.get("updatedReplicas") == 2

    wait_for(available, timeout=240, what="both replicas Ready on the real node")
    pods = _pods(kube)
    assert {pod["spec"]["nodeName"] for pod in pods} == {node.name}
    names = {pod["metadata"]["name"] for pod in pods}
    wait_for(lambda: _holder(kube)[0].split("_")[0] in names, timeout=60, what="a replica to lead")
    first_leader, transitions = _holder(kube)

    # The webhook, reached by the API server through its Service, refuses a change to a Bundle.
    _publish_demo_bundles(node_cluster)
    kubectl(node_cluster, "apply", "-f", "-", stdin=_bundle_deployment("v1"))
    wait_for(
        lambda: _condition(kube.get(BUNDLE_DEPLOYMENTS, "greeter"), "Installed"),
        timeout=120,
        what="greeter v1 Installed",
    )
    bundle = kubectl(node_cluster, "get", "bundles", "-o", "jsonpath={.items[0].metadata.name}")
    patch = '{"spec":{"source":{"configMaps":[{"configMap":{"name":"x"}}]}}}'
    argv = [str(tool("kubectl")), "--kubeconfig", str(node_cluster.kubeconfig), "patch"]
    refused = subprocess.run(
        [*argv, "bundle", bundle, "--type=merge", "-p", patch],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode != 0
    assert 'admission webhook "vbundles.core.rukpak.io" denied the request' in refused.stderr

    # A rolling update of pivoter to another image, with a pivot to v2 in flight.
    containerfile = tmp_path / "next" / "Containerfile"
    containerfile.parent.mkdir()
    containerfile.write_text(f"FROM {built_image.tag}\nLABEL io.pivoter.test=next\n")
    next_tag = built_image.tag.replace(":test-", ":next-")
    podman("build", "--quiet", "--tag", next_tag, str(containerfile.parent))
    next_image = f"{image_registry.host}/{next_tag.partition('/')[2]}"
    podman("push", "--quiet", "--tls-verify=false", next_tag, next_image)
    try:
        kubectl(
            node_cluster,
            "-n",
            NAMESPACE,
            "set",
            "image",
            "deployment/pivoter",
            f"pivoter={next_image}",
        )
        kubectl(node_cluster, "apply", "-f", "-", stdin=_bundle_deployment("v2"))
        kubectl(
            node_cluster,
            "-n",
            NAMESPACE,
            "rollout",
            "status",
            "deployment/pivoter",
            "--timeout=240s",
        )

        def pivoted() -> bool:
            try:
                kube.get(CONFIG_MAPS, "greeter-config-v1", "demo-app")
            except NotFound:
                return kube.get(CONFIG_MAPS, "greeter-config-v2", "demo-app") is not None
            return False

        wait_for(pivoted, timeout=180, what="the pivot to v2 (v2's ConfigMap, v1's pruned)")
        wait_for(
            lambda: _condition(kube.get(BUNDLE_DEPLOYMENTS, "greeter"), "Installed"),
            timeout=120,
            what="greeter v2 Installed",
        )
        pods = [pod for pod in _pods(kube) if pod["metadata"].get("deletionTimestamp") is None]
        assert {pod["spec"]["containers"][0]["image"] for pod in pods} == {next_image}
        assert all(
            status["restartCount"] == 0
            for pod in pods
            for status in pod["status"]["containerStatuses"]
        )
        new_names = {pod["metadata"]["name"] for pod in pods}
        wait_for(
            lambda: _holder(kube)[0].split("_")[0] in new_names,
            timeout=60,
            what="a new replica to lead",
        )
        leader, moved = _holder(kube)
        assert leader != first_leader
        assert moved > transitions
    finally:
        podman("rmi", "--force", next_tag)
