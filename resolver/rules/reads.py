"""What one resolution read from its catalogs, so that a catalog change can be matched
against it (:func:`resolver.catalog.diff.diff`).

:class:`resolver.rules.inputs.Index` notes every lookup while a :class:`Reads` is attached:
the packages whose candidates it handed out (whole packages: their channels, default
channel and deprecations count too), the single bundles looked up by name (a held bundle of
another input: only that bundle's content matters), the APIs whose providers it listed, or
that it handed out everything. A change that touches none of these cannot change the
resolution's answer: the resolver is a function of what it read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from resolver.catalog.diff import CatalogDiff
from resolver.catalog.model import GVK

__all__ = ["Reads"]


@dataclass(slots=True)
class Reads:
    """A resolution's reads (see the module docstring); filled as the resolver runs."""

    packages: set[str] = field(default_factory=set)
    bundles: set[tuple[str, str]] = field(default_factory=set)
    apis: set[GVK] = field(default_factory=set)
    everything: bool = False

    def touched_by(self, change: CatalogDiff) -> bool:
        """Whether ``change`` touches anything read."""
        if not change:
            return False
        return (
            self.everything
            or not self.packages.isdisjoint(change.packages)
            or not self.bundles.isdisjoint(change.bundles)
            or not self.apis.isdisjoint(change.apis)
        )
