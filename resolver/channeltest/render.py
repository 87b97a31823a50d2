"""A package's upgrade graph as text for graphviz (DOT) and Mermaid.

One node per bundle (label: version, and the bundle name when it is not ``<package>.v<version>``),
laid out left to right, oldest version first; one cluster per channel when several are drawn
(a bundle in several channels is drawn once per channel, so each cluster reads on its own).
Heads have a double border, the default channel's cluster is bold, deprecated bundles are grey
with a ``deprecated`` line. Edges: ``replaces`` solid, ``skips`` dotted, ``skipRange`` dashed and
drawn **once per skipRange** (from the oldest bundle it matches, labelled with the range and how
many bundles it covers) instead of once per matched bundle, which keeps 100+ bundle packages
legible.

The defects of :mod:`resolver.channeltest.marks` are drawn apart, with a legend below the drawing
naming the ones present: stranded entries red, entries whose upgrades do not reach the head
orange, unreachable entries with a dashed purple border, downgrade edges bold red and labelled.
Every node has the id :func:`resolver.channeltest.graph.node_id` (the SVG element's ``id``), so a
finding links to its node. Called by ``pivoter catalog graph`` and the UI.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from resolver.channeltest.graph import REPLACES, SKIP_RANGE, SKIPS, ChannelGraph, Edge, node_id
from resolver.channeltest.marks import (
    DOWNGRADE,
    MEANINGS,
    OFF_HEAD,
    STRANDED,
    UNREACHABLE,
    Marks,
    channel_marks,
)

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


MARK_COLOURS = {
    STRANDED: ("#f8c4c4", "#b00020"),
    OFF_HEAD: ("#fde2b8", "#c25e00"),
    UNREACHABLE: ("", "#6a3d9a"),
    DOWNGRADE: ("", "#b00020"),
}
"""(fill, line) colour of each mark; the legend and the UI's page use the same."""


def _node_attrs(g: ChannelGraph, name: str, marks: Marks) -> list[str]:
    mine = marks.of(name)
    tooltip = "\\n".join([name, *(MEANINGS[m] for m in mine)])
    attrs = [
        f"label={_quote(_label(g, name))}",
        f"tooltip={_quote(tooltip)}",
        f"id={_quote(node_id(g.channel, name))}",
    ]
    if name == g.head:
        attrs.append('peripheries=2 fillcolor="#d9f2d9"')
    if name in g.deprecated:
        attrs.append('fillcolor="#dddddd" fontcolor="#666666"')
    for mark in (STRANDED, OFF_HEAD):
        if mark in mine:
            fill, line = MARK_COLOURS[mark]
            attrs.append(f'fillcolor="{fill}" color="{line}" penwidth=2')
    if UNREACHABLE in mine:
        line = MARK_COLOURS[UNREACHABLE][1]
        attrs.append(f'style="rounded,filled,dashed" color="{line}" penwidth=2')
    return attrs


def _legend(kinds: Sequence[str]) -> str:
    """An HTML-like graph label: one row per kind of mark present."""
    rows = []
    for kind in kinds:
        fill, line = MARK_COLOURS[kind]
        cell = f'<td bgcolor="{fill or "#ffffff"}" color="{line}" border="2" width="24"></td>'
        if kind == DOWNGRADE:
            cell = f'<td width="24"><font color="{line}"><b>&rarr;</b></font></td>'
        rows.append(f'<tr>{cell}<td align="left">{MEANINGS[kind]}</td></tr>')
    title = '<tr><td colspan="2" align="left"><b>legend</b></td></tr>'
    return f'<<table border="0" cellspacing="4" cellborder="0">{title}{"".join(rows)}</table>>'


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
    kinds: set[str] = set()
    for ci, g in enumerate(graphs):
        prefix = f"c{ci}_"
        indent = "    " if clustered else "  "
        if clustered:
            bold = " (default)" if g.channel == default_channel else ""
            dep = " (deprecated)" if g.channel_deprecated else ""
            style = "bold" if g.channel == default_channel else "solid"
            lines.append(f"  subgraph cluster_{ci} {{")
            lines.append(f"    label={_quote(f'channel {g.channel}{bold}{dep}')}; style={style};")
        marks = channel_marks(g)
        kinds.update(marks.kinds())
        for name in g.by_version():
            attrs = _node_attrs(g, name, marks)
            lines.append(f"{indent}{_quote(prefix + name)} [{' '.join(attrs)}];")
        if clustered:
            lines.append("  }")
        for e in drawn_edges(g):
            attrs = [_EDGE_STYLE[e.kind]]
            label = e.label
            if (e.source, e.target) in marks.downgrades:
                colour = MARK_COLOURS[DOWNGRADE][1]
                attrs = [f'style=bold color="{colour}" fontcolor="{colour}" penwidth=2']
                label = f"{label} downgrade".strip()
            if label:
                attrs.append(f"label={_quote(label)}")
            if e.kind != REPLACES:
                attrs.append("constraint=false" if e.kind == SKIPS else "weight=0")
            lines.append(
                f"  {_quote(prefix + e.source)} -> {_quote(prefix + e.target)} [{' '.join(attrs)}];"
            )
        _order_chain(lines, g, prefix)
    if kinds:
        order = [k for k in (STRANDED, OFF_HEAD, UNREACHABLE, DOWNGRADE) if k in kinds]
        lines.append(f"  labelloc=b; labeljust=l; label={_legend(order)};")
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
    classes: dict[str, list[str]] = {"head": [], "deprecated": []}
    classes.update({mark: [] for mark in (STRANDED, OFF_HEAD, UNREACHABLE)})
    downgrade_links: list[int] = []
    link = 0
    for ci, g in enumerate(graphs):

        def node(name: str, ci: int = ci) -> str:
            return f"c{ci}_" + _MERMAID_ID.sub("_", name)

        marks = channel_marks(g)
        title = g.channel + (" (default)" if g.channel == default_channel else "")
        lines.append(f'  subgraph ch{ci}["channel {_mm(title)}"]')
        for name in g.by_version():
            label = _label(g, name).replace("\\n", "<br/>")
            lines.append(f'    {node(name)}["{_mm(label)}"]')
            if name == g.head:
                classes["head"].append(node(name))
            if name in g.deprecated:
                classes["deprecated"].append(node(name))
            for mark in marks.of(name):
                classes[mark].append(node(name))
        lines.append("  end")
        for e in drawn_edges(g):
            text = e.kind if not e.label else e.label
            if (e.source, e.target) in marks.downgrades:
                text = f"{text} downgrade"
                downgrade_links.append(link)
            label = f'|"{_mm(text)}"|' if e.kind != REPLACES or text != e.kind else ""
            lines.append(f"  {node(e.source)} {arrows[e.kind]}{label} {node(e.target)}")
            link += 1
    for name, style in _MERMAID_CLASSES.items():
        lines.append(f"  classDef {name.replace('-', '')} {style}")
    for name, nodes in classes.items():
        if nodes:
            lines.append(f"  class {','.join(nodes)} {name.replace('-', '')}")
    colour = MARK_COLOURS[DOWNGRADE][1]
    for index in downgrade_links:
        lines.append(f"  linkStyle {index} stroke:{colour},stroke-width:3px,color:{colour}")
    return "\n".join(lines) + "\n"


_MERMAID_CLASSES = {
    "head": "stroke-width:3px,fill:#d9f2d9",
    "deprecated": "fill:#dddddd,color:#666666",
    **{
        mark: f"fill:{MARK_COLOURS[mark][0]},stroke:{MARK_COLOURS[mark][1]},stroke-width:2px"
        for mark in (STRANDED, OFF_HEAD)
    },
    UNREACHABLE: f"stroke:{MARK_COLOURS[UNREACHABLE][1]},stroke-width:2px,stroke-dasharray:5 5",
}
"""Mermaid class of heads, deprecated bundles and each mark (named without its ``-``)."""


def _mm(text: str) -> str:
    return text.replace('"', "#quot;")
