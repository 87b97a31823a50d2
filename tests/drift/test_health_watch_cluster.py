"""Health follows the shared watches, not a poll (issue 8: an idle daemon must not re-read
unhealthy BundleDeployments every few seconds).

A BundleDeployment installs a custom resource; the test sets its ``Ready`` condition to False
(its CRD has no status subresource, so a plain patch writes the status; status is never drift).
The daemon runs with a health interval of a
quarter of a second: once the managed kind is watched, the BundleDeployment stays
``Healthy=False`` and is not reconciled again while nothing changes (the health interval only
applies to objects no synced cache covers), and it becomes ``Healthy=True`` within seconds when
the object turns Ready, because the shared informer queues its owner.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pivoter.kube import Resource
from tests import manifests
from tests.cluster import TestCluster, session_labels, unique_name, wait_for
from tests.drift.running import Pivoter, condition, running_pivoter

pytestmark = [pytest.mark.cluster]

HEALTH_INTERVAL = 0.25
QUIET = 3.0  # seconds watched for reconciles: a poll would run about twelve
HEALED_WITHIN = 15.0  # seconds: generous for a shared 2-core machine


@pytest.fixture
def quick_health_pivoter(
    cluster: TestCluster, rukpak_crds: None, namespace: str, tmp_path: Path
) -> Iterator[Pivoter]:
    """The provisioning controllers with a short health interval."""
    with running_pivoter(
        cluster.kubeconfig,
        tmp_path / "store",
        namespace,
        session_labels(),
        health_interval_seconds=HEALTH_INTERVAL,
    ) as running:
        yield running


def _objects(namespace: str, group: str) -> list[dict[str, Any]]:
    return [
        manifests.crd(group, "Probe", labels=session_labels()),
        manifests.custom_resource(group, "target", namespace, "Probe"),
    ]


def _set_ready(pivoter: Pivoter, probes: Resource, namespace: str, status: str) -> None:
    condition_ = {"type": "Ready", "status": status, "reason": "Test", "message": "set by the test"}
    pivoter.kube.merge_patch(probes, "target", {"status": {"conditions": [condition_]}}, namespace)


def _quiet_for(pivoter: Pivoter, name: str, seconds: float) -> bool:
    """Whether BundleDeployment ``name`` was not reconciled during the next ``seconds``."""
    before = pivoter.reconciled[name]
    time.sleep(seconds)
    return pivoter.reconciled[name] == before


def test_unhealthy_object_heals_through_the_watch(
    quick_health_pivoter: Pivoter, namespace: str
) -> None:
    pivoter = quick_health_pivoter
    group = f"{unique_name('h')}.example.com"
    name = unique_name("health")
    sources = pivoter.plain_bundle(unique_name("content"), _objects(namespace, group))
    pivoter.bundle_deployment(name, sources, crdDeletionPolicy="Delete")
    pivoter.wait(name, "Healthy", "True", reason="Healthy")
    probes = Resource(f"{group}/v1", "Probe", "probes", namespaced=True)
    _set_ready(pivoter, probes, namespace, "False")
    bd = pivoter.wait(name, "Healthy", "False", reason="Unhealthy", timeout=HEALED_WITHIN)
    assert "Probe" in condition(bd, "Healthy")["message"]
    # Settled: the kind is watched and the informer's replay to the new handler is done.
    wait_for(lambda: _quiet_for(pivoter, name, 1.0), timeout=30, what="the reconciles to settle")
    assert _quiet_for(pivoter, name, QUIET), "an unhealthy, watched BundleDeployment is polled"
    _set_ready(pivoter, probes, namespace, "True")
    pivoter.wait(name, "Healthy", "True", reason="Healthy", timeout=HEALED_WITHIN)
