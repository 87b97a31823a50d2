"""The fields a pivot would change in existing objects, in the plan of a Manual Resolution on the
real control plane: a ConfigMap's data and a Deployment's env show as exact paths, the Deployment
as a workload whose pods would be replaced, and a revision whose objects are the same as what is
installed shows no change at all. A takeover (``adoptExisting``) of objects made by hand shows
the owner labels it adds, and a restart only when the pod template differs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from pivoter.apis.resources import RESOLUTIONS
from pivoter.cli.main import main
from tests.cluster import TestCluster
from tests.inputs.conftest import Env, is_
from tests.inputs.helpers import Version, config_map

pytestmark = pytest.mark.cluster

EXTRAS = 9
"""ConfigMaps besides ``settings``: ten in one namespace, so the live ConfigMaps are read with one
list (:data:`provisioners.apply.ownership.LIST_FROM`) and the Deployment with a GET."""


def _deployment(name: str, namespace: str, **env: str) -> str:
    """A Deployment kwok runs (it becomes available), with ``env`` on its one container."""
    labels = {"app": name}
    return yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [
                            {
                                "name": "manager",
                                "image": "registry.invalid/operator:1",
                                "env": [{"name": k, "value": v} for k, v in env.items()],
                            }
                        ]
                    },
                },
            },
        }
    )


def _content(ns: str, *, mode: str, log: str, extras: int = EXTRAS) -> str:
    docs = [config_map("settings", ns, mode=mode), _deployment("op", ns, LOG=log)]
    docs += [config_map(f"extra-{i}", ns, i=str(i)) for i in range(extras)]
    return "---\n".join(docs)


def _plan_objects(revision: int) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        plan = obj["status"].get("pendingPlan") or {}
        return plan.get("revision") == revision and "counts" in (plan.get("objects") or {})

    return check


def _ready_at(revision: int) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        return is_(obj, "Ready", "True") and obj["status"].get("activeRevision") == revision

    return check


def _approve(env: Env, name: str, revision: int) -> None:
    env.kube.merge_patch(
        RESOLUTIONS,
        name,
        {"metadata": {"annotations": {"pivoter.io/approved-revision": str(revision)}}},
    )
    env.wait(name, _ready_at(revision), what=f"revision {revision} installed", timeout=120)


def test_the_plan_names_the_fields_it_would_change_and_the_pods_it_would_replace(
    env: Env, cluster: TestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", _content(ns, mode="a", log="info")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}], approval="Manual")
    obj = env.wait(name, _plan_objects(1), what="the objects of plan 1")
    first = obj["status"]["pendingPlan"]["objects"]
    # Nothing exists yet: everything is added, nothing changes.
    assert first["counts"]["added"] == 2 + EXTRAS
    assert first["changes"] == []
    assert first["restarts"] == []
    _approve(env, name, 1)

    env.publisher.add("web", Version("1.1.0", _content(ns, mode="b", log="debug"), "1.0.0"))
    env.publish()
    obj = env.wait(name, _plan_objects(2), what="the objects of plan 2")
    objects = obj["status"]["pendingPlan"]["objects"]
    assert objects["changes"] == [
        {
            "package": "web",
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "namespace": ns,
            "name": "settings",
            "fields": ["data.mode"],
            "metadata": [],
        },
        {
            "package": "web",
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "namespace": ns,
            "name": "op",
            "fields": ["spec.template.spec.containers[name=manager].env[name=LOG].value"],
            "metadata": [],
        },
    ]
    assert objects["restarts"] == [f"Deployment {ns}/op"]
    assert "2 existing objects would change" in objects["dryRun"]
    assert f"replacing the pods of Deployment {ns}/op" in objects["dryRun"]
    # Nothing was applied: the plan only read.
    assert env.config_map_data("settings") == {"mode": "a"}

    code = main(["plan", name, "--kubeconfig", str(cluster.kubeconfig), "--namespace", ns])
    out = capsys.readouterr().out
    assert code == 0
    assert f"  * ConfigMap {ns}/settings [web]: data.mode" in out
    assert (
        f"  * Deployment {ns}/op [web]: "
        "spec.template.spec.containers[name=manager].env[name=LOG].value"
    ) in out
    assert f"  pods replaced: Deployment {ns}/op" in out
    _approve(env, name, 2)
    assert env.config_map_data("settings") == {"mode": "b"}

    # A new bundle whose objects are what is installed: applied again, nothing changes.
    env.publisher.add("web", Version("1.2.0", _content(ns, mode="b", log="debug"), "1.1.0"))
    env.publish()
    obj = env.wait(name, _plan_objects(3), what="the objects of plan 3")
    objects = obj["status"]["pendingPlan"]["objects"]
    assert objects["counts"]["kept"] == 2 + EXTRAS
    assert objects["changes"] == []
    assert objects["restarts"] == []
    assert "would change" not in objects["dryRun"]


def test_a_takeover_shows_the_labels_it_adds_and_a_restart_only_for_a_new_pod_template(
    env: Env,
) -> None:
    ns = env.namespace
    for doc in yaml.safe_load_all(_content(ns, mode="a", log="info", extras=0)):
        resource = env.kube.resource(doc["apiVersion"], doc["kind"])
        env.kube.create(resource, doc, ns)
    # The bundle has the ConfigMap as it is and the Deployment with another env value.
    env.publisher.add("web", Version("1.0.0", _content(ns, mode="a", log="debug", extras=0)))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}], approval="Manual", adoptExisting=True)
    obj = env.wait(name, _plan_objects(1), what="the objects of the takeover's plan")
    objects = obj["status"]["pendingPlan"]["objects"]
    owner_labels = [
        "label core.rukpak.io/owner-kind added",
        "label core.rukpak.io/owner-name added",
    ]
    by_name = {c["name"]: c for c in objects["changes"]}
    assert by_name["settings"]["fields"] == []
    assert by_name["settings"]["metadata"] == owner_labels
    assert by_name["op"]["fields"] == [
        "spec.template.spec.containers[name=manager].env[name=LOG].value"
    ]
    assert by_name["op"]["metadata"] == owner_labels
    assert objects["restarts"] == [f"Deployment {ns}/op"]
    assert "unread" not in objects
