"""Session-wide pytest fixtures: the Kubernetes control plane and per-test namespaces.

The machinery lives in tests/cluster.py (and hack/cluster/localcluster); this file only wires it
into pytest. The control plane starts lazily, the first time a test asks for ``cluster``.

Markers are completed here at collection, before ``-m`` selects: a test that uses the ``cluster``
fixture (directly or through other fixtures) or is marked ``kwok`` is ``cluster``; a ``cluster``
or ``opm`` test, or one reaching a fixture of ``tests.tools.TOOL_FIXTURES``, is ``tools``. So
``pytest -m "not cluster and not tools"`` is the pure set (see docs/development.md).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from provisioners.apply.applier import Applier, Owner
from provisioners.apply.kubeapi import KubeAPI
from tests import tools
from tests.cluster import TestCluster, env_kubeconfig, session_labels, unique_name, wait_for

REPO = Path(__file__).resolve().parents[1]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Add the implied markers before ``-m`` deselects (pytest's own hook runs after this one):
    ``cluster`` for every test reaching the ``cluster`` fixture (directly or through other
    fixtures) or marked ``kwok``; ``tools`` for every ``cluster`` or ``opm`` test (the control
    plane and opm are built tools) and every test reaching one of ``tools.TOOL_FIXTURES``."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if "cluster" in fixtures or item.get_closest_marker("kwok"):
            item.add_marker(pytest.mark.cluster)
        if (
            item.get_closest_marker("cluster")
            or item.get_closest_marker("opm")
            or fixtures & tools.TOOL_FIXTURES
        ):
            item.add_marker(pytest.mark.tools)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadscope`` by the groups of :mod:`tests.xdist_groups` (hack/test.sh)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from tests.xdist_groups import GroupScheduling

    return GroupScheduling(config, log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Tell :func:`tests.tools.tool` which test runs, so it can refuse one not marked ``tools``."""
    tools.set_running(item)
    try:
        return (yield)
    finally:
        tools.set_running(None)


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

    def default_account() -> bool:
        try:
            core.read_namespaced_service_account("default", name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            return False
        return True

    # The controller manager creates the namespace's "default" ServiceAccount a moment later; a
    # Pod created before it is forbidden ("serviceaccount default not found"), a flake under load.
    wait_for(default_account, timeout=120, interval=0.05, what=f"ServiceAccount {name}/default")
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
