"""A daemon is not ready while it still sets up its controllers: ``pivoter run`` serves its
probes before it builds them (so a port in use is reported first), and /readyz must not pass
in that moment (a test, or a rollout, would take a daemon that has decided nothing yet for a
ready one). Pure: no request is made before informers exist."""

from __future__ import annotations

from kubernetes.client import ApiClient

from pivoter.kube import Kube
from pivoter.runtime.manager import Manager
from tests.cluster import wait_for


def test_not_ready_until_started() -> None:
    manager = Manager(Kube(ApiClient()))
    assert not manager.ready()
    assert manager.caches_synced() == "the controllers are being set up"
    manager.start()
    try:
        wait_for(manager.ready, timeout=10, what="readiness once started")
    finally:
        manager.shutdown()
