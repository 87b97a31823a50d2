"""Hardened unpacking of hostile archives (pure logic: archives built in the test, real files)."""

from __future__ import annotations

import gzip
import io
import subprocess
import tarfile
from pathlib import Path

import pytest
import zstandard

from provisioners.unpack import (
    Compression,
    CompressionRatioError,
    CorruptArchiveError,
    FileCountLimitError,
    ForbiddenEntryError,
    SizeLimitError,
    Unpacker,
    UnpackLimits,
    UnsafeLinkError,
    UnsafePathError,
    unpack_tar,
)
from tests.provisioners.oci import Entry, file, tar_bytes


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The bundle root, inside a sandbox whose other contents must never change."""
    sandbox = tmp_path / "sandbox"
    (sandbox / "outside").mkdir(parents=True)
    (sandbox / "outside" / "secret").write_text("untouched")
    return sandbox / "root"


def _outside_untouched(root: Path) -> None:
    sandbox = root.parent
    assert sorted(p.name for p in sandbox.iterdir()) == ["outside", "root"]
    assert [p.name for p in (sandbox / "outside").iterdir()] == ["secret"]
    assert (sandbox / "outside" / "secret").read_text() == "untouched"


def _unpack(entries: list[Entry], root: Path, **limits: int) -> None:
    unpack_tar(io.BytesIO(tar_bytes(entries)), root, UnpackLimits(**limits))


def test_regular_tree_with_links_unpacks_and_normalizes_modes(root: Path) -> None:
    _unpack(
        [
            Entry("manifests/", kind=tarfile.DIRTYPE),
            file("manifests/a.yaml", "a: 1\n", mode=0o4666),
            file("bin/run", "#!/bin/sh\n", mode=0o700),
            Entry("manifests/link.yaml", kind=tarfile.SYMTYPE, link="a.yaml"),
            Entry("copy.yaml", kind=tarfile.LNKTYPE, link="manifests/a.yaml"),
        ],
        root,
    )
    assert (root / "manifests" / "link.yaml").read_text() == "a: 1\n"
    assert (root / "copy.yaml").read_text() == "a: 1\n"
    assert (root / "manifests" / "a.yaml").stat().st_mode & 0o7777 == 0o644
    assert (root / "bin" / "run").stat().st_mode & 0o7777 == 0o755


@pytest.mark.parametrize(
    "name", ["../escape.txt", "/etc/escape.txt", "manifests/../../escape.txt", "./../x"]
)
def test_traversal_paths_are_refused(root: Path, name: str) -> None:
    with pytest.raises(UnsafePathError, match=r"absolute|'\.\.'"):
        _unpack([file(name, "x")], root)
    _outside_untouched(root)


@pytest.mark.parametrize(
    ("link", "match"),
    [
        ("/etc/passwd", "absolute"),
        ("../outside/secret", "outside the bundle"),
        ("manifests/../../outside", "outside the bundle"),
    ],
)
def test_symlinks_leaving_the_root_are_refused(root: Path, link: str, match: str) -> None:
    with pytest.raises(UnsafeLinkError, match=match):
        _unpack([Entry("evil", kind=tarfile.SYMTYPE, link=link)], root)
    _outside_untouched(root)


def test_symlink_chain_that_escapes_is_refused(root: Path) -> None:
    # d/up -> .. is the root (fine on its own); esc -> d/up/.. looks like "d" lexically but
    # the kernel resolves it to the root's parent.
    entries = [
        Entry("d/", kind=tarfile.DIRTYPE),
        Entry("d/up", kind=tarfile.SYMTYPE, link=".."),
        Entry("esc", kind=tarfile.SYMTYPE, link="d/up/.."),
    ]
    with pytest.raises(UnsafeLinkError, match="resolves outside"):
        _unpack(entries, root)


def test_writing_through_a_symlink_is_refused(root: Path) -> None:
    entries = [
        Entry("inside/", kind=tarfile.DIRTYPE),
        Entry("via", kind=tarfile.SYMTYPE, link="inside"),
        file("via/file.txt", "x"),
    ]
    with pytest.raises(UnsafeLinkError, match="goes through the symlink 'via'"):
        _unpack(entries, root)


@pytest.mark.parametrize("target", ["../outside/secret", "/etc/passwd"])
def test_hardlinks_leaving_the_root_are_refused(root: Path, target: str) -> None:
    with pytest.raises(UnsafeLinkError, match="hardlink"):
        _unpack([Entry("h", kind=tarfile.LNKTYPE, link=target)], root)
    _outside_untouched(root)


def test_hardlink_to_a_symlink_is_refused(root: Path) -> None:
    entries = [
        file("real", "x"),
        Entry("sym", kind=tarfile.SYMTYPE, link="real"),
        Entry("hard", kind=tarfile.LNKTYPE, link="sym"),
    ]
    with pytest.raises(UnsafeLinkError, match="not a regular file"):
        _unpack(entries, root)


@pytest.mark.parametrize(
    ("kind", "word"),
    [
        (tarfile.CHRTYPE, "character device"),
        (tarfile.BLKTYPE, "block device"),
        (tarfile.FIFOTYPE, "FIFO"),
    ],
)
def test_device_files_are_refused(root: Path, kind: bytes, word: str) -> None:
    with pytest.raises(ForbiddenEntryError, match=word):
        _unpack([Entry("dev/thing", kind=kind)], root)
    assert not (root / "dev" / "thing").exists()


def sparse_tarball(directory: Path, fmt: str = "gnu") -> bytes:
    """A tar.gz (built by GNU tar) holding manifests/huge.bin, a 10 GiB sparse file."""
    source = directory / f"sparse-{fmt}"
    (source / "manifests").mkdir(parents=True)
    with open(source / "manifests" / "huge.bin", "wb") as huge:
        huge.truncate(10 << 30)  # 10 GiB of holes: no blocks on disk
    archive = directory / f"huge-{fmt}.tar.gz"
    subprocess.run(
        ["tar", f"--format={fmt}", "--sparse", "-czf", str(archive), "-C", str(source), "."],
        check=True,
    )
    return archive.read_bytes()


def disk_bytes(root: Path) -> int:
    """Bytes of disk actually allocated below ``root``."""
    return sum(p.lstat().st_blocks * 512 for p in root.rglob("*"))


@pytest.mark.parametrize("fmt", ["gnu", "pax"])
def test_ten_gigabyte_sparse_file_is_refused_without_writing(
    tmp_path: Path, root: Path, fmt: str
) -> None:
    archive = sparse_tarball(tmp_path, fmt)
    assert len(archive) < 4096  # the attack: a tiny download
    with pytest.raises(SizeLimitError, match="10737418240 bytes"):
        unpack_tar(io.BytesIO(archive), root)
    assert not (root / "manifests" / "huge.bin").exists()
    assert disk_bytes(root) < 1 << 20
    _outside_untouched(root)


def test_header_lying_about_size_is_refused_before_writing(root: Path) -> None:
    info = tarfile.TarInfo("big")
    info.size = 5 << 30
    header = info.tobuf(format=tarfile.PAX_FORMAT)
    with pytest.raises(SizeLimitError, match="max_total_bytes"):
        unpack_tar(io.BytesIO(header + b"\0" * 4096), root)
    assert not (root / "big").exists()


def test_total_size_limit_counts_all_files(root: Path) -> None:
    entries = [file(f"f{i}", b"x" * 600) for i in range(3)]
    with pytest.raises(SizeLimitError, match="already unpacked"):
        _unpack(entries, root, max_total_bytes=1500)


def test_file_count_limit(root: Path) -> None:
    with pytest.raises(FileCountLimitError, match="more than 10 entries"):
        _unpack([file(f"f{i}", "x") for i in range(11)], root, max_entries=10)


def test_compression_bomb_is_refused(root: Path) -> None:
    # 64 MiB of zeros gzip to ~64 KiB: a 1000:1 ratio, far beyond real bundles.
    zeros = tar_bytes([file("zeros.bin", bytes(64 << 20))])
    bomb = gzip.compress(zeros, compresslevel=9)
    with pytest.raises(CompressionRatioError, match="compression bomb"):
        unpack_tar(io.BytesIO(bomb), root)


def test_real_content_passes_the_ratio_guard(root: Path) -> None:
    # YAML-like text compresses ~10:1; it must not be mistaken for a bomb. The grace is lowered
    # so that the ratio is checked on 3 MB (the default waits for 16 MB).
    text = "".join(
        f"- name: item-{i}\n  value: {i * 7919 % 10007}\n" for i in range(100_000)
    ).encode()
    assert len(text) > 3 << 20
    data = gzip.compress(tar_bytes([file("list.yaml", text)]))
    limits = UnpackLimits(ratio_grace_bytes=1 << 20, max_compression_ratio=20)
    stats = unpack_tar(io.BytesIO(data), root, limits)
    assert stats.bytes == len(text)
    # The same text, compressed far better than that, is refused under the same limits.
    with pytest.raises(CompressionRatioError):
        unpack_tar(
            io.BytesIO(gzip.compress(tar_bytes([file("zeros.yaml", bytes(len(text)))]))),
            root / "again",
            limits,
        )


@pytest.mark.parametrize("compression", [Compression.ZSTD, Compression.AUTO])
def test_zstd_archives(root: Path, compression: Compression) -> None:
    data = zstandard.ZstdCompressor().compress(tar_bytes([file("a.txt", "zstd")]))
    unpack_tar(io.BytesIO(data), root, compression=compression)
    assert (root / "a.txt").read_text() == "zstd"


@pytest.mark.parametrize(
    "data", [b"this is not an archive at all" * 40, gzip.compress(b"x" * 10, mtime=0)[:-6]]
)
def test_corrupt_archives(root: Path, data: bytes) -> None:
    with pytest.raises(CorruptArchiveError):
        unpack_tar(io.BytesIO(data), root)


def test_whiteouts_follow_oci_semantics(root: Path) -> None:
    unpacker = Unpacker(root)
    lower = [
        file("keep.txt", "keep"),
        file("gone.txt", "x"),
        file("dir/old.txt", "old"),
        file("tree/deep/x.txt", "x"),
    ]
    unpacker.apply(io.BytesIO(tar_bytes(lower)), whiteouts=True)
    upper = [
        file(".wh.gone.txt", ""),
        file(".wh.tree", ""),  # whiting out a directory removes all of it
        file("dir/.wh..wh..opq", ""),  # opaque first: later same-layer entries survive
        file("dir/new.txt", "new"),
    ]
    unpacker.apply(io.BytesIO(tar_bytes(upper)), whiteouts=True)
    stats = unpacker.finish()
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == [
        "dir",
        "dir/new.txt",
        "keep.txt",
    ]
    assert stats.whiteouts == 3


def test_whiteout_names_are_plain_files_outside_image_layers(root: Path) -> None:
    _unpack([file(".wh.readme", "kept as a file")], root)
    assert (root / ".wh.readme").read_text() == "kept as a file"


def test_later_layer_replaces_file_with_directory_and_breaks_hardlinks(root: Path) -> None:
    unpacker = Unpacker(root)
    unpacker.apply(
        io.BytesIO(
            tar_bytes([file("a", "1"), Entry("b", kind=tarfile.LNKTYPE, link="a"), file("c", "f")])
        ),
        whiteouts=True,
    )
    unpacker.apply(io.BytesIO(tar_bytes([file("a", "2"), file("c/inner", "d")])), whiteouts=True)
    unpacker.finish()
    assert (root / "a").read_text() == "2"
    assert (root / "b").read_text() == "1"  # overwriting a never writes through a hardlink
    assert (root / "c" / "inner").read_text() == "d"
