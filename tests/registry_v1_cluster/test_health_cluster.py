"""The ten real registry+v1 bundles installed through BundleDeployments become Healthy.

Pods run on the control plane's simulated (kwok) node, which makes them Running and Ready, so the
operators' Deployments become Available without their images. Each bundle's content reaches the
Bundle as ConfigMaps (``manifests`` and ``metadata``) and installs into a namespace of its own,
with webhook certificates generated and kept. An operator whose pods cannot be scheduled (a
nodeSelector matching no node) is reported ``Healthy=False`` naming its Deployment.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pivoter.kube import Resource
from tests.cluster import unique_name, wait_for
from tests.drift.running import Pivoter, condition
from tests.registry_v1.helpers import bundle, real_bundles

pytestmark = [pytest.mark.cluster, pytest.mark.kwok]

REGISTRY = "core-rukpak-io-registry"
SECRETS = Resource("v1", "Secret", "secrets", namespaced=True)
# Operators whose Deployment selects node-role.kubernetes.io/master nodes.
MASTER_ONLY = {"community-windows-machine-config-operator"}


def test_all_ten_real_bundles_become_healthy(
    pivoter: Pivoter, make_namespace: Callable[[], str]
) -> None:
    names: dict[str, str] = {}
    for package, root in real_bundles().items():
        name = unique_name("rv1")
        sources = pivoter.registry_bundle(unique_name(package[:20]), root)
        config: dict[str, Any] = {"installNamespace": make_namespace()}
        if package in MASTER_ONLY:
            # Its CSV pins the operator to control-plane nodes; the simulated node is a worker,
            # so it is placed as a Subscription's config would place it on such a cluster.
            config["deploymentConfig"] = {"nodeSelector": {"kubernetes.io/os": "linux"}}
        pivoter.bundle_deployment(
            name, sources, provisioner=REGISTRY, config=config, crdDeletionPolicy="Delete"
        )
        names[package] = name
    assert len(names) == 10
    for package, name in names.items():
        bd = pivoter.wait(name, "Healthy", "True", timeout=240)
        assert condition(bd, "Installed")["reason"] == "InstallationSucceeded", package
        kinds = {item["kind"] for item in bd["status"]["inventory"]}
        assert "Deployment" in kinds, (package, kinds)


def test_webhook_certificate_is_kept_across_reconciles(
    pivoter: Pivoter, make_namespace: Callable[[], str]
) -> None:
    """The controller reads the live Secret back: the certificate does not change on its own."""
    namespace = make_namespace()
    name = unique_name("green")
    sources = pivoter.registry_bundle(unique_name("green"), bundle("kube-green"))
    pivoter.bundle_deployment(
        name,
        sources,
        provisioner=REGISTRY,
        config={"installNamespace": namespace},
        crdDeletionPolicy="Delete",
    )
    pivoter.wait(name, "Healthy", "True", timeout=120)
    secret_name = "kube-green-controller-manager-service-cert"
    first = pivoter.kube.get(SECRETS, secret_name, namespace)
    # Deleting another managed object makes the daemon convert and apply the bundle again.
    pivoter.kube.delete(
        Resource("v1", "Service", "services", True), "kube-green-webhook-service", namespace
    )
    wait_for(
        lambda: pivoter.events(name, "DriftCorrected"), timeout=30, what="the drift correction"
    )
    again = pivoter.kube.get(SECRETS, secret_name, namespace)
    assert again["data"] == first["data"]
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_unschedulable_operator_is_unhealthy(
    pivoter: Pivoter, make_namespace: Callable[[], str]
) -> None:
    namespace = make_namespace()
    name = unique_name("mercury")
    sources = pivoter.registry_bundle(unique_name("mercury"), bundle("mercury-operator"))
    pivoter.bundle_deployment(
        name,
        sources,
        provisioner=REGISTRY,
        config={
            "installNamespace": namespace,
            "deploymentConfig": {"nodeSelector": {"pivoter.test/no-such-node": "true"}},
        },
        crdDeletionPolicy="Delete",
    )
    pivoter.wait(name, "Healthy", "False", reason="Unhealthy", timeout=120)

    def settled() -> str:
        # First "rollout in progress" while the ReplicaSet is created, then the lasting reason.
        message = str(condition(pivoter.get(name), "Healthy").get("message", ""))
        return message if "0 of 1 replicas available" in message else ""

    message = wait_for(settled, timeout=60, what="the unavailable replica to be reported")
    assert f"Deployment {namespace}/mercury-operator" in message, message
    bd = pivoter.get(name)
    assert condition(bd, "Healthy")["status"] == "False"
    assert condition(bd, "Installed")["status"] == "True"
