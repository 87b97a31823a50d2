"""``pivoter catalog test DIR --live`` on the real control plane: the CLI serves the catalog,
and the controllers in this process (as ``pivoter run`` would) install the first version and
pivot along the path, one step at a time, until a broken bundle stops the walk."""

from __future__ import annotations

import json

import pytest

from pivoter.apis.resources import CATALOGS, RESOLUTIONS
from pivoter.cli.main import main
from tests.cluster import TestCluster
from tests.inputs.conftest import Env
from tests.inputs.helpers import Version, config_map, missing_kind

pytestmark = pytest.mark.cluster


def test_live_walk_installs_upgrades_and_stops_at_the_broken_step(
    env: Env, cluster: TestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publisher.add("web", Version("1.1.0", config_map("web", ns, version="1.1.0"), "1.0.0"))
    broken = config_map("web", ns, version="1.2.0") + "---\n" + missing_kind("x", ns)
    env.publisher.add("web", Version("1.2.0", broken, "1.1.0"))
    env.publisher.publish()  # the CLI serves the directory itself
    argv = [
        "catalog",
        "test",
        str(env.publisher.directory),
        "--live",
        "--package",
        "web",
        "--kubeconfig",
        str(cluster.kubeconfig),
        "--progress-deadline",
        "30",
        "--step-timeout",
        "120",
        "-o",
        "json",
    ]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 3, err
    report = json.loads(out)
    assert report["path"] == ["1.0.0", "1.1.0", "1.2.0"]
    assert report["walked"] is False
    steps = report["steps"]
    assert [(s["from_version"], s["to_version"], s["outcome"]) for s in steps[:2]] == [
        ("", "1.0.0", "Installed"),
        ("1.0.0", "1.1.0", "Installed"),
    ]
    assert [s["revision"] for s in steps] == [1, 2, 3]
    last = steps[2]
    assert last["outcome"] in ("PivotFailed", "RolledBack")
    assert "web.v1.2.0" in last["message"]
    assert "Nowhere" in last["message"]
    # Progress was printed as the steps ended (stderr with -o json).
    assert "step 2: 1.0.0 -> 1.1.0: Installed" in err
    # Nothing is left: the Resolution (and what it installed) and the Catalog are deleted.
    assert env.config_map_data("web") is None
    resolutions, _ = env.kube.list(RESOLUTIONS)
    assert not [r for r in resolutions if r["metadata"]["name"].startswith("pivoter-live-")]
    catalogs, _ = env.kube.list(CATALOGS, label_selector="pivoter.io/live-test")
    assert catalogs == []


def test_live_walk_refuses_a_version_the_channel_does_not_have(
    env: Env, cluster: TestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    env.publisher.add("web", Version("1.0.0", config_map("web", env.namespace, version="1")))
    env.publisher.publish()
    code = main(
        [
            "catalog",
            "test",
            str(env.publisher.directory),
            "--live",
            "--package",
            "web",
            "--from",
            "0.9.0",
            "--kubeconfig",
            str(cluster.kubeconfig),
        ]
    )
    _, err = capsys.readouterr()
    assert code == 3
    assert "channel stable of web has no entry of version 0.9.0 (it has 1.0.0)" in err
