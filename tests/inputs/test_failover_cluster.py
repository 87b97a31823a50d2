"""Two ``pivoter run`` replicas with leader election: the leader is SIGKILLed in the middle of a
pivot (paused there by the test hook) and the standby takes over and finishes it."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from pivoter.kube import NotFound
from tests.cluster import TestCluster, wait_for
from tests.e2e import hooked
from tests.e2e.daemon import Daemon
from tests.inputs.conftest import Env, is_
from tests.inputs.helpers import Version, config_map

pytestmark = pytest.mark.cluster

LEASE = "pivoter-failover-test"


class Replica(Daemon):
    """A daemon with leader election on short durations (a takeover within a few seconds)."""

    def __init__(
        self, kubeconfig: Path, *, namespace: str, store_dir: Path, log: Path, identity: str
    ) -> None:
        super().__init__(
            kubeconfig,
            namespace=namespace,
            store_dir=store_dir,
            log=log,
            webhook=False,
            hooked=True,
        )
        self.identity = identity

    def argv(self) -> list[str]:
        return [
            *super().argv(),
            "--leader-elect",
            "--leader-election-namespace",
            self.namespace,
            "--leader-election-id",
            LEASE,
            "--leader-election-identity",
            self.identity,
            "--leader-election-lease-duration",
            "4",
            "--leader-election-renew-deadline",
            "3",
            "--leader-election-retry-period",
            "1",
        ]


@pytest.fixture
def replicas(cluster: TestCluster, content: Env, tmp_path: Path) -> Iterator[list[Replica]]:
    started: list[Replica] = []
    yield started
    for replica in started:
        replica.stop()


def _holder(env: Env) -> str:
    leases = env.kube.resource("coordination.k8s.io/v1", "Lease")
    try:
        return str(env.kube.get(leases, LEASE, env.namespace)["spec"].get("holderIdentity") or "")
    except NotFound:
        return ""


def test_standby_takes_over_a_pivot_the_killed_leader_left(
    cluster: TestCluster, content: Env, tmp_path: Path, replicas: list[Replica]
) -> None:
    env, ns = content, content.namespace

    def replica(identity: str) -> Replica:
        made = Replica(
            cluster.kubeconfig,
            namespace=ns,
            store_dir=tmp_path / f"store-{identity}",
            log=tmp_path / f"{identity}.log",
            identity=identity,
        )
        replicas.append(made)
        return made

    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    leader = replica("first")
    leader.start(env={hooked.PAUSE_PIVOT_AT: "Waiting"})
    wait_for(lambda: _holder(env) == "first", timeout=30, what="the first replica to lead")
    standby = replica("second")
    standby.start()

    name = env.resolution([{"name": "web"}])
    env.wait(
        name,
        lambda o: (o["status"].get("pivot") or {}).get("phase") == "Waiting",
        what="the leader's pivot paused in Waiting",
    )
    os.kill(leader.pid, signal.SIGKILL)
    wait_for(lambda: _holder(env) == "second", timeout=30, what="the standby to take over")
    obj = env.wait(
        name,
        lambda o: is_(o, "Ready", "True") and o["status"].get("activeRevision") == 1,
        what="the pivot finished by the new leader",
    )
    assert obj["status"]["pivot"]["phase"] == "Succeeded"
    assert env.config_map_data("web") == {"version": "1.0.0"}
    env.cleanup()
