"""A pivot interrupted at every named transition of the state machine resumes from what it
persisted and converges, with nothing left behind.

The test hook (``Hooks.pivot_transition``, given to the controllers by the :func:`hooks` fixture)
raises right after each transition was persisted, the way a daemon killed at that instant leaves
the cluster: the next reconcile (the controller's
retry) starts from the recorded phase. In process; the SIGKILL of a real ``pivoter run`` at each
transition is not done here (see the report of issue 8).
"""

from __future__ import annotations

from typing import Any

import pytest

from pivoter.daemon.hooks import Hooks
from pivoter.kube import NotFound
from pivoter.pivot import Phase, PivotRecord
from tests.cluster import wait_for
from tests.inputs.broken import fails_after_dry_run
from tests.inputs.conftest import Env, is_
from tests.inputs.helpers import Version, config_map

pytestmark = pytest.mark.cluster


class Crash(Exception):
    """What the hook raises: the reconcile dies after a transition was persisted."""


def _crash_once_per_phase(seen: list[Phase]) -> Any:
    def hook(record: PivotRecord) -> None:
        if record.phase not in seen:
            seen.append(record.phase)
            raise Crash(f"crash after entering {record.phase.value}")

    return hook


@pytest.fixture
def seen() -> list[Phase]:
    """The phases the hook has crashed in, in order."""
    return []


@pytest.fixture
def hooks(seen: list[Phase]) -> Hooks:
    """The controllers of ``env`` crash once right after entering each phase."""
    return Hooks(pivot_transition=_crash_once_per_phase(seen))


def test_pivot_and_rollback_resume_after_a_crash_at_every_transition(
    env: Env, seen: list[Phase]
) -> None:
    ns = env.namespace
    env.publisher.add("db", Version("1.0.0", config_map("db", ns, version="1.0.0")))
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "db"}, {"name": "web"}])
    obj = env.wait(
        name,
        lambda o: is_(o, "Ready", "True") and o["status"]["activeRevision"] == 1,
        what="revision 1 despite a crash at every transition",
        timeout=150,
    )
    assert seen == [
        Phase.PREPARING,
        Phase.APPLYING,
        Phase.WAITING,
        Phase.PRUNING,
        Phase.SUCCEEDED,
    ]
    assert obj["status"]["pivot"]["phase"] == "Succeeded"

    # A broken upgrade of web (it passes the dry run, fails when applied), with db moving too:
    # the rollback is interrupted as well.
    env.publisher.add("db", Version("1.1.0", config_map("db", ns, version="1.1.0"), "1.0.0"))
    env.publisher.add(
        "web",
        Version(
            "1.1.0",
            config_map("web", ns, version="1.1.0") + "---\n" + fails_after_dry_run(f"{ns}-b"),
            "1.0.0",
        ),
    )
    env.publish()
    obj = env.wait(
        name,
        lambda o: is_(o, "Progressing", "False", "RolledBack"),
        what="the rollback despite crashes",
        timeout=150,
    )
    assert Phase.ROLLING_BACK in seen
    assert Phase.ROLLED_BACK in seen
    assert obj["status"]["activeRevision"] == 1
    assert obj["status"]["pivot"]["failedBundle"] == "web.v1.1.0"
    env.wait(name, lambda o: is_(o, "Installed", "True"), what="revision 1 running")
    assert env.config_map_data("db") == {"version": "1.0.0"}
    assert env.config_map_data("web") == {"version": "1.0.0"}
    children = env.children(name)
    assert sorted(children) == [f"{name}-db", f"{name}-web"]
    assert {bd["metadata"]["annotations"]["pivoter.io/revision"] for bd in children.values()} == {
        "1"
    }
    # web 1.1.0 created its Namespace before it failed: the rollback pruned it.
    namespaces = env.kube.resource("v1", "Namespace")

    def pruned() -> bool:
        try:
            return bool(env.kube.get(namespaces, f"{ns}-b")["metadata"].get("deletionTimestamp"))
        except NotFound:
            return True

    wait_for(pruned, timeout=30, what="the half-applied Namespace pruned")
