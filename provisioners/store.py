"""The content store: unpacked bundles kept on disk, addressed by the digest of their tree.

The unpack path fetches into :meth:`BundleStore.staging`, then :meth:`BundleStore.publish` moves
the tree into place with one ``rename`` (readers never see half a bundle) under the key
``sha256:<hex>`` of the normalized tree (:func:`tree_digest`), so identical content is stored
once. The cluster side keeps the set of keys its Bundles reference and calls
:meth:`BundleStore.gc` with it (mark-and-sweep), and serves a bundle to other provisioners with
:meth:`BundleStore.tar_gz` behind an authenticated endpoint. Every walk and removal of a tree is
iterative and never follows links (:mod:`provisioners.fstree`), so a tree of any depth is removed;
garbage collection logs what it cannot remove and goes on with the rest.

What the store digests and serves is only what the unpacker could have admitted (its
:class:`~provisioners.unpack.UnpackLimits`): directories, regular files and links (served as
links, never followed), at most ``max_depth`` directories deep, ``max_entries`` entries and
``max_total_bytes`` of files. Anything else in a stored tree (a FIFO, a device or a socket planted
there, a tree 3,000 directories deep, an object directory that is itself a link) is refused with a
one-line :class:`StoreError` before a byte is served. Every file is opened through
:mod:`resolver.safefiles` (non-blocking, no link followed, the descriptor checked to be the
regular file that was listed) and read with at most its listed size, so a file swapped or grown
meanwhile can neither block the stream nor make it endless.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
import tarfile
import tempfile
import threading
import time
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from provisioners.errors import ProvisionerError
from provisioners.fstree import TreeEntry, remove_tree, walk_tree
from provisioners.unpack import UnpackLimits
from resolver import safefiles
from resolver.safefiles import RefusedFile, shown

log = logging.getLogger(__name__)

_KEY = re.compile(r"^sha256:([0-9a-f]{64})$")
_DIRNAME = re.compile(r"^sha256-([0-9a-f]{64})$")
_CHUNK = 1 << 20
_FLUSH = 256 << 10


class StoreError(ProvisionerError):
    """A store operation failed (unknown key, unreadable tree)."""


class BundleNotStoredError(StoreError):
    """No bundle with that key is in the store (never published, or garbage-collected)."""


def _entries(root: Path, limits: UnpackLimits) -> list[TreeEntry]:
    """Every entry of a stored tree, checked against ``limits`` before anything is read.

    Raises :class:`StoreError` (one line naming the entry) for an entry that is neither a
    directory, a regular file nor a link, a tree deeper than ``max_depth`` or with more than
    ``max_entries`` entries, files together over ``max_total_bytes``, a root that is a link.
    """
    entries: list[TreeEntry] = []
    total = 0
    try:
        for entry in walk_tree(root, max_depth=limits.max_depth, max_entries=limits.max_entries):
            mode = entry.info.st_mode
            if stat.S_ISREG(mode):
                total += entry.info.st_size
                if total > limits.max_total_bytes:
                    raise StoreError(
                        f"{shown(entry.rel)}: the tree holds more than "
                        f"{limits.max_total_bytes:,} bytes of files, more than a bundle may"
                    )
            elif not stat.S_ISDIR(mode) and not stat.S_ISLNK(mode):
                raise StoreError(
                    f"{shown(entry.rel)} is {safefiles.kind(mode)}: neither a file, a directory "
                    "nor a symlink, so not bundle content"
                )
            entries.append(entry)
    except RefusedFile as err:
        raise StoreError(str(err)) from None
    return entries


def _file_chunks(real_root: str, entry: TreeEntry) -> Iterator[bytes]:
    """The content of a listed regular file, opened through :mod:`resolver.safefiles`.

    It must still be the file that was listed (device and inode) and is read with at most its
    listed size: :class:`StoreError` when it is something else now or changed size.
    """
    size = entry.info.st_size
    read = 0
    try:
        with safefiles.open_file(
            real_root,
            entry.path,
            max_bytes=size,
            what="stored file",
            tree="bundle",
            walked=True,
            expect=(entry.info.st_dev, entry.info.st_ino),
        ) as source:
            while chunk := source.read(_CHUNK):
                read += len(chunk)
                yield chunk
    except RefusedFile as err:
        raise StoreError(f"{shown(entry.rel)}: {err}") from None
    if read != size:
        raise StoreError(f"{shown(entry.rel)} changed size while being read")


def _link(entry: TreeEntry) -> str:
    """A link's target as written (never followed)."""
    try:
        return os.readlink(entry.path)
    except OSError as err:
        raise StoreError(f"{shown(entry.rel)}: cannot read the link: {err.strerror}") from None


def tree_digest(root: Path, limits: UnpackLimits | None = None) -> str:
    """Digest a bundle tree by paths, types, exec bits, contents and link targets (not times).

    Raises :class:`StoreError` for a tree the store does not keep (see :func:`_entries`).
    """
    entries = _entries(root, limits or UnpackLimits())
    real_root = safefiles.real_path(root)
    digest = hashlib.sha256()
    for entry in entries:
        name = os.fsencode(entry.rel)
        mode = entry.info.st_mode
        if stat.S_ISDIR(mode):
            digest.update(b"D\0" + name + b"\0")
        elif stat.S_ISLNK(mode):
            digest.update(b"L\0" + name + b"\0" + os.fsencode(_link(entry)) + b"\0")
        else:
            content = hashlib.sha256()
            for chunk in _file_chunks(real_root, entry):
                content.update(chunk)
            bits = b"755" if mode & 0o111 else b"644"
            digest.update(
                b"F\0" + name + b"\0" + bits + b"\0" + content.hexdigest().encode() + b"\0"
            )
    return f"sha256:{digest.hexdigest()}"


@dataclass(frozen=True)
class StoredBundle:
    """A published bundle: its key and where its tree is."""

    key: str
    path: Path


class BundleStore:
    """A directory of content-addressed bundle trees with atomic publish and mark-and-sweep GC."""

    def __init__(self, root: Path, limits: UnpackLimits | None = None) -> None:
        self.root = root
        self.limits = limits or UnpackLimits()
        """What a stored tree may hold (the unpacker's limits): more is refused, not served."""
        self._objects = root / "objects"
        self._staging = root / "staging"
        self._objects.mkdir(parents=True, exist_ok=True)
        self._staging.mkdir(parents=True, exist_ok=True)
        # Publish and GC exclude each other within a process; across processes the GC grace
        # period protects bundles published moments ago but not yet recorded as live.
        self._lock = threading.Lock()

    @staticmethod
    def _dirname(key: str) -> str:
        match = _KEY.match(key)
        if match is None:
            raise StoreError(f"{key!r} is not a store key (expected sha256:<64 hex digits>)")
        return f"sha256-{match.group(1)}"

    @contextmanager
    def staging(self) -> Iterator[Path]:
        """A fresh directory on the store's filesystem to fetch into; removed if not published."""
        path = Path(tempfile.mkdtemp(prefix="stage-", dir=self._staging))
        tree = path / "tree"
        tree.mkdir()
        try:
            yield tree
        finally:
            _remove_quietly(path)

    def publish(self, tree: Path) -> StoredBundle:
        """Move ``tree`` (a staging directory) into the store under its digest and return it."""
        key = tree_digest(tree, self.limits)
        final = self._objects / self._dirname(key)
        with self._lock:
            try:
                os.rename(tree, final)
            except OSError:
                if not final.is_dir():
                    raise
                # The same content is already stored (or another publisher just won the race).
                _remove_quietly(tree)
            # The mtime marks "recently published" for the GC grace period.
            os.utime(final)
        return StoredBundle(key, final)

    def get(self, key: str) -> StoredBundle:
        """Return the stored bundle for ``key`` or raise :class:`BundleNotStoredError`."""
        path = self._objects / self._dirname(key)
        if not path.is_dir():
            raise BundleNotStoredError(f"bundle {key} is not in the store")
        return StoredBundle(key, path)

    def keys(self) -> set[str]:
        """Every key currently stored (entries with other names are not bundles; gc skips them)."""
        return {
            f"sha256:{match.group(1)}"
            for name in os.listdir(self._objects)
            if (match := _DIRNAME.match(name)) is not None
        }

    def gc(self, live: Iterable[str], *, grace_seconds: float = 300.0) -> list[str]:
        """Delete every bundle not in ``live`` and older than the grace period; return their keys.

        Abandoned staging directories older than the grace period are removed too. Each entry is
        handled on its own: one that cannot be removed is logged and skipped, the rest are still
        collected, and a later gc tries it again.
        """
        keep = set(live)
        removed: list[str] = []
        now = time.time()
        with self._lock:
            for key in sorted(self.keys() - keep):
                try:
                    if self._collect(key, now, grace_seconds):
                        removed.append(key)
                except Exception as exc:  # one bad entry must not stop the rest
                    log.warning("content store gc: cannot remove %s (will retry): %s", key, exc)
            for name in sorted(os.listdir(self._staging)):
                if not name.startswith(("stage-", "trash-")):
                    continue
                entry = self._staging / name
                try:
                    if now - os.lstat(entry).st_mtime >= grace_seconds:
                        remove_tree(entry)
                except FileNotFoundError:
                    continue
                except Exception as exc:  # one bad entry must not stop the rest
                    log.warning("content store gc: cannot remove %s (will retry): %s", entry, exc)
        return removed

    def _collect(self, key: str, now: float, grace_seconds: float) -> bool:
        """Remove one unreferenced bundle if it is past the grace period; True if removed."""
        path = self._objects / self._dirname(key)
        try:
            if now - os.lstat(path).st_mtime < grace_seconds:
                return False
        except FileNotFoundError:
            return False
        # Rename first so a reader never sees a half-deleted tree; what the removal leaves
        # behind (logged) is in staging/trash-*, which every gc tries again.
        trash = Path(tempfile.mkdtemp(prefix="trash-", dir=self._staging))
        os.rename(path, trash / "tree")
        try:
            remove_tree(trash)
        except Exception as exc:  # the bundle is already gone from the store
            log.warning("content store gc: %s removed, but not all of its files yet: %s", key, exc)
        return True

    def tar_gz(self, key: str) -> Iterator[bytes]:
        """Stream a stored bundle as a deterministic tar.gz (sorted, zero times and owners).

        The whole tree is listed and checked first, so a tree the store does not serve (see
        :func:`_entries`) raises :class:`StoreError` here, before the first byte; a file that
        changes while it is streamed raises it from the iterator.
        """
        root = self.get(key).path
        return _tar_gz_stream(safefiles.real_path(root), _entries(root, self.limits))


def _remove_quietly(path: Path) -> None:
    """Remove a staging tree; what cannot be removed now is logged and left to the gc."""
    try:
        remove_tree(path)
    except Exception as exc:  # cleanup must not hide the caller's own outcome
        log.warning("content store: cannot remove %s now (gc will retry): %s", path, exc)


def _header(name: str, kind: bytes, size: int = 0, mode: int = 0o644, link: str = "") -> bytes:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size
    info.mode = mode
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.linkname = link
    return info.tobuf(format=tarfile.PAX_FORMAT, encoding="utf-8", errors="surrogateescape")


def _tar_gz_stream(real_root: str, entries: list[TreeEntry]) -> Iterator[bytes]:
    """Write tar records by hand so large files stream in chunks instead of buffering."""
    # Level 1: serving competes with reconciling for the daemon's CPU; YAML still shrinks ~5x.
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: gzip framing, mtime 0
    pending: list[bytes] = []
    size = 0

    def emit(data: bytes) -> Iterator[bytes]:
        nonlocal size
        out = compressor.compress(data)
        if out:
            pending.append(out)
            size += len(out)
        if size >= _FLUSH:
            yield b"".join(pending)
            pending.clear()
            size = 0

    for entry in entries:
        rel, mode = entry.rel, entry.info.st_mode
        if stat.S_ISDIR(mode):
            yield from emit(_header(rel + "/", tarfile.DIRTYPE, mode=0o755))
        elif stat.S_ISLNK(mode):
            yield from emit(_header(rel, tarfile.SYMTYPE, link=_link(entry)))
        else:
            bits = 0o755 if mode & 0o111 else 0o644
            yield from emit(_header(rel, tarfile.REGTYPE, size=entry.info.st_size, mode=bits))
            for chunk in _file_chunks(real_root, entry):
                yield from emit(chunk)
            if entry.info.st_size % 512:
                yield from emit(b"\0" * (512 - entry.info.st_size % 512))
    yield from emit(b"\0" * 1024)
    pending.append(compressor.flush())
    yield b"".join(pending)
