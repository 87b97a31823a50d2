"""Session-wide pytest fixtures: the Kubernetes control plane and per-test namespaces.

The machinery lives in tests/cluster.py (and hack/cluster/localcluster); this file only wires it
into pytest. The control plane starts lazily, the first time a test asks for ``cluster``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from provisioners.apply.applier import Applier, Owner
from provisioners.apply.kubeapi import KubeAPI
from tests.cluster import TestCluster, env_kubeconfig, session_labels, unique_name, wait_for

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def cluster() -> Iterator[TestCluster]:
    """A running control plane for the whole session (PIVOTER_TEST_KUBECONFIG: use that one).

    A private control plane is always stopped and deleted at the end, also after failures and
    Ctrl-C; its processes also die with the pytest process if that is killed.
    """
    existing = env_kubeconfig()
    handle = TestCluster.existing(existing) if existing else TestCluster.start()
    try:
        yield handle
    finally:
        try:
            if existing:
                handle.sweep()
        finally:
            handle.stop()


@pytest.fixture
def namespace(cluster: TestCluster) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards."""
    name = unique_name("t")
    core = client.CoreV1Api(cluster.api_client())
    core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=session_labels()))
    )
    try:
        yield name
    finally:
        try:
            core.delete_namespace(name)
        except ApiException as exc:
            if exc.status != 404:
                raise


@pytest.fixture(scope="session")
def crds(cluster: TestCluster) -> None:
    """Every CRD of crds/, applied once per session under one owner (so fixtures never contend
    for them) and Established."""
    api = KubeAPI(cluster.api_client())
    objects = [yaml.safe_load(path.read_text()) for path in sorted((REPO / "crds").glob("*.yaml"))]
    Applier(api, Owner("Test", "crds")).apply(objects)

    def established() -> bool:
        for obj in objects:
            path = (
                f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{obj['metadata']['name']}"
            )
            conditions = (api.request("GET", path).get("status") or {}).get("conditions") or []
            if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return False
        return True

    wait_for(established, timeout=60, what="the CRDs of crds/ to be Established")


@pytest.fixture(scope="session")
def rukpak_crds(crds: None) -> None:
    """The core.rukpak.io CRDs (part of :func:`crds`)."""
