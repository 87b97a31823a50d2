"""Bad input on the real control plane (issue 8, "Bad input"): the status says what is wrong and
what pivoter did, and the last good state keeps running.

Through a Manager with every controller, in this process (``env``). Covered here: a failing first
install; a Catalog that becomes unreachable; a Catalog whose content becomes malformed; a
Resolution that becomes unsatisfiable; a ResolveSet ConfigMap edited by hand (deleted and
re-created with other content, since it is immutable); a child BundleDeployment deleted by hand
(the Warning Event). Covered in ``test_resolution_cluster.py``: a catalog that drops the
installed bundle, an unsatisfiable first request, a ResolveSet deleted by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from pivoter.apis.resources import CATALOGS, CONFIG_MAPS, RESOLUTIONS
from pivoter.kube import EventRecorder
from pivoter.kube.events import EVENTS
from pivoter.resolvesets import InputRef, revision_name
from tests.cluster import session_labels, unique_name, wait_for
from tests.inputs.conftest import Env, condition, is_
from tests.inputs.helpers import (
    Version,
    config_map,
    missing_kind,
    unschedulable_deployment,
)

pytestmark = pytest.mark.cluster


def _ready_at(revision: int) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        return is_(obj, "Ready", "True") and obj["status"].get("activeRevision") == revision

    return check


def _ref(name: str) -> InputRef:
    return InputRef("Resolution", name)


def _poke(env: Env, name: str, value: str) -> None:
    """Make the controller reconcile the input again without changing its spec."""
    env.kube.merge_patch(
        RESOLUTIONS, name, {"metadata": {"annotations": {"test.pivoter.io/poke": value}}}
    )


def _serving(env: Env, catalog: str) -> dict[str, Any]:
    return condition(env.kube.get(CATALOGS, catalog), "Serving")


def _installed_and_untouched(env: Env, name: str, *, version: str) -> None:
    """Revision 1 is still active and running: its child, its objects, no other revision."""
    obj = env.wait(name, _ready_at(1), what="revision 1 still ready")
    assert obj["status"]["lastSuccessfulRevision"] == 1
    assert [r.number for r in env.store.list(_ref(name))] == [1]
    assert list(env.children(name)) == [f"{name}-web"]
    assert env.config_map_data("web") == {"version": version}


# --------------------------------------------------------------------------- first install


@pytest.mark.parametrize("broken", ["rejected", "unhealthy"])
def test_failing_first_install_ends_failed_then_a_fix_succeeds(env: Env, broken: str) -> None:
    """``rejected``: an object of a kind no CRD provides (the API server refuses it);
    ``unhealthy``: a Deployment that installs but never becomes available (the deadline)."""
    ns = env.namespace
    bad = missing_kind("x", ns) if broken == "rejected" else unschedulable_deployment("x", ns)
    env.publisher.add(
        "web", Version("1.0.0", config_map("web", ns, version="1.0.0") + "---\n" + bad)
    )
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}], progressDeadlineSeconds=15)
    obj = env.wait(
        name,
        lambda o: is_(o, "Progressing", "False", "PivotFailed"),
        what="the first install to fail",
        timeout=120,
    )
    pivot = obj["status"]["pivot"]
    assert pivot["phase"] == "Failed"
    assert pivot["revision"] == 1
    assert not pivot.get("previousRevision")  # nothing to roll back to
    assert pivot["failedBundle"] == "web.v1.0.0"
    # The message names the bundle and why, in the API server's or the health check's words.
    message = pivot["message"]
    assert "web.v1.0.0" in message
    if broken == "rejected":
        assert "Nowhere" in message or "no matches" in message
    else:
        assert "deadline" in message
        assert "Deployment" in message
    assert "web.v1.0.0" in condition(obj, "Progressing")["message"]
    assert is_(obj, "Ready", "False")
    assert not obj["status"].get("activeRevision")
    assert not obj["status"].get("lastSuccessfulRevision")
    assert obj["status"]["lastAttemptedRevision"] == 1
    if broken == "unhealthy":
        # What was applied stays, so that a person can look at it.
        children = env.children(name)
        assert list(children) == [f"{name}-web"]
        assert is_(children[f"{name}-web"], "Healthy", "False")
        assert env.config_map_data("web") == {"version": "1.0.0"}

    # The catalog publishes a fixed version: the input pivots to it.
    env.publisher.add(
        "web", Version("1.0.1", config_map("web", ns, version="1.0.1"), replaces="1.0.0")
    )
    env.publish()
    obj = env.wait(name, _ready_at(2), what="the fixed version installed", timeout=120)
    assert obj["status"]["selection"][0]["version"] == "1.0.1"
    assert obj["status"]["pivot"]["phase"] == "Succeeded"
    assert obj["status"]["lastSuccessfulRevision"] == 2
    assert env.config_map_data("web") == {"version": "1.0.1"}
    children = env.children(name)
    assert list(children) == [f"{name}-web"]
    assert children[f"{name}-web"]["metadata"]["annotations"]["pivoter.io/revision"] == "2"


def test_failed_first_install_ready_condition_says_why(env: Env) -> None:
    ns = env.namespace
    bad = unschedulable_deployment("x", ns)
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1") + "---\n" + bad))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}], progressDeadlineSeconds=15)
    obj = env.wait(
        name,
        lambda o: is_(o, "Progressing", "False", "PivotFailed"),
        what="the first install to fail",
        timeout=120,
    )
    ready = condition(obj, "Ready")
    assert "web.v1.0.0" in ready["message"], ready
    # Installed does not claim that nothing is installed while the child is installed.
    assert "nothing is installed" not in condition(obj, "Installed")["message"]


# --------------------------------------------------------------------------- catalogs


def _install_from_http(env: Env) -> tuple[str, str]:
    env.publisher.add("web", Version("1.0.0", config_map("web", env.namespace, version="1.0.0")))
    env.publish()
    catalog = env.catalog()
    name = env.resolution([{"name": "web"}])
    env.wait(name, _ready_at(1), what="installed")
    return catalog, name


def _make_unreachable(env: Env, catalog: str) -> dict[str, Any]:
    """Stop the catalog's server; return its Serving condition once the Catalog reports it."""
    assert env.server is not None
    env.server.close()
    return dict(
        env.wait(
            catalog,
            lambda c: is_(c, "Serving", "False"),
            what="the Catalog to report the unreachable server",
            resource=CATALOGS,
            timeout=60,
        )["status"]
    )


def test_unreachable_catalog_keeps_the_installed_bundles_running(env: Env) -> None:
    catalog, name = _install_from_http(env)
    status = _make_unreachable(env, catalog)
    serving = condition({"status": status}, "Serving")
    assert serving["reason"] == "FetchFailed"
    assert "last good content" in serving["message"]
    assert "keeps serving resolution" in serving["message"]
    assert status["contentDigest"]  # the last good content is still what it reports
    # A resolution now works from the cached content: same selection, no new revision.
    _poke(env, name, "after-unreachable")
    _installed_and_untouched(env, name, version="1.0.0")
    obj = env.get(name)
    assert is_(obj, "Resolved", "True", "Resolved")
    assert obj["status"]["selection"][0]["catalog"] == catalog


def test_resolution_status_says_it_resolves_from_a_catalogs_last_good_content(env: Env) -> None:
    catalog, name = _install_from_http(env)
    _make_unreachable(env, catalog)
    _poke(env, name, "after-unreachable")
    obj = env.wait(
        name,
        lambda o: catalog in condition(o, "Resolved").get("message", ""),
        what="the Resolved condition to name the catalog that is not serving",
        timeout=30,
    )
    assert "last good content" in condition(obj, "Resolved")["message"]


def _fbc_config_map(name: str, namespace: str, text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"catalog.yaml": text},
    }


def test_malformed_catalog_keeps_the_installed_bundles_running(env: Env) -> None:
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publisher.publish()
    good = (env.publisher.directory / "web.yaml").read_text()
    source = unique_name("fbc")
    env.kube.create(CONFIG_MAPS, _fbc_config_map(source, ns, good), ns)
    catalog = unique_name("cat")
    env.kube.create(
        CATALOGS,
        {
            "apiVersion": "pivoter.io/v1alpha1",
            "kind": "Catalog",
            "metadata": {"name": catalog, "labels": session_labels()},
            "spec": {
                "source": {"type": "configMaps", "configMaps": [{"name": source}]},
                "pollInterval": "1s",
            },
        },
    )
    env.created.append((CATALOGS, catalog))
    name = env.resolution([{"name": "web"}])
    env.wait(name, _ready_at(1), what="installed from the ConfigMap catalog")
    digest = env.kube.get(CATALOGS, catalog)["status"]["contentDigest"]

    # Someone breaks the catalog: a bundle without a package, and text that is not YAML.
    malformed = good + "---\nschema: olm.bundle\nname: orphan.v1\n---\n{ not: yaml: [\n"
    env.kube.merge_patch(CONFIG_MAPS, source, {"data": {"catalog.yaml": malformed}}, ns)
    cat = env.wait(
        catalog,
        lambda c: is_(c, "Serving", "False", "Invalid"),
        what="the Catalog to report the malformed content",
        resource=CATALOGS,
        timeout=60,
    )
    message = condition(cat, "Serving")["message"]
    assert f"ConfigMap {source} key catalog.yaml" in message  # where to look
    assert "last good content" in message
    assert cat["status"]["contentDigest"] == digest
    _poke(env, name, "after-malformed")
    _installed_and_untouched(env, name, version="1.0.0")

    # Fixed again: the Catalog serves, nothing was disturbed.
    env.kube.merge_patch(CONFIG_MAPS, source, {"data": {"catalog.yaml": good}}, ns)
    env.wait(
        catalog,
        lambda c: is_(c, "Serving", "True"),
        what="the Catalog to serve again",
        resource=CATALOGS,
        timeout=60,
    )
    _installed_and_untouched(env, name, version="1.0.0")


# --------------------------------------------------------------------------- inputs


def test_resolution_that_becomes_unsatisfiable_keeps_what_is_installed(env: Env) -> None:
    _, name = _install_from_http(env)
    env.kube.merge_patch(
        RESOLUTIONS, name, {"spec": {"packages": [{"name": "web", "versionRange": ">=2.0.0"}]}}
    )
    obj = env.wait(
        name, lambda o: is_(o, "Resolved", "False", "Unsatisfiable"), what="Unsatisfiable"
    )
    assert "web" in obj["status"]["explanation"]
    assert "web" in condition(obj, "Resolved")["message"]
    assert is_(obj, "Ready", "False", "Unsatisfiable")
    assert obj["status"]["activeRevision"] == 1
    assert obj["status"]["selection"][0]["version"] == "1.0.0"  # what runs
    assert [r.number for r in env.store.list(_ref(name))] == [1]
    assert list(env.children(name)) == [f"{name}-web"]
    assert env.config_map_data("web") == {"version": "1.0.0"}
    assert is_(obj, "Installed", "True")


def _events(env: Env, name: str, reason: str) -> list[dict[str, Any]]:
    """The Events about the Resolution ``name`` with ``reason`` (cluster-scoped: in default)."""
    items, _ = env.kube.list(EVENTS, "default")
    return [
        e
        for e in items
        if (e.get("regarding") or {}).get("name") == name and e.get("reason") == reason
    ]


def _edit_revision_by_hand(env: Env, name: str) -> str:
    """Change revision 1 of ``name`` as a person can: an immutable ConfigMap cannot be edited,
    so delete it and create it again, changed. Returns the ConfigMap's name."""
    cm_name = revision_name(_ref(name), 1)
    original = env.kube.get(CONFIG_MAPS, cm_name, env.namespace)
    assert original["immutable"] is True
    (key,) = original["data"]
    edited_text = original["data"][key].replace("1.0.0", "9.9.9")
    assert edited_text != original["data"][key]
    metadata = original["metadata"]
    edited = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": cm_name,
            "namespace": env.namespace,
            "labels": metadata.get("labels") or {},
            "annotations": metadata.get("annotations") or {},
        },
        "immutable": True,
        "data": {key: edited_text},
    }
    env.kube.delete(CONFIG_MAPS, cm_name, env.namespace)
    env.kube.create(CONFIG_MAPS, edited, env.namespace)
    return cm_name


def test_resolveset_edited_by_hand_is_reported_and_rebuilt(env: Env) -> None:
    assert env.reconciler is not None
    env.reconciler.recorder = EventRecorder(
        env.kube, reporting_controller="pivoter-test", reporting_instance="test"
    )
    _, name = _install_from_http(env)
    cm_name = _edit_revision_by_hand(env, name)
    _poke(env, name, "after-edit")

    obj = env.wait(name, _ready_at(2), what="the state rebuilt as revision 2", timeout=90)
    # What is wrong and what pivoter did: a Warning Event (the Ready condition says it as
    # Repaired only until the rebuilt revision is active). Events follow the status write.
    (event,) = wait_for(
        lambda: _events(env, name, "ResolveSetModified"), timeout=30, what="the Warning Event"
    )
    assert event["type"] == "Warning"
    note = event["note"]
    assert cm_name in note
    # The edit is a delete then a create: a reconcile in between (the deletion queues one)
    # rightly finds the revision missing; one after finds it changed. Both are reported as what
    # they are (the checksum check itself: tests/resolvesets).
    assert "changed by hand" in note or "re-created" in note or "was deleted" in note, note
    assert "rebuilt" in note
    # The running bundle is what the children said, not the edited document.
    assert obj["status"]["selection"][0]["version"] == "1.0.0"
    assert env.config_map_data("web") == {"version": "1.0.0"}
    bd = env.children(name)[f"{name}-web"]
    assert bd["spec"]["template"]["spec"]["source"]["image"]["ref"].endswith("/web:1.0.0")
    rebuilt = env.kube.get(CONFIG_MAPS, revision_name(_ref(name), 2), env.namespace)
    assert "9.9.9" not in yaml.safe_dump(rebuilt["data"])


def test_an_edit_racing_a_resolution_is_still_reported(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The edit lands while a pass resolves: after it read the active revision intact, before
    it writes the selection (which then cannot reuse the changed revision)."""
    assert env.reconciler is not None
    env.reconciler.recorder = EventRecorder(
        env.kube, reporting_controller="pivoter-test", reporting_instance="test"
    )
    _, name = _install_from_http(env)
    write = env.store.write
    edited: list[str] = []

    def edit_then_write(ref: InputRef, *args: Any, **kwargs: Any) -> Any:
        if ref.name == name and not edited:
            edited.append(_edit_revision_by_hand(env, name))
        return write(ref, *args, **kwargs)

    monkeypatch.setattr(env.store, "write", edit_then_write)
    _poke(env, name, "race")
    env.wait(name, _ready_at(2), what="the state rebuilt as revision 2", timeout=90)
    (event,) = wait_for(
        lambda: _events(env, name, "ResolveSetModified"), timeout=30, what="the Warning Event"
    )
    assert edited
    assert edited[0] in event["note"]
    assert "changed by hand" in event["note"]
    # The pass that wrote revision 2 says so. Should its status write lose a race (a conflict
    # under load), the next pass finds the active revision 1 changed and says so from there:
    # either way the edit is reported and the state rebuilt from what ran.
    assert (
        "rebuilt the state as a new revision" in event["note"]
        or "rebuilt the installed state from the BundleDeployments" in event["note"]
    ), event["note"]
    assert env.config_map_data("web") == {"version": "1.0.0"}


def test_child_deleted_by_hand_is_reported_and_recreated(env: Env) -> None:
    from pivoter.apis.resources import BUNDLE_DEPLOYMENTS

    assert env.reconciler is not None
    env.reconciler.recorder = EventRecorder(
        env.kube, reporting_controller="pivoter-test", reporting_instance="test"
    )
    _, name = _install_from_http(env)
    child = f"{name}-web"
    old_uid = env.children(name)[child]["metadata"]["uid"]
    env.kube.delete(BUNDLE_DEPLOYMENTS, child)
    (event,) = wait_for(
        lambda: _events(env, name, "ChildMissing"), timeout=60, what="the ChildMissing Event"
    )
    assert event["type"] == "Warning"
    assert "web" in event["note"]

    def recreated(obj: dict[str, Any]) -> bool:
        current = env.children(name).get(child)
        return current is not None and current["metadata"]["uid"] != old_uid and _ready_at(1)(obj)

    env.wait(name, recreated, what="the child re-created on revision 1")
    assert [r.number for r in env.store.list(_ref(name))] == [1]
    assert env.config_map_data("web") == {"version": "1.0.0"}
