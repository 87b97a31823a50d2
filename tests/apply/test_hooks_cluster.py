"""The hook runner against the real control plane: order, waiting, delete policies, failure."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from provisioners.apply.applier import Applier, Owner
from provisioners.apply.hooks import HookFailed, HookRunner
from provisioners.apply.kubeapi import KubeAPI, NotFound
from provisioners.formats.base import Hook
from tests.cluster import TestCluster, unique_name

pytestmark = pytest.mark.cluster


@pytest.fixture
def api(cluster: TestCluster) -> Iterator[KubeAPI]:
    api_client = cluster.api_client()
    yield KubeAPI(api_client)
    api_client.close()


def _pod(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "registry.example/never-ends:1"}]},
    }


def _cm(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }


def _exists(api: KubeAPI, path: str) -> bool:
    try:
        api.request("GET", path)
    except NotFound:
        return False
    return True


def test_hooks_run_in_weight_order_and_a_stuck_one_fails_and_is_deleted(
    api: KubeAPI, namespace: str
) -> None:
    applier = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    runner = HookRunner(applier, timeout=2.0, poll=0.2)
    late = Hook(("pre-install",), 10, ("before-hook-creation",), _cm("late", namespace))
    early = Hook(("pre-install",), -1, ("hook-succeeded",), _cm("early", namespace))
    other = Hook(("post-install",), 0, ("before-hook-creation",), _cm("other", namespace))
    notes = runner.run([late, other, early], "pre-install")
    assert [n.split(" (")[0] for n in notes] == [
        "ran pre-install hook ConfigMap early",
        "ran pre-install hook ConfigMap late",
    ]
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    assert not _exists(api, f"{base}/early")  # hook-succeeded
    assert _exists(api, f"{base}/late")
    assert not _exists(api, f"{base}/other")  # another event

    # A Pod that never finishes (kwok keeps it Running): the hook times out, fails the step,
    # and hook-failed deletes it; the hooks after it do not run.
    stuck = Hook(("pre-upgrade",), 0, ("hook-failed",), _pod("stuck", namespace))
    after = Hook(("pre-upgrade",), 1, ("before-hook-creation",), _cm("after", namespace))
    with pytest.raises(
        HookFailed, match="pre-upgrade hook Pod stuck failed: not finished after 2s"
    ):
        runner.run([after, stuck], "pre-upgrade")
    assert not _exists(api, f"{base}/after")
    # Deletion is asynchronous (the Pod's grace period); it is on its way out.
    try:
        pod = api.request("GET", f"/api/v1/namespaces/{namespace}/pods/stuck")
    except NotFound:
        pod = None
    assert pod is None or pod["metadata"].get("deletionTimestamp")
