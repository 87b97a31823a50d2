"""The parsed-catalog cache: model objects of each file, reused while the file is unchanged.

One pickle per catalog root (named by a hash of its real path) under the cache directory
(default ``~/.cache/pivoter/catalogs``, or ``$PIVOTER_CACHE/catalogs``). It maps each file's
relative path to its signature (size, mtime_ns, inode, device) and the objects decoded from it
(with the file's lines as catalogd serves them, when a server loaded it:
:mod:`resolver.catalog.jsonl`), pickled on their own (:func:`pack_entry`), so a reload re-reads
only files that changed and the cache is rewritten from those bytes without pickling anything
again (the worker processes of :mod:`resolver.catalog.parallel` send a file's objects back in
that same form). Only files that loaded without problems are cached.
Called by :mod:`resolver.catalog.load`; a missing, stale, corrupt (truncated, garbage, another
format version, unexpected contents) or unwritable cache is simply ignored and rebuilt, never an
error (a damaged entry costs only the parse of its file). Reading unpickles only the model's own
classes (:class:`_ModelUnpickler`), so a planted file cannot make the loader run code, and every
entry's shape is checked before it is used.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
import tempfile
from dataclasses import dataclass, field
from typing import Any

from resolver.catalog import model
from resolver.catalog.decode import CatalogObject
from resolver.catalog.jsonl import FileLines

_FORMAT = 5  # bump when the model's pickled shape or the parser's values change

Signature = tuple[int, int, int, int]


def default_cache_dir() -> str:
    """Return the directory parsed catalogs are cached in by default."""
    base = os.environ.get("PIVOTER_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pivoter"
    )
    return os.path.join(base, "catalogs")


@dataclass(slots=True)
class FileCache:
    """Decoded objects of the files of one catalog root (:func:`pack_entry`), by relative path."""

    files: dict[str, tuple[Signature, bytes]] = field(default_factory=dict)

    def get(self, relpath: str, signature: Signature, *, lines: bool = False) -> FileEntry | None:
        """Return the cached entry of ``relpath`` if it still has ``signature`` (and is sound);
        with ``lines``, only an entry that holds the file's served lines."""
        hit = self.files.get(relpath)
        if hit is None or hit[0] != signature:
            return None
        entry = unpack_entry(hit[1])
        if entry is None or (lines and entry[1] is None):
            return None
        return entry


FileEntry = tuple[list[CatalogObject], FileLines | None]
"""What the cache holds of one file: its decoded objects, and its served lines when known."""


def pack_entry(objects: list[CatalogObject], lines: FileLines | None) -> bytes:
    """Pickle one file's decoded objects (and served lines, :mod:`resolver.catalog.jsonl`)."""
    plain = None if lines is None else lines.to_plain()
    return pickle.dumps((objects, plain), protocol=pickle.HIGHEST_PROTOCOL)


def unpack_entry(blob: bytes) -> FileEntry | None:
    """Unpickle :func:`pack_entry`'s bytes with the model-only unpickler; None if unsound."""
    try:
        data: Any = _ModelUnpickler(io.BytesIO(blob)).load()
    except Exception:  # truncated, garbage, planted: the file is parsed again
        return None
    if not isinstance(data, tuple) or len(data) != 2:
        return None
    objects, plain = data
    if not isinstance(objects, list) or not all(isinstance(o, _OBJECT_TYPES) for o in objects):
        return None
    if plain is None:
        return objects, None
    lines = FileLines.from_plain(plain)
    return None if lines is None else (objects, lines)


def _cache_path(cache_dir: str, root: str) -> str:
    digest = hashlib.sha256(os.path.realpath(root).encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(cache_dir, f"{digest[:32]}.pickle")


_MODEL_CLASSES = frozenset(
    (
        "Absent",
        "Bundle",
        "Channel",
        "ChannelEntry",
        "Deprecation",
        "DeprecationEntry",
        "Icon",
        "Meta",
        "Origin",
        "Package",
        "Property",
        "RelatedImage",
    )
)
_OBJECT_TYPES = (model.Package, model.Channel, model.Bundle, model.Deprecation, model.Meta)


class _ModelUnpickler(pickle.Unpickler):
    """Unpickles plain data and the catalog model's classes, nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        if module == model.__name__ and name in _MODEL_CLASSES:
            return getattr(model, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a catalog cache")


def read(cache_dir: str, root: str) -> FileCache:
    """Read the cache of ``root``; an absent or unusable cache reads as empty."""
    try:
        with open(_cache_path(cache_dir, root), "rb") as f:
            data: Any = _ModelUnpickler(f).load()
    except Exception:  # any corrupt file: truncated, garbage, planted; it is rebuilt
        return FileCache()
    if not isinstance(data, tuple) or len(data) != 3 or data[0] != _FORMAT:
        return FileCache()
    if data[1] != os.path.realpath(root) or not _well_formed(data[2]):
        return FileCache()
    return FileCache(data[2])


def _well_formed(files: Any) -> bool:
    """Does ``files`` have the shape :class:`FileCache` holds? (A damaged cache is dropped.)"""
    if not isinstance(files, dict):
        return False
    for relpath, entry in files.items():
        if not isinstance(relpath, str) or not isinstance(entry, tuple) or len(entry) != 2:
            return False
        signature, blob = entry
        if not isinstance(signature, tuple) or len(signature) != 4:
            return False
        if not all(type(part) is int for part in signature) or not isinstance(blob, bytes):
            return False
    return True


def write(cache_dir: str, root: str, cache: FileCache) -> None:
    """Replace the cache of ``root`` atomically; failures only cost speed, so they are ignored."""
    path = _cache_path(cache_dir, root)
    try:
        os.makedirs(cache_dir, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".tmp-", suffix=".pickle")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(
                (_FORMAT, os.path.realpath(root), cache.files), f, protocol=pickle.HIGHEST_PROTOCOL
            )
        os.replace(tmp, path)
    except Exception:  # disk full, a value pickle cannot write: only speed is lost
        with contextlib.suppress(OSError):
            os.unlink(tmp)
