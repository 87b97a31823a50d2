"""Bounded decompression of gzip and zstd streams that pivoter did not produce.

A decompressor's work is driven by its input, and output-side guards (a size cap, a compression
ratio) see only what comes out. Input that decompresses to nothing slips past them all: Python's
``gzip.GzipFile`` reads a header's name and comment one byte per call and loops over empty members
inside one ``read()`` that never returns to its caller, so a gzip whose FNAME never ends, or an
endless run of empty members, kept an unpack busy for hours; zstd skips skippable frames and empty
frames the same way, and a frame header may ask for a window of gigabytes. This reader bounds the
input side, where the data enters, for both formats:

- **Input without output.** Every compressed byte consumed counts (headers, FEXTRA/FNAME/FCOMMENT,
  zero padding, empty members, empty and skippable zstd frames): the input may exceed the output it
  decompressed to by at most ``max_overhead_bytes`` plus ``overhead_fraction`` of that output.
  Real streams stay far below (deflate and zstd add a few bytes per 64 KiB of incompressible data;
  a multi-member gzip adds about 20 bytes per member). With the caller's cap on the output this
  also caps the input.
- **Members.** A gzip stream may hold at most ``max_members`` members (each costs a Python step).
- **Windows.** A zstd frame may ask for a window of at most ``max_window_bytes``.
- **Time.** A deadline (a :class:`resolver.net.Budget`) is checked before every read of the source
  and between gzip members, so a slow source or a stream of tiny frames ends at the deadline.
- **Memory.** One read returns at most ``chunk`` bytes, and at most one chunk of input is held.

Every refusal is a :class:`DecompressError`, one line. gzip is decoded by zlib (headers, CRC and
length checked in C) one member at a time; zstd by :mod:`zstandard`'s stream reader, which pulls
its input through the same counting intake. Users: :mod:`provisioners.unpack` (image layers, http
tarballs); it lives in ``resolver`` so that the catalog clients can share it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Literal, Protocol

import zstandard

from resolver.net import Budget

__all__ = [
    "CHUNK",
    "BoundedDecompressor",
    "CorruptStreamError",
    "DecompressDeadlineError",
    "DecompressError",
    "DecompressLimitError",
    "DecompressLimits",
    "Format",
    "Readable",
    "TruncatedStreamError",
]

CHUNK = 1 << 16
"""Most bytes one read returns, and the size of each read of the compressed source."""
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # gzip framing only: zlib parses and checks header and trailer

Format = Literal["gzip", "zstd"]


class Readable(Protocol):
    """A binary stream with ``read`` (a file, a response, another reader)."""

    def read(self, size: int = -1, /) -> bytes: ...


class DecompressError(Exception):
    """A compressed stream was refused; the message is one line."""


class CorruptStreamError(DecompressError):
    """The stream is not valid gzip/zstd: a bad header, checksum or block, or trailing data."""


class TruncatedStreamError(CorruptStreamError):
    """The stream ended inside a gzip member (a dropped connection, a cut file)."""


class DecompressLimitError(DecompressError):
    """The stream is beyond a limit: input without output, too many members, too large a window."""


class DecompressDeadlineError(DecompressLimitError):
    """Decompressing took longer than the deadline."""


@dataclass(frozen=True)
class DecompressLimits:
    """What one compressed stream may cost beyond its output (see the module docstring)."""

    max_overhead_bytes: int = 1 << 20
    """Compressed bytes that may decompress to nothing, besides :attr:`overhead_fraction`."""
    overhead_fraction: float = 0.25
    """Compressed bytes allowed beyond the output, per byte of output (eStargz, one gzip member
    per file, needs about 1/12; a zstd:chunked table of contents less than that)."""
    max_members: int = 250_000
    """gzip members per stream (BGZF writes one per 64 KiB, eStargz one or two per file)."""
    max_window_bytes: int = 1 << 27
    """Largest zstd window (128 MiB, what ``zstd`` decodes without ``--memory``)."""


class _Intake:
    """The compressed source as the decompressors see it: counted, checked, one chunk a read."""

    def __init__(self, owner: BoundedDecompressor) -> None:
        self._owner = owner

    def read(self, size: int = -1, /) -> bytes:
        owner = self._owner
        owner.check_deadline()
        data = owner.source.read(size if 0 < size <= owner.chunk else owner.chunk)
        owner.consumed += len(data)
        owner.check_overhead()
        return data


class BoundedDecompressor:
    """Reads the decompressed bytes of a gzip or zstd ``source`` within ``limits``.

    ``read(size)`` returns at most ``min(size, chunk)`` bytes (fewer is not the end; ``b""`` is);
    ``consumed``, ``produced`` (decoded so far, at most one chunk ahead of what ``read`` returned)
    and ``members`` say how far it got.
    """

    def __init__(
        self,
        source: Readable,
        fmt: Format,
        limits: DecompressLimits | None = None,
        *,
        deadline: Budget | None = None,
        chunk: int = CHUNK,
    ) -> None:
        self.source = source
        self.format: Format = fmt
        self.limits = limits or DecompressLimits()
        self.deadline = deadline
        self.chunk = max(chunk, 1)
        self.consumed = 0
        """Compressed bytes read from the source."""
        self.produced = 0
        """Decompressed bytes decoded (returned, or held for the next reads)."""
        self.members = 0
        """gzip members started (zstd frames are not counted: libzstd walks them in C)."""
        self._intake = _Intake(self)
        self._pending = b""
        self._held = b""
        """Decoded bytes not yet returned (from ``_held_at`` on)."""
        self._held_at = 0
        self._inflate: zlib._Decompress | None = None
        self._member_output = 0
        self._zstd: zstandard.ZstdDecompressionReader | None = None
        if fmt == "zstd":
            self._zstd = zstandard.ZstdDecompressor(
                max_window_size=self.limits.max_window_bytes
            ).stream_reader(
                self._intake,  # type: ignore[arg-type]  # any object with read()
                read_size=self.chunk,
                read_across_frames=True,
                closefd=False,
            )

    # -- limits --------------------------------------------------------------------------------

    def check_deadline(self) -> None:
        """Raise :class:`DecompressDeadlineError` once the deadline has passed."""
        if self.deadline is not None and self.deadline.remaining() <= 0:
            raise DecompressDeadlineError(
                f"decompressing the {self.format} stream passed its {self.deadline.deadline:g}s "
                f"deadline after {self.consumed} compressed bytes"
            )

    def check_overhead(self) -> None:
        """Raise :class:`DecompressLimitError` when too much input has produced no output."""
        limits = self.limits
        allowed = limits.max_overhead_bytes + int(self.produced * limits.overhead_fraction)
        if self.consumed - self.produced > allowed:
            raise DecompressLimitError(
                f"the {self.format} stream consumed {self.consumed} compressed bytes for "
                f"{self.produced} bytes of content: more than {allowed} bytes of headers, "
                "padding, empty members or skipped frames (a stream without end?)"
            )

    # -- reading -------------------------------------------------------------------------------

    def read(self, size: int = -1, /) -> bytes:
        """Up to ``size`` decompressed bytes (at most one chunk); all the rest when negative."""
        if size < 0:
            parts = []
            while piece := self.read(self.chunk):
                parts.append(piece)
            return b"".join(parts)
        if size == 0:
            return b""
        if self._held_at >= len(self._held):
            # Decode a whole chunk at a time and hand it out in the caller's (often small) pieces:
            # fewer decoder calls, each copying less of the pending input.
            self._held = self._read_zstd() if self._zstd is not None else self._read_gzip()
            self._held_at = 0
            self.produced += len(self._held)
        start = self._held_at
        self._held_at = min(start + size, len(self._held))
        if start == 0 and self._held_at == len(self._held):
            return self._held
        return self._held[start : self._held_at]

    def _read_zstd(self) -> bytes:
        assert self._zstd is not None
        self.check_deadline()
        try:
            return self._zstd.read(self.chunk)
        except zstandard.ZstdError as err:
            if "too much memory" in str(err):
                raise DecompressLimitError(
                    f"a zstd frame asks for a window larger than {self.limits.max_window_bytes} "
                    "bytes (max_window_bytes); recompress it with a smaller window"
                ) from None
            raise CorruptStreamError(f"the zstd stream is corrupt: {err}") from None

    def _read_gzip(self) -> bytes:
        """One member after another, each decoded by zlib; empty members loop here, checked."""
        while True:
            self.check_deadline()
            if self._inflate is None:
                if not self._pending:
                    self._pending = self._intake.read(self.chunk)
                    if not self._pending:
                        return b""  # the end, between members
                if self.members:
                    # Zero padding after a member is allowed, as gzip(1) and GzipFile allow it.
                    rest = self._pending.lstrip(b"\0")
                    self._pending = rest
                    if not rest:
                        continue
                self._start_member()
            inflate = self._inflate
            assert inflate is not None
            if not self._pending:
                self._pending = self._intake.read(self.chunk)
                if not self._pending:
                    raise TruncatedStreamError(
                        f"the gzip stream ends inside member {self.members} (truncated)"
                    )
            try:
                out = inflate.decompress(self._pending, self.chunk)
            except zlib.error as err:
                raise CorruptStreamError(self._gzip_error(err)) from None
            if inflate.eof:
                self._pending = inflate.unused_data
                self._inflate = None
            else:
                self._pending = inflate.unconsumed_tail
            if out:
                self._member_output += len(out)
                return out

    def _start_member(self) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise DecompressLimitError(
                f"the gzip stream has more than {self.limits.max_members} members (max_members)"
            )
        self._inflate = zlib.decompressobj(_GZIP_WBITS)
        self._member_output = 0

    def _gzip_error(self, err: zlib.error) -> str:
        if self._member_output == 0 and self.members > 1:
            return (
                f"the gzip stream has data after member {self.members - 1} that is not gzip: {err}"
            )
        if self._member_output == 0 and self.members == 1 and self.produced == 0:
            return f"not a gzip stream: {err}"
        return f"gzip member {self.members} is corrupt: {err}"
