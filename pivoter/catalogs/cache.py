"""The in-memory catalog cache the daemon resolves from: one parsed catalog per source.

Written by the catalog controllers (pivoter's own ``Catalog`` objects, and read-only OLM
``CatalogSource`` and catalogd ``ClusterCatalog`` objects); read by the resolution controllers,
which call :meth:`CatalogCache.get` and subscribe with :meth:`CatalogCache.on_change` to
re-resolve when, and only when, a catalog's *content* changed. Entries are immutable snapshots
swapped under a lock, so a reader never sees a half-updated catalog.

Names: a pivoter ``Catalog`` is cached under its own name; the others under
``CatalogSource/<namespace>/<name>`` and ``ClusterCatalog/<name>`` (``/`` never occurs in a
Kubernetes name, so the three cannot collide).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from resolver.catalog.model import Catalog

__all__ = ["CachedCatalog", "CatalogCache", "CatalogChange", "ChangeCallback"]

log = logging.getLogger(__name__)


class CachedCatalog(NamedTuple):
    """What :meth:`CatalogCache.get` returns: ``catalog, digest, priority = cache.get(name)``."""

    catalog: Catalog
    digest: str
    """``sha256:<hex>`` of the content (see :mod:`pivoter.catalogs.digest`)."""
    priority: int


@dataclass(frozen=True, slots=True)
class CatalogChange:
    """One content change, handed to the :meth:`CatalogCache.on_change` callbacks."""

    name: str
    digest: str | None
    """The new digest; None when the catalog left the cache (its object was deleted)."""
    previous: str | None
    """The digest before; None when the catalog is new to the cache."""
    before: Catalog | None = field(default=None, compare=False, repr=False)
    """The content before (None when new), to tell what changed
    (:func:`resolver.catalog.diff.diff`)."""
    after: Catalog | None = field(default=None, compare=False, repr=False)
    """The content now (None when the catalog left the cache)."""


ChangeCallback = Callable[[CatalogChange], None]


class CatalogCache:
    """Thread-safe map of catalog name -> :class:`CachedCatalog`, with change subscriptions."""

    def __init__(self) -> None:
        self._entries: dict[str, CachedCatalog] = {}
        self._callbacks: list[ChangeCallback] = []
        self._lock = threading.Lock()

    def get(self, name: str) -> CachedCatalog | None:
        """The cached catalog called ``name``, or None."""
        with self._lock:
            return self._entries.get(name)

    def names(self) -> list[str]:
        """Every cached catalog name, sorted."""
        with self._lock:
            return sorted(self._entries)

    def by_priority(self) -> list[tuple[str, CachedCatalog]]:
        """Every entry, highest priority first (ties by name), as resolution ranks them."""
        with self._lock:
            items = list(self._entries.items())
        return sorted(items, key=lambda item: (-item[1].priority, item[0]))

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def put(self, name: str, catalog: Catalog, digest: str, priority: int) -> bool:
        """Store ``catalog``; return True when its digest changed. The callbacks fire then, and
        when only the priority changed (see :meth:`set_priority`)."""
        with self._lock:
            previous = self._entries.get(name)
            self._entries[name] = CachedCatalog(catalog, digest, priority)
        if previous is not None and previous.digest == digest:
            if previous.priority != priority:
                self._notify(
                    CatalogChange(name, digest, digest, before=previous.catalog, after=catalog)
                )
            return False
        self._notify(
            CatalogChange(
                name,
                digest,
                previous.digest if previous else None,
                before=previous.catalog if previous else None,
                after=catalog,
            )
        )
        return True

    def set_priority(self, name: str, priority: int) -> None:
        """Change the priority of a cached catalog. The content is unchanged, but the ranking
        of the catalogs is not: the callbacks get a change with the same digest before and
        after."""
        with self._lock:
            entry = self._entries.get(name)
            if entry is None or entry.priority == priority:
                return
            self._entries[name] = entry._replace(priority=priority)
        self._notify(
            CatalogChange(
                name, entry.digest, entry.digest, before=entry.catalog, after=entry.catalog
            )
        )

    def remove(self, name: str) -> bool:
        """Forget ``name``; fire the callbacks and return True if it was cached."""
        with self._lock:
            previous = self._entries.pop(name, None)
        if previous is None:
            return False
        self._notify(CatalogChange(name, None, previous.digest, before=previous.catalog))
        return True

    def on_change(self, callback: ChangeCallback) -> Callable[[], None]:
        """Call ``callback`` after every content change (new, changed or removed catalog);
        return a function that unsubscribes it. Callbacks run on the writer's thread and must
        be quick (enqueue work, do not resolve inline); an exception is logged and ignored."""
        with self._lock:
            self._callbacks.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return unsubscribe

    def _notify(self, change: CatalogChange) -> None:
        with self._lock:
            callbacks = list(self._callbacks)
        for callback in callbacks:
            try:
                callback(change)
            except Exception:
                log.exception("catalog cache: a change callback failed for %s", change.name)
