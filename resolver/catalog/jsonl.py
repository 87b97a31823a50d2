"""catalogd's body of a catalog (``/api/v1/all``), built from the objects as they are parsed.

catalogd serves every object of a catalog directory as one line of Go-encoded JSON
(:func:`resolver.catalog.gojson.dumps`), in walk order, gzip-compressed for most clients. The
loader renders each file's lines while the file's objects are at hand (:func:`render_file`, in
the worker process that parsed it when the load is parallel) and keeps them, compressed, in the
parsed-catalog cache beside the objects: building the body never parses a file a second time,
and a start with the cache warm compresses nothing.

Each file's lines are one raw deflate stream ended by a sync flush (byte-aligned, not final), so
the streams of all files concatenate into one deflate stream; :func:`join` puts the gzip header
in front, the final empty block and the trailer behind (the CRC-32 of the whole text is combined
from the files' CRCs, :func:`crc32_combine`, as zlib's ``crc32_combine`` does). The result is a
single ordinary gzip member, what pigz does to compress in parallel.

Called by :mod:`resolver.catalog.load` (``load_served``) and ``pivoter catalog serve``.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from resolver.catalog import gojson
from resolver.catalog.decode import meta_of

__all__ = [
    "Body",
    "FileLines",
    "MetaLine",
    "crc32_combine",
    "join",
    "render_file",
    "select",
    "text_chunks",
]

LEVEL = 6
"""zlib's default level, as ``gzip.compress`` used before."""


class MetaLine(NamedTuple):
    """Where one object sits in the body, and its meta keys (for ``/api/v1/metas``)."""

    schema: str
    package: str
    name: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class FileLines:
    """The lines of one file's objects: compressed, their CRC-32 and length, and each object's
    meta keys with the length of its line."""

    deflate: bytes
    crc: int
    size: int
    metas: tuple[tuple[str, str, str, int], ...]

    def to_plain(self) -> tuple[bytes, int, int, tuple[tuple[str, str, str, int], ...]]:
        """Plain data (for the parsed-catalog cache, whose unpickler admits no other class)."""
        return (self.deflate, self.crc, self.size, self.metas)

    @classmethod
    def from_plain(cls, data: Any) -> FileLines | None:
        """The inverse of :meth:`to_plain`; None when ``data`` does not have its shape."""
        if not isinstance(data, tuple) or len(data) != 4:
            return None
        deflate, crc, size, metas = data
        if not isinstance(deflate, bytes) or type(crc) is not int or type(size) is not int:
            return None
        if not isinstance(metas, tuple) or not all(_is_meta(m) for m in metas):
            return None
        return cls(deflate, crc, size, metas)


def _is_meta(meta: Any) -> bool:
    return (
        isinstance(meta, tuple)
        and len(meta) == 4
        and all(isinstance(part, str) for part in meta[:3])
        and type(meta[3]) is int
    )


def render_file(blobs: Iterable[Any]) -> FileLines:
    """Render the decoded JSON objects of one file as catalogd's lines, compressed."""
    text = bytearray()
    metas: list[tuple[str, str, str, int]] = []
    for blob in blobs:
        schema, package, name = meta_of(blob)
        line = (gojson.dumps(blob) + "\n").encode()
        metas.append((schema, package, name, len(line)))
        text += line
    compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    deflate = compressor.compress(text) + compressor.flush(zlib.Z_SYNC_FLUSH)
    return FileLines(deflate, zlib.crc32(text), len(text), tuple(metas))


@dataclass(frozen=True, slots=True)
class Body:
    """A catalog's whole body: gzip-compressed, its length uncompressed, and where each line is."""

    gzip: bytes
    size: int
    lines: tuple[MetaLine, ...]


_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # deflate, no name, mtime 0, OS unknown
_FINAL_BLOCK = b"\x03\x00"  # an empty fixed-Huffman block with BFINAL set


def join(files: Sequence[FileLines]) -> Body:
    """Join the files' lines, in order, into one gzip member."""
    crc = 0
    size = 0
    lines: list[MetaLine] = []
    for f in files:
        crc = crc32_combine(crc, f.crc, f.size)
        for schema, package, name, length in f.metas:
            lines.append(MetaLine(schema, package, name, size, size + length))
            size += length
    trailer = struct.pack("<II", crc, size & 0xFFFFFFFF)
    data = b"".join([_GZIP_HEADER, *(f.deflate for f in files), _FINAL_BLOCK, trailer])
    return Body(data, size, tuple(lines))


CHUNK = 1 << 20
"""Decompressed bytes handed out at a time by :func:`text_chunks` and :func:`select`."""


def text_chunks(gzip_body: bytes, chunk: int = CHUNK) -> Iterator[bytes]:
    """The uncompressed text of a :class:`Body`, ``chunk`` bytes at a time (never all at once:
    a 55,000-bundle catalog is 270 MB of text)."""
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    data = memoryview(gzip_body)
    for start in range(0, len(data), chunk):
        out = decompressor.decompress(data[start : start + chunk], chunk)
        while out:
            yield out
            out = decompressor.decompress(decompressor.unconsumed_tail, chunk)
    rest = decompressor.flush()
    if rest:
        yield rest


def select(body: Body, keep: Callable[[MetaLine], bool], chunk: int = CHUNK) -> Iterator[bytes]:
    """The lines of ``body`` whose :class:`MetaLine` ``keep`` accepts, in order, read through
    :func:`text_chunks` (only the text between two wanted lines is ever held)."""
    wanted = iter([line for line in body.lines if keep(line)])
    line = next(wanted, None)
    buffer = bytearray()
    base = 0  # where ``buffer`` starts in the text
    for piece in text_chunks(body.gzip, chunk):
        if line is None:
            return
        buffer += piece
        while line is not None and line.end <= base + len(buffer):
            yield bytes(buffer[line.start - base : line.end - base])
            line = next(wanted, None)
        if line is not None:  # what comes before the next wanted line is never needed
            drop = min(len(buffer), line.start - base)
            del buffer[:drop]
            base += drop


# -- CRC-32 combination (zlib's crc32_combine: multiplication by x^(8*len2) in GF(2)) -----------

_POLY = 0xEDB88320  # CRC-32, reflected


def _gf2_times(matrix: tuple[int, ...], vector: int) -> int:
    total = 0
    i = 0
    while vector:
        if vector & 1:
            total ^= matrix[i]
        vector >>= 1
        i += 1
    return total


def _gf2_square(matrix: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(_gf2_times(matrix, matrix[n]) for n in range(32))


def _zero_byte_operators(count: int) -> tuple[tuple[int, ...], ...]:
    """The operators that append 1, 2, 4, ... 2**(count-1) zero bytes to a CRC register."""
    one_bit = (_POLY, *(1 << n for n in range(31)))
    operator = _gf2_square(_gf2_square(_gf2_square(one_bit)))  # 8 zero bits: one byte
    operators = [operator]
    for _ in range(count - 1):
        operator = _gf2_square(operator)
        operators.append(operator)
    return tuple(operators)


_ZERO_BYTES = _zero_byte_operators(64)


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """The CRC-32 of ``A + B`` from ``crc1`` of A, ``crc2`` of B and the length of B."""
    if len2 <= 0:
        return crc1
    k = 0
    while len2:  # append len2 zero bytes to crc1, one power of two at a time
        if len2 & 1:
            crc1 = _gf2_times(_ZERO_BYTES[k], crc1)
        len2 >>= 1
        k += 1
    return crc1 ^ crc2
