"""The content store on trees of any depth and with bad entries: gc never raises, removes what it
can, logs what it cannot, and the next gc still works (real files, trees made directly on disk)."""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from provisioners.fstree import TreeRemovalError, remove_tree
from provisioners.store import BundleStore


@pytest.fixture(autouse=True)
def _clean_deep_trees(tmp_path: Path) -> Iterator[None]:
    """pytest removes old temporary directories with shutil.rmtree, which the deep trees made
    here would break (for every later session): remove them without recursion."""
    yield
    for entry in list(tmp_path.iterdir()):
        remove_tree(entry)


KEY_A = "sha256:" + "a" * 64
KEY_B = "sha256:" + "b" * 64
KEY_C = "sha256:" + "c" * 64


def deep_tree(top: Path, depth: int, name: str = "d") -> None:
    """``depth`` nested directories below ``top`` (made by descriptor: any path length)."""
    top.mkdir(parents=True)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(depth):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
            if level % 100 == 0:
                os.close(os.open("f.yaml", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
        os.symlink("/etc/hostname", "escape", dir_fd=fd)
    finally:
        os.close(fd)


def _age(path: Path) -> None:
    old = time.time() - 3600
    os.utime(path, (old, old), follow_symlinks=False)


def _object(store_root: Path, key: str) -> Path:
    return store_root / "objects" / key.replace(":", "-")


def test_shutil_rmtree_of_this_python_fails_on_such_a_tree(tmp_path: Path) -> None:
    """The failure gc used to hit (skipped where rmtree became iterative, Python 3.12+)."""
    tree = tmp_path / "t"
    deep_tree(tree, 1000)
    try:
        shutil.rmtree(tree)
    except RecursionError:
        return
    finally:
        remove_tree(tree)
    pytest.skip("this Python's shutil.rmtree is not recursive")


def test_gc_removes_a_1000_deep_bundle_and_a_1000_deep_leftover(tmp_path: Path) -> None:
    store = BundleStore(tmp_path / "store")
    deep_tree(_object(tmp_path / "store", KEY_A), 1000)
    _age(_object(tmp_path / "store", KEY_A))
    # What an earlier, failed gc left behind in staging.
    leftover = tmp_path / "store" / "staging" / "trash-old"
    deep_tree(leftover / "tree", 1000)
    _age(leftover)
    assert store.gc(set(), grace_seconds=60) == [KEY_A]
    assert store.keys() == set()
    assert os.listdir(tmp_path / "store" / "staging") == []
    assert Path("/etc/hostname").exists()  # the symlink was removed, not followed


def test_trees_deeper_than_the_system_path_limit_are_removed(tmp_path: Path) -> None:
    top = tmp_path / "t"
    deep_tree(top, 600, name="d" * 20)  # 12600-byte paths: no path-based call could reach them
    remove_tree(top)
    assert not top.exists()


def test_one_bad_entry_does_not_stop_gc_of_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "store"
    store = BundleStore(root)
    for key in (KEY_A, KEY_C):
        deep_tree(_object(root, key), 3)
        _age(_object(root, key))
    # KEY_B's entry is a dangling symlink (stat() raises), and junk names are not keys.
    _object(root, KEY_B).symlink_to(tmp_path / "missing")
    _age(_object(root, KEY_B))
    (root / "objects" / "sha256-not-a-digest").mkdir()
    (root / "objects" / "unrelated").write_text("x")
    with caplog.at_level(logging.WARNING, logger="provisioners.store"):
        removed = store.gc(set(), grace_seconds=60)
    assert removed == [KEY_A, KEY_B, KEY_C]
    assert store.keys() == set()
    assert sorted(os.listdir(root / "objects")) == ["sha256-not-a-digest", "unrelated"]
    assert os.listdir(root / "staging") == []


def test_gc_logs_an_entry_it_cannot_remove_and_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "store"
    store = BundleStore(root)
    for key in (KEY_A, KEY_B, KEY_C):
        deep_tree(_object(root, key), 2)
        _age(_object(root, key))
    real_rename = os.rename

    def rename(src: str | Path, dst: str | Path) -> None:
        if str(src).endswith("b" * 64):
            raise PermissionError(13, "Permission denied", str(src))
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with caplog.at_level(logging.WARNING, logger="provisioners.store"):
        removed = store.gc(set(), grace_seconds=60)
    assert removed == [KEY_A, KEY_C]
    assert store.keys() == {KEY_B}
    assert any(KEY_B in r.getMessage() and "will retry" in r.getMessage() for r in caplog.records)
    monkeypatch.setattr(os, "rename", real_rename)
    assert store.gc(set(), grace_seconds=60) == [KEY_B]


def test_what_a_gc_could_not_remove_is_removed_by_the_next(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "store"
    store = BundleStore(root)
    for key in (KEY_A, KEY_B):
        deep_tree(_object(root, key), 300)
        _age(_object(root, key))
    real_unlink = os.unlink

    def unlink(path: str, *, dir_fd: int | None = None) -> None:
        if path == "escape":
            raise PermissionError(1, "Operation not permitted", path)
        real_unlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", unlink)
    with caplog.at_level(logging.WARNING, logger="provisioners.store"):
        assert store.gc(set(), grace_seconds=60) == [KEY_A, KEY_B]
    assert store.keys() == set()
    assert sum("not all of its files yet" in r.getMessage() for r in caplog.records) == 2
    leftovers = os.listdir(root / "staging")
    assert len(leftovers) == 2
    monkeypatch.setattr(os, "unlink", real_unlink)
    for name in leftovers:
        _age(root / "staging" / name)
    assert store.gc(set(), grace_seconds=60) == []
    assert os.listdir(root / "staging") == []


def test_remove_tree_reports_what_it_could_not_remove_and_removes_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    top = tmp_path / "t"
    (top / "a" / "stuck").mkdir(parents=True)
    (top / "a" / "stuck" / "f").write_text("x")
    (top / "b").mkdir()
    (top / "b" / "g").write_text("y")
    real_unlink = os.unlink

    def unlink(path: str, *, dir_fd: int | None = None) -> None:
        if path == "f":  # as an immutable file or a busy mount would (root may unlink anything)
            raise PermissionError(1, "Operation not permitted", path)
        real_unlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", unlink)
    with pytest.raises(TreeRemovalError, match="a/stuck/f: Operation not permitted") as caught:
        remove_tree(top)
    assert "\n" not in str(caught.value)
    assert not (top / "b").exists()
    assert (top / "a" / "stuck" / "f").exists()


def test_no_recursive_tree_walkers_in_the_code() -> None:
    """On Python 3.11 these recurse once per directory level (RecursionError on deep trees)."""
    repo = Path(__file__).resolve().parents[2]
    walkers = ("shutil.rmtree(", "os.walk(", ".rglob(", "copytree(", 'glob("**')
    offenders = [
        f"{path.relative_to(repo)}: {needle}"
        for package in ("pivoter", "resolver", "provisioners")
        for path in sorted((repo / package).rglob("*.py"))
        for needle in walkers
        if needle in path.read_text(encoding="utf-8")
    ]
    assert offenders == []
