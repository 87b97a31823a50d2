"""A BundleDeployment pass with nothing to do makes no request to the API server: the daemon
reads the BundleDeployment and its generated Bundles from the shared informer caches (with its
own writes read back until the cache has them), writes status only when it changes, and compares
the installed objects in their shared caches. Measured with the daemon's own request counter
(``pivoter_kube_requests_total``) while full checks run every second, on the real control
plane (counted by the thread that sends them: only the BundleDeployment controller's)."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster import TestCluster, session_labels, unique_name
from tests.drift.running import Pivoter, running_pivoter

pytestmark = [pytest.mark.cluster, pytest.mark.kwok]


@pytest.fixture
def busy(
    cluster: TestCluster, rukpak_crds: None, namespace: str, tmp_path: Path
) -> Iterator[Pivoter]:
    """The provisioning controllers, each BundleDeployment fully checked every second."""
    with running_pivoter(
        cluster.kubeconfig,
        tmp_path / "store",
        namespace,
        session_labels(),
        full_check_interval_seconds=1.0,
    ) as running:
        yield running


class _PassRequests:
    """The requests the BundleDeployment controller's workers send (by the thread that sends
    them: the Bundle controller and the informers are left out), by verb and path."""

    def __init__(self, pivoter: Pivoter) -> None:
        self.made: collections.Counter[tuple[str, str]] = collections.Counter()
        self._inner = pivoter.kube.observer
        pivoter.kube.observer = self._observe

    def _observe(self, method: str, path: str, query: list[tuple[str, str]], code: int) -> None:
        if threading.current_thread().name.startswith("bundledeployments-worker"):
            self.made[(method, path)] += 1
        if self._inner is not None:
            self._inner(method, path, query, code)


def test_a_steady_pass_makes_no_request(busy: Pivoter, namespace: str) -> None:
    name = unique_name("idle")
    objects = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"settings-{i}", "namespace": namespace},
            "data": {"i": str(i)},
        }
        for i in range(3)
    ]
    busy.bundle_deployment(name, busy.plain_bundle(unique_name("content"), objects))
    busy.wait(name, "Installed", "True", reason="InstallationSucceeded")
    busy.wait(name, "Healthy", "True")
    time.sleep(3)  # the passes the install's own writes queued
    requests = _PassRequests(busy)
    passes = busy.reconciled[name]
    time.sleep(6)
    assert busy.reconciled[name] - passes >= 4, "the full checks did not run"
    assert dict(requests.made) == {}, "requests made by passes with nothing to do"


class _DryRuns:
    """The server-side dry runs the BundleDeployment controller's workers send: how a drift
    comparison reads what an apply would change."""

    def __init__(self, pivoter: Pivoter) -> None:
        self.made: list[str] = []
        self._inner = pivoter.kube.observer
        pivoter.kube.observer = self._observe

    def _observe(self, method: str, path: str, query: list[tuple[str, str]], code: int) -> None:
        worker = threading.current_thread().name.startswith("bundledeployments-worker")
        if worker and ("dryRun", "All") in query:
            self.made.append(f"{method} {path}")
        if self._inner is not None:
            self._inner(method, path, query, code)


def test_the_first_checks_after_an_install_compare_with_what_the_apply_answered(
    busy: Pivoter, namespace: str
) -> None:
    name = unique_name("fresh")
    objects = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"fresh-{i}", "namespace": namespace},
            "data": {"i": str(i)},
        }
        for i in range(2)
    ]
    dry_runs = _DryRuns(busy)
    busy.bundle_deployment(name, busy.plain_bundle(unique_name("content"), objects))
    busy.wait(name, "Installed", "True", reason="InstallationSucceeded")
    passes = busy.reconciled[name]
    time.sleep(4)
    assert busy.reconciled[name] - passes >= 2, "the full checks did not run"
    # Each object is in the cache as the apply answered: nothing is compared from the API.
    assert dry_runs.made == []
