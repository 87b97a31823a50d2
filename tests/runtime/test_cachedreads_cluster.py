"""CachedReads on the real control plane: reads of what the informers hold make no request,
its own writes are read back at once, what others write is seen when the watch delivers it,
and what no cache can answer goes to the API server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pivoter.apis.resources import CONFIG_MAPS
from pivoter.kube import Kube, NotFound
from pivoter.runtime.cachedreads import CachedReads
from pivoter.runtime.informer import Informer
from tests.cluster import wait_for

pytestmark = pytest.mark.cluster


class _Counted:
    def __init__(self, kube: Kube) -> None:
        self.requests: list[tuple[str, str]] = []
        kube.observer = lambda method, path, _query, _code: self.requests.append((method, path))


@pytest.fixture
def informers(kube: Kube, namespace: str) -> Iterator[list[Informer]]:
    """ConfigMaps of the namespace, all of them and those labelled ``app``."""
    started = [
        Informer(kube, CONFIG_MAPS, namespace=namespace),
        Informer(kube, CONFIG_MAPS, namespace=namespace, label_selector="app"),
    ]
    for informer in started:
        informer.start()
    try:
        for informer in started:
            assert informer.wait_for_sync(30)
        yield started
    finally:
        for informer in started:
            informer.stop()


def _config_map(name: str, namespace: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"v": "1"},
    }


def test_reads_from_the_cache_and_reads_its_own_writes(
    kube: Kube, namespace: str, informers: list[Informer]
) -> None:
    counted = _Counted(kube)
    reads = CachedReads(kube, lambda: informers)
    created = reads.create(CONFIG_MAPS, _config_map("a", namespace, app="web"), namespace)
    patched = reads.merge_patch(CONFIG_MAPS, "a", {"data": {"v": "2"}}, namespace)
    counted.requests.clear()
    # At once, whether or not the watch delivered them yet: the latest own write.
    assert reads.get(CONFIG_MAPS, "a", namespace)["data"] == {"v": "2"}
    (listed,) = reads.list(CONFIG_MAPS, namespace, label_selector="app=web")[0]
    assert listed["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]
    assert reads.list(CONFIG_MAPS, namespace, label_selector="app=db")[0] == []
    with pytest.raises(NotFound):
        reads.get(CONFIG_MAPS, "absent", namespace)
    assert counted.requests == [], "cache reads sent requests"
    assert created["metadata"]["uid"] == listed["metadata"]["uid"]

    # Someone else's write: seen once the watch delivers it, still without a request.
    kube.merge_patch(CONFIG_MAPS, "a", {"data": {"v": "3"}}, namespace)
    wait_for(
        lambda: reads.get(CONFIG_MAPS, "a", namespace)["data"] == {"v": "3"},
        timeout=30,
        what="the other client's write in the cache",
    )
    counted.requests = [r for r in counted.requests if r[0] != "PATCH"]
    assert counted.requests == []
    # What is handed out is a copy: changing it changes nothing cached.
    reads.get(CONFIG_MAPS, "a", namespace)["data"]["v"] = "changed"
    assert reads.get(CONFIG_MAPS, "a", namespace)["data"] == {"v": "3"}


def test_a_write_is_read_back_only_where_its_labels_are_held(
    kube: Kube, namespace: str, informers: list[Informer]
) -> None:
    reads = CachedReads(kube, lambda: informers[1:])  # only the informer of labelled ones
    reads.create(CONFIG_MAPS, _config_map("unlabelled", namespace), namespace)
    kube.delete(CONFIG_MAPS, "unlabelled", namespace)
    # That cache never holds it (nor hears of its deletion): the API server answers.
    with pytest.raises(NotFound):
        reads.get(CONFIG_MAPS, "unlabelled", namespace)


def test_what_no_cache_answers_goes_to_the_api_server(
    kube: Kube, namespace: str, informers: list[Informer]
) -> None:
    reads = CachedReads(kube, lambda: informers[1:])  # only the informer of labelled ones
    kube.create(CONFIG_MAPS, _config_map("plain", namespace), namespace)
    secrets = kube.resource("v1", "Secret")
    counted = _Counted(kube)
    # Not in the label-selected cache, but it exists: asked from the API server.
    assert reads.get(CONFIG_MAPS, "plain", namespace)["metadata"]["name"] == "plain"
    # A selector that does not imply the informer's (it could select unlabelled ones).
    names = [o["metadata"]["name"] for o in reads.list(CONFIG_MAPS, namespace)[0]]
    assert "plain" in names
    reads.list(CONFIG_MAPS, namespace, field_selector="metadata.name=plain")
    # A kind no informer holds.
    reads.list(secrets, namespace)
    assert [m for m, _ in counted.requests] == ["GET"] * 4


def test_an_object_it_created_and_another_client_deleted_is_gone_with_the_event(
    kube: Kube, namespace: str, informers: list[Informer]
) -> None:
    reads = CachedReads(kube, lambda: informers)
    reads.create(CONFIG_MAPS, _config_map("short-lived", namespace), namespace)
    kube.delete(CONFIG_MAPS, "short-lived", namespace)

    def gone() -> bool:
        try:
            reads.get(CONFIG_MAPS, "short-lived", namespace)
        except NotFound:
            return True
        return False

    # Within the watch's delay, not the 30 s a create is read back at most.
    wait_for(gone, timeout=10, interval=0.1, what="the deletion seen through the cache")
    assert "short-lived" not in [
        o["metadata"]["name"] for o in reads.list(CONFIG_MAPS, namespace)[0]
    ]


class _WatchFirst(CachedReads):
    """The moment a write's answer is in, before it is recorded, another client writes the
    object again and the watch delivers both versions (seen in a 1000-input benchmark: a
    Resolution waited for good on its child's status as it was before the child's own
    controller installed it)."""

    def __init__(self, kube: Kube, informers: list[Informer], other: Kube) -> None:
        super().__init__(kube, lambda: informers)
        self.caches = informers
        self.other = other
        self.armed = False

    def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        answer = super()._send(method, path, **kwargs)
        if self.armed:
            self.armed = False
            name, namespace = "a", self.caches[0].namespace
            later = self.other.merge_patch(CONFIG_MAPS, name, {"data": {"v": "theirs"}}, namespace)
            version = later["metadata"]["resourceVersion"]
            # Every cache that holds the object (the plain one and the labelled one) has both.
            wait_for(
                lambda: all(
                    (c.store.get(f"{namespace}/{name}") or {})
                    .get("metadata", {})
                    .get("resourceVersion")
                    == version
                    for c in self.caches
                ),
                timeout=30,
                what="the watches to deliver both writes",
            )
        return answer


def test_a_write_recorded_after_the_watch_delivered_a_later_one_does_not_hide_it(
    kube: Kube, namespace: str, informers: list[Informer]
) -> None:
    reads = _WatchFirst(kube, informers, kube)
    reads.create(CONFIG_MAPS, _config_map("a", namespace, app="web"), namespace)
    wait_for(
        lambda: all(i.store.get(f"{namespace}/a") is not None for i in informers),
        timeout=30,
        what="the create in the caches",
    )
    reads.armed = True
    reads.merge_patch(CONFIG_MAPS, "a", {"data": {"v": "mine"}}, namespace)
    # Ours came first, theirs after it: the cache holds theirs, and so must every read.
    assert reads.get(CONFIG_MAPS, "a", namespace)["data"] == {"v": "theirs"}
    (listed,) = reads.list(CONFIG_MAPS, namespace, label_selector="app=web")[0]
    assert listed["data"] == {"v": "theirs"}
