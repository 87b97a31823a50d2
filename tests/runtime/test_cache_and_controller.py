"""The cache's relist diff and a controller's handling of reconcile results (no API server)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from pivoter.observability import Metrics
from pivoter.runtime import (
    Controller,
    ExponentialBackoff,
    Result,
    Store,
    object_key,
    owner_keys,
    split_key,
)
from pivoter.runtime import controller as controller_module
from provisioners.apply.kubeerrors import Unavailable
from tests.polling import wait_for


def _obj(name: str, rv: str, namespace: str | None = "ns") -> dict[str, Any]:
    metadata = {"name": name, "resourceVersion": rv}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


def test_keys_follow_client_go() -> None:
    assert object_key(_obj("a", "1")) == "ns/a"
    assert object_key(_obj("node", "1", namespace=None)) == "node"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("node") == ("", "node")
    with pytest.raises(ValueError, match=r"no metadata\.name"):
        object_key({"metadata": {}})


def test_replace_reports_every_difference_and_reindexes() -> None:
    store = Store()
    store.replace([_obj("keep", "1"), _obj("change", "1"), _obj("gone", "1"), _obj("x", "1", "b")])
    added, updated, deleted = store.replace(
        [_obj("keep", "1"), _obj("change", "2"), _obj("new", "3")]
    )
    assert [object_key(o) for o in added] == ["ns/new"]
    assert [(object_key(o), object_key(n)) for o, n in updated] == [("ns/change", "ns/change")]
    assert sorted(object_key(o) for o in deleted) == ["b/x", "ns/gone"]
    assert sorted(object_key(o) for o in store.list("ns")) == ["ns/change", "ns/keep", "ns/new"]
    assert store.list("b") == []


def test_upsert_and_delete_keep_the_namespace_index() -> None:
    store = Store()
    assert store.upsert(_obj("a", "1")) is None
    assert store.upsert(_obj("a", "2"))["metadata"]["resourceVersion"] == "1"  # type: ignore[index]
    assert store.delete(_obj("a", "3")) is not None
    assert store.list("ns") == []
    assert store.delete(_obj("a", "3")) is None


def _labelled(name: str, rv: str, **labels: str) -> dict[str, Any]:
    obj = _obj(name, rv)
    obj["metadata"]["labels"] = labels
    return obj


def test_the_label_index_follows_upserts_deletes_and_relists() -> None:
    store = Store()
    store.upsert(_labelled("a", "1", app="web", tier="front"))
    store.upsert(_labelled("b", "1", app="web"))
    assert sorted(store.labelled("app", "web")) == ["ns/a", "ns/b"]
    assert store.labelled("tier", "front") == ["ns/a"]
    # A label changed or removed leaves the old entry; a deletion leaves none.
    store.upsert(_labelled("a", "2", app="db"))
    assert store.labelled("app", "web") == ["ns/b"]
    assert store.labelled("app", "db") == ["ns/a"]
    assert store.labelled("tier", "front") == []
    store.delete(_labelled("b", "3"))
    assert store.labelled("app", "web") == []
    store.replace([_labelled("c", "4", app="web"), _labelled("a", "2", app="db")])
    assert store.labelled("app", "web") == ["ns/c"]
    assert store.labelled("app", "db") == ["ns/a"]
    store.replace([])
    assert store.labelled("app", "db") == []


def _tiers(obj: dict[str, Any]) -> list[str]:
    tiers = str((obj["metadata"].get("labels") or {}).get("tiers") or "")
    if tiers == "boom":
        raise ValueError("an object the index function cannot read")
    return [t for t in tiers.split(".") if t]


def test_a_named_index_follows_upserts_deletes_and_relists() -> None:
    store = Store()
    store.upsert(_labelled("a", "1", tiers="front.back"))
    # Added late, it indexes what is cached already; added again, the first function stays.
    store.add_index("tier", _tiers)
    store.add_index("tier", lambda obj: ["other"])
    store.upsert(_labelled("b", "1", tiers="back"))
    assert store.indexed("tier", "front") == ["ns/a"]
    assert sorted(store.indexed("tier", "back")) == ["ns/a", "ns/b"]
    assert store.indexed("tier", "other") == []
    assert store.indexed("unknown", "back") == []
    store.upsert(_labelled("a", "2", tiers="db"))
    assert store.indexed("tier", "front") == []
    assert store.indexed("tier", "back") == ["ns/b"]
    assert store.indexed("tier", "db") == ["ns/a"]
    # An object the function fails on is cached and in no index; the others stay indexed.
    store.upsert(_labelled("b", "2", tiers="boom"))
    assert store.get("ns/b") is not None
    assert store.indexed("tier", "back") == []
    store.delete(_labelled("a", "3"))
    assert store.indexed("tier", "db") == []
    store.replace([_labelled("c", "4", tiers="front"), _labelled("a", "5", tiers="front")])
    assert sorted(store.indexed("tier", "front")) == ["ns/a", "ns/c"]
    store.replace([])
    assert store.indexed("tier", "front") == []


def test_owner_keys_maps_dependents_to_their_owners() -> None:
    child = _obj("child", "1")
    child["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u1"},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u2"},
    ]
    assert owner_keys("Deployment")(child) == ["ns/web"]
    assert owner_keys("Deployment", "apps")(child) == ["ns/web"]
    assert owner_keys("Deployment", "other.io")(child) == []


def test_results_drive_retries_backoff_and_delays() -> None:
    calls: dict[str, int] = {}
    lock = threading.Lock()

    def reconcile(key: str) -> Result | None:
        with lock:
            calls[key] = calls.get(key, 0) + 1
            n = calls[key]
        if key == "fails-twice" and n <= 2:
            raise RuntimeError("transient")
        if key == "requeue-once" and n == 1:
            return Result(requeue=True)
        if key == "after" and n == 1:
            return Result(requeue_after=0.05)
        return None

    metrics = Metrics(process=False)
    controller = Controller(
        "c",
        reconcile,
        workers=3,
        resync_period=None,
        metrics=metrics,
        rate_limiter=ExponentialBackoff(base=0.01, cap=0.05),
    )
    controller.start()
    for key in ("fails-twice", "requeue-once", "after", "plain"):
        controller.queue.add(key)
    wait_for(
        lambda: calls == {"fails-twice": 3, "requeue-once": 2, "after": 2, "plain": 1},
        timeout=5.0,
        interval=0.005,
    )
    wait_for(lambda: controller.queue.pending() == 0, timeout=5.0, interval=0.005)
    assert controller.stop(5)
    assert not controller.running
    sample = metrics.registry.get_sample_value
    assert sample("pivoter_reconcile_errors_total", {"controller": "c"}) == 2
    assert sample("pivoter_reconcile_total", {"controller": "c", "result": "success"}) == 4
    assert sample("pivoter_reconcile_total", {"controller": "c", "result": "requeue"}) == 1
    assert sample("pivoter_reconcile_total", {"controller": "c", "result": "requeue_after"}) == 1
    assert sample("pivoter_reconcile_duration_seconds_count", {"controller": "c"}) == 8
    # Success forgot the failures: a new failure starts from the shortest delay again.
    assert controller.queue.num_requeues("fails-twice") == 0


def test_stop_waits_for_the_reconcile_in_flight() -> None:
    started, release = threading.Event(), threading.Event()
    finished = []

    def reconcile(key: str) -> None:
        started.set()
        release.wait(5)
        finished.append(key)

    controller = Controller("slow", reconcile, resync_period=None)
    controller.start()
    controller.queue.add("k")
    assert started.wait(5)
    stopper = threading.Thread(target=controller.stop, args=(10,))
    stopper.start()
    time.sleep(0.05)
    assert stopper.is_alive()  # still waiting for the reconcile
    release.set()
    stopper.join(5)
    assert finished == ["k"]
    assert not controller.running


def test_a_controller_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        Controller("c", lambda key: None, workers=0)


def test_an_unavailable_api_server_is_one_line_and_a_short_retry(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """During an outage every key fails the same way: a warning line each (no traceback), and a
    retry within the cap however long the backoff has grown; other failures keep their
    traceback and their backoff."""
    monkeypatch.setattr(controller_module, "UNAVAILABLE_RETRY_CAP", 0.05)
    calls: dict[str, int] = {}

    def reconcile(key: str) -> None:
        calls[key] = calls.get(key, 0) + 1
        if calls[key] <= 2:
            if key == "down":
                raise Unavailable(0, "", "GET /api on https://127.0.0.1:1 failed: refused")
            raise RuntimeError("a bug")

    controller = Controller(
        "c", reconcile, resync_period=None, rate_limiter=ExponentialBackoff(base=100, cap=1000)
    )
    caplog.set_level(logging.WARNING, logger="pivoter.runtime.controller")
    controller.start()
    controller.queue.add("down")
    controller.queue.add("bug")
    wait_for(lambda: calls.get("down") == 3, timeout=5.0, interval=0.005)
    assert controller.stop(5)
    assert calls["bug"] == 1  # its backoff (100 s) is not capped
    down = [r for r in caplog.records if "down" in r.getMessage()]
    assert len(down) == 2
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in down)
    assert "refused" in down[0].getMessage()
    bug = [r for r in caplog.records if "bug" in r.getMessage()]
    assert len(bug) == 1
    assert bug[0].exc_info is not None
