"""Resolutions on the real control plane, through a Manager with every controller and watch:
install, upgrade on a catalog change, a dependency pulled in, grouped rollback, Manual approval,
rollback pinning, the history limit, conflicts, unsatisfiable requests and deletion."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pivoter.apis.resources import RESOLUTIONS
from pivoter.resolvesets import InputRef
from tests.inputs.conftest import Env, condition, is_
from tests.inputs.helpers import Version, config_map, missing_kind

pytestmark = pytest.mark.cluster


def _ready_at(revision: int) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        return is_(obj, "Ready", "True") and obj["status"].get("activeRevision") == revision

    return check


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_install_then_upgrade_on_catalog_change(env: Env, protocol: str) -> None:
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publish()
    env.catalog(protocol=protocol)
    name = env.resolution([{"name": "web"}])
    obj = env.wait(name, _ready_at(1), what="revision 1 installed")
    assert obj["status"]["selection"][0]["version"] == "1.0.0"
    assert is_(obj, "Resolved", "True", "Resolved")
    assert is_(obj, "Installed", "True")
    assert is_(obj, "Healthy", "True")
    assert obj["status"]["lastSuccessfulRevision"] == 1
    assert env.config_map_data("web") == {"version": "1.0.0"}
    children = env.children(name)
    assert list(children) == [f"{name}-web"]
    bd = children[f"{name}-web"]
    assert bd["spec"]["provisionerClassName"] == "core-rukpak-io-plain"
    assert bd["spec"]["template"]["spec"]["source"]["image"]["ref"].endswith("/web:1.0.0")
    assert bd["metadata"]["ownerReferences"][0]["kind"] == "Resolution"

    env.publisher.add(
        "web", Version("1.1.0", config_map("web", ns, version="1.1.0"), replaces="1.0.0")
    )
    env.publish()
    obj = env.wait(name, _ready_at(2), what="the upgrade to revision 2")
    assert obj["status"]["selection"][0]["version"] == "1.1.0"
    assert env.config_map_data("web") == {"version": "1.1.0"}
    assert [r.number for r in env.store.list(_ref(name))] == [1, 2]
    assert obj["status"]["pivot"]["phase"] == "Succeeded"


def _ref(name: str) -> InputRef:
    return InputRef("Resolution", name)


def test_a_catalog_change_re_resolves_only_the_inputs_it_concerns(env: Env) -> None:
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publisher.add("db", Version("1.0.0", config_map("db", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    web = env.resolution([{"name": "web"}])
    db = env.resolution([{"name": "db"}])
    env.wait(web, _ready_at(1), what="web installed")
    env.wait(db, _ready_at(1), what="db installed")
    assert env.reconciler is not None
    relevance = env.reconciler.engine.relevance
    assert relevance is not None
    concerned: list[list[str]] = []
    judge = relevance.concerned

    def recording(change: Any, names: Any) -> list[str]:
        result = judge(change, names)
        concerned.append(result)
        return result

    relevance.concerned = recording  # type: ignore[method-assign]
    env.publisher.add(
        "web", Version("1.1.0", config_map("web", ns, version="1.1.0"), replaces="1.0.0")
    )
    env.publish()
    obj = env.wait(web, _ready_at(2), what="web upgraded to revision 2")
    assert obj["status"]["selection"][0]["version"] == "1.1.0"
    assert concerned, "the catalog change reached the Resolution controller"
    assert web in concerned[0]
    assert db not in concerned[0]
    assert env.get(db)["status"]["activeRevision"] == 1
    # A change of db's package concerns db.
    env.publisher.add("db", Version("1.1.0", config_map("db", ns, version="1.1.0"), "1.0.0"))
    env.publish()
    env.wait(db, _ready_at(2), what="db upgraded to revision 2")
    assert db in concerned[-1]
    assert web not in concerned[-1]


def test_unsatisfiable_explains_and_unknown_selector_resolves_nothing(env: Env) -> None:
    env.publisher.add("web", Version("1.0.0", config_map("web", env.namespace, version="1")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web", "versionRange": ">=2.0.0"}])
    obj = env.wait(
        name, lambda o: is_(o, "Resolved", "False", "Unsatisfiable"), what="Unsatisfiable"
    )
    assert "web" in obj["status"]["explanation"]
    assert is_(obj, "Ready", "False")
    assert not env.children(name)
    env.kube.delete(RESOLUTIONS, name)


def _pivot(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj["status"].get("pivot") or {})


def test_dependency_then_grouped_rollback_names_the_failing_bundle(env: Env) -> None:
    ns = env.namespace
    env.publisher.add("db", Version("1.0.0", config_map("db", ns, version="1.0.0")))
    env.publisher.add(
        "app",
        Version("1.0.0", config_map("app", ns, version="1.0.0"), requires=(("db", ">=1.0.0"),)),
    )
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "app"}])
    obj = env.wait(name, _ready_at(1), what="app and its dependency db installed")
    assert {s["package"]: s["version"] for s in obj["status"]["selection"]} == {
        "app": "1.0.0",
        "db": "1.0.0",
    }
    assert sorted(env.children(name)) == [f"{name}-app", f"{name}-db"]

    # app 1.1.0 needs db 1.1.0 and is broken: its manifests use a kind no CRD provides.
    env.publisher.add("db", Version("1.1.0", config_map("db", ns, version="1.1.0"), "1.0.0"))
    env.publisher.add(
        "app",
        Version(
            "1.1.0",
            config_map("app", ns, version="1.1.0") + "---\n" + missing_kind("x", ns),
            "1.0.0",
            requires=(("db", ">=1.1.0"),),
        ),
    )
    env.publish()
    # An installed dependency nobody requested only moves when it must (docs/resolution.md,
    # level 1): request db too, so that both packages move as one group.
    env.kube.merge_patch(
        RESOLUTIONS, name, {"spec": {"packages": [{"name": "app"}, {"name": "db"}]}}
    )
    obj = env.wait(
        name,
        lambda o: is_(o, "Progressing", "False", "RolledBack"),
        what="the group to roll back",
        timeout=120,
    )
    pivot = _pivot(obj)
    assert pivot["revision"] == 2
    assert pivot["previousRevision"] == 1
    assert pivot["failedBundle"] == "app.v1.1.0"
    assert "Nowhere" in pivot["message"] or "no matches" in pivot["message"]
    assert obj["status"]["activeRevision"] == 1
    assert obj["status"]["lastSuccessfulRevision"] == 1
    assert obj["status"]["lastAttemptedRevision"] == 2
    # The whole group is back on revision 1, db included (it had moved to 1.1.0).
    obj = env.wait(name, lambda o: is_(o, "Installed", "True"), what="revision 1 reinstalled")
    assert env.config_map_data("db") == {"version": "1.0.0"}
    assert env.config_map_data("app") == {"version": "1.0.0"}
    for bd in env.children(name).values():
        assert bd["metadata"]["annotations"]["pivoter.io/revision"] == "1"
    assert is_(obj, "Ready", "False", "RolledBack")
    assert "app.v1.1.0" in condition(obj, "Ready")["message"]
    assert env.manager is not None
    registry = env.manager.metrics.registry
    labels = {"kind": "Resolution"}
    assert registry.get_sample_value("pivoter_rollbacks_total", labels) == 1
    assert (
        registry.get_sample_value("pivoter_pivots_total", {**labels, "outcome": "RolledBack"}) == 1
    )
    assert (
        registry.get_sample_value("pivoter_pivots_total", {**labels, "outcome": "Succeeded"}) == 1
    )
    assert registry.get_sample_value("pivoter_pivot_duration_seconds_count", labels) == 1
    assert registry.get_sample_value("pivoter_resolveset_revisions_written_total", labels) == 2
    assert (
        registry.get_sample_value("pivoter_resolutions_total", {**labels, "outcome": "resolved"})
        or 0
    ) >= 2


def test_manual_approval_publishes_the_plan_and_waits(env: Env) -> None:
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}], approval="Manual")
    obj = env.wait(
        name, lambda o: is_(o, "Progressing", "False", "AwaitingApproval"), what="a plan"
    )
    plan = obj["status"]["pendingPlan"]
    assert plan["revision"] == 1
    assert plan["added"] == [{"package": "web", "bundle": "web.v1.0.0", "version": "1.0.0"}]
    assert not env.children(name)
    # The objects of the plan: the bundle was unpacked and dry-run before any approval.
    obj = env.wait(
        name,
        lambda o: "counts" in ((o["status"].get("pendingPlan") or {}).get("objects") or {}),
        what="the objects of the plan",
    )
    objects = obj["status"]["pendingPlan"]["objects"]
    assert objects["added"] == [
        {"package": "web", "apiVersion": "v1", "kind": "ConfigMap", "name": "web", "namespace": ns}
    ]
    assert objects["counts"] == {"added": 1, "removed": 0, "kept": 0, "moved": 0}
    assert "1 passed a server-side dry run" in objects["dryRun"]
    assert env.config_map_data("web") is None
    env.kube.merge_patch(
        RESOLUTIONS, name, {"metadata": {"annotations": {"pivoter.io/approved-revision": "1"}}}
    )
    env.wait(name, _ready_at(1), what="the approved revision installed")

    extra = config_map("web-extra", ns, added="in 1.1.0")
    env.publisher.add(
        "web",
        Version("1.1.0", config_map("web", ns, version="1.1.0") + "---\n" + extra, "1.0.0"),
    )
    env.publish()
    obj = env.wait(
        name,
        lambda o: (
            "counts" in ((o["status"].get("pendingPlan") or {}).get("objects") or {})
            and o["status"]["pendingPlan"]["revision"] == 2
        ),
        what="the plan of revision 2 with its objects",
    )
    assert obj["status"]["pendingPlan"]["changed"] == [
        {"package": "web", "bundle": "web.v1.1.0", "fromVersion": "1.0.0", "toVersion": "1.1.0"}
    ]
    objects = obj["status"]["pendingPlan"]["objects"]
    assert [o["name"] for o in objects["added"]] == ["web-extra"]
    assert objects["counts"] == {"added": 1, "removed": 0, "kept": 1, "moved": 0}
    assert "(objects: +1 -0, 1 applied again)" in condition(obj, "Progressing")["message"]
    assert obj["status"]["activeRevision"] == 1
    assert env.config_map_data("web") == {"version": "1.0.0"}
    env.kube.merge_patch(
        RESOLUTIONS, name, {"metadata": {"annotations": {"pivoter.io/approved-revision": "2"}}}
    )
    obj = env.wait(name, _ready_at(2), what="revision 2 after approval")
    assert obj["status"].get("pendingPlan") is None
    assert env.config_map_data("web") == {"version": "1.1.0"}


def test_rollback_pins_until_unpinned_and_history_limit(env: Env) -> None:
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}], historyLimit=2)
    env.wait(name, _ready_at(1), what="revision 1")
    env.publisher.add("web", Version("1.1.0", config_map("web", ns, version="1.1.0"), "1.0.0"))
    env.publish()
    env.wait(name, _ready_at(2), what="revision 2")

    env.kube.merge_patch(RESOLUTIONS, name, {"spec": {"pinnedRevision": 1}})
    obj = env.wait(name, _ready_at(1), what="the pin to revision 1")
    assert is_(obj, "Resolved", "True", "Pinned")
    assert env.config_map_data("web") == {"version": "1.0.0"}
    # A newer bundle does not undo the pin.
    env.publisher.add("web", Version("1.2.0", config_map("web", ns, version="1.2.0"), "1.1.0"))
    env.publish()
    env.kube.merge_patch(
        RESOLUTIONS, name, {"metadata": {"annotations": {"test.pivoter.io/poke": "1"}}}
    )
    obj = env.wait(name, lambda o: is_(o, "Ready", "True"), what="still ready")
    assert obj["status"]["activeRevision"] == 1
    assert env.config_map_data("web") == {"version": "1.0.0"}

    env.kube.merge_patch(RESOLUTIONS, name, {"spec": {"pinnedRevision": None}})
    obj = env.wait(
        name,
        lambda o: (
            is_(o, "Ready", "True")
            and [x["version"] for x in o["status"]["selection"]] == ["1.2.0"]
        ),
        what="following the catalog again, one upgrade edge at a time",
    )
    assert env.config_map_data("web") == {"version": "1.2.0"}
    assert obj["status"]["activeRevision"] >= 3
    numbers = [r.number for r in env.store.list(_ref(name))]
    assert len(numbers) == 2, numbers
    assert obj["status"]["activeRevision"] in numbers
    assert env.manager is not None
    collected = env.manager.metrics.registry.get_sample_value(
        "pivoter_resolveset_revisions_collected_total", {"kind": "Resolution"}
    )
    assert collected == max(numbers) - len(numbers)


def test_second_input_for_an_installed_package_gets_a_conflict(env: Env) -> None:
    env.publisher.add("web", Version("1.0.0", config_map("web", env.namespace, version="1")))
    env.publish()
    env.catalog()
    first = env.resolution([{"name": "web"}])
    env.wait(first, _ready_at(1), what="the first input installed")
    second = env.resolution([{"name": "web"}])
    obj = env.wait(second, lambda o: is_(o, "Conflict", "True"), what="a conflict")
    assert f"Resolution/{first}" in condition(obj, "Conflict")["message"]
    assert is_(obj, "Ready", "False", "Conflict")
    assert not env.children(second)


def test_child_deleted_by_hand_is_recreated(env: Env) -> None:
    from pivoter.apis.resources import BUNDLE_DEPLOYMENTS

    env.publisher.add("web", Version("1.0.0", config_map("web", env.namespace, version="1")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}])
    env.wait(name, _ready_at(1), what="installed")
    child = f"{name}-web"
    old_uid = env.children(name)[child]["metadata"]["uid"]
    env.kube.delete(BUNDLE_DEPLOYMENTS, child)

    def recreated(obj: dict[str, Any]) -> bool:
        # A new object under the same name (the loss itself may be too brief to observe).
        current = env.children(name).get(child)
        return current is not None and current["metadata"]["uid"] != old_uid and _ready_at(1)(obj)

    obj = env.wait(name, recreated, what="the child re-created")
    assert obj["status"]["activeRevision"] == 1


def test_deletion_removes_what_was_installed(env: Env) -> None:
    from tests.cluster import wait_for

    env.publisher.add("web", Version("1.0.0", config_map("web", env.namespace, version="1")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}])
    env.wait(name, _ready_at(1), what="installed")
    env.kube.delete(RESOLUTIONS, name)
    wait_for(lambda: env.config_map_data("web") is None, timeout=60, what="uninstall")
    wait_for(lambda: not env.children(name), timeout=60, what="children gone")


def test_catalog_dropping_the_installed_bundle_keeps_it_running(env: Env) -> None:
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}])
    env.wait(name, _ready_at(1), what="installed")
    # The catalog now offers only another package.
    del env.publisher.packages["web"]
    (env.publisher.directory / "web.yaml").unlink()
    env.publisher.add("other", Version("1.0.0", config_map("other", ns, version="1")))
    env.publish()
    obj = env.wait(
        name,
        lambda o: "no selected catalog offers" in condition(o, "Resolved").get("message", ""),
        what="the dropped bundle noticed",
    )
    assert "web 1.0.0 stay as installed" in condition(obj, "Resolved")["message"]
    obj = env.wait(name, lambda o: is_(o, "Ready", "True"), what="still ready")
    assert obj["status"]["activeRevision"] == 1
    assert [r.number for r in env.store.list(_ref(name))] == [1]
    assert env.config_map_data("web") == {"version": "1.0.0"}
    assert list(env.children(name)) == [f"{name}-web"]


def test_revision_deleted_by_hand_is_reported_and_rebuilt(env: Env) -> None:
    from pivoter.apis.resources import CONFIG_MAPS
    from pivoter.resolvesets import revision_name

    env.publisher.add("web", Version("1.0.0", config_map("web", env.namespace, version="1")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}])
    env.wait(name, _ready_at(1), what="installed")
    env.kube.delete(CONFIG_MAPS, revision_name(_ref(name), 1), env.namespace)
    obj = env.wait(
        name,
        lambda o: is_(o, "Ready", "True", "Repaired") or o["status"].get("activeRevision") == 2,
        what="the deleted revision noticed",
    )
    obj = env.wait(name, _ready_at(2), what="the state rebuilt as revision 2")
    assert [r.number for r in env.store.list(_ref(name))] == [2]
    assert obj["status"]["selection"][0]["version"] == "1.0.0"
    assert env.config_map_data("web") == {"version": "1"}


def test_orphan_deletion_policy_leaves_the_bundles_running(env: Env) -> None:
    from pivoter.apis.resources import BUNDLE_DEPLOYMENTS
    from tests.cluster import wait_for

    env.publisher.add("web", Version("1.0.0", config_map("web", env.namespace, version="1")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}], deletionPolicy="Orphan")
    env.wait(name, _ready_at(1), what="installed")
    env.kube.delete(RESOLUTIONS, name)

    def gone() -> bool:
        return not any(
            n == name for n in (r["metadata"]["name"] for r in env.kube.list(RESOLUTIONS)[0])
        )

    wait_for(gone, timeout=60, what="the Resolution deleted")
    bd = env.kube.get(BUNDLE_DEPLOYMENTS, f"{name}-web")
    assert not bd["metadata"].get("ownerReferences")
    assert "pivoter.io/input" not in (bd["metadata"].get("annotations") or {})
    assert env.config_map_data("web") == {"version": "1"}
    env.kube.delete(BUNDLE_DEPLOYMENTS, f"{name}-web")
    wait_for(lambda: env.config_map_data("web") is None, timeout=60, what="manual uninstall")


def test_package_removed_from_the_spec_is_uninstalled(env: Env) -> None:
    from tests.cluster import wait_for

    ns = env.namespace
    env.publisher.add("db", Version("1.0.0", config_map("db", ns, version="1")))
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "db"}, {"name": "web"}])
    env.wait(name, _ready_at(1), what="both installed")
    env.kube.merge_patch(RESOLUTIONS, name, {"spec": {"packages": [{"name": "web"}]}})
    obj = env.wait(name, _ready_at(2), what="revision 2 without db")
    assert [s["package"] for s in obj["status"]["selection"]] == ["web"]
    wait_for(lambda: env.config_map_data("db") is None, timeout=60, what="db uninstalled")
    assert list(env.children(name)) == [f"{name}-web"]
    assert env.config_map_data("web") == {"version": "1"}


def _chart(version: str, namespace: str) -> tuple[tuple[str, str], ...]:
    chart = f"apiVersion: v2\nname: web-chart\nversion: {version}\n"
    values = f"greeting: hello from chart {version}\n"
    template = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: chart-web\n"
        f"  namespace: {namespace}\n"
        "data:\n  greeting: {{ .Values.greeting | quote }}\n"
        "  release: {{ .Release.Name | quote }}\n"
    )
    return (
        ("Chart.yaml", chart),
        ("values.yaml", values),
        ("templates/cm.yaml", template),
    )


def test_helm_charts_in_catalogs_resolve_and_pivot(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bundle whose olm.bundle.mediatype is helm installs and upgrades like the others."""
    from tests.tools import tool

    monkeypatch.setenv("PIVOTER_HELM", str(tool("helm")))
    ns = env.namespace
    env.publisher.add(
        "web-chart", Version("1.0.0", "", mediatype="helm", files=_chart("1.0.0", ns))
    )
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web-chart"}])
    env.wait(name, _ready_at(1), what="the chart installed")
    bd = env.children(name)[f"{name}-web-chart"]
    assert bd["spec"]["provisionerClassName"] == "core-rukpak-io-helm"
    assert env.config_map_data("chart-web") == {
        "greeting": "hello from chart 1.0.0",
        "release": "web-chart",
    }
    env.publisher.add(
        "web-chart",
        Version("1.1.0", "", mediatype="helm", files=_chart("1.1.0", ns), replaces="1.0.0"),
    )
    env.publish()
    env.wait(name, _ready_at(2), what="the chart upgraded")
    data = env.config_map_data("chart-web")
    assert data is not None
    assert data["greeting"] == "hello from chart 1.1.0"
