"""A package's upgrade graph as text for graphviz (DOT) and Mermaid.

One node per bundle (label: version, and the bundle name when it is not ``<package>.v<version>``),
laid out left to right, oldest version first; one cluster per channel when several are drawn
(a bundle in several channels is drawn once per channel, so each cluster reads on its own).
Heads have a double border, the default channel's cluster is bold, deprecated bundles are grey
with a ``deprecated`` line. Edges: ``replaces`` solid, ``skips`` dotted, ``skipRange`` dashed and
drawn **once per skipRange** (from the oldest bundle it matches, labelled with the range and how
many bundles it covers) instead of once per matched bundle, which keeps 100+ bundle packages
legible. Called by ``pivoter catalog graph`` and the UI.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from resolver.channeltest.graph import REPLACES, SKIP_RANGE, SKIPS, ChannelGraph, Edge

DEFAULT_MAX_NODES = 600
"""Above this many drawn nodes the renderers refuse and say how to narrow the drawing."""


class GraphTooLarge(ValueError):
    """The drawing would be too large to lay out in bounded time; the message says how to narrow."""


@dataclass(frozen=True, slots=True)
class DrawnEdge:
    """An edge as drawn: endpoints, kind, and a label (the range for a skipRange)."""

    source: str
    target: str
    kind: str
    label: str = ""


def drawn_edges(g: ChannelGraph) -> list[DrawnEdge]:
    """The edges of ``g`` to draw: replaces and skips each, one per skipRange."""
    out: list[DrawnEdge] = []
    by_range: dict[str, list[Edge]] = {}
    for e in g.edges:
        if e.kind == SKIP_RANGE:
            by_range.setdefault(e.target, []).append(e)
        else:
            out.append(DrawnEdge(e.source, e.target, e.kind))
    order = {n: i for i, n in enumerate(g.by_version())}
    for target, edges in sorted(by_range.items()):
        oldest = min(edges, key=lambda e: order.get(e.source, 0))
        rng = g.entries[target].skip_range
        out.append(DrawnEdge(oldest.source, target, SKIP_RANGE, f"{rng} ({len(edges)})"))
    return out


def _check_size(graphs: Sequence[ChannelGraph], max_nodes: int) -> None:
    nodes = sum(len(g.entries) for g in graphs)
    if nodes > max_nodes:
        sizes = ", ".join(f"{g.channel} ({len(g.entries)})" for g in graphs)
        raise GraphTooLarge(
            f"{nodes} bundles to draw (channels: {sizes}), more than the limit of {max_nodes}: "
            "narrow it with --channel C, or raise the limit with --max-nodes N (layout time "
            "grows quickly with size)"
        )


def _label(g: ChannelGraph, name: str) -> str:
    version = g.versions.get(name)
    text = str(version) if version is not None else name
    if version is not None and name != f"{g.package}.v{version}":
        text += f"\\n{name}"
    if name in g.deprecated:
        text += "\\n(deprecated)"
    return text


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\\\\n", "\\n") + '"'


_EDGE_STYLE = {
    REPLACES: "style=solid",
    SKIPS: 'style=dotted color="#1f77b4"',
    SKIP_RANGE: 'style=dashed color="#d62728" fontcolor="#d62728"',
}


def to_dot(
    graphs: Sequence[ChannelGraph], default_channel: str = "", max_nodes: int = DEFAULT_MAX_NODES
) -> str:
    """The DOT text of ``graphs`` (channels of one package)."""
    _check_size(graphs, max_nodes)
    package = graphs[0].package if graphs else ""
    lines = [
        f"digraph {_quote(package or 'upgrades')} {{",
        "  rankdir=LR;",
        '  graph [fontname="Helvetica" fontsize=12 nodesep=0.25 ranksep=0.5 newrank=true];',
        '  node [shape=box style="rounded,filled" fillcolor="#ffffff" fontname="Helvetica" '
        "fontsize=10];",
        '  edge [fontname="Helvetica" fontsize=8 arrowsize=0.6];',
    ]
    clustered = len(graphs) > 1
    for ci, g in enumerate(graphs):
        prefix = f"c{ci}_"
        indent = "    " if clustered else "  "
        if clustered:
            bold = " (default)" if g.channel == default_channel else ""
            dep = " (deprecated)" if g.channel_deprecated else ""
            style = "bold" if g.channel == default_channel else "solid"
            lines.append(f"  subgraph cluster_{ci} {{")
            lines.append(f"    label={_quote(f'channel {g.channel}{bold}{dep}')}; style={style};")
        for name in g.by_version():
            attrs = [f"label={_quote(_label(g, name))}", f"tooltip={_quote(name)}"]
            if name == g.head:
                attrs.append('peripheries=2 fillcolor="#d9f2d9"')
            if name in g.deprecated:
                attrs.append('fillcolor="#dddddd" fontcolor="#666666"')
            lines.append(f"{indent}{_quote(prefix + name)} [{' '.join(attrs)}];")
        if clustered:
            lines.append("  }")
        for e in drawn_edges(g):
            attrs = [_EDGE_STYLE[e.kind]]
            if e.label:
                attrs.append(f"label={_quote(e.label)}")
            if e.kind != REPLACES:
                attrs.append("constraint=false" if e.kind == SKIPS else "weight=0")
            lines.append(
                f"  {_quote(prefix + e.source)} -> {_quote(prefix + e.target)} [{' '.join(attrs)}];"
            )
        _order_chain(lines, g, prefix)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _order_chain(lines: list[str], g: ChannelGraph, prefix: str) -> None:
    """Invisible edges between consecutive versions keep the layout oldest-to-newest."""
    names = g.by_version()
    drawn = {(e.source, e.target) for e in g.edges if e.kind == REPLACES}
    for a, b in itertools.pairwise(names):
        if (a, b) not in drawn:
            lines.append(f"  {_quote(prefix + a)} -> {_quote(prefix + b)} [style=invis weight=2];")


_MERMAID_ID = re.compile(r"[^A-Za-z0-9_]")


def to_mermaid(
    graphs: Sequence[ChannelGraph], default_channel: str = "", max_nodes: int = DEFAULT_MAX_NODES
) -> str:
    """The Mermaid flowchart text of ``graphs``."""
    _check_size(graphs, max_nodes)
    lines = ["flowchart LR"]
    arrows = {REPLACES: "-->", SKIPS: "-.->", SKIP_RANGE: "-.->"}
    heads: list[str] = []
    deprecated: list[str] = []
    for ci, g in enumerate(graphs):

        def node(name: str, ci: int = ci) -> str:
            return f"c{ci}_" + _MERMAID_ID.sub("_", name)

        title = g.channel + (" (default)" if g.channel == default_channel else "")
        lines.append(f'  subgraph ch{ci}["channel {_mm(title)}"]')
        for name in g.by_version():
            label = _label(g, name).replace("\\n", "<br/>")
            lines.append(f'    {node(name)}["{_mm(label)}"]')
            if name == g.head:
                heads.append(node(name))
            if name in g.deprecated:
                deprecated.append(node(name))
        lines.append("  end")
        for e in drawn_edges(g):
            label = f'|"{_mm(e.kind if not e.label else e.label)}"|' if e.kind != REPLACES else ""
            lines.append(f"  {node(e.source)} {arrows[e.kind]}{label} {node(e.target)}")
    lines.append("  classDef head stroke-width:3px,fill:#d9f2d9")
    lines.append("  classDef deprecated fill:#dddddd,color:#666666")
    if heads:
        lines.append(f"  class {','.join(heads)} head")
    if deprecated:
        lines.append(f"  class {','.join(deprecated)} deprecated")
    return "\n".join(lines) + "\n"


def _mm(text: str) -> str:
    return text.replace('"', "#quot;")
