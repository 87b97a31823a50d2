"""The content store's garbage collection reads the live digests from the daemon's Bundle cache
when it has one (no LIST of every Bundle per deleted Bundle), and keeps what a Bundle uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from pivoter.controllers.bundle import BundleReconciler
from pivoter.kube import Kube
from provisioners.store import BundleStore


class NoApi:
    """A Kube whose every call fails the test: the collection must not reach the API server."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the garbage collection called the API server ({name})")


def _stored(store: BundleStore, text: str) -> str:
    with store.staging() as tree:
        (tree / "manifest.yaml").write_text(text)
        return store.publish(tree).key


def test_garbage_collection_reads_the_cache_and_keeps_what_bundles_use(tmp_path: Path) -> None:
    store = BundleStore(tmp_path / "store")
    used = _stored(store, "kind: ConfigMap\nmetadata: {name: used}\n")
    unused = _stored(store, "kind: ConfigMap\nmetadata: {name: unused}\n")
    cached = [
        {"metadata": {"name": "b1"}, "status": {"digest": used}},
        {"metadata": {"name": "b2"}, "status": {}},  # not unpacked yet
    ]
    reconciler = BundleReconciler(
        cast(Kube, NoApi()), store, system_namespace="pivoter-system", gc_grace_seconds=0
    )
    reconciler.live_bundles = lambda: cached
    assert reconciler.collect_garbage() == [unused]
    assert store.keys() == {used}


def test_a_recent_entry_outlives_a_cache_that_does_not_show_its_bundle_yet(tmp_path: Path) -> None:
    store = BundleStore(tmp_path / "store")
    fresh = _stored(store, "kind: ConfigMap\nmetadata: {name: fresh}\n")
    reconciler = BundleReconciler(
        cast(Kube, NoApi()), store, system_namespace="pivoter-system", gc_grace_seconds=300
    )
    reconciler.live_bundles = list
    assert reconciler.collect_garbage() == []
    assert store.keys() == {fresh}
