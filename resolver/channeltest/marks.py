"""Where one channel's upgrade graph hurts its users, entry by entry and edge by edge.

The one reading of these defects: :mod:`resolver.channeltest.checks` turns them into findings
(``stranded-entry``, ``no-path-to-head``, ``upgrade-cycle``, ``unreachable-entry``,
``downgrade-edge``), and :mod:`resolver.channeltest.render` (``pivoter catalog graph``, the
``/ui/`` channel pages) draws the same entries and edges in their own colours, so a drawing
always agrees with the report.
"""

from __future__ import annotations

from dataclasses import dataclass

from resolver.channeltest.graph import SKIP_RANGE, ChannelGraph

STRANDED = "stranded"
"""An entry other than the head with no (non-downgrade) upgrade out of it."""
OFF_HEAD = "off-head"
"""An entry whose upgrades end somewhere other than the head, or go round in a cycle."""
UNREACHABLE = "unreachable"
"""An entry no upgrade leads to although older entries exist (and nobody skips past it)."""
DOWNGRADE = "downgrade"
"""An edge from a bundle to a lower version: pivoter and OLM v1 refuse to follow it."""

MEANINGS = {
    STRANDED: "stranded: users are never upgraded",
    OFF_HEAD: "upgrades do not reach the head",
    UNREACHABLE: "unreachable: no upgrade leads here",
    DOWNGRADE: "downgrade edge (not followed)",
}
"""What each mark means, in the words of a drawing's legend and tooltips."""


@dataclass(frozen=True, slots=True)
class Marks:
    """The marked entries and edges of one channel (entry and bundle names)."""

    stranded: frozenset[str] = frozenset()
    off_head: frozenset[str] = frozenset()
    unreachable: frozenset[str] = frozenset()
    downgrades: frozenset[tuple[str, str]] = frozenset()

    def of(self, name: str) -> list[str]:
        """The marks of entry ``name`` (:data:`STRANDED`, :data:`OFF_HEAD`, :data:`UNREACHABLE`)."""
        return [
            mark
            for mark, names in (
                (STRANDED, self.stranded),
                (OFF_HEAD, self.off_head),
                (UNREACHABLE, self.unreachable),
            )
            if name in names
        ]

    def kinds(self) -> list[str]:
        """The kinds of mark present, in legend order."""
        present = [
            (STRANDED, self.stranded),
            (OFF_HEAD, self.off_head),
            (UNREACHABLE, self.unreachable),
            (DOWNGRADE, self.downgrades),
        ]
        return [mark for mark, found in present if found]


def is_downgrade(graph: ChannelGraph, source: str, target: str) -> bool:
    """Whether the edge ``source`` -> ``target`` leads to a lower version."""
    a, b = graph.versions.get(source), graph.versions.get(target)
    return a is not None and b is not None and b < a


def unreachable_entries(graph: ChannelGraph) -> list[str]:
    """Entries (oldest first) that no non-downgrade upgrade leads to, although older entries
    exist; an entry someone skips past (``skips``, ``skipRange``) is bypassed on purpose."""
    ordered = graph.by_version()
    targets = {e.target for e in graph.edges if not is_downgrade(graph, e.source, e.target)}
    bypassed = {e.source for e in graph.edges if e.kind != "replaces"}
    out = []
    for i, name in enumerate(ordered):
        if i == 0 or name in targets or name in bypassed or graph.versions.get(name) is None:
            continue
        if any(graph.versions.get(n) is not None for n in ordered[:i]):
            out.append(name)
    return out


def channel_marks(graph: ChannelGraph) -> Marks:
    """Every marked entry and edge of ``graph``."""
    stranded, off_head = set(), set()
    head = graph.head
    if head is not None:
        for name in graph.entries:
            if name == head:
                continue
            path = graph.path(name)
            if path.cycle or (path.length and path.end != head):
                off_head.add(name)
            elif path.length == 0:
                stranded.add(name)
    downgrades = {
        (e.source, e.target)
        for e in graph.edges
        if e.kind != SKIP_RANGE and is_downgrade(graph, e.source, e.target)
    }
    return Marks(
        frozenset(stranded),
        frozenset(off_head),
        frozenset(unreachable_entries(graph)),
        frozenset(downgrades),
    )
