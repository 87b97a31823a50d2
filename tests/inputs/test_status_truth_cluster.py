"""What status shows (issue 15 items 10, 11 and 12), on the real control plane through a Manager
with every controller (``env``):

* a deleted active ResolveSet ConfigMap is noticed within seconds (the input watches its
  revisions), no status names it as active any more, an Event says so, and the state is rebuilt
  as docs/pivot.md says (the same selection becomes the active revision at once);
* a child BundleDeployment deleted by hand is named in status (``Healthy=False/ChildMissing``),
  its objects stay in place (same uids: no outage) for the re-created child, and deleting the
  input still uninstalls everything;
* "why not newer": for a version range, a channel without the newer version, a missing upgrade
  edge, an unsatisfiable dependency, a deprecated bundle and a pending Manual approval, the
  ``UpToDate`` condition and ``pivoter plan`` name the newest bundle not taken and why.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, CONFIG_MAPS, PLATFORM_OPERATORS, RESOLUTIONS
from pivoter.cli.main import main
from pivoter.kube import EventRecorder, NotFound
from pivoter.kube.events import EVENTS
from pivoter.resolvesets import InputRef, revision_name
from tests.cluster import TestCluster, wait_for
from tests.inputs.conftest import Env, condition, is_
from tests.inputs.helpers import Version, config_map

pytestmark = pytest.mark.cluster


def _ready_at(revision: int) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        return is_(obj, "Ready", "True") and obj["status"].get("activeRevision") == revision

    return check


def _ref(name: str) -> InputRef:
    return InputRef("Resolution", name)


def _events(env: Env, name: str, reason: str) -> list[dict[str, Any]]:
    """The Events about the object ``name`` with ``reason`` (cluster-scoped: in default)."""
    items, _ = env.kube.list(EVENTS, "default")
    return [
        e
        for e in items
        if (e.get("regarding") or {}).get("name") == name and e.get("reason") == reason
    ]


def _record_events(env: Env) -> None:
    """Let the input and BundleDeployment controllers of ``env`` record Events."""
    assert env.reconciler is not None
    assert env.manager is not None
    recorder = EventRecorder(env.kube, reporting_controller="pivoter-test", reporting_instance="t")
    env.reconciler.recorder = recorder
    for controller in env.manager.controllers:
        if controller.name == "bundledeployments":
            controller.reconcile.__self__.recorder = recorder  # type: ignore[attr-defined]


class Watcher:
    """Watches one input on a thread and keeps every status the API server stored, so that a
    state that lasts a moment is still observed."""

    def __init__(self, env: Env, name: str) -> None:
        self.env = env
        self.name = name
        self.seen: list[dict[str, Any]] = []
        obj = env.get(name)
        self._stream = env.kube.watch(
            RESOLUTIONS,
            resource_version=str(obj["metadata"]["resourceVersion"]),
            field_selector=f"metadata.name={name}",
            timeout_seconds=120,
        )
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        time.sleep(0.5)  # the last events are on their way
        self._stream.close()
        self._thread.join(5)

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # the stream ends when closed
            for kind, obj in self._stream:
                if kind in ("ADDED", "MODIFIED"):
                    self.seen.append(obj.get("status") or {})


# --------------------------------------------------------------------------- item 10


def test_deleted_active_revision_is_noticed_within_seconds(env: Env) -> None:
    _record_events(env)
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}])
    env.wait(name, _ready_at(1), what="installed")
    child = env.children(name)[f"{name}-web"]
    installed_uid = env.kube.get(env.kube.resource("v1", "ConfigMap"), "web", ns)["metadata"]["uid"]
    cm_name = revision_name(_ref(name), 1)

    # Let the install's own follow-up passes finish: only the revision watch may wake it now.
    time.sleep(8)
    with Watcher(env, name) as watcher:
        deleted_at = time.monotonic()
        env.kube.delete(CONFIG_MAPS, cm_name, ns)
        # No poke: the revision watch alone makes the input look again.
        env.wait(
            name,
            lambda o: o["status"].get("activeRevision") != 1,
            what="status to stop naming the deleted revision",
            timeout=20,
        )
        noticed = time.monotonic() - deleted_at
        obj = env.wait(name, _ready_at(2), what="the same selection active as revision 2")
    assert noticed < 10, f"the deleted revision was noticed after {noticed:.1f}s"
    # Rebuilt as the docs say: what is installed is recorded as revision 2 and is active at
    # once; nothing was re-installed (same child, same object).
    assert [r.number for r in env.store.list(_ref(name))] == [2]
    assert obj["status"]["lastSuccessfulRevision"] == 2
    assert obj["status"]["selection"][0]["version"] == "1.0.0"
    after = env.children(name)[f"{name}-web"]
    assert after["metadata"]["uid"] == child["metadata"]["uid"]
    live = env.kube.get(env.kube.resource("v1", "ConfigMap"), "web", ns)
    assert live["metadata"]["uid"] == installed_uid
    # Once the deletion was seen, no status ever named revision 1 as active again.
    first = next(
        i
        for i, s in enumerate(watcher.seen)
        if s.get("activeRevision") != 1 and s.get("conditions")
    )
    assert all(s.get("activeRevision") != 1 for s in watcher.seen[first:])
    (event,) = wait_for(
        lambda: _events(env, name, "ResolveSetModified"), timeout=30, what="the Warning Event"
    )
    assert event["type"] == "Warning"
    assert cm_name in event["note"]
    assert "was deleted" in event["note"]
    wait_for(lambda: _events(env, name, "ResolveSetRebuilt"), timeout=30, what="the rebuild Event")


def test_deleted_active_revision_while_awaiting_approval_is_not_reported(env: Env) -> None:
    """The rebuilt selection differs from what is installed (a newer bundle awaits a Manual
    approval): no revision is reported as active until the pivot, and the children are still
    reported as installed (not "nothing is installed yet")."""
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}], approval="Manual")
    env.wait(name, lambda o: o["status"].get("pendingPlan"), what="the first plan")
    env.kube.merge_patch(RESOLUTIONS, name, {"spec": {"approvedRevision": 1}})
    env.wait(name, _ready_at(1), what="installed")
    env.publisher.add("web", Version("1.1.0", config_map("web", ns, version="1.1.0"), "1.0.0"))
    env.publish()
    env.wait(
        name,
        lambda o: is_(o, "Progressing", "False", "AwaitingApproval"),
        what="revision 2 awaiting approval",
    )
    env.kube.delete(CONFIG_MAPS, revision_name(_ref(name), 1), ns)
    obj = env.wait(
        name,
        lambda o: "activeRevision" not in o["status"] and condition(o, "Ready").get("reason"),
        what="the lost revision dropped from status",
        timeout=20,
    )
    assert condition(obj, "Installed")["status"] == "True", condition(obj, "Installed")
    assert "nothing is installed" not in condition(obj, "Healthy")["message"]
    assert env.config_map_data("web") == {"version": "1.0.0"}
    # Approving the new revision pivots to it as usual.
    pending = obj["status"]["pendingPlan"]["revision"]
    env.kube.merge_patch(RESOLUTIONS, name, {"spec": {"approvedRevision": pending}})
    env.wait(name, _ready_at(pending), what="the approved revision installed")
    assert env.config_map_data("web") == {"version": "1.1.0"}


# --------------------------------------------------------------------------- item 11


def _uid(env: Env, name: str) -> str:
    return str(
        env.kube.get(env.kube.resource("v1", "ConfigMap"), name, env.namespace)["metadata"]["uid"]
    )


def test_child_deleted_by_hand_is_named_and_its_objects_stay(env: Env) -> None:
    _record_events(env)
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publisher.add("db", Version("1.0.0", config_map("db", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}, {"name": "db"}])
    env.wait(name, _ready_at(1), what="installed")
    web, db = f"{name}-web", f"{name}-db"
    old_child = env.children(name)[web]["metadata"]["uid"]
    uids = {"web": _uid(env, "web"), "db": _uid(env, "db")}

    outage: list[str] = []
    stop = threading.Event()

    def watch_objects() -> None:
        while not stop.is_set():
            for cm in ("web", "db"):
                try:
                    _uid(env, cm)
                except NotFound:
                    outage.append(cm)
            stop.wait(0.05)

    checker = threading.Thread(target=watch_objects, daemon=True)
    checker.start()
    try:
        with Watcher(env, name) as watcher:
            env.kube.delete(BUNDLE_DEPLOYMENTS, web)

            def recreated(obj: dict[str, Any]) -> bool:
                current = env.children(name).get(web)
                return (
                    current is not None
                    and current["metadata"]["uid"] != old_child
                    and _ready_at(1)(obj)
                )

            env.wait(name, recreated, what="the child re-created and ready")
    finally:
        stop.set()
        checker.join(5)
    # The objects never went away and are the same objects: adopted, not re-created.
    assert not outage, f"objects missing during the re-creation: {sorted(set(outage))}"
    assert {"web": _uid(env, "web"), "db": _uid(env, "db")} == uids
    # The status named the child, its bundle and what happened, not "nothing installed".
    healthy = [
        c
        for s in watcher.seen
        for c in s.get("conditions") or []
        if c["type"] == "Healthy" and c["status"] != "True"
    ]
    assert healthy, "the status never said the child was missing"
    assert all("nothing is installed" not in c["message"] for c in healthy), healthy
    missing = [c for c in healthy if c["reason"] == "ChildMissing"]
    assert missing, healthy
    message = missing[0]["message"]
    assert f"BundleDeployment {web} (bundle web.v1.0.0) was deleted" in message, message
    assert "re-creating it" in message
    assert db not in message
    (event,) = wait_for(
        lambda: _events(env, name, "ChildMissing"), timeout=30, what="the ChildMissing Event"
    )
    assert web in event["note"]
    assert "web.v1.0.0" in event["note"]
    kept = wait_for(
        lambda: _events(env, name, "ObjectsKept"), timeout=30, what="the ObjectsKept Event"
    )
    assert "stay in place" in kept[0]["note"]

    # Deleting the input itself still uninstalls every object.
    env.kube.delete(RESOLUTIONS, name)
    wait_for(
        lambda: env.config_map_data("web") is None and env.config_map_data("db") is None,
        timeout=60,
        what="the uninstall",
    )
    wait_for(lambda: not env.children(name), timeout=60, what="the children gone")


def test_input_deleted_while_a_kept_child_is_missing_still_uninstalls(env: Env) -> None:
    """A paused input does not re-create a child deleted by hand, so the child's objects stay
    in place with no BundleDeployment; deleting the input then re-creates the child (which
    adopts them) and uninstalls it: nothing is left behind."""
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publisher.add("db", Version("1.0.0", config_map("db", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}, {"name": "db"}])
    env.wait(name, _ready_at(1), what="installed")
    env.kube.merge_patch(RESOLUTIONS, name, {"spec": {"paused": True}})
    env.wait(name, lambda o: is_(o, "Ready", "True"), what="paused and still ready")
    uid = _uid(env, "web")
    env.kube.delete(BUNDLE_DEPLOYMENTS, f"{name}-web")
    obj = env.wait(
        name,
        lambda o: is_(o, "Healthy", "False", "ChildMissing"),
        what="the missing child named",
    )
    message = condition(obj, "Healthy")["message"]
    assert message == f"BundleDeployment {name}-web (bundle web.v1.0.0) was deleted", message
    assert f"{name}-web" not in env.children(name)
    assert _uid(env, "web") == uid  # kept, unmanaged while the input is paused
    env.kube.delete(RESOLUTIONS, name)
    wait_for(
        lambda: env.config_map_data("web") is None and env.config_map_data("db") is None,
        timeout=90,
        what="everything uninstalled",
    )
    wait_for(lambda: not env.children(name), timeout=60, what="the children gone")

    def gone() -> bool:
        try:
            env.get(name)
        except NotFound:
            return True
        return False

    wait_for(gone, timeout=60, what="the input gone")


def test_platform_operator_child_deleted_by_hand_keeps_its_objects(env: Env) -> None:
    env.publisher.add("certs", Version("1.0.0", config_map("certs", env.namespace, v="1")))
    env.publish()
    env.catalog()
    name = env.platform_operator("certs")
    installed = env.wait(
        name,
        lambda o: is_(o, "Installed", "True", "InstallSuccessful"),
        what="installed",
        resource=PLATFORM_OPERATORS,
    )
    old_child = env.children(name, "PlatformOperator")[name]["metadata"]["uid"]
    uid = _uid(env, "certs")
    env.kube.delete(BUNDLE_DEPLOYMENTS, name)

    def back(obj: dict[str, Any]) -> bool:
        current = env.children(name, "PlatformOperator").get(name)
        return (
            current is not None
            and current["metadata"]["uid"] != old_child
            and is_(obj, "Installed", "True", "InstallSuccessful")
        )

    obj = env.wait(name, back, what="the child re-created", resource=PLATFORM_OPERATORS)
    assert _uid(env, "certs") == uid
    assert obj["status"]["activeRevision"] == installed["status"]["activeRevision"]
    assert obj["status"]["activeBundleDeployment"] == {"name": name}
    env.kube.delete(PLATFORM_OPERATORS, name)
    wait_for(lambda: env.config_map_data("certs") is None, timeout=60, what="the uninstall")


def test_child_dropped_from_the_set_is_still_uninstalled(env: Env) -> None:
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publisher.add("db", Version("1.0.0", config_map("db", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}, {"name": "db"}])
    env.wait(name, _ready_at(1), what="installed")
    env.kube.merge_patch(RESOLUTIONS, name, {"spec": {"packages": [{"name": "web"}]}})
    env.wait(name, _ready_at(2), what="db pruned")
    wait_for(lambda: env.config_map_data("db") is None, timeout=60, what="db uninstalled")
    assert env.config_map_data("web") == {"version": "1.0.0"}


# --------------------------------------------------------------------------- item 12


def _cli(capsys: pytest.CaptureFixture[str], cluster: TestCluster, env: Env, *argv: str) -> str:
    code = main([*argv, "--kubeconfig", str(cluster.kubeconfig), "--namespace", env.namespace])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _write(env: Env, filename: str, docs: list[dict[str, Any]]) -> None:
    """An extra FBC file next to the publisher's (channels and deprecations it does not
    write); published with the next ``env.publish()``."""
    path = env.publisher.directory / filename
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def _bundle_doc(env: Env, package: str, version: str) -> dict[str, Any]:
    return {
        "schema": "olm.bundle",
        "name": f"{package}.v{version}",
        "package": package,
        "image": env.publisher.image(package, version),
        "properties": [
            {"type": "olm.package", "value": {"packageName": package, "version": version}},
            {"type": "olm.bundle.mediatype", "value": "plain+v0"},
        ],
    }


@pytest.fixture
def why_not_newer_catalog(env: Env) -> Env:
    ns = env.namespace
    p = env.publisher

    def cm(package: str, version: str) -> str:
        return config_map(f"wn-{package}", ns, version=version)

    for package in ("rng", "dep", "old", "new"):
        p.add(package, Version("1.0.0", cm(package, "1.0.0")))
    p.add("rng", Version("2.0.0", cm("rng", "2.0.0"), "1.0.0"))
    p.add("dep", Version("2.0.0", cm("dep", "2.0.0"), "1.0.0", requires=(("nope", ">=1.0.0"),)))
    p.add("old", Version("2.0.0", cm("old", "2.0.0"), "1.0.0"))
    # chn 2.0.0 is only in channel fast (pushed, then taken out of the publisher's stable).
    p.add("chn", Version("1.0.0", cm("chn", "1.0.0")))
    p.add("chn", Version("2.0.0", cm("chn", "2.0.0")))
    p.packages["chn"].pop()
    fast = {
        "schema": "olm.channel",
        "name": "fast",
        "package": "chn",
        "entries": [{"name": "chn.v2.0.0", "replaces": "chn.v1.0.0"}],
    }
    _write(env, "chn-fast.yaml", [fast, _bundle_doc(env, "chn", "2.0.0")])
    deprecations = {
        "schema": "olm.deprecations",
        "package": "old",
        "entries": [
            {
                "reference": {"schema": "olm.bundle", "name": "old.v2.0.0"},
                "message": "old 2.0.0 loses data",
            }
        ],
    }
    _write(env, "old-deprecations.yaml", [deprecations])
    # edge and man: 1.0.0 now; 2.0.0 later (edge's without an upgrade edge).
    p.add("edge", Version("1.0.0", cm("edge", "1.0.0")))
    p.add("man", Version("1.0.0", cm("man", "1.0.0")))
    p.add("poe", Version("1.0.0", cm("poe", "1.0.0")))
    env.publish()
    env.catalog()
    return env


def _behind(reason: str) -> Callable[[dict[str, Any]], bool]:
    return lambda obj: is_(obj, "UpToDate", "False", reason)


def _up_to_date(obj: dict[str, Any]) -> dict[str, Any]:
    return condition(obj, "UpToDate")


def test_the_status_that_ends_a_pivot_already_says_what_is_newer(env: Env) -> None:
    """The pass that ends the install writes Ready and, in the same status, why the newer
    version is not taken: not "being installed" until something else queues the input (its
    own status write does not, and here nothing else changes)."""
    ns = env.namespace
    env.publisher.add("rng", Version("1.0.0", config_map("wn-rng", ns, version="1.0.0")))
    env.publisher.add("rng", Version("2.0.0", config_map("wn-rng", ns, version="2.0.0"), "1.0.0"))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "rng", "versionRange": "^1"}])
    with Watcher(env, name) as watcher:
        env.wait(name, _ready_at(1), what="installed")

    def conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {c["type"]: c for c in status.get("conditions") or []}

    ready = next(
        s
        for s in watcher.seen
        if s.get("activeRevision") == 1 and conditions(s)["Ready"]["status"] == "True"
    )
    up_to_date = conditions(ready)["UpToDate"]
    assert (up_to_date["status"], up_to_date["reason"]) == ("False", "OutsideVersionRange"), ready
    assert "version 2.0.0 is outside range ^1" in up_to_date["message"]


def test_why_not_newer_in_status_and_plan(
    why_not_newer_catalog: Env, cluster: TestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    env = why_not_newer_catalog
    inputs = {
        "rng": env.resolution([{"name": "rng", "versionRange": "^1"}]),
        "chn": env.resolution([{"name": "chn", "channel": "stable"}]),
        "dep": env.resolution([{"name": "dep"}]),
        "old": env.resolution([{"name": "old"}]),
        "new": env.resolution([{"name": "new"}]),
        "edge": env.resolution([{"name": "edge"}]),
        "man": env.resolution([{"name": "man"}], approval="Manual"),
    }
    operator = env.platform_operator("poe")
    env.wait(inputs["man"], lambda o: o["status"].get("pendingPlan"), what="man's first plan")
    env.kube.merge_patch(RESOLUTIONS, inputs["man"], {"spec": {"approvedRevision": 1}})
    for package, name in inputs.items():
        env.wait(name, _ready_at(1), what=f"{package} installed")
    env.wait(
        operator,
        lambda o: is_(o, "Installed", "True", "InstallSuccessful"),
        what="poe installed",
        resource=PLATFORM_OPERATORS,
    )
    # The later versions: man 2.0.0 replaces 1.0.0; edge 2.0.0 does not (it is the head of its
    # own channel v2: one channel cannot have two heads; no channel is requested).
    env.publisher.add("man", Version("2.0.0", config_map("wn-man", env.namespace, v="2"), "1.0.0"))
    for package in ("edge", "poe"):
        env.publisher.add(package, Version("2.0.0", config_map(f"wn-{package}", env.namespace)))
        env.publisher.packages[package].pop()
        v2 = {
            "schema": "olm.channel",
            "name": "v2",
            "package": package,
            "entries": [{"name": f"{package}.v2.0.0"}],
        }
        _write(env, f"{package}-v2.yaml", [v2, _bundle_doc(env, package, "2.0.0")])
    env.publish()

    expected = {
        "rng": ("OutsideVersionRange", "version 2.0.0 is outside range ^1"),
        "chn": ("NotInChannel", "not in channel stable"),
        "dep": ("Unsatisfiable", "requires a bundle with package: nope"),
        "old": ("Deprecated", "old 2.0.0 loses data"),
        "edge": ("NoUpgradeEdge", "no upgrade edge (replaces, skips, skipRange) from installed"),
        "man": ("AwaitingApproval", f"waits for Manual approval: pivoter approve {inputs['man']}"),
    }
    for package, (reason, words) in expected.items():
        name = inputs[package]
        obj = env.wait(name, _behind(reason), what=f"{package}: UpToDate False/{reason}")
        message = _up_to_date(obj)["message"]
        assert "\n" not in message
        assert message.startswith(f"{package} 2.0.0 ({package}.v2.0.0) is not taken: "), message
        assert words in message, message
        # Still installed on 1.0.0: being behind is not a failure (ready unless a pivot waits).
        assert obj["status"]["activeRevision"] == 1
        if package == "man":
            assert is_(obj, "Ready", "False", "AwaitingApproval"), condition(obj, "Ready")
        else:
            assert is_(obj, "Ready", "True"), condition(obj, "Ready")
            assert obj["status"]["selection"][0]["version"] == "1.0.0"
        out = _cli(capsys, cluster, env, "plan", name)
        (line,) = [x for x in out.splitlines() if x.startswith("why not newer: ")]
        assert line == f"why not newer: {message}", out
    # A PlatformOperator says the same.
    obj = env.wait(
        operator, _behind("NoUpgradeEdge"), what="poe: UpToDate", resource=PLATFORM_OPERATORS
    )
    message = _up_to_date(obj)["message"]
    assert message.startswith("poe 2.0.0 (poe.v2.0.0) is not taken: no upgrade edge"), message
    assert is_(obj, "Installed", "True", "InstallSuccessful")
    out = _cli(capsys, cluster, env, "plan", f"platformoperator/{operator}")
    assert f"why not newer: {message}" in out
    newest = env.get(inputs["new"])
    assert is_(newest, "UpToDate", "True", "Newest"), _up_to_date(newest)
    assert "new 1.0.0" in _up_to_date(newest)["message"]
    assert "why not newer" not in _cli(capsys, cluster, env, "plan", inputs["new"])
