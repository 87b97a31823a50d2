"""ResolveSet revisions on the control plane: numbering, no-op writes, hand edits, history GC and
two writers racing for the next number."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pivoter.apis.resources import CONFIG_MAPS
from pivoter.kube import Invalid, Kube
from pivoter.resolvesets import DATA_KEY, InputRef, RevisionState, RevisionStore, revision_name
from pivoter.resolvesets.document import REVISIONS_SELECTOR
from pivoter.resolvesets.metrics import RevisionMetrics
from pivoter.runtime.cachedreads import CachedReads
from pivoter.runtime.informer import Informer
from tests.resolvesets.conftest import resolveset

pytestmark = pytest.mark.cluster

WEB = InputRef("Resolution", "web")


def test_identical_selection_writes_no_revision(store: RevisionStore) -> None:
    first = store.write(WEB, resolveset(("db", "1.0.0")))
    assert (first.number, first.name) == (1, "resolution-web-r1")
    again = store.write(WEB, resolveset(("db", "1.0.0")))
    assert again == first
    second = store.write(WEB, resolveset(("db", "1.1.0")))
    assert second.number == 2
    # going back to an older selection is a new revision, not a reuse of r1
    third = store.write(WEB, resolveset(("db", "1.0.0")))
    assert third.number == 3
    assert [r.number for r in store.list(WEB)] == [1, 2, 3]
    assert store.latest(WEB) == third
    assert store.get(WEB, 2) == second
    assert store.get(WEB, 9) is None


def test_revisions_are_immutable_and_labelled(
    store: RevisionStore, kube: Kube, namespace: str
) -> None:
    revision = store.write(WEB, resolveset(("db", "1.0.0")))
    stored = kube.get(CONFIG_MAPS, revision.name, namespace)
    assert stored["immutable"] is True
    assert stored["metadata"]["labels"]["pivoter.io/revision"] == "1"
    assert stored["metadata"]["labels"]["pivoter.io/input-name"] == "web"
    stored["data"][DATA_KEY] = "edited"
    with pytest.raises(Invalid):
        kube.replace(CONFIG_MAPS, stored, namespace)


def test_inputs_do_not_see_each_others_revisions(store: RevisionStore) -> None:
    other = InputRef("PlatformOperator", "web")
    long = InputRef("Resolution", "w" * 200)
    store.write(WEB, resolveset(("db", "1.0.0")))
    store.write(other, resolveset(("db", "1.0.0")))
    store.write(long, resolveset(("db", "1.0.0")))
    store.write(long, resolveset(("db", "2.0.0")))
    assert [r.input for r in store.list(WEB)] == [WEB]
    assert [r.input for r in store.list(other)] == [other]
    assert [r.number for r in store.list(long)] == [1, 2]


def test_numbering_continues_after_the_callers_record(store: RevisionStore) -> None:
    revision = store.write(WEB, resolveset(("db", "1.0.0")), after=7)
    assert revision.number == 8


def _recreate(kube: Kube, namespace: str, name: str, change: dict[str, Any]) -> None:
    stored = kube.get(CONFIG_MAPS, name, namespace)
    kube.delete(CONFIG_MAPS, name, namespace)
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "labels": stored["metadata"]["labels"],
            "annotations": stored["metadata"]["annotations"],
        },
        "immutable": True,
        "data": stored["data"],
    }
    body.update(change)
    kube.create(CONFIG_MAPS, body, namespace)


def test_hand_edited_revision_is_detected(store: RevisionStore, kube: Kube, namespace: str) -> None:
    revision = store.write(WEB, resolveset(("db", "1.0.0")))
    assert store.verify(revision).state is RevisionState.INTACT
    # "edited by hand": an immutable ConfigMap can only be deleted and re-created
    _recreate(
        kube, namespace, revision.name, {"data": {DATA_KEY: resolveset(("db", "6.6.6")).to_yaml()}}
    )
    verdict = store.verify(revision)
    assert verdict.state is RevisionState.MODIFIED
    assert revision.name in verdict.message
    assert "checksum" in verdict.message
    listed = store.list(WEB)
    assert len(listed) == 1
    assert not listed[0].intact
    # a modified latest revision is never reused: the same selection gets a fresh revision
    fresh = store.write(WEB, resolveset(("db", "1.0.0")))
    assert fresh.number == 2
    assert fresh.intact


def test_recreated_identically_is_intact_but_mutable_is_not(
    store: RevisionStore, kube: Kube, namespace: str
) -> None:
    revision = store.write(WEB, resolveset(("db", "1.0.0")))
    _recreate(kube, namespace, revision.name, {})
    assert store.verify(revision).ok
    _recreate(kube, namespace, revision.name, {"immutable": False})
    assert "not immutable" in store.verify(revision).message


def test_deleted_revision_is_detected(store: RevisionStore, kube: Kube, namespace: str) -> None:
    revision = store.write(WEB, resolveset(("db", "1.0.0")))
    kube.delete(CONFIG_MAPS, revision.name, namespace)
    verdict = store.verify(revision)
    assert verdict.state is RevisionState.MISSING
    assert "deleted" in verdict.message
    assert revision.name in verdict.message


def test_garbage_collection_honours_limit_and_protection(store: RevisionStore) -> None:
    for n in range(1, 13):
        store.write(WEB, resolveset(("db", f"1.{n}.0")))
    assert len(store.list(WEB)) == 12
    removed = store.collect_garbage(WEB, keep=3, protect={2, 5})
    assert removed == [1, 3, 4, 6, 7, 8, 9]
    assert [r.number for r in store.list(WEB)] == [2, 5, 10, 11, 12]
    # numbering continues from the newest revision, not from the count
    assert store.write(WEB, resolveset(("db", "9.0.0"))).number == 13


def test_a_collection_read_from_a_stale_list_counts_only_what_it_deleted(
    kube: Kube, namespace: str
) -> None:
    """The daemon lists revisions from a cache: a second run right after the first may still
    list the revisions the first deleted. Their deletion answers 404 and is not counted again."""
    registry = CollectorRegistry()
    store = RevisionStore(kube, namespace, RevisionMetrics(registry))
    for n in range(1, 5):
        store.write(WEB, resolveset(("db", f"1.{n}.0")))
    before = store.list(WEB)
    assert store.collect_garbage(WEB, keep=2) == [1, 2]
    store.list = lambda ref: before  # type: ignore[method-assign]  # as a lagging cache shows it
    assert store.collect_garbage(WEB, keep=2) == []
    counted = registry.get_sample_value(
        "pivoter_resolveset_revisions_collected_total", {"kind": "Resolution"}
    )
    assert counted == 2
    assert [r.number for r in RevisionStore(kube, namespace).list(WEB)] == [3, 4]


@pytest.fixture(params=["api", "cache"])
def clients(
    request: pytest.FixtureRequest, kube: Kube, namespace: str
) -> Iterator[Callable[[], Kube]]:
    """What each writer reads with: the API server, or (as in the daemon) an informer's cache of
    revisions with the writer's own writes read back; the cache lags the other writers."""
    if request.param == "api":
        yield lambda: kube
        return
    informer = Informer(kube, CONFIG_MAPS, namespace=namespace, label_selector=REVISIONS_SELECTOR)
    informer.start()
    try:
        assert informer.wait_for_sync(30)
        yield lambda: CachedReads(kube, lambda: [informer])
    finally:
        informer.stop()


def test_concurrent_writers_get_distinct_revisions(
    clients: Callable[[], Kube], kube: Kube, namespace: str
) -> None:
    writers = 6
    barrier = threading.Barrier(writers)
    results: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def write(n: int) -> None:
        store = RevisionStore(clients(), namespace)
        barrier.wait()
        try:
            revision = store.write(WEB, resolveset(("db", f"2.{n}.0")))
        except BaseException as exc:  # reported below
            errors.append(exc)
            return
        with lock:
            results.append(revision.number)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(results) == list(range(1, writers + 1))
    stored = RevisionStore(kube, namespace).list(WEB)
    assert [r.number for r in stored] == list(range(1, writers + 1))
    assert len({r.selection_hash for r in stored}) == writers


def test_concurrent_identical_writers_share_one_revision(
    clients: Callable[[], Kube], namespace: str
) -> None:
    writers = 4
    barrier = threading.Barrier(writers)
    names: list[str] = []

    def write() -> None:
        barrier.wait()
        store = RevisionStore(clients(), namespace)
        names.append(store.write(WEB, resolveset(("db", "1.0.0"))).name)

    threads = [threading.Thread(target=write) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert names == [revision_name(WEB, 1)] * writers
