"""Label selectors as the API server reads them, matched locally: what lets a LIST be answered
from an informer's cache (:mod:`pivoter.runtime.cachedreads`).

The string form of ``labelSelector`` is read and checked by the resolver's parser
(:meth:`resolver.rules.selectors.CatalogSelector.from_text`, the API machinery's rules); this
module adds what a cache needs: whether one selector implies another. A selector that cannot be
read raises :class:`ValueError`; callers then ask the API server, which says what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from resolver.rules.selectors import CatalogSelector, LabelRequirement

__all__ = ["Selector", "parse"]


def _implies(mine: LabelRequirement, other: LabelRequirement) -> bool:
    """Whether every label set meeting ``mine`` meets ``other``."""
    if mine.key != other.key:
        return False
    own, theirs = set(mine.values), set(other.values)
    if other.operator == "Exists":
        return mine.operator == "Exists" or (mine.operator == "In" and bool(own))
    if other.operator == "DoesNotExist":
        return mine.operator == "DoesNotExist"
    if other.operator == "In":
        return mine.operator == "In" and own <= theirs
    # NotIn: the label is absent, or its value is none of other's
    if mine.operator == "DoesNotExist":
        return True
    if mine.operator == "In":
        return not own & theirs
    return mine.operator == "NotIn" and theirs <= own


@dataclass(frozen=True, slots=True)
class Selector:
    """A parsed label selector: every requirement must hold (the empty one selects all)."""

    requirements: frozenset[LabelRequirement]

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with ``labels`` is selected."""
        found = labels or {}
        return all(r.matches(found) for r in self.requirements)

    def implies(self, other: Selector) -> bool:
        """Whether every object this selector selects is also selected by ``other``: each of
        ``other``'s requirements follows from one of this selector's (``a=x`` implies ``a``,
        ``a in (x,y)`` and ``a!=z``; ``!a`` implies ``a!=z``)."""
        return all(any(_implies(m, r) for m in self.requirements) for r in other.requirements)


def parse(text: str) -> Selector:
    """Parse a ``labelSelector`` string; raises :class:`ValueError` when it cannot."""
    return Selector(frozenset(CatalogSelector.from_text(text).requirements()))
