"""Compressed streams without end: refused in one line within seconds, real streams still unpack.

The hostile streams (``hostile_streams.py``) are produced lazily, a header and then one unit
forever, so they cost nothing on disk, and a regression fails after 10 s instead of hanging or
filling memory. Before the bounded decompressor (``resolver.decompress``) every shape here kept the
unpacker busy until that give-up (``gzip.GzipFile`` read an endless FNAME one byte per call, about
1.6 MB/s, and looped over empty members inside one ``read``).
"""

from __future__ import annotations

import gzip
import http.server
import io
import os
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from provisioners.errors import ProvisionerError
from provisioners.sources import FetchOptions, HttpSpec, fetch
from provisioners.unpack import (
    CompressedStreamLimitError,
    Compression,
    CorruptArchiveError,
    TimeLimitError,
    Unpacker,
    UnpackError,
    UnpackLimits,
    unpack_tar,
)
from resolver.decompress import (
    BoundedDecompressor,
    DecompressDeadlineError,
    DecompressLimits,
)
from resolver.net import Budget
from tests.provisioners.hostile_streams import (
    BUNDLE,
    SHAPES,
    WINDOW_2GIB,
    Endless,
    gzip_header,
    member,
    open_tar,
    skippable,
    zstd,
)
from tests.provisioners.oci import file, tar_bytes
from tests.provisioners.servers import serve_http

ROOT = Path(__file__).resolve().parents[2]
FAST = 3.0
"""Seconds within which every refusal must come (each takes well under 0.5 s)."""
MAX_READ = 4 << 20
"""Compressed bytes a refused stream may have consumed (the guard stops at about 1 MiB)."""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_streams_that_decompress_to_nothing_are_refused_fast(root: Path, shape: str) -> None:
    compression, head, unit = SHAPES[shape]
    stream = Endless(head, unit)
    started = time.monotonic()
    with pytest.raises(CompressedStreamLimitError) as refused:
        unpack_tar(stream, root, compression=compression)
    assert time.monotonic() - started < FAST
    assert stream.served < MAX_READ
    message = str(refused.value)
    assert "\n" not in message
    assert "headers, padding, empty members or skipped frames" in message
    assert isinstance(refused.value, UnpackError)


def test_the_member_count_is_bounded(root: Path) -> None:
    """Members that each carry real bytes pass the overhead bound; their number does not."""
    stream = Endless(member(open_tar(10 << 20)), member(os.urandom(512)))
    with pytest.raises(CompressedStreamLimitError, match=r"more than 1000 members \(max_members\)"):
        unpack_tar(stream, root, UnpackLimits(max_gzip_members=1000))
    assert stream.served < MAX_READ


@pytest.mark.parametrize(
    "frame",
    [
        # A hand-made header asking for a 2 GiB window (the format's largest for libzstd).
        WINDOW_2GIB,
        zstd(BUNDLE, window_log=28),  # 256 MiB: what `zstd --long=28` writes
    ],
    ids=["2GiB", "256MiB"],
)
def test_zstd_windows_beyond_the_limit_are_refused(root: Path, frame: bytes) -> None:
    with pytest.raises(CompressedStreamLimitError, match="max_window_bytes") as refused:
        unpack_tar(io.BytesIO(frame), root, compression=Compression.ZSTD)
    assert "\n" not in str(refused.value)


def test_a_128_mib_zstd_window_unpacks(root: Path) -> None:
    unpack_tar(io.BytesIO(zstd(BUNDLE, window_log=27)), root, compression=Compression.ZSTD)
    assert (root / "manifests" / "a.yaml").read_text() == "a: 1\n"


# -- real streams still unpack -------------------------------------------------------------------


def _pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize(
    "stream",
    [
        b"".join(gzip.compress(p, mtime=0) for p in _pieces(BUNDLE, 7000)),  # `cat a.gz b.gz`
        b"".join(member(p, b"BC\x02\x00\x00\x00") for p in _pieces(BUNDLE, 1 << 16)),  # BGZF
        gzip.compress(BUNDLE, mtime=0) + b"\0" * 4096,  # zero padding, as gzip(1) accepts
        member(BUNDLE) + member(b""),  # an empty member at the end
        b"".join(zstd(p) for p in _pieces(BUNDLE, 5000)) + skippable(b"toc" * 1000),
    ],
    ids=["gzip-members", "bgzf", "gzip-zero-padding", "gzip-empty-last", "zstd-frames-skippable"],
)
def test_legal_multi_member_and_multi_frame_streams_unpack(root: Path, stream: bytes) -> None:
    stats = unpack_tar(io.BytesIO(stream), root)
    assert stats.files == 2
    assert (root / "manifests" / "b.yaml").read_text() == "b: 2\n" * 5000


def test_bounded_reads_return_exactly_the_decompressed_bytes() -> None:
    data = os.urandom(100_000) + b"yaml: text\n" * 50_000
    for fmt, packed in (("gzip", gzip.compress(data)), ("zstd", zstd(data))):
        for size in (1, 10240, 1 << 20):
            reader = BoundedDecompressor(io.BytesIO(packed), fmt)  # type: ignore[arg-type]
            pieces = []
            while piece := reader.read(size if size > 1 else 777):
                assert len(piece) <= min(size if size > 1 else 777, 1 << 16)
                pieces.append(piece)
            assert b"".join(pieces) == data
            assert reader.consumed == len(packed)
        assert BoundedDecompressor(io.BytesIO(packed), fmt).read() == data  # type: ignore[arg-type]


# -- corrupt streams ------------------------------------------------------------------------------


def test_garbage_after_a_member_is_refused(root: Path) -> None:
    stream = member(open_tar(4096)) + b"this is not gzip" * 100
    with pytest.raises(CorruptArchiveError, match="data after member 1 that is not gzip"):
        unpack_tar(io.BytesIO(stream), root)


def test_a_truncated_member_is_refused(root: Path) -> None:
    stream = gzip.compress(tar_bytes([file("blob", os.urandom(50_000))]), mtime=0)[:-1000]
    with pytest.raises(CorruptArchiveError, match=r"ends inside member 1 \(truncated\)"):
        unpack_tar(io.BytesIO(stream), root)


# -- the deadline ---------------------------------------------------------------------------------


class Slow:
    """A gzip stream of a big file's content, 4 KiB every 20 ms: real data, just endless."""

    def __init__(self, compressed: bool) -> None:
        head = open_tar(1 << 29)[:512]
        self._compressed = compressed
        self._deflate = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        self._first = self._deflate.compress(head) if compressed else head

    def read(self, size: int = -1, /) -> bytes:
        time.sleep(0.02)
        if self._first:
            first, self._first = self._first, b""
            return first
        block = os.urandom(4096)
        if not self._compressed:
            return block
        return self._deflate.compress(block) + self._deflate.flush(zlib.Z_SYNC_FLUSH)


@pytest.mark.parametrize("compressed", [True, False], ids=["gzip", "plain"])
def test_the_unpack_deadline_is_checked_while_reading(root: Path, compressed: bool) -> None:
    started = time.monotonic()
    with pytest.raises(TimeLimitError, match=r"passed its 0\.5s deadline") as refused:
        unpack_tar(Slow(compressed), root, UnpackLimits(max_seconds=0.5))
    assert time.monotonic() - started < FAST
    assert "\n" not in str(refused.value)


def test_a_callers_deadline_is_shared_by_every_layer(root: Path) -> None:
    budget = Budget(0.4, stall=0.4)
    unpacker = Unpacker(root, deadline=budget)
    unpacker.apply(io.BytesIO(gzip.compress(BUNDLE)))
    time.sleep(0.5)
    with pytest.raises(TimeLimitError, match=r"0\.4s deadline"):
        unpacker.apply(io.BytesIO(gzip.compress(BUNDLE)))


@pytest.mark.parametrize("fmt", ["gzip", "zstd"])
def test_the_deadline_is_checked_inside_one_read(fmt: str) -> None:
    """With the overhead bound lifted, the deadline still ends a read that loops over members
    (gzip, our loop) or frames (zstd, libzstd pulling input through the counting intake)."""
    unit = gzip.compress(b"") if fmt == "gzip" else zstd(b"")
    reader = BoundedDecompressor(
        Endless(b"", unit),
        fmt,  # type: ignore[arg-type]
        DecompressLimits(max_overhead_bytes=1 << 40, max_members=1 << 40),
        deadline=Budget(0.3, stall=0.3),
    )
    started = time.monotonic()
    with pytest.raises(DecompressDeadlineError, match=r"passed its 0\.3s deadline"):
        reader.read(1 << 16)
    assert time.monotonic() - started < FAST


# -- through a real source ------------------------------------------------------------------------


class _EndlessTarball(http.server.BaseHTTPRequestHandler):
    """Answers every GET with a gzip stream whose FNAME never ends (until the client leaves)."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/gzip")
        self.end_headers()
        unit = b"A" * 65536
        try:
            self.wfile.write(gzip_header(0x08))
            for _ in range(10_000):  # 640 MiB at most, however the client behaves
                self.wfile.write(unit)
        except OSError:
            return

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture(scope="module")
def endless_server() -> Iterator[str]:
    with serve_http(_EndlessTarball) as url:
        yield url


def test_the_http_source_refuses_an_endlessgzip_header(endless_server: str, dest: Path) -> None:
    started = time.monotonic()
    with pytest.raises(CompressedStreamLimitError) as refused:
        fetch(
            HttpSpec(f"{endless_server}/bundle.tgz"),
            dest,
            FetchOptions(timeout_seconds=5, deadline_seconds=60),
        )
    assert time.monotonic() - started < FAST
    assert isinstance(refused.value, ProvisionerError)
    assert "\n" not in str(refused.value)


# -- the one decompressor -------------------------------------------------------------------------

_DECOMPRESSORS = (
    "GzipFile(",
    "gzip.open(",
    "gzip.decompress(",
    "zlib.decompress(",
    "decompressobj(",
    "ZstdDecompressor(",
    "import lzma",
    "import bz2",
    "zipfile",
    "shutil.unpack_archive",
)
_TRUSTED_DECOMPRESSION = {
    # The guard itself.
    "resolver/decompress.py",
    # Reads back the gzip body pivoter compressed itself (resolver.catalog.jsonl.Body).
    "resolver/catalog/jsonl.py",
}


def test_no_other_code_decompresses_what_it_did_not_produce() -> None:
    """Every decompression of outside data goes through resolver.decompress; the allowlist above
    holds the guard and data pivoter compressed itself, and may not go stale."""
    found: dict[str, list[str]] = {}
    for package in ("pivoter", "resolver", "provisioners"):
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            needles = [needle for needle in _DECOMPRESSORS if needle in text]
            if needles:
                found[str(path.relative_to(ROOT))] = needles
    assert sorted(set(found) - _TRUSTED_DECOMPRESSION) == []
    assert sorted(_TRUSTED_DECOMPRESSION - set(found)) == []  # stale entries


# -- under an address-space limit -----------------------------------------------------------------

_UNDER_LIMIT = """
import io, resource, tempfile
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from provisioners.unpack import Compression, UnpackError, unpack_tar
from tests.provisioners.hostile_streams import BUNDLE, SHAPES, WINDOW_2GIB, Endless, zstd
cases = [(n, c, lambda h=h, u=u: Endless(h, u)) for n, (c, h, u) in sorted(SHAPES.items())]
cases.append(("zstd 2 GiB window", Compression.ZSTD, lambda: io.BytesIO(WINDOW_2GIB)))
cases.append(("zstd 128 MiB window", Compression.ZSTD, lambda: io.BytesIO(zstd(BUNDLE, 27))))
for name, compression, stream in cases:
    with tempfile.TemporaryDirectory() as tmp:
        try:
            stats = unpack_tar(stream(), Path(tmp) / "r", compression=compression)
            print(name, "->", stats.files, "files")
        except UnpackError as err:
            print(name, "->", type(err).__name__, str(err).count(chr(10)))
"""


def test_every_shape_is_refused_cleanly_within_one_gib_of_address_space() -> None:
    """The same streams in a child limited to 1 GiB of address space (as ``prlimit --as``): each
    is one clean refusal, never MemoryError; the largest window allowed still unpacks there."""
    done = subprocess.run(
        [sys.executable, "-c", _UNDER_LIMIT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    *refused, allowed = done.stdout.splitlines()
    assert len(refused) == len(SHAPES) + 1, done.stdout
    assert all(line.endswith("-> CompressedStreamLimitError 0") for line in refused), done.stdout
    assert allowed == "zstd 128 MiB window -> 2 files"
