"""``pivoter run`` SIGKILLed at each named transition of the pivot state machine, restarted, and
converging with nothing left behind.

The daemon runs as a subprocess (through :mod:`tests.e2e.hooked`) with the test hook
``PIVOTER_TEST_PAUSE_PIVOT_AT=<phase>``: every
pivot blocks right after it entered (and persisted) that phase; the test waits until the input's
status shows the phase, kills the daemon with SIGKILL, starts it again without the hook and
waits for the outcome.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import TestCluster
from tests.e2e import hooked
from tests.e2e.daemon import Daemon
from tests.inputs.broken import fails_after_dry_run
from tests.inputs.conftest import Env, is_
from tests.inputs.helpers import Version, config_map

pytestmark = pytest.mark.cluster


@pytest.fixture
def daemon(cluster: TestCluster, content: Env, tmp_path: Path) -> Iterator[Daemon]:
    """A ``pivoter run`` subprocess (not started) on the test's namespace."""
    process = Daemon(
        cluster.kubeconfig,
        namespace=content.namespace,
        store_dir=tmp_path / "daemon-store",
        log=tmp_path / "daemon.log",
        webhook=False,
        hooked=True,
    )
    yield process
    process.stop()


def _phase(phase: str, revision: int) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        pivot = obj["status"].get("pivot") or {}
        return bool(pivot.get("phase") == phase and pivot.get("revision") == revision)

    return check


def _kill_at(
    daemon: Daemon, env: Env, name: str, *, phase: str, revision: int, publish: Callable[[], None]
) -> None:
    """Restart the daemon paused at ``phase``, make it pivot, and SIGKILL it there."""
    daemon.stop()
    daemon.start(env={hooked.PAUSE_PIVOT_AT: phase})
    publish()
    env.wait(name, _phase(phase, revision), what=f"the pivot paused in {phase}", timeout=120)
    os.kill(daemon.pid, signal.SIGKILL)
    assert daemon.process is not None
    daemon.process.wait(10)
    daemon.start()


def test_sigkill_at_every_transition_then_restart_converges(content: Env, daemon: Daemon) -> None:
    env, ns = content, content.namespace
    env.publisher.add("db", Version("1.0.0", config_map("db", ns, version="1.0.0")))
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    daemon.start()
    name = env.resolution([{"name": "db"}, {"name": "web"}])
    env.wait(name, lambda o: o["status"].get("activeRevision") == 1, what="revision 1")

    def upgrade(version: str, previous: str, *, broken: bool = False) -> Callable[[], None]:
        def publish() -> None:
            for package in ("db", "web"):
                manifests = config_map(package, ns, version=version)
                if broken and package == "web":
                    # Passes the group's dry run, fails when applied (after db moved).
                    manifests += "---\n" + fails_after_dry_run(f"{ns}-b")
                env.publisher.add(package, Version(version, manifests, previous))
            env.publish()

        return publish

    steps = [
        ("Preparing", "1.1.0"),
        ("Applying", "1.2.0"),
        ("Waiting", "1.3.0"),
        ("Pruning", "1.4.0"),
        ("Succeeded", "1.5.0"),
    ]
    previous, revision = "1.0.0", 1
    for phase, version in steps:
        revision += 1
        _kill_at(
            daemon, env, name, phase=phase, revision=revision, publish=upgrade(version, previous)
        )
        obj = env.wait(
            name,
            lambda o, r=revision: is_(o, "Ready", "True") and o["status"]["activeRevision"] == r,
            what=f"revision {revision} after a SIGKILL in {phase}",
            timeout=120,
        )
        assert env.config_map_data("db") == {"version": version}
        assert env.config_map_data("web") == {"version": version}
        previous = version

    # A broken upgrade, killed while rolling back: the restart finishes the rollback.
    revision += 1
    _kill_at(
        daemon,
        env,
        name,
        phase="RollingBack",
        revision=revision,
        publish=upgrade("2.0.0", previous, broken=True),
    )
    obj = env.wait(
        name,
        lambda o: is_(o, "Progressing", "False", "RolledBack") and is_(o, "Installed", "True"),
        what="the rollback finished after a SIGKILL",
        timeout=120,
    )
    assert obj["status"]["activeRevision"] == revision - 1
    assert env.config_map_data("db") == {"version": previous}
    assert env.config_map_data("web") == {"version": previous}
    children = env.children(name)
    assert sorted(children) == [f"{name}-db", f"{name}-web"]
    assert {c["metadata"]["annotations"]["pivoter.io/revision"] for c in children.values()} == {
        str(revision - 1)
    }
    env.cleanup()
