"""Lease leader election against real ``coordination.k8s.io/v1`` Leases.

Short timings (lease 3 s, renew deadline 2 s, retry 0.5 s) keep the tests quick; the rules are
the same as with the 15/10/2 s defaults. test_leader_logic.py checks each rule on a fake clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pivoter.apis.resources import LEASES, PODS
from pivoter.kube import Kube, Resource
from pivoter.observability import Metrics
from pivoter.runtime import (
    KubeLeaseLock,
    LeaderElectionConfig,
    LeaderElector,
    Manager,
    ManagerExit,
    Result,
)
from pivoter.runtime.leaderlabel import LABEL, LeaderLabel
from tests.cluster import wait_for

pytestmark = pytest.mark.cluster

FAST = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.5}
SLACK = 1.5  # API round trips and thread scheduling on a busy 2-core machine


def _config(namespace: str, identity: str) -> LeaderElectionConfig:
    return LeaderElectionConfig(namespace=namespace, name="lock", identity=identity, **FAST)


def _elector(kube: Kube, namespace: str, identity: str, log: list[str]) -> LeaderElector:
    return LeaderElector(
        _config(namespace, identity),
        KubeLeaseLock(kube, namespace, "lock", timeout=1.0),
        on_started_leading=lambda: log.append(f"{identity}+"),
        on_stopped_leading=lambda: log.append(f"{identity}-"),
    )


def _holder(kube: Kube, namespace: str) -> str:
    return str(kube.get(LEASES, "lock", namespace)["spec"].get("holderIdentity") or "")


class Overlap:
    """Samples electors every few milliseconds and remembers any moment two led at once."""

    def __init__(self, electors: list[LeaderElector]) -> None:
        self.electors = electors
        self.both: list[float] = []
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.samples += 1
            if sum(e.is_leader() for e in self.electors) > 1:
                self.both.append(time.monotonic())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def electors() -> Iterator[list[LeaderElector]]:
    made: list[LeaderElector] = []
    yield made
    for elector in made:
        elector.stop()


def test_never_two_leaders_and_a_killed_leader_is_replaced_in_time(
    kube: Kube, namespace: str, electors: list[LeaderElector]
) -> None:
    log: list[str] = []
    a, b = _elector(kube, namespace, "a", log), _elector(kube, namespace, "b", log)
    electors += [a, b]
    overlap = Overlap([a, b])
    try:
        a.start()
        wait_for(a.is_leader, timeout=10, what="a to lead")
        b.start()
        time.sleep(2 * FAST["lease_duration"])  # b stands by through several lease durations
        assert not b.is_leader()
        assert a.is_leader()
        assert _holder(kube, namespace) == "a"
        assert b.healthy()  # a proper standby: it reads the Lease

        a.stop(release=False)  # killed: the Lease is left to expire
        killed = time.monotonic()
        wait_for(b.is_leader, timeout=15, what="b to take over")
        handover = time.monotonic() - killed
    finally:
        overlap.stop()
    assert overlap.both == []
    assert overlap.samples > 100
    documented = FAST["lease_duration"] + FAST["retry_period"] * 1.2
    assert handover < documented + SLACK, f"handover took {handover:.1f}s"
    lease = kube.get(LEASES, "lock", namespace)["spec"]
    assert lease["holderIdentity"] == "b"
    assert lease["leaseTransitions"] == 1
    assert lease["leaseDurationSeconds"] == 3
    b.stop()
    assert _holder(kube, namespace) == ""  # released on a graceful stop
    assert log == ["a+", "a-", "b+", "b-"]


def test_a_graceful_leader_releases_and_the_standby_does_not_wait_for_expiry(
    kube: Kube, namespace: str, electors: list[LeaderElector]
) -> None:
    log: list[str] = []
    a, b = _elector(kube, namespace, "a", log), _elector(kube, namespace, "b", log)
    electors += [a, b]
    a.start()
    wait_for(a.is_leader, timeout=10, what="a to lead")
    b.start()
    wait_for(b.healthy, timeout=10, what="b to stand by")
    a.stop(release=True)
    released = time.monotonic()
    wait_for(b.is_leader, timeout=10, what="b to take over")
    assert time.monotonic() - released < FAST["lease_duration"]


def test_a_lost_lease_stops_the_controllers(kube: Kube, namespace: str) -> None:
    configmaps = Resource("v1", "ConfigMap", "configmaps", namespaced=True)
    metrics = Metrics(process=False)
    manager = Manager(kube, metrics=metrics, leader_election=_config(namespace, "manager"))
    reconciled: list[str] = []

    def reconcile(key: str) -> Result:
        reconciled.append(key)
        return Result()

    controller = manager.controller("counter", reconcile)
    controller.watch(manager.informer_for(configmaps, namespace=namespace))
    outcome: list[ManagerExit] = []
    runner = threading.Thread(target=lambda: outcome.append(manager.run()), daemon=True)
    runner.start()
    try:
        assert manager.wait_controllers_started(30)
        kube.create(
            configmaps,
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}},
            namespace,
        )
        wait_for(lambda: f"{namespace}/one" in reconciled, what="a reconcile while leading")
        status = {"name": "lock"}
        assert metrics.registry.get_sample_value("leader_election_master_status", status) == 1

        # Someone else takes the Lease (an operator's edit, or a split brain elsewhere).
        lease: dict[str, Any] = kube.get(LEASES, "lock", namespace)
        lease["spec"]["holderIdentity"] = "intruder"
        lease["spec"]["leaseDurationSeconds"] = 60
        kube.replace(LEASES, lease, namespace)

        assert manager.lost_leadership.wait(FAST["renew_deadline"] + SLACK + 1)
        runner.join(30)
        assert outcome == [ManagerExit.LOST_LEADERSHIP]
        assert not controller.running
        assert controller.queue.shutting_down
        assert metrics.registry.get_sample_value("leader_election_master_status", status) == 0
        assert _holder(kube, namespace) == "intruder"  # not released: it is not ours any more
    finally:
        manager.stop()
        runner.join(30)


def _pod(kube: Kube, namespace: str, name: str) -> None:
    kube.create(
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "example.invalid/x:1"}]},
        },
        namespace,
    )


def _labelled(kube: Kube, namespace: str, name: str) -> bool:
    labels = kube.get(PODS, name, namespace)["metadata"].get("labels") or {}
    return labels.get(LABEL) == "true"


def test_the_leaders_pod_alone_carries_the_leader_label(kube: Kube, namespace: str) -> None:
    """What a Service selecting pivoter.io/leader=true reaches: the leader, then its successor."""
    managers = {}
    runners = {}
    for name in ("a", "b"):
        _pod(kube, namespace, name)
        managers[name] = Manager(kube, leader_election=_config(namespace, name))
        label = LeaderLabel.from_environment(kube, {"POD_NAME": name, "POD_NAMESPACE": namespace})
        assert label is not None
        label.mark(False)
        managers[name].on_leading(label.mark)
    try:
        runners["a"] = threading.Thread(target=managers["a"].run, daemon=True)
        runners["a"].start()
        wait_for(lambda: _labelled(kube, namespace, "a"), timeout=30, what="a's pod labelled")
        runners["b"] = threading.Thread(target=managers["b"].run, daemon=True)
        runners["b"].start()
        time.sleep(2 * FAST["lease_duration"])  # b stands by
        assert not _labelled(kube, namespace, "b")
        assert _labelled(kube, namespace, "a")
        managers["a"].stop()  # a graceful stop: the label goes with the lease
        runners["a"].join(30)
        assert not _labelled(kube, namespace, "a")
        wait_for(lambda: _labelled(kube, namespace, "b"), timeout=30, what="b's pod labelled")
    finally:
        for name, manager in managers.items():
            manager.stop()
            if name in runners:
                runners[name].join(30)
    assert not _labelled(kube, namespace, "b")


def test_outside_a_pod_there_is_no_label_to_keep() -> None:
    assert LeaderLabel.from_environment(Kube.__new__(Kube), {}) is None
    assert LeaderLabel.from_environment(Kube.__new__(Kube), {"POD_NAME": "p"}) is None
