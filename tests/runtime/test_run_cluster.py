"""``pivoter run`` as a real process against the control plane: probes, metrics, the Lease, a
standby taking over, JSON logs and a clean exit on SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pivoter.apis.resources import LEASES
from pivoter.kube import Kube, NotFound
from tests.cluster import TestCluster, wait_for
from tests.ports import free_port

pytestmark = pytest.mark.cluster

LEASE = "pivoter-test-leader"
FAST = [
    "--leader-election-lease-duration",
    "3",
    "--leader-election-renew-deadline",
    "2",
    "--leader-election-retry-period",
    "0.5",
]


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


class Daemon:
    """One ``pivoter run`` process with its ports and log file."""

    def __init__(self, cluster: TestCluster, namespace: str, identity: str, log: Path) -> None:
        self.metrics_port, self.health_port = free_port(), free_port()
        self.identity = identity
        self.log = log
        argv = [
            sys.executable,
            "-m",
            "pivoter.cli.main",
            "run",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--metrics-bind-address",
            f"127.0.0.1:{self.metrics_port}",
            "--health-probe-bind-address",
            f"127.0.0.1:{self.health_port}",
            "--leader-elect",
            "--leader-election-namespace",
            namespace,
            "--leader-election-id",
            LEASE,
            "--leader-election-identity",
            identity,
            *FAST,
            "--log-format",
            "json",
        ]
        with log.open("wb") as sink:
            self.process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT)

    def probe(self, path: str) -> int:
        return _get(self.health_port, path)[0]

    def metric(self, line_start: str) -> str | None:
        status, body = _get(self.metrics_port, "/metrics")
        if status != 200:
            return None
        found = [line for line in body.splitlines() if line.startswith(line_start)]
        return found[0].rsplit(" ", 1)[1] if found else None

    def terminate(self, timeout: float = 30) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def daemons(crds: None) -> Iterator[list[Daemon]]:
    """Daemons started by a test, killed at its end (pivoter run needs the CRDs of crds/)."""
    started: list[Daemon] = []
    yield started
    for daemon in started:
        daemon.kill()


def _holder(kube: Kube, namespace: str) -> str | None:
    try:
        return str(kube.get(LEASES, LEASE, namespace)["spec"].get("holderIdentity") or "")
    except NotFound:
        return None


def test_pivoter_run_serves_probes_leads_hands_over_and_exits_cleanly(
    cluster: TestCluster, kube: Kube, namespace: str, tmp_path: Path, daemons: list[Daemon]
) -> None:
    first = Daemon(cluster, namespace, "first", tmp_path / "first.log")
    daemons.append(first)
    wait_for(lambda: first.probe("/healthz") == 200, timeout=60, what="/healthz of the daemon")
    wait_for(lambda: first.probe("/readyz") == 200, timeout=60, what="/readyz of the daemon")
    wait_for(lambda: _holder(kube, namespace) == "first", timeout=30, what="the Lease")
    status = f'leader_election_master_status{{name="{LEASE}"}}'
    wait_for(lambda: first.metric(status) == "1.0", timeout=10, what="the leader metric")
    assert first.metric("process_resident_memory_bytes") is not None

    # A second replica stands by: healthy and ready, not leading.
    second = Daemon(cluster, namespace, "second", tmp_path / "second.log")
    daemons.append(second)
    wait_for(lambda: second.probe("/readyz") == 200, timeout=60, what="the standby's /readyz")
    # Polled, as the first daemon's: one /metrics read of a loaded machine may time out.
    wait_for(lambda: second.metric(status) == "0.0", timeout=10, what="the standby's metric")
    assert _holder(kube, namespace) == "first"

    # SIGTERM: a clean exit that releases the Lease, so the standby takes over at once.
    assert first.terminate() == 0
    wait_for(lambda: _holder(kube, namespace) == "second", timeout=10, what="the handover")
    wait_for(lambda: second.metric(status) == "1.0", timeout=10, what="the new leader's metric")
    assert second.terminate() == 0
    assert _holder(kube, namespace) == ""

    records = [json.loads(line) for line in first.log.read_text().splitlines() if line.strip()]
    messages = [r["msg"] for r in records]
    assert all({"ts", "level", "logger", "msg"} <= set(r) for r in records)
    assert any("now holds the lease" in m for m in messages)
    assert any("released lease" in m for m in messages)
    assert any("manager shut down (stopped)" in m for m in messages)


def test_pivoter_run_exits_non_zero_when_it_cannot_renew_the_lease(
    cluster: TestCluster, namespace: str, tmp_path: Path, daemons: list[Daemon]
) -> None:
    daemon = Daemon(cluster, namespace, "lonely", tmp_path / "lonely.log")
    daemons.append(daemon)
    wait_for(lambda: daemon.probe("/readyz") == 200, timeout=60, what="/readyz")
    cluster.stop_apiserver()
    try:
        # The leader cannot renew: it stops leading and the process exits non-zero, so the
        # kubelet restarts it and it competes again (controller-runtime's behaviour).
        assert daemon.process.wait(30) == 1
    finally:
        cluster.start_apiserver()
    assert "leadership was lost" in daemon.log.read_text()
