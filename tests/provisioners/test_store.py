"""The content store: content addressing, atomic publish, GC and tar.gz serving (real files),
plus a 100 MB bundle pulled from the real registry through the store."""

from __future__ import annotations

import io
import os
import tarfile
import time
from pathlib import Path

import pytest

from provisioners.content import unpack_bundle
from provisioners.sources import FetchOptions, ImageSpec
from provisioners.store import BundleNotStoredError, BundleStore, StoreError, tree_digest
from provisioners.unpack import unpack_tar
from tests.provisioners.conftest import pusher_for
from tests.provisioners.oci import LAYER_ZSTD, file, plain_bundle
from tests.provisioners.servers import Registry


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


def _publish(store: BundleStore, files: dict[str, str]) -> str:
    with store.staging() as tree:
        _tree(tree, files)
        return store.publish(tree).key


def test_publish_is_content_addressed_and_deduplicated(tmp_path: Path) -> None:
    store = BundleStore(tmp_path / "store")
    first = _publish(store, {"manifests/a.yaml": "a", "b.txt": "b"})
    again = _publish(store, {"b.txt": "b", "manifests/a.yaml": "a"})
    other = _publish(store, {"manifests/a.yaml": "changed", "b.txt": "b"})
    assert first == again != other
    assert store.keys() == {first, other}
    assert (store.get(first).path / "manifests" / "a.yaml").read_text() == "a"
    assert list((tmp_path / "store" / "staging").iterdir()) == []


def test_tree_digest_ignores_times_but_not_exec_bits_or_links(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t", {"run.sh": "echo", "a": "x"})
    before = tree_digest(tree)
    os.utime(tree / "a", (0, 0))
    assert tree_digest(tree) == before
    (tree / "run.sh").chmod(0o755)
    executable = tree_digest(tree)
    assert executable != before
    (tree / "link").symlink_to("a")
    linked = tree_digest(tree)
    (tree / "link").unlink()
    (tree / "link").symlink_to("run.sh")
    assert len({before, executable, linked, tree_digest(tree)}) == 4


def test_unknown_and_malformed_keys(tmp_path: Path) -> None:
    store = BundleStore(tmp_path / "store")
    with pytest.raises(BundleNotStoredError, match="not in the store"):
        store.get("sha256:" + "0" * 64)
    with pytest.raises(StoreError, match="not a store key"):
        store.get("../../etc")


def test_gc_keeps_live_entries_and_respects_grace(tmp_path: Path) -> None:
    store = BundleStore(tmp_path / "store")
    live = _publish(store, {"a": "live"})
    dead = _publish(store, {"a": "dead"})
    young = _publish(store, {"a": "young"})
    old = time.time() - 3600
    for key in (live, dead):
        os.utime(store.get(key).path, (old, old))
    assert store.gc({live}, grace_seconds=600) == [dead]
    assert store.keys() == {live, young}  # young is unreferenced but inside the grace period
    assert (store.get(live).path / "a").read_text() == "live"
    assert store.gc({live}, grace_seconds=0) == [young]
    assert store.keys() == {live}


def test_failed_fetch_leaves_nothing_in_the_store(tmp_path: Path, registry: Registry) -> None:
    store = BundleStore(tmp_path / "store")
    with pytest.raises(Exception, match="not found"):
        unpack_bundle(ImageSpec(f"{registry.host}/store/none:v1"), store)
    assert store.keys() == set()
    assert list((tmp_path / "store" / "staging").iterdir()) == []


def test_tar_gz_stream_round_trips_and_is_deterministic(tmp_path: Path) -> None:
    store = BundleStore(tmp_path / "store")
    with store.staging() as tree:
        _tree(tree, {"manifests/a.yaml": "a: 1\n", "deep/x/y/z.txt": "z" * 5000})
        (tree / "deep" / "run").write_text("#!/bin/sh\n")
        (tree / "deep" / "run").chmod(0o755)
        (tree / "manifests" / "link.yaml").symlink_to("a.yaml")
        key = store.publish(tree).key
    first = b"".join(store.tar_gz(key))
    assert first == b"".join(store.tar_gz(key))
    with tarfile.open(fileobj=io.BytesIO(first), mode="r:gz") as archive:
        members = archive.getmembers()
    assert {m.mtime for m in members} == {0}
    assert {(m.uid, m.gid) for m in members} == {(0, 0)}
    copy = tmp_path / "copy"
    unpack_tar(io.BytesIO(first), copy)
    assert tree_digest(copy) == key


def test_hundred_megabyte_bundle_through_registry_and_store(
    tmp_path: Path, registry: Registry
) -> None:
    payload = os.urandom(100 << 20)  # incompressible, so the layer is really 100 MB
    layer = [*plain_bundle("big"), file("data/blob.bin", payload)]
    pusher_for(registry).image("store/big", "v1", [layer], media_type=LAYER_ZSTD)
    store = BundleStore(tmp_path / "store")
    unpacked = unpack_bundle(
        ImageSpec(f"{registry.host}/store/big:v1"), store, FetchOptions(timeout_seconds=30)
    )
    stored_blob = unpacked.stored.path / "data" / "blob.bin"
    assert stored_blob.stat().st_size == 100 << 20
    assert stored_blob.read_bytes() == payload
    assert unpacked.fetched.revision.startswith("sha256:")
    copy = tmp_path / "served"
    # Serve it the way the cluster side will, and unpack the stream like a reader would.
    chunks = store.tar_gz(unpacked.stored.key)

    class Stream:
        buffer = b""

        def read(self, size: int = -1) -> bytes:
            while size < 0 or len(self.buffer) < size:
                chunk = next(chunks, None)
                if chunk is None:
                    break
                self.buffer += chunk
            data = self.buffer if size < 0 else self.buffer[:size]
            self.buffer = b"" if size < 0 else self.buffer[size:]
            return data

    unpack_tar(Stream(), copy)
    assert tree_digest(copy) == unpacked.stored.key
