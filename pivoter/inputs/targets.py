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
* **Scoped to packages** (``packages``, with ``revisions_with``: the revision ConfigMaps whose
  ResolveSet has a package, an index of the revisions' cache, :func:`revision_packages`): only
  the inputs with a revision holding one of those packages are looked at, and only those
  packages of their targets are returned. A resolving pass needs no more
  (:mod:`resolver.rules.scope`), and reading every input and its target on every pass made a
  change of a thousand inputs cost a million reads. A pivot the ledger knows stays in it until
  the cache of revisions holds its target too, so it is found before the index has it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol

from pivoter.apis.inputs import INPUT_KINDS, input_kind
from pivoter.kube import Kube, NotFound, Resource
from pivoter.pivot import Phase, PivotHead
from pivoter.resolvesets import InputRef, Revision, RevisionStore, decode, revision_name
from resolver.resolveset import ResolveSetError

__all__ = [
    "CachedKind",
    "CachedObject",
    "InputsSource",
    "Ledger",
    "RevisionsWith",
    "TargetHolding",
    "pivot_targets",
    "revision_packages",
]

log = logging.getLogger(__name__)

CachedObject = Callable[[str], Mapping[str, Any] | None]
"""An object of a shared cache by its key (``namespace/name``), or None (an informer store's
``get``)."""


class CachedKind(Protocol):
    """The cache of one input kind (an informer's :class:`~pivoter.runtime.cache.Store`)."""

    def list(self) -> list[Any]:
        """Every cached object of the kind."""

    def get(self, key: str) -> Mapping[str, Any] | None:
        """The cached object named ``key``, or None."""


InputsSource = Callable[[Resource], CachedKind | None]
"""The cache of one input kind; None when this daemon has no cache of that kind (it runs no
controller of it)."""
RevisionsWith = Callable[[str], Iterable[Mapping[str, Any]]]
"""The cached revision ConfigMaps whose ResolveSet has a package (an index of the cache)."""
TargetHolding = tuple[str, str, str]
"""(package, bundle, version) of one bundle of a target revision."""

_MEMO_LIMIT = 8192


class Ledger:
    """The pivots this process started (input → target revision) that the input cache may not
    show yet; read and written under :data:`pivoter.inputs.held.CLAIMS`."""

    def __init__(self) -> None:
        self._started: dict[str, tuple[InputRef, int]] = {}
        self._lock = threading.Lock()

    def started(self, ref: InputRef, revision: int) -> None:
        """``ref`` persisted the start of its pivot to ``revision``."""
        with self._lock:
            self._started[str(ref)] = (ref, revision)

    def pending(self) -> list[InputRef]:
        """The inputs the ledger knows a pivot of that the caches may not show yet."""
        with self._lock:
            return [ref for ref, _ in self._started.values()]

    def target(
        self, ref: str, cached: int | None, present: Callable[[InputRef, int], bool] | None = None
    ) -> int | None:
        """The revision ``ref`` pivots to by the ledger when the cache shows ``cached`` (its
        pivot record's revision, None: no record): None once the cache caught up and, given
        ``present``, once the cache of revisions holds the target too."""
        with self._lock:
            found = self._started.get(ref)
            if found is None:
                return None
            input_ref, started = found
            if cached is not None and cached >= started:
                if present is None or present(input_ref, started):
                    del self._started[ref]  # the caches show that write (or a later one)
                return None
            return started


_Decoded = tuple[InputRef, int, tuple[TargetHolding, ...] | None]
"""An input, a revision number and its holdings (None: unreadable)."""
_MEMO: dict[tuple[str, str], _Decoded | None] = {}
_MEMO_LOCK = threading.Lock()


def pivot_targets(
    kube: Kube,
    store: RevisionStore,
    me: str,
    *,
    inputs: InputsSource | None = None,
    revisions: CachedObject | None = None,
    ledger: Ledger | None = None,
    packages: Collection[str] | None = None,
    revisions_with: RevisionsWith | None = None,
) -> dict[str, list[TargetHolding]]:
    """The target bundles of every input but ``me`` with a pivot in progress, by input
    (``Kind/name``), whatever its kind; given ``packages`` and ``revisions_with``, only the
    bundles of those packages (see the module docstring)."""
    present = _present(store, revisions)
    if packages is not None and revisions_with is not None and inputs is not None:
        return _scoped(store, me, packages, inputs, revisions, revisions_with, ledger, present)
    targets: dict[str, list[TargetHolding]] = {}
    for resource in (k.resource for k in INPUT_KINDS):
        cached = inputs(resource) if inputs is not None else None
        items: Iterable[Mapping[str, Any]] = cached.list() if cached is not None else ()
        if inputs is None:
            with contextlib.suppress(NotFound):  # the kind's CRD is not installed
                items, _ = kube.list(resource)
        for obj in items:
            metadata = obj.get("metadata") or {}
            ref = InputRef(resource.kind, str(metadata.get("name")))
            if str(ref) == me or metadata.get("deletionTimestamp"):
                continue
            number = _target_number(obj, ref, ledger if cached is not None else None, present)
            if number is None:
                continue
            held = _holdings(store, ref, number, revisions)
            if held is not None:
                targets[str(ref)] = [h for h in held if packages is None or h[0] in packages]
    return targets


def _scoped(  # noqa: PLR0917 (pivot_targets' arguments, passed on)
    store: RevisionStore,
    me: str,
    packages: Collection[str],
    inputs: InputsSource,
    revisions: CachedObject | None,
    revisions_with: RevisionsWith,
    ledger: Ledger | None,
    present: Callable[[InputRef, int], bool] | None,
) -> dict[str, list[TargetHolding]]:
    """The pivot targets of the inputs with a revision holding one of ``packages`` (and of
    those the ledger knows), cut to those packages."""
    refs: dict[str, InputRef] = {}
    for package in sorted(packages):
        for config_map in revisions_with(package):
            decoded = _decoded(config_map)
            if decoded is not None:
                refs.setdefault(str(decoded[0]), decoded[0])
    for ref in ledger.pending() if ledger is not None else ():
        refs.setdefault(str(ref), ref)
    targets: dict[str, list[TargetHolding]] = {}
    for key, ref in sorted(refs.items()):
        kind = input_kind(ref.kind)
        cached = inputs(kind.resource) if kind is not None and key != me else None
        obj = cached.get(ref.name) if cached is not None else None
        if obj is None or (obj.get("metadata") or {}).get("deletionTimestamp"):
            continue
        number = _target_number(obj, ref, ledger, present)
        held = _holdings(store, ref, number, revisions) if number is not None else None
        if held is not None:
            # Kept when empty too: the input pivots, so its children of other packages are
            # on their way out (held.Peers).
            targets[key] = [h for h in held if h[0] in packages]
    return targets


def _present(
    store: RevisionStore, revisions: CachedObject | None
) -> Callable[[InputRef, int], bool] | None:
    """Whether the cache of revisions holds a revision (None: there is no such cache)."""
    if revisions is None:
        return None
    return lambda ref, number: (
        revisions(f"{store.namespace}/{revision_name(ref, number)}") is not None
    )


def _target_number(
    obj: Mapping[str, Any],
    ref: InputRef,
    ledger: Ledger | None,
    present: Callable[[InputRef, int], bool] | None = None,
) -> int | None:
    """The revision whose bundles ``obj``'s pivot in progress holds (None: no pivot)."""
    pivot = PivotHead.read((obj.get("status") or {}).get("pivot"))  # not the whole record: O(1)
    cached = pivot.revision if pivot else None
    started = ledger.target(str(ref), cached, present) if ledger else None
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
    decoded = _decoded(config_map)
    if decoded is None or decoded[0] != ref or decoded[1] != number:
        return None
    return decoded[2]


def revision_packages(config_map: Mapping[str, Any]) -> list[str]:
    """The packages of a revision ConfigMap's ResolveSet (none when it is not one, was changed
    by hand or does not parse): the index :data:`RevisionsWith` reads."""
    decoded = _decoded(config_map)
    return sorted({h[0] for h in decoded[2] or ()}) if decoded is not None else []


def _decoded(config_map: Mapping[str, Any]) -> _Decoded | None:
    """The input, number and holdings of a revision ConfigMap, decoded once per name and
    resourceVersion (revisions are immutable: a hand edit is a new resourceVersion)."""
    metadata = config_map.get("metadata") or {}
    key = (str(metadata.get("name") or ""), str(metadata.get("resourceVersion") or ""))
    with _MEMO_LOCK:
        if key[1] and key in _MEMO:
            return _MEMO[key]
    revision = decode(config_map)
    found = (revision.input, revision.number, _read(revision)) if revision is not None else None
    if key[1]:
        with _MEMO_LOCK:
            if len(_MEMO) >= _MEMO_LIMIT:
                _MEMO.clear()
            _MEMO[key] = found
    return found


def _read(revision: Revision) -> tuple[TargetHolding, ...] | None:
    if not revision.intact:
        return None
    try:
        document = revision.resolveset()
    except ResolveSetError:
        log.warning("%s: revision %s is unreadable", revision.input, revision.number)
        return None
    return tuple((e.package, e.bundle, e.version) for e in document.entries)
