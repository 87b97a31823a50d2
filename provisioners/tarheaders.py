"""Linear-time, bounded parsing of tar extension headers, whatever the Python version.

CPython's tarfile before 3.11.10 / 3.12.6 (CVE-2024-6232) finds PAX records with regular
expressions that backtrack quadratically: a PAX header holding a long run of digits, a few KiB
once gzip-compressed, costs hours of CPU. The same parser also reads an extension header of any
declared size into memory, follows a chain of extension headers by recursion (a long chain raises
``RecursionError``), loops or crashes (``ValueError``, ``IndexError``) on truncated GNU sparse
maps, and lets a negative size move the stream backwards. :class:`GuardedTarInfo` replaces those
steps: PAX records are split by their length prefixes in one pass with no regular expression, and
every extension header has a size, record-count and chain-length limit. Anything it refuses
raises :class:`TarHeaderError` (a :class:`tarfile.ReadError`) with a one-line reason.

:func:`open_tar_stream` opens a non-seekable tar stream with it; :mod:`provisioners.unpack`, the
one place tar data enters pivoter, reads every archive through it.
"""

from __future__ import annotations

import tarfile
from typing import IO, Any

__all__ = [
    "MAX_GLOBAL_PAX_RECORDS",
    "MAX_HEADER_CHAIN",
    "MAX_LONG_NAME_BYTES",
    "MAX_PAX_HEADER_BYTES",
    "MAX_PAX_RECORDS",
    "MAX_SPARSE_SEGMENTS",
    "GuardedTarFile",
    "GuardedTarInfo",
    "TarHeaderError",
    "open_tar_stream",
]

MAX_PAX_HEADER_BYTES = 64 * 1024
"""Largest PAX header (extended or global); real ones hold a path, times and a few xattrs."""
MAX_PAX_RECORDS = 128
"""Records in one PAX header."""
MAX_GLOBAL_PAX_RECORDS = 128
"""Keys that global PAX headers may set for the whole archive, together."""
MAX_LONG_NAME_BYTES = 16 * 1024
"""Largest GNU long name or long link target header."""
MAX_HEADER_CHAIN = 8
"""Extension headers (PAX, global, GNU long name/link) in a row before one entry."""
MAX_SPARSE_SEGMENTS = 100_000
"""Sparse-map segments in the whole archive (bundles have no reason for sparse files at all)."""

_NUMBER_DIGITS = 20  # 2**64 has 20 digits; tar sizes and offsets never need more
_TAR: Any = tarfile  # the module's private helpers (nti, nts) and error classes
_CHAIN_ATTR = "_pivoter_header_chain"
_SPARSE_ATTR = "_pivoter_sparse_segments"
_SIZE_KEYS = ("size", "GNU.sparse.size", "GNU.sparse.realsize")


class TarHeaderError(tarfile.ReadError):
    """A tar header is malformed, or larger or more deeply chained than the limits allow."""


def _number(value: bytes | str, what: str) -> int:
    """A non-negative decimal of at most 20 ASCII digits (no sign, no spaces)."""
    if not value or len(value) > _NUMBER_DIGITS or not value.isascii() or not value.isdigit():
        shown = value[:24] if isinstance(value, str) else value[:24].decode("ascii", "replace")
        raise TarHeaderError(f"{what} {shown!r} is not a non-negative decimal number")
    return int(value)


def parse_pax_records(data: bytes) -> list[tuple[bytes, bytes]]:
    """Split a PAX header body into (keyword, value) records in one linear pass.

    A record is ``"<length> <keyword>=<value>\\n"`` where ``length`` counts the whole record;
    trailing NUL padding ends the body. Anything else raises :class:`TarHeaderError`.
    """
    records: list[tuple[bytes, bytes]] = []
    pos, end = 0, len(data)
    while pos < end and data[pos] != 0:
        space = data.find(b" ", pos, pos + _NUMBER_DIGITS + 1)
        if space <= pos or not data[pos:space].isdigit():
            raise TarHeaderError(
                f"malformed pax header: the record at byte {pos} does not start with its length"
            )
        length = int(data[pos:space])
        record_end = pos + length
        # The shortest record is "5 x=\n"; the length must land on the record's newline.
        if length < 5 or record_end > end or data[record_end - 1] != 0x0A:
            raise TarHeaderError(
                f"malformed pax header: the record at byte {pos} has a wrong length ({length})"
            )
        keyword, equals, value = data[space + 1 : record_end - 1].partition(b"=")
        if not keyword or not equals:
            raise TarHeaderError(
                f"malformed pax header: the record at byte {pos} has no keyword=value"
            )
        records.append((keyword, value))
        if len(records) > MAX_PAX_RECORDS:
            raise TarHeaderError(
                f"a pax header has more than {MAX_PAX_RECORDS} records; real archives have a few"
            )
        pos = record_end
    return records


def _blocks(count: int) -> int:
    """``count`` rounded up to whole 512-byte tar blocks."""
    return -(-count // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE


def _count(archive: tarfile.TarFile, attr: str) -> int:
    value = getattr(archive, attr, 0)
    return value if isinstance(value, int) else 0


class GuardedTarInfo(tarfile.TarInfo):
    """A :class:`tarfile.TarInfo` whose extension headers are parsed in linear time, bounded."""

    def _proc_member(self, archive: tarfile.TarFile) -> tarfile.TarInfo:
        if self.size < 0:
            raise TarHeaderError(f"entry {self.name[:200]!r} declares a negative size")
        result: tarfile.TarInfo = super()._proc_member(archive)  # type: ignore[misc]
        return result

    def _next_header(self, archive: tarfile.TarFile) -> tarfile.TarInfo:
        """Read the header an extension header applies to, refusing long chains."""
        depth = _count(archive, _CHAIN_ATTR)
        if depth >= MAX_HEADER_CHAIN:
            raise TarHeaderError(
                f"more than {MAX_HEADER_CHAIN} extension headers in a row precede one entry"
            )
        setattr(archive, _CHAIN_ATTR, depth + 1)
        try:
            return self.fromtarfile(archive)
        except tarfile.HeaderError as exc:
            raise _TAR.SubsequentHeaderError(str(exc)) from None
        finally:
            setattr(archive, _CHAIN_ATTR, depth)

    def _read_body(self, archive: tarfile.TarFile, limit: int, what: str) -> bytes:
        if self.size > limit:
            raise TarHeaderError(
                f"a {what} header of {self.size} bytes is larger than the {limit} bytes allowed"
            )
        fileobj: Any = archive.fileobj
        buf: bytes = fileobj.read(_blocks(self.size))
        if len(buf) < self.size:
            raise TarHeaderError(f"the archive ends inside a {what} header")
        return buf[: self.size]

    def _add_sparse(self, archive: tarfile.TarFile, segments: int) -> None:
        total = _count(archive, _SPARSE_ATTR) + segments
        if total > MAX_SPARSE_SEGMENTS:
            raise TarHeaderError(
                f"the archive's sparse maps have more than {MAX_SPARSE_SEGMENTS} segments"
            )
        setattr(archive, _SPARSE_ATTR, total)

    def _proc_gnulong(self, archive: tarfile.TarFile) -> tarfile.TarInfo:
        buf = self._read_body(archive, MAX_LONG_NAME_BYTES, "GNU long name")
        following = self._next_header(archive)
        following.offset = self.offset
        text = _TAR.nts(buf, archive.encoding, archive.errors)
        if self.type == tarfile.GNUTYPE_LONGNAME:
            following.name = text
        else:
            following.linkname = text
        if following.isdir():
            following.name = following.name.removesuffix("/")
        return following

    def _proc_sparse(self, archive: tarfile.TarFile) -> tarfile.TarInfo:
        structs, extended, original_size = self._sparse_structs  # type: ignore[attr-defined]
        del self._sparse_structs  # type: ignore[attr-defined]
        fileobj: Any = archive.fileobj
        self._add_sparse(archive, len(structs))
        while extended:
            buf: bytes = fileobj.read(tarfile.BLOCKSIZE)
            if len(buf) < tarfile.BLOCKSIZE:
                raise TarHeaderError("the archive ends inside a GNU sparse header")
            found = []
            for pos in range(0, 21 * 24, 24):
                try:
                    offset = _TAR.nti(buf[pos : pos + 12])
                    numbytes = _TAR.nti(buf[pos + 12 : pos + 24])
                except ValueError:
                    break
                if offset < 0 or numbytes < 0:
                    raise TarHeaderError("a GNU sparse header has a negative offset or size")
                if offset and numbytes:
                    found.append((offset, numbytes))
            self._add_sparse(archive, len(found))
            structs.extend(found)
            extended = bool(buf[504])
        if original_size < 0:
            raise TarHeaderError("a GNU sparse header declares a negative size")
        self.sparse = structs
        self.offset_data = fileobj.tell()
        archive.offset = self.offset_data + _blocks(self.size)
        self.size = original_size
        return self

    def _proc_pax(self, archive: tarfile.TarFile) -> tarfile.TarInfo:
        records = parse_pax_records(self._read_body(archive, MAX_PAX_HEADER_BYTES, "pax"))
        # Only the first hdrcharset counts; BINARY keeps names in the archive's own encoding.
        encoding = next((v for k, v in records if k == b"hdrcharset"), None)
        name_encoding = archive.encoding if encoding == b"BINARY" else "utf-8"
        # Global headers apply to the rest of the archive; extended ones to the next entry.
        shared: Any = archive.pax_headers
        pax_headers: dict[str, str] = shared if self.type == tarfile.XGLTYPE else dict(shared)
        for raw_keyword, raw_value in records:
            keyword = self._decode_pax_field(  # type: ignore[attr-defined]
                raw_keyword, "utf-8", "utf-8", archive.errors
            )
            if keyword in tarfile.PAX_NAME_FIELDS:
                value = self._decode_pax_field(  # type: ignore[attr-defined]
                    raw_value, name_encoding, archive.encoding, archive.errors
                )
            else:
                value = self._decode_pax_field(  # type: ignore[attr-defined]
                    raw_value, "utf-8", "utf-8", archive.errors
                )
            if keyword in _SIZE_KEYS:
                _number(value, f"pax {keyword}")
            pax_headers[keyword] = value
        if len(archive.pax_headers) > MAX_GLOBAL_PAX_RECORDS:
            raise TarHeaderError(
                f"global pax headers set more than {MAX_GLOBAL_PAX_RECORDS} keys for the archive"
            )

        following: Any = self._next_header(archive)

        if "GNU.sparse.map" in pax_headers:  # GNU sparse 0.1: "offset,size,offset,size,..."
            fields = str(pax_headers["GNU.sparse.map"]).split(",")
            numbers = [_number(f, "a GNU.sparse.map entry") for f in fields]
            self._add_sparse(archive, len(numbers) // 2)
            following.sparse = list(zip(numbers[::2], numbers[1::2], strict=False))
        elif "GNU.sparse.size" in pax_headers:  # GNU sparse 0.0: repeated offset/numbytes records
            offsets = [
                _number(v, "GNU.sparse.offset") for k, v in records if k == b"GNU.sparse.offset"
            ]
            sizes = [
                _number(v, "GNU.sparse.numbytes") for k, v in records if k == b"GNU.sparse.numbytes"
            ]
            self._add_sparse(archive, len(offsets))
            following.sparse = list(zip(offsets, sizes, strict=False))
        elif (
            pax_headers.get("GNU.sparse.major") == "1"
            and pax_headers.get("GNU.sparse.minor") == "0"
        ):
            self._sparse_map_10(following, archive)

        if self.type in (tarfile.XHDTYPE, tarfile.SOLARIS_XHDTYPE):
            following._apply_pax_info(pax_headers, archive.encoding, archive.errors)
            following.offset = self.offset
            if "size" in pax_headers:
                # The size replaces the header's: recompute where the next header starts.
                offset = following.offset_data
                if following.isreg() or following.type not in tarfile.SUPPORTED_TYPES:
                    offset += _blocks(following.size)
                archive.offset = offset
        result: tarfile.TarInfo = following
        return result

    def _sparse_map_10(self, following: Any, archive: tarfile.TarFile) -> None:
        """GNU sparse 1.0: the map is decimal lines at the start of the entry's data."""
        fileobj: Any = archive.fileobj
        data = b""
        pos = 0
        count: int | None = None
        numbers: list[int] = []
        while count is None or len(numbers) < 2 * count:
            newline = data.find(b"\n", pos)
            if newline < 0:
                if len(data) - pos > _NUMBER_DIGITS:
                    raise TarHeaderError("a GNU sparse map line is not a number")
                block: bytes = fileobj.read(tarfile.BLOCKSIZE)
                if len(block) < tarfile.BLOCKSIZE:
                    raise TarHeaderError("the archive ends inside a GNU sparse map")
                data, pos = data[pos:] + block, 0
                continue
            value = _number(data[pos:newline], "a GNU sparse map line")
            pos = newline + 1
            if count is None:
                self._add_sparse(archive, value)
                count = value
            else:
                numbers.append(value)
        following.offset_data = fileobj.tell()
        following.sparse = list(zip(numbers[::2], numbers[1::2], strict=False))


class GuardedTarFile(tarfile.TarFile):
    """A :class:`tarfile.TarFile` that reads headers with :class:`GuardedTarInfo`."""

    tarinfo = GuardedTarInfo


def open_tar_stream(fileobj: IO[bytes] | Any) -> tarfile.TarFile:
    """Open a non-seekable, uncompressed tar stream for reading with the guarded header parser."""
    archive: tarfile.TarFile = GuardedTarFile.open(
        fileobj=fileobj, mode="r|", tarinfo=GuardedTarInfo
    )
    return archive
