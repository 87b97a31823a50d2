"""Fixtures for registry+v1 BundleDeployments through a running pivoter (pods on kwok nodes)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.cluster import TestCluster, session_labels, unique_name
from tests.drift.running import Pivoter, running_pivoter


@pytest.fixture
def pivoter(
    cluster: TestCluster, rukpak_crds: None, namespace: str, tmp_path: Path
) -> Iterator[Pivoter]:
    """The provisioning controllers running through a Manager; ``namespace`` is the system
    namespace where the bundles' ConfigMaps live."""
    with running_pivoter(
        cluster.kubeconfig, tmp_path / "store", namespace, session_labels()
    ) as running:
        yield running


@pytest.fixture
def make_namespace(cluster: TestCluster) -> Iterator[Callable[[], str]]:
    """Create extra namespaces (deleted after the test)."""
    core = client.CoreV1Api(cluster.api_client())
    made: list[str] = []

    def make() -> str:
        name = unique_name("ns")
        core.create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=session_labels()))
        )
        made.append(name)
        return name

    yield make
    for name in made:
        with contextlib.suppress(ApiException):
            core.delete_namespace(name)
