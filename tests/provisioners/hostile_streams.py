"""Hostile compressed streams, made lazily: a header, then one unit forever.

Shared by ``test_unpack_streams.py`` and the child it runs under an address-space limit (which
imports only this module and the unpacker). :class:`Endless` fails loudly when it has been read for
too long or too far, so a regression fails fast instead of hanging or filling memory.
"""

from __future__ import annotations

import gzip
import struct
import tarfile
import time
import zlib

import zstandard

from provisioners.unpack import Compression
from tests.provisioners.oci import file, tar_bytes


class Endless:
    """``head``, then ``unit`` repeated forever, made as it is read."""

    def __init__(self, head: bytes, unit: bytes, *, give_up: float = 10.0) -> None:
        self._buffer = head
        self._unit = unit
        self._give_up = time.monotonic() + give_up
        self.served = 0

    def read(self, size: int = -1, /) -> bytes:
        if self.served > 256 << 20 or time.monotonic() > self._give_up:
            raise AssertionError(f"still reading after {self.served} bytes: the stream has no end")
        size = size if size > 0 else 1 << 16
        if len(self._buffer) < size:
            self._buffer += self._unit * (size // len(self._unit) + 1)
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        self.served += len(data)
        return data


def gzip_header(flags: int = 0) -> bytes:
    """The 10 fixed bytes of a gzip member header (deflate, ``flags``, no mtime, unknown OS)."""
    return b"\x1f\x8b\x08" + bytes([flags]) + b"\0\0\0\0" + b"\x00\xff"


def deflate(data: bytes) -> bytes:
    """``data`` as one raw deflate stream (what a gzip member holds between header and trailer)."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def member(data: bytes, extra: bytes | None = None) -> bytes:
    """One gzip member of ``data`` (with an FEXTRA field when ``extra`` is given)."""
    head = gzip_header(0x04 if extra is not None else 0)
    if extra is not None:
        head += struct.pack("<H", len(extra)) + extra
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return head + deflate(data) + trailer


def skippable(payload: bytes) -> bytes:
    """A zstd skippable frame (what zstd:chunked and the seekable format put their tables in)."""
    return struct.pack("<II", 0x184D2A50, len(payload)) + payload


def zstd(data: bytes, window_log: int | None = None) -> bytes:
    """One zstd frame of ``data``; with ``window_log``, a frame that asks for that window."""
    if window_log is None:
        return zstandard.ZstdCompressor().compress(data)
    params = zstandard.ZstdCompressionParameters(
        window_log=window_log, enable_ldm=True, write_content_size=False
    )
    compressor = zstandard.ZstdCompressor(compression_params=params).compressobj()
    return compressor.compress(data) + compressor.flush()


def open_tar(size: int = 1 << 20) -> bytes:
    """A tar that announces a file of ``size`` bytes and stops after 100 of them."""
    info = tarfile.TarInfo("manifests/big.yaml")
    info.size = size
    return info.tobuf(tarfile.USTAR_FORMAT) + b"a" * 100


BUNDLE = tar_bytes([file("manifests/a.yaml", "a: 1\n"), file("manifests/b.yaml", "b: 2\n" * 5000)])

# name: (compression, head, unit forever)
SHAPES: dict[str, tuple[Compression, bytes, bytes]] = {
    "gzip FNAME without end": (Compression.AUTO, gzip_header(0x08), b"A"),
    "gzip FCOMMENT without end": (Compression.AUTO, gzip_header(0x10), b"C"),
    "gzip members with 64 KiB FEXTRA": (Compression.GZIP, b"", member(b"", b"x" * 65535)),
    "gzip empty members": (Compression.AUTO, b"", gzip.compress(b"", mtime=0)),
    "gzip empty stored blocks": (Compression.GZIP, gzip_header(), b"\x00\x00\x00\xff\xff"),
    "gzip empty fixed-Huffman blocks": (
        Compression.GZIP,
        gzip_header(),
        bytes.fromhex("0208208000"),
    ),
    "gzip one-byte members": (Compression.GZIP, member(open_tar()), member(b"a")),
    "zero padding after a member": (Compression.AUTO, member(open_tar()), b"\0"),
    "zstd skippable frames": (Compression.ZSTD, b"", skippable(b"\0" * 4096)),
    "zstd empty frames": (Compression.AUTO, b"", zstd(b"")),
    "zstd empty raw blocks": (Compression.ZSTD, bytes.fromhex("28b52ffd0058"), b"\0\0\0"),
}

WINDOW_2GIB = bytes.fromhex("28b52ffd00a8") + b"\x01\x00\x00"
"""A zstd frame header asking for a 2 GiB window (libzstd's largest), then an empty last block."""
