"""The control plane stopped and restarted in the middle of a pivot: ``pivoter run`` rides out the
outage and the pivot (or the rollback of a broken update) finishes, with nothing left behind.

The daemon is the real ``pivoter run`` with leader election, started through
:mod:`tests.e2e.hooked` with a hold file (``PIVOTER_TEST_HOLD_FILE``) so that a pivot can be held
in a named phase and released by the test. For each pivot: hold it in ``Waiting`` (the children
are applied, not yet installed), stop kube-apiserver (etcd keeps the data), release the hold
while the daemon is cut off, wait a few seconds, start the API server again, and check the
outcome. The session's cluster is shared, so the API server is always started again in a
``finally`` and the outage is kept short (but note that ``stop_apiserver`` waits for
kube-apiserver's graceful exit, ~15 s here, during which it already refuses new connections: the
daemon is cut off for ~17 s).

With a Lease that outlives the outage the leader keeps leading and finishes the pivot (and the
rollback of a broken update); with the default lease flags it loses the Lease, exits 1, and the
restarted process (as the kubelet would restart it) finishes the pivot.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pivoter.apis.resources import BUNDLES, RESOLUTIONS
from pivoter.kube import NotFound
from tests.cluster import TestCluster, wait_for
from tests.e2e import hooked
from tests.e2e.daemon import Daemon
from tests.inputs.conftest import Env, is_
from tests.inputs.helpers import Version, config_map, unschedulable_deployment

pytestmark = pytest.mark.cluster

LEASE = "pivoter-controlplane-test"
OUTAGE_SECONDS = 2.0


class HoldableDaemon(Daemon):
    """``pivoter run`` (via :mod:`tests.e2e.hooked`) with leader election. By default
    its Lease outlives a short API server outage, so the leader keeps leading through it;
    ``lease=None`` keeps the flags' defaults (15 s lease, 10 s renew deadline)."""

    lease: tuple[str, str] | None = ("60", "45")
    """(lease duration, renew deadline) in seconds."""

    def argv(self) -> list[str]:
        return [
            *super().argv(),
            "--leader-elect",
            "--leader-election-namespace",
            self.namespace,
            "--leader-election-id",
            LEASE,
            "--leader-election-identity",
            "only",
            *(
                [
                    "--leader-election-lease-duration",
                    self.lease[0],
                    "--leader-election-renew-deadline",
                    self.lease[1],
                ]
                if self.lease
                else []
            ),
        ]


@pytest.fixture
def hold(tmp_path: Path) -> Path:
    """The hold file: while it exists, a pivot entering the phase it names waits."""
    return tmp_path / "hold"


@pytest.fixture
def daemon(
    cluster: TestCluster, content: Env, tmp_path: Path, hold: Path
) -> Iterator[HoldableDaemon]:
    process = HoldableDaemon(
        cluster.kubeconfig,
        namespace=content.namespace,
        store_dir=tmp_path / "daemon-store",
        log=tmp_path / "daemon.log",
        webhook=False,
        hooked=True,
        env={hooked.HOLD_FILE: str(hold)},
    )
    yield process
    process.stop()


def _held(phase: str, revision: int) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        pivot = obj["status"].get("pivot") or {}
        return bool(pivot.get("phase") == phase and pivot.get("revision") == revision)

    return check


def _outage(cluster: TestCluster, hold: Path) -> None:
    """Stop the API server, release the held pivot while it is gone, start it again."""
    cluster.stop_apiserver()
    try:
        hold.unlink()
        time.sleep(OUTAGE_SECONDS)
    finally:
        cluster.start_apiserver()


def _holder(env: Env) -> str:
    leases = env.kube.resource("coordination.k8s.io/v1", "Lease")
    try:
        return str(env.kube.get(leases, LEASE, env.namespace)["spec"].get("holderIdentity") or "")
    except NotFound:
        return ""


def _owned_bundles(env: Env, child: str) -> list[str]:
    """The generated Bundles a child BundleDeployment owns."""
    return sorted(
        b["metadata"]["name"]
        for b in env.kube.list(BUNDLES)[0]
        if any(o.get("name") == child for o in b["metadata"].get("ownerReferences") or [])
    )


def _deployment_exists(env: Env, name: str) -> bool:
    try:
        env.kube.get(env.kube.resource("apps/v1", "Deployment"), name, env.namespace)
    except NotFound:
        return False
    return True


def _assert_alive(daemon: Daemon) -> None:
    assert daemon.process is not None
    assert daemon.process.poll() is None, daemon.tail()


def _assert_on_revision(env: Env, name: str, revision: int) -> None:
    """Every child is on ``revision``, Installed and Healthy, with exactly its active Bundle."""
    children = env.children(name)
    assert sorted(children) == [f"{name}-db", f"{name}-web"]
    for child, bd in children.items():
        assert bd["metadata"]["annotations"]["pivoter.io/revision"] == str(revision), child
        assert is_(bd, "Installed", "True"), bd.get("status")
        assert is_(bd, "Healthy", "True"), bd.get("status")
        active = (bd.get("status") or {}).get("activeBundle")
        assert _owned_bundles(env, child) == [active], child


def test_pivot_and_rollback_finish_across_an_api_server_restart(
    cluster: TestCluster, content: Env, daemon: HoldableDaemon, hold: Path
) -> None:
    env, ns = content, content.namespace
    daemon.start()

    def release(package: str, version: str, previous: str, *extra: str) -> None:
        manifests = "---\n".join([config_map(package, ns, version=version), *extra])
        env.publisher.add(package, Version(version, manifests, previous))

    release("db", "1.0.0", "")
    release("web", "1.0.0", "", config_map("web-extra", ns, only="1.0.0"))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "db"}, {"name": "web"}])
    env.wait(name, lambda o: is_(o, "Ready", "True"), what="revision 1", timeout=120)
    assert _holder(env) == "only"
    assert env.config_map_data("web-extra") == {"only": "1.0.0"}

    # An upgrade of both, held once its children are applied; web 1.1.0 drops web-extra.
    hold.write_text("Waiting")
    release("db", "1.1.0", "1.0.0")
    release("web", "1.1.0", "1.0.0")
    env.publish()
    env.wait(name, _held("Waiting", 2), what="the pivot to revision 2 held in Waiting")
    _outage(cluster, hold)
    obj = env.wait(
        name,
        lambda o: is_(o, "Ready", "True") and o["status"].get("activeRevision") == 2,
        what="revision 2 after the API server restart",
        timeout=120,
    )
    _assert_alive(daemon)
    assert _holder(env) == "only"
    assert obj["status"]["pivot"]["phase"] == "Succeeded"
    assert obj["status"]["lastSuccessfulRevision"] == 2
    assert is_(obj, "Installed", "True")
    assert is_(obj, "Healthy", "True")
    assert env.config_map_data("db") == {"version": "1.1.0"}
    assert env.config_map_data("web") == {"version": "1.1.0"}
    assert env.config_map_data("web-extra") is None  # pruned with revision 1's content
    _assert_on_revision(env, name, 2)

    # A broken update of web (db moves too): web's Deployment never becomes available. Held in
    # Waiting across the outage, it fails at the progress deadline and the whole group goes
    # back to revision 2.
    env.kube.merge_patch(RESOLUTIONS, name, {"spec": {"progressDeadlineSeconds": 30}})
    hold.write_text("Waiting")
    release("db", "1.2.0", "1.1.0")
    release("web", "1.2.0", "1.1.0", unschedulable_deployment("x", ns))
    env.publish()
    env.wait(name, _held("Waiting", 3), what="the broken pivot held in Waiting")
    _outage(cluster, hold)
    obj = env.wait(
        name,
        lambda o: is_(o, "Progressing", "False", "RolledBack") and is_(o, "Installed", "True"),
        what="the rollback to revision 2 after the API server restart",
        timeout=180,
    )
    _assert_alive(daemon)
    pivot = obj["status"]["pivot"]
    assert (pivot["revision"], pivot["previousRevision"]) == (3, 2)
    assert pivot["failedBundle"] == "web.v1.2.0"
    assert "deadline" in pivot["message"]
    assert "Deployment" in pivot["message"]
    assert obj["status"]["activeRevision"] == 2
    assert obj["status"]["lastAttemptedRevision"] == 3
    assert env.config_map_data("db") == {"version": "1.1.0"}
    assert env.config_map_data("web") == {"version": "1.1.0"}
    _assert_on_revision(env, name, 2)
    wait_for(
        lambda: not _deployment_exists(env, "x"), timeout=60, what="web 1.2.0's Deployment gone"
    )
    # Reconcile errors while the API server was gone were retried; no thread died, and the
    # outage is logged as one warning line per failed request, without tracebacks.
    text = daemon.log.read_text(errors="replace")
    assert "Exception in thread" not in text
    assert "Traceback" not in text
    assert "reconcile of" in text  # the failed reconciles were logged
    env.cleanup()


def test_a_leader_that_loses_its_lease_in_the_outage_exits_and_its_restart_finishes(
    cluster: TestCluster, content: Env, daemon: HoldableDaemon, hold: Path
) -> None:
    """With the default lease flags, an outage longer than the renew deadline costs the leader
    its lease: it exits non-zero (the kubelet restarts it) and the restarted daemon finishes
    the pivot from ``status.pivot``."""
    env, ns = content, content.namespace
    daemon.lease = None
    daemon.start()
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}])
    env.wait(name, lambda o: is_(o, "Ready", "True"), what="revision 1", timeout=120)

    hold.write_text("Waiting")
    env.publisher.add("web", Version("1.1.0", config_map("web", ns, version="1.1.0"), "1.0.0"))
    env.publish()
    env.wait(name, _held("Waiting", 2), what="the pivot to revision 2 held in Waiting")
    assert daemon.process is not None
    cluster.stop_apiserver()
    try:
        hold.unlink()
        # kube-apiserver refuses connections from the moment it is told to stop; its graceful
        # exit alone takes longer than the 10 s renew deadline.
        code = daemon.process.wait(60)
    finally:
        cluster.start_apiserver()
    assert code == 1, daemon.tail()
    assert "leadership was lost" in daemon.log.read_text(errors="replace")
    daemon.start()  # what the kubelet does
    obj = env.wait(
        name,
        lambda o: is_(o, "Ready", "True") and o["status"].get("activeRevision") == 2,
        what="revision 2 finished by the restarted daemon",
        timeout=120,
    )
    assert obj["status"]["pivot"]["phase"] == "Succeeded"
    assert env.config_map_data("web") == {"version": "1.1.0"}
    children = env.children(name)
    assert list(children) == [f"{name}-web"]
    assert children[f"{name}-web"]["metadata"]["annotations"]["pivoter.io/revision"] == "2"
    assert _owned_bundles(env, f"{name}-web") == [children[f"{name}-web"]["status"]["activeBundle"]]
    env.cleanup()
