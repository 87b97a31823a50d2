"""Read one kind from an informer's cache, and read this process's own writes back.

A reconcile that reads its object from the shared informer cache makes no request, but the
cache learns of a write only when the watch event arrives, a moment later. A reconcile that runs
in that moment (another event queued the key, a requeue came due) must not act on the object as
it was before this process's own write: a BundleDeployment whose status does not yet say it is
installed would be installed again, its hooks run again. So :class:`ReadYourWrites` lays each
object this process wrote over the cache until the cache has caught up with it.

Resource versions are opaque (they may not be compared for order), so none is compared: each
write is recorded with the versions it superseded (the one it was made on, and those that one
superseded). While the cache holds one of those, the written object is newer and is returned;
once the cache holds the written version, or any version not in that chain (someone else wrote
since), the cache is the truth again and the record is dropped. A cache that no longer holds the
object means it was deleted. An object this process created is read back while the cache does
not hold it yet, until the cache reports its deletion (:meth:`ReadYourWrites.deleted`) and for
at most ``unseen_for`` seconds (a watch event is normally there within milliseconds).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from pivoter.kube.client import Object

__all__ = ["ReadYourWrites"]


def _version(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class ReadYourWrites:
    """Objects from ``cached`` (an informer store's ``get``), with this process's latest write
    of each laid over them until the cache has it (see the module docstring)."""

    def __init__(
        self,
        cached: Callable[[str], Object | None],
        *,
        unseen_for: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cached = cached
        self._written: dict[str, tuple[Object, frozenset[str], float]] = {}
        self._unseen_for = unseen_for
        self._clock = clock
        self._lock = threading.Lock()

    def get(self, key: str) -> Object | None:
        """The object ``key`` as this process last knew it: the cache's copy, or this process's
        own newer write of it; None when the cache does not hold it."""
        cached = self._cached(key)
        with self._lock:
            record = self._written.get(key)
            if record is None:
                return cached
            written, superseded, at = record
            if cached is None:
                if "" in superseded and self._clock() - at < self._unseen_for:
                    return written  # created here; the cache has not seen it yet
            elif _version(cached) in superseded:
                return written  # the cache has not seen our write yet
            del self._written[key]  # caught up, written over by another, or deleted
            return cached

    def wrote(self, key: str, before: Object | None, after: Object) -> None:
        """``after`` is the API server's answer to a write made on ``before`` (None: a create)."""
        superseded = {_version(before) if before is not None else ""}
        with self._lock:
            record = self._written.get(key)
            if (
                record is not None
                and before is not None
                and _version(record[0]) == _version(before)
            ):
                superseded |= record[1]
            superseded.discard(_version(after))
            self._written[key] = (after, frozenset(superseded), self._clock())

    def forget(self, key: str) -> None:
        """Drop the write of ``key`` (the cache is the truth for it again)."""
        with self._lock:
            self._written.pop(key, None)

    def deleted(self, key: str, obj: Object) -> None:
        """The cache saw ``key`` deleted (``obj`` as it was last): a write of that same object
        (by uid) is gone with it, even one the cache never showed (created, then deleted)."""
        uid = (obj.get("metadata") or {}).get("uid")
        with self._lock:
            record = self._written.get(key)
            if record is not None and (record[0].get("metadata") or {}).get("uid") == uid:
                del self._written[key]

    def pending(self) -> list[str]:
        """The keys of the writes the cache has not been seen to catch up with."""
        with self._lock:
            return list(self._written)

    def __len__(self) -> int:
        """How many writes the cache has not been seen to catch up with (for tests)."""
        with self._lock:
            return len(self._written)
