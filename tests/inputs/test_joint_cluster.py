"""Joint resolution on the real control plane: what one input installed is a held choice for
every other input. A shared dependency is installed once and named in the dependent's status;
a version or API clash with a held bundle is unsatisfiable, naming the holder; a holder deleted
makes the dependent install the package itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from pivoter.apis.resources import RESOLUTIONS
from tests.inputs.conftest import Env, condition, is_
from tests.inputs.helpers import Publisher, Version, config_map

pytestmark = pytest.mark.cluster

ZK_API = {"group": "zk.example.com", "version": "v1", "kind": "ZooKeeper"}


def _ready(obj: dict[str, Any]) -> bool:
    return is_(obj, "Ready", "True")


def _selected(obj: dict[str, Any]) -> dict[str, str]:
    return {s["package"]: s["version"] for s in obj["status"].get("selection") or []}


def _children_packages(env: Env, name: str) -> list[str]:
    return sorted(
        bd["metadata"]["annotations"]["pivoter.io/package"] for bd in env.children(name).values()
    )


def _publish_db_and_users(env: Env, *, web_range: str = ">=1.0.0") -> None:
    ns = env.namespace
    env.publisher.add("db", Version("1.0.0", config_map("db", ns, version="1.0.0")))
    env.publisher.add(
        "app",
        Version("1.0.0", config_map("app", ns, version="1.0.0"), requires=(("db", ">=1.0.0"),)),
    )
    env.publisher.add(
        "web",
        Version("1.0.0", config_map("web", ns, version="1.0.0"), requires=(("db", web_range),)),
    )


def test_a_shared_dependency_is_installed_once_and_named_in_status(env: Env) -> None:
    _publish_db_and_users(env)
    env.publish()
    env.catalog()
    first = env.resolution([{"name": "app"}])
    obj = env.wait(first, _ready, what="app and db installed by the first input")
    assert _selected(obj) == {"app": "1.0.0", "db": "1.0.0"}

    second = env.resolution([{"name": "web"}])
    obj = env.wait(second, _ready, what="web installed, sharing db")
    assert _selected(obj) == {"web": "1.0.0"}
    assert _children_packages(env, second) == ["web"]
    assert _children_packages(env, first) == ["app", "db"]
    assert obj["status"]["sharedDependencies"] == [
        {
            "package": "db",
            "version": "1.0.0",
            "bundle": "db.v1.0.0",
            "providedBy": f"Resolution/{first}",
            "requiredBy": ["web"],
        }
    ]
    assert f"db 1.0.0 (from Resolution/{first})" in condition(obj, "Resolved")["message"]
    assert not is_(obj, "Conflict", "True")
    assert env.config_map_data("web") == {"version": "1.0.0"}


def test_two_inputs_resolving_at_once_install_a_new_dependency_once(env: Env) -> None:
    """Both inputs exist before their catalog, so the catalog's first content queues both at
    once and two workers resolve them together: one claims db, the other shares it."""
    _publish_db_and_users(env)
    env.publish()
    first = env.resolution([{"name": "app"}])
    second = env.resolution([{"name": "web"}])
    env.catalog()
    objs = {name: env.wait(name, _ready, what=f"{name} installed") for name in (first, second)}
    owners = [name for name in (first, second) if "db" in _children_packages(env, name)]
    assert len(owners) == 1, {name: _children_packages(env, name) for name in objs}
    (sharer,) = {first, second} - set(owners)
    shared = objs[sharer]["status"]["sharedDependencies"]
    assert [(d["package"], d["providedBy"]) for d in shared] == [("db", f"Resolution/{owners[0]}")]
    for obj in objs.values():
        assert not is_(obj, "Conflict", "True")


def test_a_version_clash_with_a_held_bundle_names_the_holder(env: Env) -> None:
    _publish_db_and_users(env, web_range=">=2.0.0")
    env.publisher.add(
        "db", Version("2.0.0", config_map("db", env.namespace, version="2.0.0"), "1.0.0")
    )
    env.publish()
    env.catalog()
    # app pins db below 2.0.0, so the first input installs db 1.0.0.
    first = env.resolution([{"name": "app"}, {"name": "db", "versionRange": "<2.0.0"}])
    env.wait(first, _ready, what="the first input installed with db 1.0.0")

    second = env.resolution([{"name": "web"}])
    obj = env.wait(
        second,
        lambda o: is_(o, "Resolved", "False", "Unsatisfiable"),
        what="web unsatisfiable: it needs db 2.0.0, held at 1.0.0",
    )
    explanation = obj["status"]["explanation"]
    assert f"package db is held at 1.0.0 by Resolution {first}" in explanation
    assert "web 1.0.0 requires a bundle with package: db" in explanation
    assert is_(obj, "Ready", "False")
    assert not env.children(second)
    assert env.config_map_data("db") == {"version": "1.0.0"}


class _GvkPublisher(Publisher):
    """Writes an ``olm.gvk`` property into the bundles of the packages named in ``apis``."""

    apis: dict[str, dict[str, str]]

    def publish(self) -> None:
        super().publish()
        for package, gvk in self.apis.items():
            path = self.directory / f"{package}.yaml"
            docs = list(yaml.safe_load_all(path.read_text()))
            for doc in docs:
                if doc["schema"] == "olm.bundle":
                    doc["properties"].append({"type": "olm.gvk", "value": gvk})
            tmp = path.with_suffix(".tmp")
            tmp.write_text(yaml.safe_dump_all(docs, sort_keys=False))
            tmp.rename(path)


def test_a_second_provider_of_an_installed_api_is_refused(env: Env) -> None:
    publisher = _GvkPublisher(
        env.publisher.pusher, env.publisher.registry_host, env.publisher.directory
    )
    publisher.apis = {"zk-a": ZK_API, "zk-b": ZK_API}
    env.publisher = publisher
    ns = env.namespace
    env.publisher.add("zk-a", Version("1.0.0", config_map("zk-a", ns, version="1.0.0")))
    env.publisher.add("zk-b", Version("1.0.0", config_map("zk-b", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    first = env.resolution([{"name": "zk-a"}])
    env.wait(first, _ready, what="zk-a installed")

    second = env.resolution([{"name": "zk-b"}])
    obj = env.wait(
        second,
        lambda o: is_(o, "Resolved", "False", "Unsatisfiable"),
        what="zk-b refused: zk-a already provides its API",
    )
    explanation = obj["status"]["explanation"]
    assert "provides API zk.example.com/v1/ZooKeeper" in explanation
    assert f"package zk-a (held at 1.0.0 by Resolution {first})" in explanation
    assert not env.children(second)


def _installs(env: Env, name: str, packages: list[str]) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        return _ready(obj) and _children_packages(env, name) == packages

    return check


def test_the_holder_deleted_the_dependent_installs_the_dependency_itself(env: Env) -> None:
    _publish_db_and_users(env)
    env.publish()
    env.catalog()
    first = env.resolution([{"name": "app"}])
    env.wait(first, _ready, what="app and db installed by the first input")
    second = env.resolution([{"name": "web"}])
    obj = env.wait(second, _installs(env, second, ["web"]), what="web installed, sharing db")
    assert obj["status"]["sharedDependencies"][0]["package"] == "db"
    revision = obj["status"]["activeRevision"]

    env.kube.delete(RESOLUTIONS, first)
    obj = env.wait(
        second,
        _installs(env, second, ["db", "web"]),
        what="the dependent to install db itself once the holder is gone",
        timeout=120,
    )
    assert _selected(obj) == {"db": "1.0.0", "web": "1.0.0"}
    assert obj["status"]["activeRevision"] > revision
    assert not obj["status"].get("sharedDependencies")
    assert env.config_map_data("db") == {"version": "1.0.0"}


def test_a_holder_keeps_a_shared_dependency_in_its_dependents_range(env: Env) -> None:
    ns = env.namespace
    env.publisher.add("db", Version("1.0.0", config_map("db", ns, version="1.0.0")))
    env.publisher.add("tool", Version("1.0.0", config_map("tool", ns, version="1.0.0")))
    env.publisher.add(
        "web",
        Version("1.0.0", config_map("web", ns, version="1.0.0"), requires=(("db", "<2.0.0"),)),
    )
    env.publish()
    env.catalog()
    first = env.resolution([{"name": "db"}, {"name": "tool"}])
    env.wait(first, _ready, what="db and tool installed by the first input")
    second = env.resolution([{"name": "web"}])
    env.wait(second, _installs(env, second, ["web"]), what="web installed, sharing db")

    env.publisher.add("db", Version("2.0.0", config_map("db", ns, version="2.0.0"), "1.0.0"))
    env.publisher.add("tool", Version("1.1.0", config_map("tool", ns, version="1.1.0"), "1.0.0"))
    env.publish()
    obj = env.wait(
        first,
        lambda o: _ready(o) and _selected(o).get("tool") == "1.1.0",
        what="the first input to take tool 1.1.0",
    )
    # db 2.0.0 is the newest, but web (installed by the second input) needs db <2.0.0.
    assert _selected(obj) == {"db": "1.0.0", "tool": "1.1.0"}
    assert env.config_map_data("db") == {"version": "1.0.0"}
    obj = env.get(second)
    assert _ready(obj)
    assert obj["status"]["sharedDependencies"][0]["version"] == "1.0.0"
