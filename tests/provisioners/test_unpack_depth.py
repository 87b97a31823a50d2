"""Deep and long paths at unpack: refused with one clear line, never an OSError or a crash, and the
limits leave every later tree walk (digest, gc, formats) within what the system handles."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import time
from pathlib import Path

import pytest

from provisioners.sources import FetchOptions
from provisioners.sources.configmaps import ConfigMapContent, ConfigMapsSource, ConfigMapsSpec
from provisioners.store import BundleStore
from provisioners.unpack import (
    DepthLimitError,
    UnpackLimits,
    UnsafeLinkError,
    UnsafePathError,
    unpack_tar,
)


def _archive(*infos: tuple[str, bytes, str]) -> bytes:
    """A gzip tar of (name, type, link) entries; regular files hold ``x``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, kind, link in infos:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = link
            info.size = 1 if kind == tarfile.REGTYPE else 0
            archive.addfile(info, io.BytesIO(b"x") if kind == tarfile.REGTYPE else None)
    return gzip.compress(buffer.getvalue())


def test_a_tar_nesting_1000_directories_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    deep = "/".join(["d"] * 1000)
    archive = _archive((deep, tarfile.DIRTYPE, ""), (f"{deep}/f", tarfile.REGTYPE, ""))
    with pytest.raises(DepthLimitError) as caught:
        unpack_tar(io.BytesIO(archive), tmp_path / "root")
    message = str(caught.value)
    assert "nested 999 directories deep, more than max_depth=128" in message
    assert "\n" not in message
    assert len(message) < 400
    assert not any((tmp_path / "root").iterdir())


def test_depth_is_checked_for_implied_parents_too(tmp_path: Path) -> None:
    # No directory entries at all: only the file's path says how deep it is.
    archive = _archive(("/".join(["d"] * 200) + "/f", tarfile.REGTYPE, ""))
    with pytest.raises(DepthLimitError):
        unpack_tar(io.BytesIO(archive), tmp_path / "root")


def test_depth_limit_is_configurable_and_real_depths_pass(tmp_path: Path) -> None:
    path = "/".join(["charts", "sub", "charts", "subsub", "templates", "x.yaml"])
    unpack_tar(io.BytesIO(_archive((path, tarfile.REGTYPE, ""))), tmp_path / "a")
    assert (tmp_path / "a" / path).read_bytes() == b"x"
    with pytest.raises(DepthLimitError, match="max_depth=3"):
        unpack_tar(
            io.BytesIO(_archive((path, tarfile.REGTYPE, ""))),
            tmp_path / "b",
            UnpackLimits(max_depth=3),
        )


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("x" * 300, "name of more than 255 bytes"),
        ("/".join(["y" * 250] * 17), "max_path_bytes"),
        ("/".join(["z" * 250] * 16), "system's 4095-byte path limit"),
    ],
    ids=["long-name", "long-path", "too-long-on-disk"],
)
def test_names_the_filesystem_cannot_hold_are_refused_not_oserror(
    tmp_path: Path, name: str, match: str
) -> None:
    with pytest.raises(UnsafePathError, match=match):
        unpack_tar(io.BytesIO(_archive((name, tarfile.REGTYPE, ""))), tmp_path / "root")


def test_nul_bytes_in_pax_paths_are_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo("placeholder")
        info.pax_headers = {"path": "a\x00b"}  # used to raise ValueError: embedded null byte
        archive.addfile(info, io.BytesIO())
    with pytest.raises(UnsafePathError, match="NUL byte"):
        unpack_tar(io.BytesIO(buffer.getvalue()), tmp_path / "root")


def test_symlink_targets_longer_than_a_path_are_refused(tmp_path: Path) -> None:
    archive = _archive(("l", tarfile.SYMTYPE, "a/" * 3000))
    with pytest.raises(UnsafeLinkError, match="max_path_bytes"):
        unpack_tar(io.BytesIO(archive), tmp_path / "root")


def test_names_that_are_not_utf8_unpack_and_publish(tmp_path: Path) -> None:
    # A GNU-format name of Latin-1 bytes decodes with surrogate escapes; it used to crash the
    # length check with UnicodeEncodeError.
    store = BundleStore(tmp_path / "store")
    with store.staging() as tree:
        unpack_tar(io.BytesIO(_archive(("caf\udce9.yaml", tarfile.REGTYPE, ""))), tree)
        stored = store.publish(tree)
    assert os.listdir(os.fsencode(stored.path)) == [b"caf\xe9.yaml"]
    assert b"".join(store.tar_gz(stored.key))


def test_a_maximal_accepted_tree_can_be_published_digested_and_collected(tmp_path: Path) -> None:
    store = BundleStore(tmp_path / "store")
    deep = "/".join(["d"] * 127) + "/f"  # 128 components: the deepest accepted
    with store.staging() as tree:
        unpack_tar(io.BytesIO(_archive((deep, tarfile.REGTYPE, ""))), tree)
        stored = store.publish(tree)
    assert (stored.path / deep).read_bytes() == b"x"
    assert b"".join(store.tar_gz(stored.key))
    assert store.gc(set(), grace_seconds=0) == [stored.key]
    assert store.keys() == set()


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("/".join(["a"] * 1000), DepthLimitError),  # used to raise RecursionError (Path.mkdir)
        ("x" * 300, UnsafePathError),  # used to raise OSError: File name too long
    ],
)
def test_config_map_paths_follow_the_same_rules(
    tmp_path: Path, path: str, error: type[Exception]
) -> None:
    spec = ConfigMapsSpec((ConfigMapContent("cm", {"k": "v"}, {}, path),))
    with pytest.raises(error, match="configMap cm: file"):
        ConfigMapsSource().fetch(spec, tmp_path, FetchOptions())
    assert list(tmp_path.iterdir()) == []


def _chain(length: int, last: str = "file") -> bytes:
    links = [(f"l{i}", tarfile.SYMTYPE, f"l{i + 1}") for i in range(length)]
    return _archive(*links, (f"l{length}", tarfile.SYMTYPE, last), ("file", tarfile.REGTYPE, ""))


def test_a_chain_of_1500_symlinks_is_refused_not_recursed(tmp_path: Path) -> None:
    # os.path.realpath recursed once per link (RecursionError) and took quadratic time.
    start = time.monotonic()
    with pytest.raises(UnsafeLinkError, match="more than 40 links"):
        unpack_tar(io.BytesIO(_chain(1500)), tmp_path / "root")
    assert time.monotonic() - start < 10


def test_short_chains_resolve_and_escapes_through_chains_are_still_refused(tmp_path: Path) -> None:
    unpack_tar(io.BytesIO(_chain(30)), tmp_path / "ok")
    assert (tmp_path / "ok" / "l0").read_bytes() == b"x"
    escape = _archive(
        ("d/up", tarfile.SYMTYPE, ".."),
        ("d/deeper", tarfile.SYMTYPE, "up/d/up"),
        ("d/out", tarfile.SYMTYPE, "deeper/../sandbox"),
    )
    with pytest.raises(UnsafeLinkError, match="resolves outside"):
        unpack_tar(io.BytesIO(escape), tmp_path / "bad")
