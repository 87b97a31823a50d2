"""Tell the watch event of a controller's own status write from a change worth a reconcile.

A reconcile that writes its object's status gets the write back as an update event a moment
later, and a controller that queues every update reconciles again to find nothing to do. At a
thousand inputs that doubled the passes of a catalog change (every pass that wrote status was
followed by one that did not; docs/benchmarks/daemon-scale.md). controller-runtime's answer is
a ``GenerationChangedPredicate``, which also ignores status written by anyone else: an input
taken over from operator-controller reads what operator-controller wrote in status, so pivoter
cannot ignore other writers.

:class:`Echoes` ignores exactly the echo: an update that changes nothing but ``status`` (and the
resourceVersion), into what one of this process's own status patches of that object makes of
the status before. The patch is noted before it is sent, because the watch event may arrive
before the write's response does. Anything else, a spec or metadata change, or a status written
by another client, is a change worth a reconcile.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from pivoter.runtime.cache import object_key

__all__ = ["Echoes", "merged"]

_IGNORED = frozenset({"resourceVersion", "managedFields"})
_KEEP = 8
"""Status patches of one object kept while their echoes are due (a write that failed or whose
echo a relist folded away is dropped as newer ones come)."""


class Echoes:
    """The status patches of one controller's own writes (see the module docstring)."""

    def __init__(self) -> None:
        self._patches: dict[str, list[Mapping[str, Any]]] = {}
        self._lock = threading.Lock()

    def writing(self, obj: Mapping[str, Any], status: Mapping[str, Any]) -> None:
        """This process is about to merge-patch the status of ``obj`` with ``status``."""
        key = _key(obj)
        with self._lock:
            patches = self._patches.setdefault(key, [])
            patches.append(status)
            del patches[:-_KEEP]

    def echo(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        """Whether the update ``old`` → ``new`` is only the echo of an own status write (that
        write and the ones noted before it are then forgotten)."""
        key = _key(new)
        with self._lock:
            patches = list(self._patches.get(key, ()))
        if not patches or _beyond_status(old) != _beyond_status(new):
            return False
        before, after = old.get("status") or {}, new.get("status") or {}
        for patch in patches:
            if merged(before, patch) == after:
                self._seen(key, patch)
                return True
        return False

    def forget(self, obj: Mapping[str, Any]) -> None:
        """``obj`` is gone: its patches are no longer due."""
        with self._lock:
            self._patches.pop(_key(obj), None)

    def _seen(self, key: str, patch: Mapping[str, Any]) -> None:
        with self._lock:
            current = self._patches.get(key, [])
            for n, noted in enumerate(current):
                if noted is patch:
                    del current[: n + 1]
                    break
            if not current:
                self._patches.pop(key, None)


def merged(target: Any, patch: Any) -> Any:
    """``patch`` applied to ``target`` as a JSON merge patch (RFC 7386)."""
    if not isinstance(patch, Mapping):
        return patch
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merged(out.get(key), value)
    return out


def _key(obj: Mapping[str, Any]) -> str:
    return object_key(dict(obj))


def _beyond_status(obj: Mapping[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata") or {}
    kept = {k: v for k, v in metadata.items() if k not in _IGNORED}
    return {**{k: v for k, v in obj.items() if k not in ("status", "metadata")}, "metadata": kept}
