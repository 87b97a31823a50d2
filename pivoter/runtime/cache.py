"""The in-memory copy of one kind's objects that an informer keeps and controllers read.

Keys are ``namespace/name`` (``name`` for cluster-scoped objects), as in client-go, and objects
are also indexed by namespace and by each label (``key=value``), so that a controller lists one
namespace, or what a label selector names (:mod:`pivoter.runtime.cachedreads`), without scanning
the whole cache: at a thousand inputs a scan per pass made every pass cost every other input.
Other indexes are added by name with a function of the object (client-go's ``Indexers``:
:meth:`Store.add_index`, :meth:`Store.indexed`), e.g. children by the package they install.
Objects handed out are shared with the cache: treat them as read-only (copy before changing).
Written only by :class:`pivoter.runtime.informer.Informer`.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Iterable

from pivoter.kube.client import Object

__all__ = ["IndexFunc", "Store", "object_key", "split_key"]

log = logging.getLogger(__name__)

IndexFunc = Callable[[Object], Iterable[str]]
"""The values an object is indexed under in one named index (none: not in it)."""


def object_key(obj: Object) -> str:
    """``namespace/name`` of an object, or ``name`` if it has no namespace."""
    metadata = obj.get("metadata") or {}
    name = metadata.get("name")
    if not name:
        raise ValueError("object has no metadata.name")
    namespace = metadata.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name)


def split_key(key: str) -> tuple[str, str]:
    """``"ns/name"`` -> ``("ns", "name")``; ``"name"`` -> ``("", "name")``."""
    namespace, _, name = key.rpartition("/")
    return namespace, name


def _rv(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _label_pairs(obj: Object) -> builtins.list[tuple[str, str]]:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return [(str(k), str(v)) for k, v in labels.items()] if isinstance(labels, dict) else []


class Store:
    """A thread-safe map of key -> object with a namespace index and a label index."""

    def __init__(self) -> None:
        self._items: dict[str, Object] = {}
        self._by_namespace: dict[str, set[str]] = {}
        self._by_label: dict[tuple[str, str], set[str]] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indexes: dict[str, dict[str, set[str]]] = {}
        self._values: dict[str, dict[str, tuple[str, ...]]] = {}
        """index name -> key -> the values the key is indexed under (to unindex it)."""
        self._lock = threading.RLock()

    def add_index(self, name: str, func: IndexFunc) -> None:
        """Index every object (those cached now, and each one stored from now on) under the
        values ``func`` gives it; :meth:`indexed` reads the index. Adding a name again keeps the
        first function (the stores are shared by every controller that asks for them)."""
        with self._lock:
            if name in self._indexers:
                return
            self._indexers[name] = func
            self._indexes[name] = {}
            self._values[name] = {}
            for key, obj in self._items.items():
                self._index_one(name, key, obj)

    def indexed(self, name: str, value: str) -> builtins.list[str]:
        """The keys of the cached objects that index ``name`` puts under ``value``."""
        with self._lock:
            return list(self._indexes.get(name, {}).get(value, ()))

    def by_index(self, name: str, value: str) -> builtins.list[Object]:
        """The cached objects that index ``name`` puts under ``value``, by key."""
        with self._lock:
            keys = sorted(self._indexes.get(name, {}).get(value, ()))
            return [self._items[k] for k in keys]

    def _index_one(self, name: str, key: str, obj: Object) -> None:
        try:
            values = tuple(dict.fromkeys(self._indexers[name](obj)))
        except Exception:  # a bad object must not stop the informer: it is in no index
            log.exception("index %s: cannot index %s", name, key)
            values = ()
        if values:
            self._values[name][key] = values
            index = self._indexes[name]
            for value in values:
                index.setdefault(value, set()).add(key)

    def _unindex_one(self, name: str, key: str) -> None:
        index = self._indexes[name]
        for value in self._values[name].pop(key, ()):
            keys = index.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del index[value]

    def get(self, key: str) -> Object | None:
        """The cached object for ``key`` (``namespace/name``), or None."""
        with self._lock:
            return self._items.get(key)

    def list(self, namespace: str | None = None) -> list[Object]:
        """All cached objects, or those of one namespace."""
        with self._lock:
            if namespace is None:
                return list(self._items.values())
            return [self._items[k] for k in self._by_namespace.get(namespace, ())]

    def keys(self) -> builtins.list[str]:
        """All cached keys."""
        with self._lock:
            return list(self._items)

    def labelled(self, label: str, value: str) -> builtins.list[str]:
        """The keys of the cached objects whose label ``label`` is ``value``."""
        with self._lock:
            return list(self._by_label.get((label, value), ()))

    def count_labelled(self, label: str, value: str) -> int:
        """How many cached objects have the label ``label`` at ``value`` (nothing copied)."""
        with self._lock:
            return len(self._by_label.get((label, value), ()))

    def _index(self, key: str, obj: Object) -> None:
        self._by_namespace.setdefault(split_key(key)[0], set()).add(key)
        for pair in _label_pairs(obj):
            self._by_label.setdefault(pair, set()).add(key)
        for name in self._indexers:
            self._index_one(name, key, obj)

    def _unindex(self, key: str, obj: Object, *, namespace: bool) -> None:
        if namespace:
            keys = self._by_namespace.get(split_key(key)[0])
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_namespace[split_key(key)[0]]
        for pair in _label_pairs(obj):
            labelled = self._by_label.get(pair)
            if labelled is not None:
                labelled.discard(key)
                if not labelled:
                    del self._by_label[pair]
        for name in self._indexers:
            self._unindex_one(name, key)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def upsert(self, obj: Object) -> Object | None:
        """Store ``obj``; return the object it replaced, if any."""
        key = object_key(obj)
        with self._lock:
            old = self._items.get(key)
            if old is not None:
                self._unindex(key, old, namespace=False)
            self._items[key] = obj
            self._index(key, obj)
            return old

    def delete(self, obj: Object) -> Object | None:
        """Remove ``obj``'s key; return the object that was cached, if any."""
        key = object_key(obj)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._unindex(key, old, namespace=True)
            return old

    def replace(
        self, objects: Iterable[Object]
    ) -> tuple[builtins.list[Object], builtins.list[tuple[Object, Object]], builtins.list[Object]]:
        """Make the cache hold exactly ``objects`` (a fresh list); return what changed as
        ``(added, updated as (old, new), deleted)`` so handlers hear about every difference."""
        fresh = {object_key(obj): obj for obj in objects}
        with self._lock:
            added = [obj for key, obj in fresh.items() if key not in self._items]
            updated = [
                (self._items[key], obj)
                for key, obj in fresh.items()
                if key in self._items and _rv(self._items[key]) != _rv(obj)
            ]
            deleted = [obj for key, obj in self._items.items() if key not in fresh]
            self._items = fresh
            self._by_namespace = {}
            self._by_label = {}
            self._indexes = {name: {} for name in self._indexers}
            self._values = {name: {} for name in self._indexers}
            for key, obj in fresh.items():
                self._index(key, obj)
        return added, updated, deleted
