"""The upgrade graph of one channel, as users who install from that channel experience it.

Edges come from the resolver's successor test, :func:`resolver.rules.channels.is_successor`
(``replaces`` names the installed bundle, ``skips`` lists it, or ``skipRange`` contains its
version), never from a second reading of the entries. The *next upgrade* from an entry is the one
pivoter's default profile picks (``docs/resolution.md``): among the successors in the channel,
never a lower version, bundles without a deprecation first, then the newest version, then the
bundle name. Following next upgrades gives the path a user walks, one resolution per step.

Built by :mod:`resolver.channeltest.checks`, the diff and the graph renderers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from resolver.catalog.model import SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_PACKAGE, Catalog, Channel
from resolver.catalog.model import ChannelEntry as Entry
from resolver.rules.channels import is_successor
from resolver.rules.inputs import safe_version
from resolver.versions import Version

_NODE_UNSAFE = re.compile(r"[^A-Za-z0-9.-]")


def node_id(channel: str, bundle: str) -> str:
    """The id of ``bundle``'s node in the drawing of ``channel`` (SVG ``id``, URL fragment).

    Letters, digits, ``.`` and ``-`` are kept; any other character becomes ``_`` and six hex
    digits, so an escaped name never holds ``__``, the separator: two different (channel,
    bundle) pairs never share an id, and the id needs no escaping in HTML, SVG or a URL.
    """

    def safe(text: str) -> str:
        return _NODE_UNSAFE.sub(lambda m: f"_{ord(m.group()):06x}", text)

    return f"node-{safe(channel)}__{safe(bundle)}"


REPLACES = "replaces"
SKIPS = "skips"
SKIP_RANGE = "skipRange"


@dataclass(frozen=True, slots=True)
class Edge:
    """An upgrade edge: users of ``source`` may move to ``target``; ``kind`` says which field."""

    source: str
    target: str
    kind: str


@dataclass(frozen=True, slots=True)
class Path:
    """The upgrades a user walks from ``start``: ``steps`` (bundle names after ``start``).

    ``end`` is where the walk stops; ``cycle`` is true when it came back to a visited entry.
    """

    start: str
    steps: tuple[str, ...]
    end: str
    cycle: bool = False

    @property
    def length(self) -> int:
        """The number of upgrades (resolutions) on the path."""
        return len(self.steps)


@dataclass(slots=True)
class ChannelGraph:
    """One channel of one package: entries, versions, upgrade edges, head and deprecations.

    ``deprecated`` maps bundle names to their ``olm.deprecations`` message (bundle entries only);
    the channel's and the package's own deprecations are kept apart.
    """

    package: str
    channel: str
    entries: dict[str, Entry]
    versions: dict[str, Version | None]
    edges: list[Edge]
    heads: list[str]
    deprecated: dict[str, str] = field(default_factory=dict)
    channel_deprecated: str = ""
    package_deprecated: str = ""
    _out: dict[str, list[Edge]] = field(default_factory=dict, repr=False)
    _next: dict[str, str | None] = field(default_factory=dict, repr=False)

    @property
    def head(self) -> str | None:
        """The channel head (the newest one when an invalid channel has several)."""
        if not self.heads:
            return None
        return max(self.heads, key=lambda n: (_rank(self.versions.get(n)), n))

    def out_edges(self, name: str) -> list[Edge]:
        """The upgrade edges leaving ``name``."""
        if not self._out:
            for edge in self.edges:
                self._out.setdefault(edge.source, []).append(edge)
        return self._out.get(name, [])

    def in_edges(self, name: str) -> list[Edge]:
        """The upgrade edges arriving at ``name``."""
        return [e for e in self.edges if e.target == name]

    def next_upgrade(self, name: str) -> str | None:
        """The bundle a user of ``name`` is upgraded to next (None: nothing to upgrade to)."""
        if name not in self._next:
            self._next[name] = self._choose(name)
        return self._next[name]

    def _choose(self, name: str) -> str | None:
        mine = self.versions.get(name)
        options = []
        for edge in self.out_edges(name):
            theirs = self.versions.get(edge.target)
            if mine is not None and theirs is not None and theirs < mine:
                continue  # pivoter never downgrades, whatever the edges say
            if edge.target == name:
                continue
            options.append(edge.target)
        if not options:
            return None
        return min(
            options,
            key=lambda n: (n in self.deprecated, _neg_rank(self.versions.get(n)), n),
        )

    def path(self, start: str) -> Path:
        """Follow next upgrades from ``start`` until none is left or an entry repeats."""
        steps: list[str] = []
        seen = {start}
        current = start
        while True:
            nxt = self.next_upgrade(current)
            if nxt is None:
                return Path(start, tuple(steps), current)
            steps.append(nxt)
            if nxt in seen:
                return Path(start, tuple(steps), nxt, cycle=True)
            seen.add(nxt)
            current = nxt

    def reachable_from(self, start: str) -> set[str]:
        """Every entry some sequence of non-downgrading upgrades leads to from ``start``."""
        found: set[str] = set()
        todo = [start]
        while todo:
            name = todo.pop()
            mine = self.versions.get(name)
            for edge in self.out_edges(name):
                theirs = self.versions.get(edge.target)
                if mine is not None and theirs is not None and theirs < mine:
                    continue
                if edge.target not in found:
                    found.add(edge.target)
                    todo.append(edge.target)
        return found

    def with_installed(self, name: str, version: Version | None) -> ChannelGraph:
        """A copy of this graph that also knows an installed bundle the channel no longer lists.

        Its edges into the channel come from the same successor test; the entries and heads are
        unchanged, so :meth:`path` from ``name`` shows where its users go.
        """
        if name in self.versions:
            return self
        extra = [
            Edge(name, e.name, _kind(e, name))
            for e in self.entries.values()
            if is_successor(e, name, version)
        ]
        return ChannelGraph(
            self.package,
            self.channel,
            self.entries,
            {**self.versions, name: version},
            [*self.edges, *extra],
            self.heads,
            self.deprecated,
            self.channel_deprecated,
            self.package_deprecated,
        )

    def by_version(self) -> list[str]:
        """Entry names, oldest version first (unknown versions first, then by name)."""
        return sorted(self.entries, key=lambda n: (_rank(self.versions.get(n)), n))


def _rank(version: Version | None) -> tuple[int, Version]:
    return (0, Version(0)) if version is None else (1, version)


def _neg_rank(version: Version | None) -> tuple[int, _Desc]:
    return (1, _Desc(Version(0))) if version is None else (0, _Desc(version))


@dataclass(frozen=True, slots=True)
class _Desc:
    """A version that sorts in descending order."""

    version: Version

    def __lt__(self, other: _Desc) -> bool:
        return self.version > other.version


def build_channel_graph(catalog: Catalog, channel: Channel) -> ChannelGraph:
    """Build the upgrade graph of ``channel`` (a channel of ``catalog``)."""
    entries = {e.name: e for e in channel.entries}
    versions: dict[str, Version | None] = {}
    for name in entries:
        bundle = catalog.bundle(channel.package, name)
        versions[name] = safe_version(bundle.version) if bundle is not None else None
    edges = list(_edges(entries, versions))
    incoming = {e.replaces for e in entries.values() if e.replaces}
    incoming.update(s for e in entries.values() for s in e.skips)
    heads = sorted(n for n in entries if n not in incoming)
    graph = ChannelGraph(channel.package, channel.name, entries, versions, edges, heads)
    _apply_deprecations(catalog, graph)
    return graph


def _edges(entries: Mapping[str, Entry], versions: Mapping[str, Version | None]) -> Iterable[Edge]:
    for target in entries.values():
        for source, version in versions.items():
            if source == target.name or not is_successor(target, source, version):
                continue
            yield Edge(source, target.name, _kind(target, source))


def _kind(target: Entry, source: str) -> str:
    """Which field of ``target`` made the successor test pass for ``source`` (for display)."""
    if target.replaces == source:
        return REPLACES
    if source in target.skips:
        return SKIPS
    return SKIP_RANGE


def _apply_deprecations(catalog: Catalog, graph: ChannelGraph) -> None:
    dep = catalog.deprecation_of(graph.package)
    if dep is None:
        return
    for entry in dep.entries:
        message = entry.message or "deprecated"
        if entry.schema == SCHEMA_PACKAGE:
            graph.package_deprecated = message
        elif entry.schema == SCHEMA_CHANNEL and entry.name == graph.channel:
            graph.channel_deprecated = message
        elif entry.schema == SCHEMA_BUNDLE and entry.name in graph.entries:
            graph.deprecated[entry.name] = message


def channel_graphs(
    catalog: Catalog, package: str | None = None, channel: str | None = None
) -> list[ChannelGraph]:
    """The graphs of every channel of ``catalog`` (optionally one package, one channel)."""
    graphs = []
    for ch in catalog.channels:
        if package is not None and ch.package != package:
            continue
        if channel is not None and ch.name != channel:
            continue
        graphs.append(build_channel_graph(catalog, ch))
    return graphs
