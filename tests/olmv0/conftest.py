"""Fixtures for the OLM v0 tests: the real OLM v0 (tests/olmv0/peer.py) running against the
session's control plane for the tests of this package, and catalogs served by ``opm serve``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pivoter.kube import Kube, load_client
from provisioners.apply.kubeapi import KubeAPI
from tests.cluster import TestCluster
from tests.inputs.conftest import bundle_registry, content, env, hooks, input_crds
from tests.olmv0.content import BundleDir, write_fbc
from tests.olmv0.peer import OlmV0
from tests.wire.conftest import OpmServer

__all__ = [
    "bundle_registry",
    "content",
    "env",
    "hooks",
    "input_crds",
]  # the Resolution controllers, in process


@pytest.fixture(scope="package")
def olm(cluster: TestCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OlmV0]:
    """OLM v0's olm-operator and catalog-operator, started once for this package's tests and
    stopped after them (so no other test shares the cluster with OLM); OLM's CRDs are removed
    then too (the tests that run next in this worker make stand-ins of some)."""
    api_client = load_client(kubeconfig=str(cluster.kubeconfig))
    peer = OlmV0(
        cluster.kubeconfig, KubeAPI(api_client), Kube(api_client), tmp_path_factory.mktemp("olm")
    )
    before = peer.cluster_names()
    peer.install_crds()
    peer.start()
    try:
        yield peer
    finally:
        try:
            peer.remove_left_behind(before)
        finally:
            peer.stop()
            try:
                peer.remove_crds(before)
            finally:
                api_client.close()


@pytest.fixture(autouse=True)
def olm_leftovers(request: pytest.FixtureRequest) -> Iterator[None]:
    """For each test with OLM v0: remove afterwards what OLM v0 left cluster-wide (CRDs, bundle
    ClusterRoles and bindings, webhook configurations), so the next test installs the same
    bundles on a clean cluster."""
    if "olm" not in request.fixturenames:
        yield
        return
    peer: OlmV0 = request.getfixturevalue("olm")
    before = peer.cluster_names()
    yield
    peer.remove_left_behind(before)


@pytest.fixture
def olm_catalog(tmp_path: Path) -> Iterator[Callable[[list[BundleDir]], str]]:
    """Serve bundles to OLM with ``opm serve`` (manifests inline); returns the gRPC address.
    Each call starts a new server over a new directory (``opm serve`` reads its directory once)."""
    servers: list[OpmServer] = []

    def serve(bundles: list[BundleDir]) -> str:
        directory = tmp_path / f"olm-fbc-{len(servers)}"
        write_fbc(directory, bundles)
        server = OpmServer(directory, tmp_path)
        servers.append(server)
        return server.target

    yield serve
    for server in servers:
        server.close()
