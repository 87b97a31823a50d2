"""The parsed-catalog cache: model objects of each file, reused while the file is unchanged.

One pickle per catalog root (named by a hash of its real path) under the cache directory
(default ``~/.cache/pivoter/catalogs``, or ``$PIVOTER_CACHE/catalogs``). It maps each file's
relative path to its signature (size, mtime_ns, inode, device) and the objects decoded from it, so
a reload re-reads only files that changed. Only files that loaded without problems are cached.
Called by :mod:`resolver.catalog.load`; a missing, stale or unreadable cache is simply rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
from dataclasses import dataclass, field
from typing import Any

from resolver.catalog.decode import CatalogObject

_FORMAT = 1  # bump when the model's pickled shape changes

Signature = tuple[int, int, int, int]


def default_cache_dir() -> str:
    """Return the directory parsed catalogs are cached in by default."""
    base = os.environ.get("PIVOTER_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pivoter"
    )
    return os.path.join(base, "catalogs")


@dataclass(slots=True)
class FileCache:
    """Decoded objects of the files of one catalog root, by relative path."""

    files: dict[str, tuple[Signature, list[CatalogObject]]] = field(default_factory=dict)

    def get(self, relpath: str, signature: Signature) -> list[CatalogObject] | None:
        """Return the cached objects of ``relpath`` if it still has ``signature``."""
        hit = self.files.get(relpath)
        if hit is None or hit[0] != signature:
            return None
        return hit[1]


def _cache_path(cache_dir: str, root: str) -> str:
    digest = hashlib.sha256(os.path.realpath(root).encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(cache_dir, f"{digest[:32]}.pickle")


def read(cache_dir: str, root: str) -> FileCache:
    """Read the cache of ``root``; an absent or unusable cache reads as empty."""
    try:
        with open(_cache_path(cache_dir, root), "rb") as f:
            data: Any = pickle.load(f)  # our own file under the user's cache dir
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError):
        return FileCache()
    if not isinstance(data, tuple) or len(data) != 3 or data[0] != _FORMAT:
        return FileCache()
    if data[1] != os.path.realpath(root):
        return FileCache()
    return FileCache(data[2])


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
    except (OSError, pickle.PicklingError):
        with contextlib.suppress(OSError):
            os.unlink(tmp)
