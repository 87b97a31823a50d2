"""Hardened extraction of untrusted tar streams into a bundle root directory.

Every source goes through here: the image source applies each layer in order (with OCI
whiteouts), the http source applies its tarball, the git source applies ``git archive`` output.
Nothing outside the root is ever written or followed: paths with ``..`` or a leading ``/`` are
refused, links must stay inside the root, device files and FIFOs are refused, parents are never
followed through symlinks, and limits on total size, entry count, compression ratio and the
decompressed stream stop archive bombs (including a 10 GB sparse file) before they are written.
gzip and zstd are read by :class:`resolver.decompress.BoundedDecompressor`, which bounds the input
side (compressed bytes that decompress to nothing, gzip members, zstd windows) and checks the
unpack's deadline while it decompresses; every read of the tar stream checks it too. Headers are
parsed by :mod:`provisioners.tarheaders` (linear time and bounded, whatever the Python
version: CVE-2024-6232), and limits on directory depth, name and path length keep every later
tree walk (store digest, garbage collection, formats) within what the system and Python handle.
"""

from __future__ import annotations

import os
import stat
import tarfile
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import IO, Protocol

from provisioners.errors import ProvisionerError
from provisioners.fstree import remove_tree
from provisioners.tarheaders import TarHeaderError, open_tar_stream
from resolver.decompress import (
    BoundedDecompressor,
    CorruptStreamError,
    DecompressDeadlineError,
    DecompressError,
    DecompressLimits,
)
from resolver.net import Budget

_CHUNK = 1 << 20
_WHITEOUT_PREFIX = ".wh."
_OPAQUE_MARKER = ".wh..wh..opq"
# Tar headers, PAX records and padding add bytes to the stream beyond the file contents; this
# much per entry (plus a fixed slack) is allowed before the stream itself counts as a bomb.
_STREAM_OVERHEAD_PER_ENTRY = 3 * 512
_STREAM_OVERHEAD_FIXED = 1 << 20
# Linux limits: one path component (NAME_MAX) and a whole path (PATH_MAX, with its NUL).
_NAME_MAX = 255
_PATH_MAX = 4095
# The store moves an unpacked tree from staging/stage-*/tree to objects/sha256-<64 hex>: the
# absolute path of every entry must still fit after that move, with room to spare.
_PUBLISH_MARGIN = 128
_SHOWN_PATH = 120
_MAX_LINK_HOPS = 40  # Linux follows at most 40 symlinks in one path lookup


class UnpackError(ProvisionerError):
    """The archive is unsafe or too large to unpack; nothing outside the root was written."""


class UnsafePathError(UnpackError):
    """An entry's path is absolute or climbs out of the root with ``..``."""


class UnsafeLinkError(UnpackError):
    """A symlink or hardlink points outside the root, or a path goes through a symlink."""


class ForbiddenEntryError(UnpackError):
    """An entry is a device file, FIFO or other type that a bundle may not contain."""


class LimitExceededError(UnpackError):
    """The archive exceeds a configured limit."""


class SizeLimitError(LimitExceededError):
    """The unpacked content (or one entry, or the raw stream) is larger than allowed."""


class FileCountLimitError(LimitExceededError):
    """The archive has more entries than allowed."""


class CompressionRatioError(LimitExceededError):
    """The archive expands far more than real content does (a compression bomb)."""


class DepthLimitError(LimitExceededError):
    """An entry is nested more directories deep than allowed."""


class CompressedStreamLimitError(LimitExceededError):
    """The compressed stream costs more than its content: input that decompresses to nothing
    (endless headers, empty members, padding, skipped frames), too many gzip members, or a zstd
    window larger than allowed."""


class TimeLimitError(LimitExceededError):
    """The unpack (decompression included) took longer than its deadline."""


class CorruptArchiveError(UnpackError):
    """The stream is not a readable tar archive (or not in the announced compression)."""


class UnsafeHeaderError(CorruptArchiveError):
    """A tar header is malformed or beyond the limits of :mod:`provisioners.tarheaders`."""


class Compression(Enum):
    """How a tar stream is compressed."""

    NONE = "none"
    GZIP = "gzip"
    ZSTD = "zstd"
    AUTO = "auto"


@dataclass(frozen=True)
class UnpackLimits:
    """Limits applied to one unpack (all layers of an image count together)."""

    max_total_bytes: int = 1 << 30
    """Sum of regular file sizes, default 1 GiB (a 100 MB bundle fits with room to spare)."""
    max_entries: int = 100_000
    """Files, directories, links and whiteouts together."""
    max_compression_ratio: float = 200.0
    """Uncompressed/compressed bytes; real YAML compresses about 10:1, zero-filled bombs 1000:1."""
    ratio_grace_bytes: int = 16 << 20
    """The ratio is only enforced past this many uncompressed bytes (tiny archives vary wildly)."""
    max_path_bytes: int = 4096
    """Longest entry path (and symlink target) accepted; the absolute path on disk must also fit
    the system's 4095 bytes after the store moves the tree into place."""
    max_depth: int = 128
    """Most directories an entry may be nested in (real bundles: under 10; 1000 breaks walkers)."""
    max_seconds: float = 600.0
    """Longest one unpack (all layers, decompression included) may take when the caller passes
    no deadline of its own (sources pass their fetch's)."""
    max_gzip_members: int = 250_000
    """gzip members per stream (legal and used: BGZF writes one per 64 KiB, eStargz one or two per
    file); an endless run of empty members is refused long before by the input-overhead bound."""
    max_window_bytes: int = 1 << 27
    """Largest zstd window a stream may ask for (128 MiB, what ``zstd`` decodes by default)."""


@dataclass
class UnpackStats:
    """What an unpack wrote: counts and the sum of regular file sizes."""

    files: int = 0
    directories: int = 0
    symlinks: int = 0
    hardlinks: int = 0
    whiteouts: int = 0
    bytes: int = 0
    entries: int = 0


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class _GuardedReader:
    """Enforces the deadline, the compression ratio and the decompressed-stream cap while tarfile
    reads; turns the decompressor's refusals into unpack errors."""

    def __init__(
        self,
        inner: _Readable,
        compressed: BoundedDecompressor | None,
        limits: UnpackLimits,
        cap: int,
        deadline: Budget,
    ) -> None:
        self._inner = inner
        self._compressed = compressed
        self._limits = limits
        self._cap = cap
        self._deadline = deadline
        self.count = 0

    def read(self, size: int = -1, /) -> bytes:
        if self._deadline.remaining() <= 0:
            raise TimeLimitError(
                f"unpacking passed its {self._deadline.deadline:g}s deadline after "
                f"{self.count} bytes of the tar stream"
            )
        try:
            data = self._inner.read(size)
        except DecompressDeadlineError as exc:
            raise TimeLimitError(str(exc)) from None
        except CorruptStreamError as exc:
            raise CorruptArchiveError(f"cannot decompress the archive: {exc}") from None
        except DecompressError as exc:
            raise CompressedStreamLimitError(f"{exc}; this is not bundle content") from None
        except (OSError, EOFError) as exc:
            raise CorruptArchiveError(f"cannot read the archive: {exc}") from exc
        self.count += len(data)
        if self.count > self._cap:
            raise SizeLimitError(
                f"the archive stream expands beyond {self._cap} bytes, more than the content "
                f"limit allows (max_total_bytes={self._limits.max_total_bytes})"
            )
        if self._compressed is not None and self.count > self._limits.ratio_grace_bytes:
            ratio = self.count / max(self._compressed.consumed, 1)
            if ratio > self._limits.max_compression_ratio:
                raise CompressionRatioError(
                    f"the archive expands {ratio:.0f}:1 (limit "
                    f"{self._limits.max_compression_ratio:.0f}:1); this looks like a "
                    "compression bomb, not bundle content"
                )
        return data


def _detect(head: bytes) -> Compression:
    if head.startswith(b"\x1f\x8b"):
        return Compression.GZIP
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return Compression.ZSTD
    return Compression.NONE


class _PeekReader:
    """Lets AUTO detection look at the first bytes without a seekable stream."""

    def __init__(self, inner: _Readable) -> None:
        self._inner = inner
        self._buffer = b""

    def peek(self, size: int) -> bytes:
        while len(self._buffer) < size:
            more = self._inner.read(size - len(self._buffer))
            if not more:
                break
            self._buffer += more
        return self._buffer[:size]

    def read(self, size: int = -1, /) -> bytes:
        if self._buffer:
            if size < 0 or size >= len(self._buffer):
                data, self._buffer = self._buffer, b""
                if size < 0:
                    return data + self._inner.read()
                return data
            data, self._buffer = self._buffer[:size], self._buffer[size:]
            return data
        return self._inner.read(size)


def _shown(name: str) -> str:
    """A path for a one-line message: quoted, and shortened when long."""
    if len(name) <= _SHOWN_PATH:
        return repr(name)
    return f"{name[: _SHOWN_PATH // 2]!r}...{name[-_SHOWN_PATH // 2 :]!r}"


def _header_error(exc: TarHeaderError) -> UnsafeHeaderError:
    return UnsafeHeaderError(
        f"the tar archive has a header pivoter refuses: {exc}; rebuild the bundle with a "
        "standard tar tool"
    )


def _safe_parts(name: str, what: str) -> tuple[str, ...]:
    """Split an archive path into components, refusing absolute and climbing paths."""
    if name.startswith("/"):
        raise UnsafePathError(f"{what} {name!r} is an absolute path; bundle paths must be relative")
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        raise UnsafePathError(f"{what} {name!r} contains '..' and would escape the bundle root")
    return parts


def checked_path(
    name: str, limits: UnpackLimits, what: str = "entry", *, root_bytes: int = 0
) -> tuple[str, ...]:
    """Split a bundle path into components, refusing what the limits or the filesystem do not allow.

    Refused: absolute and climbing paths, NUL bytes, more than ``max_path_bytes``, more than
    ``max_depth`` components, a component over 255 bytes, and a path that would not fit the
    system's 4095 bytes below a root of ``root_bytes`` bytes once the store moves it into place.
    Every writer of bundle trees calls this (the unpacker, the configMaps source).
    """
    shown = _shown(name)
    if "\0" in name:
        raise UnsafePathError(f"{what} {shown} contains a NUL byte")
    size = len(os.fsencode(name))
    if size > limits.max_path_bytes:
        raise UnsafePathError(
            f"{what} path {shown} is {size} bytes, more than max_path_bytes="
            f"{limits.max_path_bytes}; shorten the paths in the bundle"
        )
    parts = _safe_parts(name, what)
    if len(parts) > limits.max_depth:
        raise DepthLimitError(
            f"{what} {shown} is nested {len(parts) - 1} directories deep, more than "
            f"max_depth={limits.max_depth}; flatten the bundle's directory tree"
        )
    for part in parts:
        if len(os.fsencode(part)) > _NAME_MAX:
            raise UnsafePathError(
                f"{what} {shown} has a name of more than {_NAME_MAX} bytes; shorten it"
            )
    on_disk = root_bytes + 1 + len(os.fsencode("/".join(parts))) + _PUBLISH_MARGIN
    if on_disk > _PATH_MAX:
        raise UnsafePathError(
            f"{what} {shown} is too long to store: with the store directory it exceeds the "
            f"system's {_PATH_MAX}-byte path limit; shorten the paths in the bundle"
        )
    return parts


def _resolves_inside(root: Path, parts: tuple[str, ...]) -> bool:
    """Whether ``root/parts`` resolves inside ``root``, following links on disk as the kernel would.

    Iterative, unlike ``os.path.realpath`` (which recurses once per link: a chain of 1000 links
    raised RecursionError, and resolving every link of a long chain took quadratic time). More than
    40 links in one resolution (the kernel's own limit, ELOOP) is refused.
    """
    pending = list(reversed(parts))
    resolved: list[str] = []
    hops = 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                return False
            resolved.pop()
            continue
        candidate = root.joinpath(*resolved, part)
        try:
            info = os.lstat(candidate)
        except OSError:
            resolved.append(part)  # dangling from here on: the rest resolves lexically
            continue
        if not stat.S_ISLNK(info.st_mode):
            resolved.append(part)
            continue
        hops += 1
        if hops > _MAX_LINK_HOPS:
            raise UnsafeLinkError(
                f"symlink {_shown('/'.join(parts))} goes through more than {_MAX_LINK_HOPS} "
                "links; the system would not follow it (too many levels of symbolic links)"
            )
        target = os.readlink(candidate)
        if target.startswith("/"):
            return False
        pending.extend(reversed(target.split("/")))
    return True


def _within(link_dir: tuple[str, ...], target: str) -> bool:
    """Lexically resolve a relative symlink target from its directory; False if it climbs out."""
    depth = list(link_dir)
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not depth:
                return False
            depth.pop()
        else:
            depth.append(part)
    return True


@dataclass
class Unpacker:
    """Applies one or more tar streams (image layers, in order) to ``root`` under ``limits``.

    Call :meth:`apply` once per archive, then :meth:`finish`, which re-checks every symlink
    against the final tree and returns the stats.
    """

    root: Path
    limits: UnpackLimits = field(default_factory=UnpackLimits)
    stats: UnpackStats = field(default_factory=UnpackStats)
    _symlinks: list[tuple[str, ...]] = field(default_factory=list)
    _layer_paths: set[tuple[str, ...]] = field(default_factory=set)
    deadline: Budget | None = None
    """When the whole unpack must end (e.g. the fetch's budget, shared with the downloads); by
    default ``limits.max_seconds`` from now."""
    _root_bytes: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.root = self.root.resolve()
        self._root_bytes = len(os.fsencode(self.root))
        if self.deadline is None:
            seconds = self.limits.max_seconds
            self.deadline = Budget(seconds, stall=seconds, peer="the archive")

    def apply(
        self,
        stream: _Readable,
        compression: Compression = Compression.AUTO,
        *,
        whiteouts: bool = False,
    ) -> None:
        """Extract one tar stream; ``whiteouts`` applies OCI ``.wh.`` files and opaque dirs."""
        self._layer_paths = set()
        source: _Readable = stream
        if compression is Compression.AUTO:
            peek = _PeekReader(stream)
            compression = _detect(peek.peek(4))
            source = peek
        limits = self.limits
        assert self.deadline is not None  # set by __post_init__
        decompressor = None
        if compression in (Compression.GZIP, Compression.ZSTD):
            decompressor = BoundedDecompressor(
                source,
                "gzip" if compression is Compression.GZIP else "zstd",
                DecompressLimits(
                    max_members=limits.max_gzip_members, max_window_bytes=limits.max_window_bytes
                ),
                deadline=self.deadline,
            )
        cap = (
            limits.max_total_bytes
            + limits.max_entries * _STREAM_OVERHEAD_PER_ENTRY
            + _STREAM_OVERHEAD_FIXED
        )
        guarded = _GuardedReader(decompressor or source, decompressor, limits, cap, self.deadline)
        try:
            archive = open_tar_stream(guarded)
        except TarHeaderError as exc:
            raise _header_error(exc) from None
        except tarfile.TarError as exc:
            raise CorruptArchiveError(
                f"not a tar archive ({compression.value} compression): {exc}"
            ) from exc
        try:
            for member in archive:
                self._entry(archive, member, whiteouts=whiteouts)
                member.pax_headers = {}  # entries stay listed in the archive: keep them small
        except TarHeaderError as exc:
            raise _header_error(exc) from None
        except (tarfile.TarError, EOFError) as exc:
            raise CorruptArchiveError(f"the tar archive is truncated or corrupt: {exc}") from exc
        finally:
            archive.close()

    def finish(self) -> UnpackStats:
        """Re-check every symlink against the final tree (following chains); return stats."""
        for parts in self._symlinks:
            link = self.root.joinpath(*parts)
            if not link.is_symlink():
                continue  # removed by a later whiteout or replaced
            if not _resolves_inside(self.root, parts):
                raise UnsafeLinkError(
                    f"symlink {'/'.join(parts)!r} -> {os.readlink(link)!r} resolves outside "
                    "the bundle root (through another link)"
                )
        return self.stats

    # -- one entry ---------------------------------------------------------------------------

    def _entry(self, archive: tarfile.TarFile, member: tarfile.TarInfo, *, whiteouts: bool) -> None:
        limits, stats = self.limits, self.stats
        stats.entries += 1
        if stats.entries > limits.max_entries:
            raise FileCountLimitError(
                f"the archive has more than {limits.max_entries} entries (max_entries)"
            )
        parts = self._checked_parts(member.name, "entry")
        if not parts:
            return  # the root directory itself ("./")
        base = parts[-1]
        if whiteouts and base.startswith(_WHITEOUT_PREFIX):
            stats.whiteouts += 1
            self._whiteout(parts)
            return
        if member.isreg() or member.type == tarfile.GNUTYPE_SPARSE:
            self._file(archive, member, parts)
        elif member.isdir():
            self._directory(parts)
            stats.directories += 1
        elif member.issym():
            self._symlink(member, parts)
        elif member.islnk():
            self._hardlink(member, parts)
        else:
            kind = {
                tarfile.CHRTYPE: "a character device",
                tarfile.BLKTYPE: "a block device",
                tarfile.FIFOTYPE: "a FIFO",
            }.get(member.type, f"of unsupported tar type {member.type!r}")
            raise ForbiddenEntryError(
                f"entry {member.name!r} is {kind}; bundles may only contain regular files, "
                "directories and links that stay inside the bundle"
            )
        self._layer_paths.add(parts)

    def _checked_parts(self, name: str, what: str) -> tuple[str, ...]:
        return checked_path(name, self.limits, what, root_bytes=self._root_bytes)

    def _parent(self, parts: tuple[str, ...]) -> Path:
        """Create the parent directories of ``parts``, never following a symlink."""
        current = self.root
        for index, part in enumerate(parts[:-1]):
            current = current / part
            try:
                info = os.lstat(current)
            except FileNotFoundError:
                os.mkdir(current, 0o755)
                self._layer_paths.add(parts[: index + 1])
                continue
            if stat.S_ISLNK(info.st_mode):
                raise UnsafeLinkError(
                    f"entry {'/'.join(parts)!r} goes through the symlink "
                    f"{'/'.join(parts[: index + 1])!r}; writing through links is refused"
                )
            if not stat.S_ISDIR(info.st_mode):
                # A later layer may turn a file into a directory.
                os.unlink(current)
                os.mkdir(current, 0o755)
        return current

    def _clear(self, path: Path) -> None:
        """Remove whatever is at ``path`` (a later entry replaces it), without following links."""
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(info.st_mode):
            remove_tree(path)
        else:
            os.unlink(path)

    def _file(
        self, archive: tarfile.TarFile, member: tarfile.TarInfo, parts: tuple[str, ...]
    ) -> None:
        limits, stats = self.limits, self.stats
        if stats.bytes + member.size > limits.max_total_bytes:
            raise SizeLimitError(
                f"entry {member.name!r} declares {member.size} bytes; with the "
                f"{stats.bytes} bytes already unpacked that exceeds max_total_bytes="
                f"{limits.max_total_bytes}"
            )
        path = self._parent(parts) / parts[-1]
        self._clear(path)
        source = archive.extractfile(member)
        if source is None:  # pragma: no cover - regular members always have a file object
            raise CorruptArchiveError(f"entry {member.name!r} has no data")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        written = 0
        with os.fdopen(fd, "wb") as sink:
            while chunk := source.read(_CHUNK):
                written += len(chunk)
                if stats.bytes + written > limits.max_total_bytes:
                    raise SizeLimitError(
                        f"entry {member.name!r} exceeds max_total_bytes={limits.max_total_bytes}"
                    )
                sink.write(chunk)
        # Modes are normalized (no setuid, no group/world write) so trees digest stably.
        os.chmod(path, 0o755 if member.mode & 0o111 else 0o644)
        stats.bytes += written
        stats.files += 1

    def _directory(self, parts: tuple[str, ...]) -> None:
        path = self._parent(parts) / parts[-1]
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            os.mkdir(path, 0o755)
            return
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(path)
            os.mkdir(path, 0o755)

    def _symlink(self, member: tarfile.TarInfo, parts: tuple[str, ...]) -> None:
        target = member.linkname
        if "\0" in target or len(os.fsencode(target)) > self.limits.max_path_bytes:
            raise UnsafeLinkError(
                f"symlink {_shown(member.name)} has a target that contains a NUL byte or is longer "
                f"than max_path_bytes={self.limits.max_path_bytes}"
            )
        if target.startswith("/"):
            raise UnsafeLinkError(
                f"symlink {member.name!r} -> {target!r} is absolute; bundle links must be "
                "relative and stay inside the bundle"
            )
        if not target or not _within(parts[:-1], target):
            raise UnsafeLinkError(
                f"symlink {member.name!r} -> {target!r} points outside the bundle root"
            )
        path = self._parent(parts) / parts[-1]
        self._clear(path)
        os.symlink(target, path)
        self._symlinks.append(parts)
        self.stats.symlinks += 1

    def _hardlink(self, member: tarfile.TarInfo, parts: tuple[str, ...]) -> None:
        try:
            target_parts = self._checked_parts(member.linkname, f"hardlink {member.name!r} target")
        except UnsafePathError as exc:
            raise UnsafeLinkError(f"{exc}; hardlinks must point inside the bundle") from None
        if not target_parts:
            raise UnsafeLinkError(f"hardlink {member.name!r} points at the bundle root")
        # The target's parents must be real directories, and the target a regular file.
        target_parent = self.root
        for index, part in enumerate(target_parts[:-1]):
            target_parent = target_parent / part
            info = os.lstat(target_parent) if target_parent.exists() else None
            if info is None or not stat.S_ISDIR(info.st_mode):
                raise UnsafeLinkError(
                    f"hardlink {member.name!r} -> {member.linkname!r}: "
                    f"{'/'.join(target_parts[: index + 1])!r} is not a directory in the bundle"
                )
        target = target_parent / target_parts[-1]
        try:
            target_info = os.lstat(target)
        except FileNotFoundError:
            raise UnsafeLinkError(
                f"hardlink {member.name!r} -> {member.linkname!r}: the target is not in the bundle"
            ) from None
        if not stat.S_ISREG(target_info.st_mode):
            raise UnsafeLinkError(
                f"hardlink {member.name!r} -> {member.linkname!r}: the target is not a regular file"
            )
        path = self._parent(parts) / parts[-1]
        if path == target:
            return
        self._clear(path)
        os.link(target, path, follow_symlinks=False)
        self.stats.hardlinks += 1

    def _whiteout(self, parts: tuple[str, ...]) -> None:
        parent = self._parent(parts)
        base = parts[-1]
        if base == _OPAQUE_MARKER:
            # Opaque: hide everything lower layers put in this directory, keep this layer's.
            parent_parts = parts[:-1]
            for child in list(parent.iterdir()) if parent.is_dir() else []:
                if (*parent_parts, child.name) not in self._layer_paths:
                    self._clear(child)
            return
        name = base[len(_WHITEOUT_PREFIX) :]
        if name in ("", ".", ".."):
            raise UnsafePathError(f"whiteout {'/'.join(parts)!r} names no entry")
        self._clear(parent / name)


def unpack_tar(
    stream: IO[bytes] | _Readable,
    root: Path,
    limits: UnpackLimits | None = None,
    compression: Compression = Compression.AUTO,
) -> UnpackStats:
    """Extract a single (plain, gzip or zstd) tar stream into ``root`` safely."""
    unpacker = Unpacker(root, limits or UnpackLimits())
    unpacker.apply(stream, compression)
    return unpacker.finish()
