"""Side files of bundles: every file a bundle format or the content store reads passes the guarded
reader (:mod:`resolver.safefiles`), so a FIFO, a socket, a device, a link to ``/dev/zero``, a link
out of the bundle, a chain of 1,500 links, a huge (sparse) file or a tree 3,000 directories deep is
refused in one line naming the file, within seconds, and never read.

Planted in: a plain+v0 ``manifests/``, a registry+v1 ``manifests/`` and
``metadata/annotations.yaml``, a helm chart's ``Chart.yaml`` and ``templates/``, and a bundle in
the content store (its digest at publish and its tar.gz stream). The FIFO cases carry a
``signal`` timeout: a regression that blocks in ``open`` fails instead of hanging the run.
"""

from __future__ import annotations

import io
import os
import socket
import stat
import tarfile
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from provisioners.formats import FormatError, format_for
from provisioners.formats.base import NestedManifestsError
from provisioners.formats.helm import HelmFormat
from provisioners.formats.helm.chart import (
    MAX_CHART_FILE_BYTES,
    UnsafeChartError,
    check_chart_files,
)
from provisioners.fstree import remove_tree, walk_tree
from provisioners.store import BundleStore, StoreError, tree_digest
from provisioners.unpack import UnpackLimits
from resolver.safefiles import RefusedFile

FAST = 5.0  # seconds: every refusal here takes milliseconds; more means it read or waited
MANIFEST_LIMIT = 32 << 20
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\ndata: {k: v}\n"
SECRET = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\ndata: {k: secret}\n"
ANNOTATIONS = (
    "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n"
    "  operators.operatorframework.io.bundle.manifests.v1: manifests/\n"
    "  operators.operatorframework.io.bundle.metadata.v1: metadata/\n"
    "  operators.operatorframework.io.bundle.package.v1: demo\n"
    "  operators.operatorframework.io.bundle.channels.v1: stable\n"
)
CHART = "apiVersion: v2\nname: demo\nversion: 0.1.0\n"
TEMPLATE = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: demo}\n"
SHAPES = ("fifo", "socket", "dev-zero", "link-out", "link-chain", "link-to-dir", "huge")
"""What is planted where a file is expected, and (below) what its refusal says."""
REASONS = {
    "fifo": "not a regular file (a FIFO): not read",
    "socket": "not a regular file (a socket): not read",
    "dev-zero": "symbolic link leaves the bundle root (-> /dev/zero)",
    "link-out": "symbolic link leaves the bundle root",
    "link-chain": "symbolic link loop",
    "link-to-dir": "symbolic link to a directory: not followed",
    "huge": "-byte limit for one",
}
DEEP = 3000


@pytest.fixture(autouse=True)
def _clean_deep_trees(tmp_path: Path) -> Iterator[None]:
    """pytest removes old temporary directories with shutil.rmtree, which recurses: remove what
    the tests made without recursion."""
    yield
    for entry in list(tmp_path.iterdir()):
        remove_tree(entry)


Moved = Callable[[str, Path], None]
"""``moved(name, path)``: put the prepared tree ``name`` at ``path`` (see :func:`moved`)."""


@pytest.fixture(scope="module")
def _prepared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A tree 3,000 directories deep and a chain of 1,500 links, made once per test process
    (each costs a second or more of system time on a busy ext4) and moved into place by
    :func:`moved`."""
    top = tmp_path_factory.mktemp("prepared")
    trees = {"deep": top / "deep", "chain": top / "chain"}
    deep_tree(trees["deep"])
    link_chain(trees["chain"])
    yield trees
    remove_tree(top)


@pytest.fixture
def moved(_prepared: dict[str, Path]) -> Iterator[Moved]:
    """``moved(name, path)`` puts a prepared tree at ``path`` with one rename (again: from where
    it was put last); every tree goes back after the test."""
    placed: dict[str, Path] = {}

    def place(name: str, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.rename(placed.get(name, _prepared[name]), path)
        placed[name] = path

    yield place
    for name, path in placed.items():
        os.rename(path, _prepared[name])


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


def link_chain(top: Path) -> None:
    """1,500 links in ``top``, each to the next, ending at a real file: more than the kernel's
    40, and enough to make Python 3.11's realpath (``Path.resolve``) recurse too deep."""
    top.mkdir(parents=True)
    (top / "l0").write_text(CONFIGMAP)
    for i in range(1, 1500):
        os.symlink(f"l{i - 1}", top / f"l{i}")


def plant(shape: str, path: Path, bundle: Path, huge: int, moved: Moved) -> None:
    """Put ``shape`` at ``path`` (inside ``bundle``); ``huge`` is the size of the huge file,
    ``moved`` the fixture that puts the link chain in place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if shape == "fifo":
        os.mkfifo(path)
    elif shape == "socket":
        here = os.getcwd()
        os.chdir(path.parent)  # a socket path is limited to 107 bytes: bind a relative one
        try:
            with socket.socket(socket.AF_UNIX) as server:
                server.bind(path.name)
        finally:
            os.chdir(here)
    elif shape == "dev-zero":
        os.symlink("/dev/zero", path)
    elif shape == "link-out":
        outside = bundle.parent / f"outside-{bundle.name}"
        outside.mkdir(exist_ok=True)
        (outside / "secret.yaml").write_text(SECRET)
        os.symlink(outside / "secret.yaml", path)
    elif shape == "link-chain":
        moved("chain", bundle / "chain")
        os.symlink(os.path.relpath(bundle / "chain" / "l1499", path.parent), path)
    elif shape == "link-to-dir":
        (bundle / "somedir").mkdir(exist_ok=True)
        os.symlink(os.path.relpath(bundle / "somedir", path.parent), path)
    elif shape == "huge":
        with open(path, "wb") as sparse:
            sparse.truncate(huge)  # sparse: nothing on disk
    else:
        raise AssertionError(shape)


def deep_tree(top: Path, depth: int = DEEP) -> None:
    """``depth`` nested directories ``d`` below ``top``, with a manifest at the bottom (made by
    descriptor: the paths outgrow the system's limit)."""
    top.mkdir(parents=True, exist_ok=True)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        leaf = os.open("x.yaml", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, CONFIGMAP.encode())
        os.close(leaf)
    finally:
        os.close(fd)


def refused(call: Callable[[], object], error: type[Exception] = FormatError) -> str:
    """The one-line message of the refusal ``call`` raises, within :data:`FAST` seconds."""
    started = time.monotonic()
    with pytest.raises(error) as caught:
        call()
    assert time.monotonic() - started < FAST
    message = str(caught.value)
    assert "\n" not in message
    assert "Traceback" not in message
    return message


# ------------------------------------------------------------------ plain+v0 manifests/


@pytest.mark.timeout(30, method="signal")
@pytest.mark.parametrize("shape", SHAPES)
def test_plain_manifests_refuse_side_files(tmp_path: Path, shape: str, moved: Moved) -> None:
    root = _write(tmp_path / "bundle", {"manifests/a.yaml": CONFIGMAP})
    plant(shape, root / "manifests" / "bad.yaml", root, MANIFEST_LIMIT + 1, moved)
    message = refused(lambda: format_for("plain+v0").convert(root))
    assert message.startswith("manifests/bad.yaml: "), message
    assert REASONS[shape] in message
    assert "stolen" not in message


def test_plain_manifests_read_a_link_inside_the_bundle(tmp_path: Path) -> None:
    root = _write(tmp_path / "bundle", {"manifests/a.yaml": CONFIGMAP, "shared/b.yaml": SECRET})
    os.symlink("../shared/b.yaml", root / "manifests" / "b.yaml")
    converted = format_for("plain+v0").convert(root)
    assert [o["metadata"]["name"] for o in converted.objects] == ["ok", "stolen"]


def test_plain_manifests_3000_deep_are_one_line(tmp_path: Path, moved: Moved) -> None:
    root = _write(tmp_path / "bundle", {"manifests/a.yaml": CONFIGMAP})
    moved("deep", root / "manifests" / "deep")
    message = refused(lambda: format_for("plain+v0").convert(root), NestedManifestsError)
    assert "subdirectories are not allowed in manifests/" in message


# ------------------------------------------------------------------ registry+v1


def _registry(root: Path) -> Path:
    return _write(
        root, {"metadata/annotations.yaml": ANNOTATIONS, "manifests/configmap.yaml": CONFIGMAP}
    )


@pytest.mark.timeout(30, method="signal")
@pytest.mark.parametrize("shape", SHAPES)
def test_registry_v1_manifests_refuse_side_files(tmp_path: Path, shape: str, moved: Moved) -> None:
    root = _registry(tmp_path / "bundle")
    plant(shape, root / "manifests" / "bad.yaml", root, MANIFEST_LIMIT + 1, moved)
    message = refused(lambda: format_for("registry+v1").convert(root))
    assert message.startswith("manifests/bad.yaml: "), message
    assert REASONS[shape] in message


@pytest.mark.timeout(30, method="signal")
@pytest.mark.parametrize("shape", SHAPES)
def test_registry_v1_annotations_refuse_side_files(
    tmp_path: Path, shape: str, moved: Moved
) -> None:
    root = _write(tmp_path / "bundle", {"manifests/configmap.yaml": CONFIGMAP})
    plant(shape, root / "metadata" / "annotations.yaml", root, MANIFEST_LIMIT + 1, moved)
    message = refused(lambda: format_for("registry+v1").convert(root))
    assert message.startswith("metadata/annotations.yaml: "), message
    assert REASONS[shape] in message


def test_registry_v1_metadata_directory_linked_out_is_refused(tmp_path: Path) -> None:
    root = _write(tmp_path / "bundle", {"manifests/configmap.yaml": CONFIGMAP})
    elsewhere = _write(tmp_path / "elsewhere", {"annotations.yaml": ANNOTATIONS})
    os.symlink(elsewhere, root / "metadata")
    message = refused(lambda: format_for("registry+v1").convert(root))
    assert message.startswith("metadata/annotations.yaml: "), message
    assert "is outside the bundle root" in message


def test_registry_v1_manifests_3000_deep_are_one_line(tmp_path: Path, moved: Moved) -> None:
    root = _registry(tmp_path / "bundle")
    moved("deep", root / "manifests" / "deep")
    message = refused(lambda: format_for("registry+v1").convert(root), NestedManifestsError)
    assert "subdirectories are not allowed in manifests/" in message


# ------------------------------------------------------------------ helm charts


@pytest.mark.timeout(30, method="signal")
@pytest.mark.parametrize("shape", SHAPES)
def test_helm_chart_yaml_refuses_side_files(tmp_path: Path, shape: str, moved: Moved) -> None:
    root = _write(tmp_path / "bundle", {"templates/cm.yaml": TEMPLATE})
    plant(shape, root / "Chart.yaml", root, (1 << 20) + 1, moved)
    message = refused(lambda: HelmFormat().convert(root))
    assert message.startswith("Chart.yaml: "), message
    assert REASONS[shape] in message


@pytest.mark.timeout(30, method="signal")
@pytest.mark.parametrize("shape", SHAPES)
def test_helm_chart_files_are_checked_before_helm_reads_them(
    tmp_path: Path, shape: str, moved: Moved
) -> None:
    """Helm follows links out of a chart (``.Files.Get`` of a link to /etc/... renders it) and
    holds every file in memory: nothing reaches ``helm template`` unchecked. No helm binary is
    needed: the refusal comes first."""
    root = _write(tmp_path / "bundle", {"Chart.yaml": CHART, "templates/cm.yaml": TEMPLATE})
    plant(shape, root / "templates" / "bad.yaml", root, MAX_CHART_FILE_BYTES + 1, moved)
    message = refused(lambda: HelmFormat().convert(root), UnsafeChartError)
    # The chain's own links are files of the chart too: the walk meets them first.
    where = ("templates/bad.yaml: ", "chain/l") if shape == "link-chain" else "templates/bad.yaml: "
    assert message.startswith(where), message
    assert REASONS[shape].replace("bundle root", "chart root") in message


def test_helm_chart_in_a_subdirectory_is_checked_against_itself(tmp_path: Path) -> None:
    root = _write(tmp_path / "bundle", {"README": "x", "demo/Chart.yaml": CHART})
    _write(root, {"demo/templates/cm.yaml": TEMPLATE})
    os.symlink("../../README", root / "demo" / "templates" / "readme")  # in the bundle, not chart
    message = refused(lambda: HelmFormat().convert(root), UnsafeChartError)
    assert message.startswith("templates/readme: symbolic link leaves the chart root"), message


def test_helm_chart_3000_deep_is_one_line(tmp_path: Path, moved: Moved) -> None:
    root = _write(tmp_path / "bundle", {"Chart.yaml": CHART, "templates/cm.yaml": TEMPLATE})
    moved("deep", root / "templates" / "deep")
    message = refused(lambda: HelmFormat().convert(root), UnsafeChartError)
    assert "is nested more than 128 directories deep in the chart" in message
    assert len(message) < 400


def test_helm_chart_links_inside_the_chart_pass_the_check(tmp_path: Path) -> None:
    root = _write(tmp_path / "chart", {"Chart.yaml": CHART, "files/a.txt": "a"})
    os.symlink("files/a.txt", root / "templates.txt")
    check_chart_files(root)


def test_helm_chart_files_together_are_bounded(tmp_path: Path) -> None:
    root = _write(tmp_path / "chart", {"Chart.yaml": CHART})
    for i in range(21):  # 21 x 5 MiB (sparse) > 100 MiB
        with open(root / f"f{i:02}.bin", "wb") as sparse:
            sparse.truncate(MAX_CHART_FILE_BYTES)
    message = refused(lambda: check_chart_files(root), UnsafeChartError)
    assert "together are over 104,857,600 bytes" in message


# ------------------------------------------------------------------ the content store

KEY = "sha256:" + "a" * 64


def _stored(tmp_path: Path) -> tuple[BundleStore, Path]:
    """A store with one bundle planted directly under its key (as a writer of the store's
    directory could), and the bundle's directory."""
    store = BundleStore(tmp_path / "store")
    bundle = _write(tmp_path / "store" / "objects" / KEY.replace(":", "-"), {"a.yaml": CONFIGMAP})
    return store, bundle


def _members(store: BundleStore) -> dict[str, tarfile.TarInfo]:
    data = b"".join(store.tar_gz(KEY))
    with tarfile.open(fileobj=io.BytesIO(zlib.decompress(data, 31)), mode="r:") as archive:
        return {m.name: m for m in archive.getmembers()}


@pytest.mark.timeout(30, method="signal")
@pytest.mark.parametrize("shape", ["fifo", "socket", "huge"])
def test_store_refuses_to_serve_special_and_huge_files(
    tmp_path: Path, shape: str, moved: Moved
) -> None:
    store, bundle = _stored(tmp_path)
    plant(shape, bundle / "manifests" / "bad.yaml", bundle, (1 << 30) + 1, moved)
    # Refused when the stream is asked for, before a byte is sent (the content server answers
    # with the message instead of a broken 200).
    message = refused(lambda: store.tar_gz(KEY), StoreError)
    assert message.startswith("manifests/bad.yaml"), message
    expected = {
        "fifo": "is a FIFO: neither a file, a directory nor a symlink",
        "socket": "is a socket: neither a file, a directory nor a symlink",
        "huge": "holds more than 1,073,741,824 bytes of files",
    }
    assert expected[shape] in message


@pytest.mark.timeout(30, method="signal")
def test_store_refuses_a_planted_device(tmp_path: Path) -> None:
    store, bundle = _stored(tmp_path)
    try:
        os.mknod(bundle / "zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))  # /dev/zero's numbers
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    message = refused(lambda: store.tar_gz(KEY), StoreError)
    assert (
        message
        == "zero is a device: neither a file, a directory nor a symlink, so not bundle content"
    )


@pytest.mark.parametrize("shape", ["dev-zero", "link-out", "link-chain"])
def test_store_serves_links_as_links_never_following_them(
    tmp_path: Path, shape: str, moved: Moved
) -> None:
    store, bundle = _stored(tmp_path)
    plant(shape, bundle / "manifests" / "link.yaml", bundle, 0, moved)
    started = time.monotonic()
    members = _members(store)
    assert time.monotonic() - started < FAST
    link = members["manifests/link.yaml"]
    assert link.issym()
    assert link.size == 0
    assert link.linkname == os.readlink(bundle / "manifests" / "link.yaml")


@pytest.mark.timeout(30, method="signal")
def test_store_refuses_a_file_swapped_for_a_fifo_while_streaming(tmp_path: Path) -> None:
    store, bundle = _stored(tmp_path)
    _write(bundle, {"z.yaml": CONFIGMAP})
    chunks = store.tar_gz(KEY)  # listed and checked: a regular file
    (bundle / "z.yaml").unlink()
    os.mkfifo(bundle / "z.yaml")
    message = refused(lambda: b"".join(chunks), StoreError)
    assert message.startswith("z.yaml: ")
    assert "a FIFO" in message


def test_store_refuses_a_file_grown_while_streaming(tmp_path: Path) -> None:
    store, bundle = _stored(tmp_path)
    chunks = store.tar_gz(KEY)
    with open(bundle / "a.yaml", "a") as grow:
        grow.write("# more\n" * 1000)
    message = refused(lambda: b"".join(chunks), StoreError)
    # Read with at most the size it was listed with: the stream never outgrows its headers.
    assert message.startswith("a.yaml: "), message
    assert "65-byte limit for one stored file" in message


def test_store_refuses_a_bundle_directory_that_is_a_link(tmp_path: Path) -> None:
    store = BundleStore(tmp_path / "store")
    elsewhere = _write(tmp_path / "elsewhere", {"secret.yaml": SECRET})
    os.symlink(elsewhere, tmp_path / "store" / "objects" / KEY.replace(":", "-"))
    message = refused(lambda: store.tar_gz(KEY), StoreError)
    assert "is a symbolic link: not followed" in message


def test_store_3000_deep_is_refused_before_serving_and_at_publish(
    tmp_path: Path, moved: Moved
) -> None:
    store, bundle = _stored(tmp_path)
    moved("deep", bundle / "deep")
    message = refused(lambda: store.tar_gz(KEY), StoreError)
    assert "is nested more than 128 directories deep in the bundle" in message
    assert len(message) < 400
    with store.staging() as tree:
        moved("deep", tree / "deep")
        message = refused(lambda: store.publish(tree), StoreError)
        moved("deep", bundle / "deep")  # back out of staging, which is removed on the way out
    assert "is nested more than 128 directories deep" in message
    assert store.keys() == {KEY}


@pytest.mark.timeout(30, method="signal")
def test_store_publish_refuses_a_fifo(tmp_path: Path) -> None:
    store = BundleStore(tmp_path / "store")
    with store.staging() as tree:
        _write(tree, {"manifests/a.yaml": CONFIGMAP})
        os.mkfifo(tree / "manifests" / "pipe.yaml")
        message = refused(lambda: store.publish(tree), StoreError)
    assert message.startswith("manifests/pipe.yaml is a FIFO")
    assert store.keys() == set()


def test_store_digest_and_stream_keep_their_order_and_content(tmp_path: Path) -> None:
    """The guarded walk lists as the store always did: the digest (the store key) of the same
    content is the one the unguarded walk gave (the value below was computed by it), and the
    stream holds every entry in that order."""
    tree = _write(
        tmp_path / "t",
        {"b/z.yaml": "z", "b/a/x.yaml": "x", "a.yaml": "a", "c/d/e/f.yaml": "f"},
    )
    (tree / "a.yaml").chmod(0o755)
    os.symlink("a.yaml", tree / "link")
    assert tree_digest(tree) == (
        "sha256:152523e4ee8e2aa4dfe068dd2bde99476c9fdc071eccf3e90adf0bec925f2dee"
    )
    listed = [e.rel for e in walk_tree(tree)]
    assert listed == [
        "a.yaml",
        "b",
        "c",
        "link",
        "b/a",
        "b/z.yaml",
        "b/a/x.yaml",
        "c/d",
        "c/d/e",
        "c/d/e/f.yaml",
    ]
    store = BundleStore(tmp_path / "store")
    os.rename(tree, tmp_path / "store" / "objects" / KEY.replace(":", "-"))
    members = _members(store)
    assert [name.rstrip("/") for name in members] == listed
    assert members["a.yaml"].mode == 0o755


def test_walk_refuses_too_many_entries_and_a_linked_root(tmp_path: Path) -> None:
    tree = _write(tmp_path / "t", {f"f{i}": "x" for i in range(5)})
    with pytest.raises(RefusedFile, match="more than 4 entries in the bundle"):
        list(walk_tree(tree, max_entries=4))
    os.symlink(tree, tmp_path / "l")
    with pytest.raises(RefusedFile, match="is a symbolic link: not followed"):
        list(walk_tree(tmp_path / "l"))
    limits = UnpackLimits(max_entries=4)
    with pytest.raises(StoreError, match="more than 4 entries"):
        tree_digest(tree, limits)
