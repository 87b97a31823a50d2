"""Informers, server-side apply and Events against the real control plane.

Extends tests/integration/test_control_plane.py (which shows the apiserver behaves) by showing
that pivoter's own machinery uses that behaviour correctly: what the cache holds after applies,
patches, garbage collection, a Deployment rollout on a simulated node, a compacted watch (410)
and an apiserver restart.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pivoter.kube import (
    Conflict,
    EventRecorder,
    Kube,
    NotFound,
    Resource,
    WatchStream,
    apply,
)
from pivoter.observability import Metrics
from pivoter.runtime import EventHandler, Informer
from tests import manifests
from tests.cluster import TestCluster, session_labels, unique_name, wait_for

pytestmark = pytest.mark.cluster

CONFIGMAPS = Resource("v1", "ConfigMap", "configmaps", namespaced=True)


class Recorder:
    """An event handler that remembers what it was told, as (event, name) pairs."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def handler(self) -> EventHandler:
        def note(kind: str) -> Any:
            def record(*objs: dict[str, Any]) -> None:
                with self._lock:
                    self.events.append((kind, objs[-1]["metadata"]["name"]))

            return record

        return EventHandler(on_add=note("add"), on_update=note("update"), on_delete=note("delete"))

    def seen(self, kind: str, name: str) -> bool:
        with self._lock:
            return (kind, name) in self.events


@pytest.fixture
def informers() -> Iterator[list[Informer]]:
    """Informers to stop after the test."""
    started: list[Informer] = []
    yield started
    for informer in started:
        informer.stop()


def _start(informers: list[Informer], informer: Informer) -> Informer:
    informers.append(informer)
    informer.start()
    assert informer.wait_for_sync(30), f"{informer} did not sync"
    return informer


def _cached(informer: Informer, key: str) -> dict[str, Any]:
    """The cached object for ``key``, or an empty dict."""
    return informer.store.get(key) or {}


def _names(informer: Informer, namespace: str) -> set[str]:
    """Names cached in ``namespace``, without the CA bundle kube-controller-manager publishes."""
    return {o["metadata"]["name"] for o in informer.store.list(namespace)} - {"kube-root-ca.crt"}


def _widget_crd(group: str) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"size": {"type": "integer"}, "color": {"type": "string"}},
            }
        },
    }
    version = manifests.crd_version(schema=schema)
    return manifests.crd(group, versions=[version], labels=session_labels())


def test_custom_objects_applied_server_side_are_cached_by_the_informer(
    kube: Kube, namespace: str, informers: list[Informer]
) -> None:
    group = f"{unique_name('w')}.pivoter.test"
    crd = apply(kube, _widget_crd(group), field_manager="pivoter-test")
    crds = kube.resource("apiextensions.k8s.io/v1", "CustomResourceDefinition")

    def established() -> bool:
        conditions = (kube.get(crds, crd["metadata"]["name"]).get("status") or {}).get(
            "conditions"
        ) or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    wait_for(established, timeout=30, what="the CRD to be Established")
    widgets = kube.resource(f"{group}/v1", "Widget")  # discovery learns the new kind
    assert widgets.plural == "widgets"
    assert widgets.namespaced

    recorder = Recorder()
    informer = _start(informers, Informer(kube, widgets, namespace=namespace))
    informer.add_handler(recorder.handler())

    def widget(**spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": f"{group}/v1",
            "kind": "Widget",
            "metadata": {"name": "w1", "namespace": namespace},
            "spec": spec,
        }

    apply(kube, widget(size=1), field_manager="alice")
    apply(kube, widget(color="red"), field_manager="bob")  # another owner: fields merge

    def cached_spec() -> Any:
        cached = informer.store.get(f"{namespace}/w1")
        return cached and cached["spec"] == {"size": 1, "color": "red"} and cached

    cached = wait_for(cached_spec, timeout=30, what="the merged widget in the cache")
    assert cached["apiVersion"] == f"{group}/v1"
    # Who wrote which field is the API server's to say, not the cache's (memory).
    assert "managedFields" not in cached["metadata"]
    live = kube.get(widgets, "w1", namespace)
    assert {m["manager"] for m in live["metadata"]["managedFields"]} == {"alice", "bob"}
    assert recorder.seen("add", "w1")
    assert recorder.seen("update", "w1")

    # A field owned by someone else is a Conflict unless forced.
    with pytest.raises(Conflict, match="conflict"):
        apply(kube, widget(size=2), field_manager="bob")
    apply(kube, widget(size=2), field_manager="bob", force=True)
    wait_for(
        lambda: _cached(informer, f"{namespace}/w1")["spec"]["size"] == 2,
        timeout=30,
        what="the forced change in the cache",
    )

    # A dry run changes nothing.
    apply(kube, widget(size=9), field_manager="bob", dry_run=True)
    assert kube.get(widgets, "w1", namespace)["spec"]["size"] == 2


def test_configmaps_are_cached_through_create_patch_and_delete(
    kube: Kube, namespace: str, informers: list[Informer]
) -> None:
    apply(kube, manifests.configmap("before", namespace, {"k": "0"}), field_manager="pivoter-test")
    recorder = Recorder()
    informer = _start(informers, Informer(kube, CONFIGMAPS, namespace=namespace))
    informer.add_handler(recorder.handler())  # replays the cache: hears "before" as an add
    assert recorder.seen("add", "before")

    apply(kube, manifests.configmap("c", namespace, {"k": "1"}), field_manager="pivoter-test")
    apply(kube, manifests.configmap("c", namespace, {"k": "2"}), field_manager="pivoter-test")
    kube.merge_patch(CONFIGMAPS, "before", {"data": {"k": "patched"}}, namespace)
    wait_for(
        lambda: _cached(informer, f"{namespace}/c").get("data") == {"k": "2"},
        what="the applied ConfigMap in the cache",
    )
    wait_for(
        lambda: _cached(informer, f"{namespace}/before")["data"] == {"k": "patched"},
        what="the patched ConfigMap in the cache",
    )

    kube.delete(CONFIGMAPS, "c", namespace)
    wait_for(lambda: informer.store.get(f"{namespace}/c") is None, what="the deletion")
    assert recorder.seen("delete", "c")
    assert _names(informer, namespace) == {"before"}
    with pytest.raises(NotFound):
        kube.get(CONFIGMAPS, "c", namespace)


def test_a_delete_guarded_by_a_resource_version_refuses_a_changed_object(
    kube: Kube, namespace: str
) -> None:
    # What the OLM v0 hand-back relies on: a finalizer another writer put back after our write
    # is never deleted with (pivoter.olmv0.undo, Stopping).
    created = apply(
        kube, manifests.configmap("guarded", namespace, {"k": "0"}), field_manager="pivoter-test"
    )
    ours = kube.set_finalizers(CONFIGMAPS, created, ["example.com/ours"])
    theirs = kube.set_finalizers(CONFIGMAPS, ours, ["example.com/ours", "example.com/theirs"])
    with pytest.raises(Conflict):
        kube.delete(
            CONFIGMAPS, "guarded", namespace, resource_version=ours["metadata"]["resourceVersion"]
        )
    assert not kube.get(CONFIGMAPS, "guarded", namespace)["metadata"].get("deletionTimestamp")
    kube.delete(
        CONFIGMAPS, "guarded", namespace, resource_version=theirs["metadata"]["resourceVersion"]
    )
    deleting = kube.get(CONFIGMAPS, "guarded", namespace)
    assert deleting["metadata"]["deletionTimestamp"]
    kube.set_finalizers(CONFIGMAPS, deleting, [])
    with pytest.raises(NotFound):
        kube.get(CONFIGMAPS, "guarded", namespace)


def test_garbage_collection_is_seen_by_the_informer(
    kube: Kube, namespace: str, informers: list[Informer]
) -> None:
    informer = _start(informers, Informer(kube, CONFIGMAPS, namespace=namespace))
    recorder = Recorder()
    informer.add_handler(recorder.handler())
    parent = kube.create(CONFIGMAPS, manifests.configmap("parent", namespace, {}), namespace)
    owner = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "parent",
        "uid": parent["metadata"]["uid"],
    }
    kube.create(
        CONFIGMAPS, manifests.configmap("child", namespace, {}, ownerReferences=[owner]), namespace
    )
    wait_for(lambda: informer.store.get(f"{namespace}/child"), what="the child in the cache")

    kube.delete(CONFIGMAPS, "parent", namespace, propagation="Background")
    # Nobody deletes the child but kube-controller-manager's garbage collector.
    wait_for(
        lambda: recorder.seen("delete", "child"), timeout=60, what="garbage collection of the child"
    )
    assert informer.store.get(f"{namespace}/child") is None


@pytest.mark.kwok
def test_a_deployment_becomes_available_in_the_cache(
    kube: Kube, namespace: str, informers: list[Informer]
) -> None:
    deployments = kube.resource("apps/v1", "Deployment")
    informer = _start(informers, Informer(kube, deployments, namespace=namespace))
    labels = {"app": "web"}
    apply(
        kube,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "web", "image": "example.invalid/w:1"}]},
                },
            },
        },
        field_manager="pivoter-test",
    )

    def available() -> bool:
        status = _cached(informer, f"{namespace}/web").get("status", {})
        conditions = status.get("conditions", [])
        return status.get("availableReplicas") == 2 and any(
            c["type"] == "Available" and c["status"] == "True" for c in conditions
        )

    wait_for(available, timeout=90, what="the Deployment Available (simulated node)")


class PausableKube(Kube):
    """The real client, except that opening a watch can be held back (to let etcd compact the
    informer's resourceVersion away while it is not watching)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.open = threading.Event()
        self.open.set()
        self.held = threading.Event()
        self.watch_rvs: list[str] = []

    def watch(self, resource: Resource, namespace: str | None = None, **kw: Any) -> WatchStream:
        if not self.open.is_set():
            self.held.set()
            self.open.wait(60)
        self.watch_rvs.append(kw["resource_version"])
        return super().watch(resource, namespace, **kw)


def test_a_compacted_resource_version_relists_and_the_cache_is_right(
    cluster: TestCluster, namespace: str, informers: list[Informer]
) -> None:
    kube = PausableKube(cluster.api_client())
    metrics = Metrics(process=False)
    informer = _start(informers, Informer(kube, CONFIGMAPS, namespace=namespace, metrics=metrics))
    recorder = Recorder()
    informer.add_handler(recorder.handler())
    for name in ("stays", "goes", "changes"):
        kube.create(CONFIGMAPS, manifests.configmap(name, namespace, {"v": "1"}), namespace)
    wait_for(lambda: informer.store.get(f"{namespace}/changes"), what="the objects in the cache")

    # Drop the watch and hold the informer back, as a long network partition would.
    kube.open.clear()
    informer.interrupt_watch()
    assert kube.held.wait(30)
    # Where the informer stands: the newest object it saw (not necessarily "changes": the
    # namespace's kube-root-ca.crt may come after it, seen in CI).
    last_seen = max((str(o["metadata"]["resourceVersion"]) for o in informer.store.list()), key=int)

    kube.delete(CONFIGMAPS, "goes", namespace)
    kube.merge_patch(CONFIGMAPS, "changes", {"data": {"v": "2"}}, namespace)
    kube.create(CONFIGMAPS, manifests.configmap("new", namespace, {"v": "1"}), namespace)
    revision = cluster.compact_etcd()
    assert revision > int(last_seen)

    kube.open.set()  # the watch from `last_seen` now gets 410 Gone: the informer must relist
    wait_for(lambda: informer.relists == 2, timeout=60, what="a relist after 410 Gone")
    assert kube.watch_rvs[-2] == last_seen  # it did try to resume from where it was
    assert (
        metrics.registry.get_sample_value(
            "pivoter_informer_relists_total", {"resource": "configmaps.v1", "reason": "expired"}
        )
        == 1
    )
    assert _names(informer, namespace) == {"stays", "changes", "new"}
    assert _cached(informer, f"{namespace}/changes")["data"] == {"v": "2"}
    # Handlers heard about everything that happened while nobody watched.
    assert recorder.seen("delete", "goes")
    assert recorder.seen("add", "new")
    assert recorder.seen("update", "changes")

    # And it watches again afterwards.
    kube.create(CONFIGMAPS, manifests.configmap("after", namespace, {}), namespace)
    wait_for(lambda: informer.store.get(f"{namespace}/after"), what="a change after the relist")


def test_the_informer_survives_an_apiserver_restart(
    cluster: TestCluster, kube: Kube, namespace: str, informers: list[Informer]
) -> None:
    informer = _start(
        informers,
        Informer(kube, CONFIGMAPS, namespace=namespace, backoff_base=0.2, backoff_cap=2.0),
    )
    cluster.restart_apiserver()
    fresh = Kube(cluster.api_client())
    fresh.create(CONFIGMAPS, manifests.configmap("after-restart", namespace, {}), namespace)
    wait_for(
        lambda: informer.store.get(f"{namespace}/after-restart"),
        timeout=60,
        what="the informer to resume after the restart",
    )


def test_events_are_written_and_repeats_fold_into_a_series(kube: Kube, namespace: str) -> None:
    subject = kube.create(CONFIGMAPS, manifests.configmap("subject", namespace, {}), namespace)
    recorder = EventRecorder(
        kube, reporting_controller="pivoter.io/test", reporting_instance="test-0"
    )
    first = recorder.normal(subject, "Applied", "Apply", "applied 3 objects")
    again = recorder.normal(subject, "Applied", "Apply", "applied 3 objects")
    recorder.warning(subject, "Failed", "Apply", "x" * 5000)
    assert first is not None
    assert again is not None
    events = kube.resource("events.k8s.io/v1", "Event")
    items, _ = kube.list(events, namespace)
    by_reason = {e["reason"]: e for e in items if e["regarding"]["name"] == "subject"}
    assert set(by_reason) == {"Applied", "Failed"}
    applied = by_reason["Applied"]
    assert applied["regarding"]["uid"] == subject["metadata"]["uid"]
    assert applied["reportingController"] == "pivoter.io/test"
    assert applied["series"]["count"] == 2
    assert by_reason["Failed"]["type"] == "Warning"
    assert len(by_reason["Failed"]["note"]) <= 1024
    # The legacy core/v1 view of the same Event, which `kubectl describe` reads.
    legacy, _ = kube.list(Resource("v1", "Event", "events", namespaced=True), namespace)
    assert any(e["reason"] == "Applied" for e in legacy)
