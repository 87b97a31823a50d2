"""The pivots in progress of the other inputs and the bundles their targets hold, as joint
resolution needs them (:func:`pivoter.inputs.held.with_pivot_targets`) on every resolving
pass of every input.

Read from the daemon's shared caches, not the API server: listing every input and reading the
target revision of each pivoting one on every pass cost n inputs' passes n² objects and YAML
documents when they all resolve at once (setup, a catalog change; docs/benchmarks/daemon-scale.md).

* The inputs of every kind (:data:`pivoter.apis.inputs.INPUT_KINDS`) come from their informer
  caches (:data:`InputsSource`). A pivot is claimed under
  :data:`pivoter.inputs.held.CLAIMS` by persisting its record, and the next input to take
  the lock must see it, but the cache may not show that status write yet. So the engine notes
  each pivot it starts in the :class:`Ledger` (under the lock) and a pivot the ledger knows
  counts as in progress until the cache shows the input at that revision or later. A new
  leader's ledger is empty and its caches were listed after the last write of the old one.
* A target revision's holdings are decoded once per ConfigMap resourceVersion (revisions are
  immutable; a hand edit changes the resourceVersion and is decoded again), from the cache of
  revision ConfigMaps when it holds it, else read from the API server.
* A kind the daemon has no cache of is one it runs no controller of (not served, or OLM v1's
  ClusterExtensions left to operator-controller): none of its objects is a pivoter input with a
  pivot in progress, and it is not listed. Without any input cache (``inputs`` None), every
  kind is listed from the API server.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pivoter.apis.inputs import INPUT_KINDS
from pivoter.kube import Kube, NotFound, Resource
from pivoter.pivot import Phase, PivotHead
from pivoter.resolvesets import InputRef, Revision, RevisionStore, decode, revision_name
from resolver.resolveset import ResolveSetError

__all__ = ["CachedObject", "InputsSource", "Ledger", "TargetHolding", "pivot_targets"]

log = logging.getLogger(__name__)

CachedObject = Callable[[str], Mapping[str, Any] | None]
"""An object of a shared cache by its key (``namespace/name``), or None (an informer store's
``get``)."""
InputsSource = Callable[[Resource], Iterable[Mapping[str, Any]] | None]
"""The cached objects of one input kind; None when this daemon has no cache of that kind (it
runs no controller of it)."""
TargetHolding = tuple[str, str, str]
"""(package, bundle, version) of one bundle of a target revision."""

_MEMO_LIMIT = 8192


class Ledger:
    """The pivots this process started (input → target revision) that the input cache may not
    show yet; read and written under :data:`pivoter.inputs.held.CLAIMS`."""

    def __init__(self) -> None:
        self._started: dict[str, int] = {}
        self._lock = threading.Lock()

    def started(self, ref: InputRef, revision: int) -> None:
        """``ref`` persisted the start of its pivot to ``revision``."""
        with self._lock:
            self._started[str(ref)] = revision

    def target(self, ref: str, cached: int | None) -> int | None:
        """The revision ``ref`` pivots to by the ledger when the cache shows ``cached`` (its
        pivot record's revision, None: no record): None once the cache caught up."""
        with self._lock:
            started = self._started.get(ref)
            if started is None:
                return None
            if cached is not None and cached >= started:
                del self._started[ref]  # the cache shows that write (or a later one)
                return None
            return started


_MEMO: dict[tuple[str, str], tuple[TargetHolding, ...] | None] = {}
_MEMO_LOCK = threading.Lock()


def pivot_targets(
    kube: Kube,
    store: RevisionStore,
    me: str,
    *,
    inputs: InputsSource | None = None,
    revisions: CachedObject | None = None,
    ledger: Ledger | None = None,
) -> dict[str, list[TargetHolding]]:
    """The target bundles of every input but ``me`` with a pivot in progress, by input
    (``Kind/name``), whatever its kind."""
    targets: dict[str, list[TargetHolding]] = {}
    for resource in (k.resource for k in INPUT_KINDS):
        cached = inputs(resource) if inputs is not None else None
        items: Iterable[Mapping[str, Any]] = cached if cached is not None else ()
        if inputs is None:
            with contextlib.suppress(NotFound):  # the kind's CRD is not installed
                items, _ = kube.list(resource)
        for obj in items:
            metadata = obj.get("metadata") or {}
            ref = InputRef(resource.kind, str(metadata.get("name")))
            if str(ref) == me or metadata.get("deletionTimestamp"):
                continue
            number = _target_number(obj, ref, ledger if cached is not None else None)
            if number is None:
                continue
            held = _holdings(store, ref, number, revisions)
            if held is not None:
                targets[str(ref)] = list(held)
    return targets


def _target_number(obj: Mapping[str, Any], ref: InputRef, ledger: Ledger | None) -> int | None:
    """The revision whose bundles ``obj``'s pivot in progress holds (None: no pivot)."""
    pivot = PivotHead.read((obj.get("status") or {}).get("pivot"))  # not the whole record: O(1)
    started = ledger.target(str(ref), pivot.revision if pivot else None) if ledger else None
    if started is not None:
        return started
    if pivot is None or pivot.phase.terminal:
        return None
    # Rolling back, the input moves to the previous revision.
    return pivot.previous if pivot.phase is Phase.ROLLING_BACK else pivot.revision


def _holdings(
    store: RevisionStore, ref: InputRef, number: int, revisions: CachedObject | None
) -> tuple[TargetHolding, ...] | None:
    """The bundles of revision ``number`` of ``ref`` (None: missing, modified or unreadable)."""
    name = revision_name(ref, number)
    config_map = revisions(f"{store.namespace}/{name}") if revisions is not None else None
    if config_map is None:
        revision = store.get(ref, number)  # not in the cache (yet): ask the API server
        return _read(revision) if revision is not None else None
    key = (name, str((config_map.get("metadata") or {}).get("resourceVersion") or ""))
    with _MEMO_LOCK:
        if key[1] and key in _MEMO:
            return _MEMO[key]
    revision = decode(config_map)
    if revision is None or revision.input != ref or revision.number != number:
        return None
    held = _read(revision)
    if key[1]:
        with _MEMO_LOCK:
            if len(_MEMO) >= _MEMO_LIMIT:
                _MEMO.clear()
            _MEMO[key] = held
    return held


def _read(revision: Revision) -> tuple[TargetHolding, ...] | None:
    if not revision.intact:
        return None
    try:
        document = revision.resolveset()
    except ResolveSetError:
        log.warning("%s: revision %s is unreadable", revision.input, revision.number)
        return None
    return tuple((e.package, e.bundle, e.version) for e in document.entries)
