"""``pivoter history``, ``plan``, ``approve``, ``rollback`` and ``unpin`` against the real control
plane, on a Resolution driven by the controllers in this process."""

from __future__ import annotations

import json

import pytest

from pivoter.apis.resources import RESOLUTIONS
from pivoter.cli.main import main
from tests.cluster import TestCluster
from tests.inputs.conftest import Env, is_
from tests.inputs.helpers import Version, config_map

pytestmark = pytest.mark.cluster


def _cli(
    capsys: pytest.CaptureFixture[str], cluster: TestCluster, env: Env, *argv: str
) -> tuple[int, str, str]:
    code = main([*argv, "--kubeconfig", str(cluster.kubeconfig), "--namespace", env.namespace])
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_approve_history_rollback_unpin(
    env: Env, cluster: TestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}], approval="Manual")
    env.wait(name, lambda o: o["status"].get("pendingPlan"), what="a plan")

    code, out, _ = _cli(capsys, cluster, env, "plan", name, "-o", "json")
    assert code == 0
    assert json.loads(out)["added"][0]["bundle"] == "web.v1.0.0"
    code, out, _ = _cli(capsys, cluster, env, "approve", name)
    assert code == 0
    assert "approved revision 1" in out
    env.wait(name, lambda o: o["status"].get("activeRevision") == 1, what="revision 1")

    env.publisher.add("web", Version("1.1.0", config_map("web", ns, version="1.1.0"), "1.0.0"))
    env.publish()
    env.wait(
        name,
        lambda o: (o["status"].get("pendingPlan") or {}).get("revision") == 2,
        what="plan 2",
    )
    env.wait(
        name,
        lambda o: "counts" in (o["status"]["pendingPlan"].get("objects") or {}),
        what="the objects of plan 2",
    )
    code, out, _ = _cli(capsys, cluster, env, "plan", name)
    assert code == 0
    assert "revision 2 (from 1): web 1.0.0->1.1.0" in out
    assert "dryRun: 1 bundles, 1 objects; 1 passed a server-side dry run" in out
    assert _cli(capsys, cluster, env, "approve", name, "--revision", "2")[0] == 0
    env.wait(name, lambda o: o["status"].get("activeRevision") == 2, what="revision 2")

    code, out, _ = _cli(capsys, cluster, env, "history", name, "-o", "json")
    assert code == 0
    rows = json.loads(out)
    assert [r["revision"] for r in rows] == [1, 2]
    assert rows[0]["changes"] == "+web 1.0.0"
    assert rows[1]["changes"] == "web 1.0.0->1.1.0"
    assert rows[1]["outcome"] == "active, last successful"
    code, out, _ = _cli(capsys, cluster, env, "history", name)
    assert "r2" in out
    assert "web@1.1.0" in out

    code, out, _ = _cli(capsys, cluster, env, "rollback", name, "--to-revision", "1")
    assert code == 0
    assert "pinned to revision 1" in out
    obj = env.wait(
        name,
        lambda o: is_(o, "Ready", "True") and o["status"]["activeRevision"] == 1,
        what="the rollback",
    )
    assert obj["spec"]["pinnedRevision"] == 1
    assert env.config_map_data("web") == {"version": "1.0.0"}

    assert _cli(capsys, cluster, env, "unpin", name)[0] == 0
    assert "pinnedRevision" not in env.kube.get(RESOLUTIONS, name)["spec"]

    code, _, err = _cli(capsys, cluster, env, "rollback", name, "--to-revision", "9")
    assert code == 3
    assert "has no revision 9" in err
    code, _, err = _cli(capsys, cluster, env, "history", "no-such-input")
    assert code == 3
    assert "does not exist" in err
    code, _, err = _cli(capsys, cluster, env, "history", "deployment/x")
    assert code == 3
