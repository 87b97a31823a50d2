"""Which inputs a catalog change concerns: those whose last resolution read what changed.

A catalog change used to queue every input, though a change usually touches a few packages:
at 1000 inputs, the pivots of the 100 concerned waited behind 900 passes that could not
change anything (docs/benchmarks/daemon-scale.md). Now each resolving pass notes what it read
(:class:`resolver.rules.reads.Reads`, filled by the resolver) with the digest of every cached
catalog when it read them, and a change of catalog ``C`` from digest ``d0`` to ``d1`` queues an
input when:

* nothing is noted for it: it has not resolved in this process since its spec last changed
  (a pass that finds another ``metadata.generation`` than the note's forgets it), or its last
  resolution found no catalog;
* its note was not taken at ``C`` = ``d0`` (it read another content of ``C``, or ``C`` is new or
  gone: a catalog that appears or leaves can change which catalogs an input selects), or the
  change is of ``C``'s priority only (the same digest: the ranking of the catalogs changed);
* the difference of ``d0`` and ``d1`` (:func:`resolver.catalog.diff.diff`) touches a package or
  API it read, or a bundle of another input it looked up by name (kept in one set for all
  inputs: those lookups are of the held bundles, the same for every input).

Otherwise its note moves on to ``d1``: the resolver is a function of what it read, so its answer
is the same. A pass that finds the catalogs changed while it ran does not keep its note and
queues itself again, so no change falls between a pass's reads and its note. A pass that does
not resolve (a pivot carried on, a conflict, a pin) leaves the note as it is: a pivot installs
what that resolution chose, and resolving again with it installed reads the same packages (the
chosen ones and the requests); what other inputs hold is not catalog content and queues the
inputs through their own watches (:mod:`pivoter.inputs.dependents`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pivoter.catalogs import CatalogCache, CatalogChange
from resolver.catalog.diff import CatalogDiff, diff
from resolver.catalog.model import GVK
from resolver.rules.reads import Reads

__all__ = ["Relevance"]


@dataclass(frozen=True, slots=True)
class _Note:
    generation: int
    """The input's ``metadata.generation`` (its spec) when it resolved."""
    digests: dict[str, str]
    """Every cached catalog's digest when the pass read them (moved on by changes that do not
    concern the input)."""
    packages: frozenset[str]
    apis: frozenset[GVK]
    everything: bool
    by_name: bool
    """Whether it looked up bundles by name (see :attr:`Relevance._named`)."""

    def touched_by(self, change: CatalogDiff, named: set[tuple[str, str]]) -> bool:
        return (
            self.everything
            or not self.packages.isdisjoint(change.packages)
            or not self.apis.isdisjoint(change.apis)
            or (self.by_name and not named.isdisjoint(change.bundles))
        )


class Relevance:
    """The notes of one input kind's passes, and the inputs a change concerns (see the module
    docstring). Thread-safe: passes note from the workers, changes arrive on the catalog
    cache's writer thread."""

    def __init__(self, cache: CatalogCache) -> None:
        self.cache = cache
        self.requeue: Callable[[str], None] | None = None
        """Queues an input again (set by the controller)."""
        self._notes: dict[str, _Note] = {}
        self._named: set[tuple[str, str]] = set()
        """Every bundle any pass looked up by name (held bundles of other inputs), ever: one
        set for all inputs instead of each input's (they are nearly the same n bundles)."""
        self._lock = threading.Lock()

    def digests(self) -> dict[str, str]:
        """Every cached catalog's content digest now (take it before a pass reads them)."""
        return {name: entry.digest for name, entry in self.cache.by_priority()}

    def begin(self, name: str, generation: int) -> None:
        """The input's pass starts at ``generation``: a note of another spec is forgotten
        (until the pass notes again, every change concerns the input)."""
        with self._lock:
            note = self._notes.get(name)
            if note is not None and note.generation != generation:
                del self._notes[name]

    def note(self, name: str, generation: int, digests: Mapping[str, str], reads: Reads) -> None:
        """Note what the input's resolution at ``generation`` read at ``digests`` (taken before
        it read). When the catalogs changed since, the note is dropped and the input is queued
        again."""
        with self._lock:
            current = self.digests() == digests
            if not current:
                self._notes.pop(name, None)
            else:
                self._named |= reads.bundles
                self._notes[name] = _Note(
                    generation,
                    dict(digests),
                    frozenset(reads.packages),
                    frozenset(reads.apis),
                    reads.everything,
                    bool(reads.bundles),
                )
        if not current and self.requeue is not None:
            self.requeue(name)

    def concerned(self, change: CatalogChange, names: Iterable[str]) -> list[str]:
        """The inputs of ``names`` that ``change`` concerns (their notes are dropped: their
        passes note again); the others' notes move on to the new digest."""
        names = list(names)
        if (
            change.before is None
            or change.after is None
            or change.previous is None
            or change.previous == change.digest  # a new priority: the ranking changed
        ):
            with self._lock:
                for name in names:
                    self._notes.pop(name, None)
            return names
        with self._lock:
            noted = any(name in self._notes for name in names)
        difference = diff(change.before, change.after) if noted else None
        queued: list[str] = []
        with self._lock:
            for name in names:
                note = self._notes.get(name)
                if (
                    note is None
                    or difference is None
                    or note.digests.get(change.name) != change.previous
                    or note.touched_by(difference, self._named)
                ):
                    self._notes.pop(name, None)
                    queued.append(name)
                elif change.digest is not None:
                    note.digests[change.name] = change.digest
        return queued
