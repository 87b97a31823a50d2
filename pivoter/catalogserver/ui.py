"""A browsable view of the served catalog at ``/ui/``: packages, channels, bundles and their
properties, a channel's upgrade graph, and the ``catalog test`` findings.

Server-rendered HTML (no scripts, one small stylesheet inline); graphs are SVG laid out by
graphviz's ``dot`` when it is installed (``hack/tools.sh graphviz``), else shown as Mermaid text.
Pages: ``/ui/`` (packages), ``/ui/findings``, ``/ui/p/<package>``, ``/ui/p/<package>/c/<channel>``
(+ ``/graph.svg``), ``/ui/p/<package>/b/<bundle>``. The ``catalog test`` report is computed once
per served snapshot; findings are listed once per package and defect (the single findings under
each group). A channel page holds its graph inline, with stranded entries, entries that do not
reach the head, unreachable entries and downgrade edges drawn apart and a legend
(:mod:`resolver.channeltest.render`), and each finding links to its node (``#node-...``, the
node's SVG id), which the page outlines when it is the target. Called by
:mod:`pivoter.catalogserver.httpserver` for paths under ``/ui``.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import quote, unquote

from resolver.catalog.model import Catalog
from resolver.channeltest.graph import channel_graphs, node_id
from resolver.channeltest.grouping import FindingGroup
from resolver.channeltest.marks import (
    DOWNGRADE,
    MEANINGS,
    UNREACHABLE,
    Marks,
    channel_marks,
)
from resolver.channeltest.render import MARK_COLOURS, GraphTooLarge, to_dot, to_mermaid
from resolver.channeltest.report import Report, run_catalog_test

GRAPH_TIMEOUT = 20.0
"""Seconds graphviz may take for one channel's drawing."""

_CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:1.5em;color:#222}
a{color:#0b5cad;text-decoration:none} a:hover{text-decoration:underline}
table{border-collapse:collapse;margin:.5em 0} td,th{border:1px solid #ccc;padding:.2em .5em;
text-align:left;vertical-align:top} th{background:#f3f3f3}
.error{color:#b00020} .warning{color:#8a6d00} .muted{color:#777} nav{margin-bottom:1em}
pre{background:#f7f7f7;padding:.5em;overflow:auto;max-height:30em} .graph{overflow:auto}
details{margin:.2em 0} .legend span{display:inline-block;margin-right:1.2em}
.swatch{display:inline-block;width:1.4em;height:.9em;vertical-align:middle;margin-right:.3em}
g.node:target path,g.node:target polygon{stroke:#0b5cad;stroke-width:5px}
"""

_UNSAFE_SVG = re.compile(r"<script|<foreignObject|\son[a-z]+\s*=|javascript:", re.IGNORECASE)
"""What graphviz never writes and an inline SVG must not hold (the page stays script-free)."""


@dataclass(frozen=True, slots=True)
class Page:
    """An HTTP answer: status, body and content type."""

    status: HTTPStatus
    body: bytes
    content_type: str = "text/html; charset=utf-8"


class _Reports:
    """The ``catalog test`` report of each catalog served, computed on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._catalog: Catalog | None = None
        self._report: Report | None = None

    def get(self, catalog: Catalog) -> Report:
        with self._lock:
            if self._catalog is not catalog or self._report is None:
                self._report = run_catalog_test(catalog)
                self._catalog = catalog
            return self._report


_REPORTS = _Reports()


def _e(text: object) -> str:
    return html.escape(str(text))


def _u(text: str) -> str:
    return quote(text, safe="")


def _layout(title: str, body: str, crumbs: list[tuple[str, str]]) -> Page:
    nav = " / ".join(f'<a href="{href}">{_e(label)}</a>' for label, href in crumbs)
    text = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
        f"<style>{_CSS}</style></head><body><nav>{nav}</nav><h1>{_e(title)}</h1>{body}"
        "</body></html>"
    )
    return Page(HTTPStatus.OK, text.encode())


def _not_found(what: str) -> Page:
    page = _layout("Not found", f"<p>{_e(what)}</p>", [("packages", "/ui/")])
    return Page(HTTPStatus.NOT_FOUND, page.body)


def render(path: str, catalog: Catalog, name: str) -> Page:
    """The page for ``path`` (a URL path starting with ``/ui``) of the served ``catalog``."""
    parts = [unquote(p) for p in path.split("/") if p][1:]
    if not parts:
        return _index(catalog, name)
    if parts == ["findings"]:
        return _findings(catalog, name)
    if len(parts) >= 2 and parts[0] == "p":
        package = parts[1]
        if catalog.package(package) is None and not catalog.bundles_of(package):
            return _not_found(f"no package {package!r} in catalog {name}")
        rest = parts[2:]
        if not rest:
            return _package(catalog, package)
        if len(rest) == 2 and rest[0] == "b":
            return _bundle(catalog, package, rest[1])
        if rest[0] == "c" and len(rest) in (2, 3):
            if catalog.channel(package, rest[1]) is None:
                return _not_found(f"package {package!r} has no channel {rest[1]!r}")
            if len(rest) == 3 and rest[2] == "graph.svg":
                return _graph_svg(catalog, package, rest[1])
            if len(rest) == 2:
                return _channel(catalog, package, rest[1])
    return _not_found(f"no page {path}")


def _index(catalog: Catalog, name: str) -> Page:
    report = _REPORTS.get(catalog)
    errors = {f.package for f in report.errors}
    counts = report.counts()
    rows = []
    for pkg in sorted(catalog.packages, key=lambda p: p.name):
        channels = catalog.channels_of(pkg.name)
        mark = ' <span class="error">errors</span>' if pkg.name in errors else ""
        rows.append(
            f'<tr><td><a href="/ui/p/{_u(pkg.name)}">{_e(pkg.name)}</a>{mark}</td>'
            f"<td>{_e(pkg.default_channel)}</td><td>{len(channels)}</td>"
            f"<td>{len(catalog.bundles_of(pkg.name))}</td></tr>"
        )
    body = (
        f"<p>Catalog <b>{_e(name)}</b>: {len(catalog.packages)} packages. "
        f'<a href="/ui/findings">catalog test findings</a>: '
        f'<span class="error">{counts["errors"]} error(s)</span>, '
        f'<span class="warning">{counts["warnings"]} warning(s)</span> '
        f'<span class="muted">(from {counts["error_findings"]} and '
        f"{counts['warning_findings']} single findings)</span>.</p>"
        "<table><tr><th>package</th><th>default channel</th><th>channels</th><th>bundles</th>"
        f"</tr>{''.join(rows)}</table>"
    )
    return _layout(f"Catalog {name}", body, [("packages", "/ui/")])


def _node_href(group: FindingGroup, here: tuple[str, str] | None) -> str:
    """Where a finding's node is drawn: ``#node-...`` on its own channel page, else that page."""
    node = group.node
    first = group.findings[0]
    channel = group.channel or first.channel
    if not node or not group.package or not channel:
        return ""
    if here == (group.package, channel):
        return f"#{node}"
    return f"/ui/p/{_u(group.package)}/c/{_u(channel)}#{node}"


def _finding_rows(groups: list[FindingGroup], here: tuple[str, str] | None = None) -> str:
    rows = []
    for g in groups:
        where = ""
        if g.package:
            where = f'<a href="/ui/p/{_u(g.package)}">{_e(g.package)}</a>'
            if g.channel:
                href = f"/ui/p/{_u(g.package)}/c/{_u(g.channel)}"
                where += f' / <a href="{href}">{_e(g.channel)}</a>'
        node = _node_href(g, here)
        if node:
            where += f' / <a class="node-link" href="{node}">{_e(g.findings[0].bundle)}</a>'
        message = _e(g.message)
        if len(g.findings) > 1:
            items = "".join(f"<li>{_e(f.message)}</li>" for f in g.findings)
            message += (
                f"<details><summary>{len(g.findings)} findings</summary><ul>{items}</ul></details>"
            )
        rows.append(
            f'<tr><td class="{_e(g.severity)}">{_e(g.severity)}</td><td>{_e(g.code)}</td>'
            f"<td>{where}</td><td>{message}</td></tr>"
        )
    head = "<tr><th>severity</th><th>code</th><th>where</th><th>message</th></tr>"
    return f"<table>{head}{''.join(rows)}</table>" if rows else "<p>No findings.</p>"


def _findings(catalog: Catalog, name: str) -> Page:
    report = _REPORTS.get(catalog)
    groups = report.groups()
    errors = [g for g in groups if g.severity == "error"]
    warnings = [g for g in groups if g.severity != "error"]
    body = (
        f"<h2 class='error'>Errors ({len(errors)})</h2>{_finding_rows(errors)}"
        f"<h2 class='warning'>Warnings ({len(warnings)})</h2>"
        f"{_finding_rows(warnings)}"
    )
    return _layout(f"catalog test: {name}", body, [("packages", "/ui/"), ("findings", "")])


def _package(catalog: Catalog, package: str) -> Page:
    pkg = catalog.package(package)
    report = _REPORTS.get(catalog)
    rows = []
    for g in report.graphs:
        if g.package != package:
            continue
        default = " (default)" if pkg is not None and pkg.default_channel == g.channel else ""
        head = g.head or ""
        rows.append(
            f'<tr><td><a href="/ui/p/{_u(package)}/c/{_u(g.channel)}">{_e(g.channel)}</a>'
            f'{default}</td><td><a href="/ui/p/{_u(package)}/b/{_u(head)}">{_e(head)}</a></td>'
            f"<td>{len(g.entries)}</td></tr>"
        )
    bundles = "".join(
        f'<li><a href="/ui/p/{_u(package)}/b/{_u(b.name)}">{_e(b.name)}</a> '
        f'<span class="muted">{_e(b.version)}</span></li>'
        for b in sorted(catalog.bundles_of(package), key=lambda b: b.name)
    )
    mine = [g for g in report.groups() if g.package == package]
    description = _e(pkg.description[:2000]) if pkg is not None else ""
    body = (
        f"<pre>{description}</pre>" * bool(description)
        + "<h2>Channels</h2><table><tr><th>channel</th><th>head</th><th>entries</th></tr>"
        + "".join(rows)
        + "</table><h2>Findings</h2>"
        + _finding_rows(mine)
        + f"<h2>Bundles</h2><ul>{bundles}</ul>"
    )
    return _layout(f"Package {package}", body, [("packages", "/ui/"), (package, "")])


def _legend(marks: Marks) -> str:
    """The marks of this channel in the drawing's colours, for when the drawing is not inline
    (graphviz draws its own legend below the graph)."""
    spans = []
    for kind in marks.kinds():
        fill, line = MARK_COLOURS[kind]
        dash = "dashed" if kind == UNREACHABLE else "solid"
        spans.append(
            f'<span class="mark-{kind}"><span class="swatch" style="background:'
            f'{fill or "#fff"};border:2px {dash} {line}"></span>{_e(MEANINGS[kind])}</span>'
        )
    return f'<p class="legend">{"".join(spans)}</p>' if spans else ""


def _channel(catalog: Catalog, package: str, channel: str) -> Page:
    report = _REPORTS.get(catalog)
    graph = report.graph(package, channel)
    if graph is None:
        return _not_found(f"package {package!r} has no channel {channel!r}")
    svg_href = f"/ui/p/{_u(package)}/c/{_u(channel)}/graph.svg"
    marks = channel_marks(graph)
    rows = []
    for name in reversed(graph.by_version()):
        path = graph.path(name)
        route = " → ".join(path.steps) or "—"
        ok = path.end == graph.head and not path.cycle
        flag = (
            ""
            if ok or name == graph.head
            else ' <span class="error">does not reach the head</span>'
        )
        kinds = marks.of(name)
        classes = " ".join(f"mark-{k}" for k in kinds)
        shown = ", ".join(MEANINGS[k] for k in kinds)
        node = node_id(channel, name)
        rows.append(
            f'<tr class="{classes}"><td><a href="/ui/p/{_u(package)}/b/{_u(name)}">{_e(name)}</a>'
            f"</td><td>{_e(graph.versions.get(name) or '')}</td><td>{path.length}</td>"
            f"<td>{_e(route)}{flag}</td>"
            f'<td><a href="#{node}">{_e(shown) or "node"}</a></td></tr>'
        )
    downgrades = "".join(f"<li>{_e(s)} → {_e(t)}</li>" for s, t in sorted(marks.downgrades))
    mine = [g for g in report.groups() if g.package == package and g.channel == channel]
    drawing = _inline_graph(catalog, package, channel, svg_href)
    if not drawing.startswith("<svg"):
        drawing = _legend(marks) + drawing
    body = (
        f"<p>Head: <b>{_e(graph.head or 'none')}</b>. Solid: replaces; dotted: skips; dashed: "
        f'skipRange. <a href="{svg_href}">The graph alone (SVG)</a>.</p>'
        f'<div class="graph" id="graph">{drawing}</div>'
        f"<h2>Findings</h2>{_finding_rows(mine, (package, channel))}"
        + (f"<h2>{_e(MEANINGS[DOWNGRADE])}</h2><ul>{downgrades}</ul>" if downgrades else "")
        + "<h2>Paths to the head</h2><table><tr><th>installed</th><th>version</th><th>steps</th>"
        f"<th>path</th><th>drawn</th></tr>{''.join(rows)}</table>"
    )
    crumbs = [("packages", "/ui/"), (package, f"/ui/p/{_u(package)}"), (channel, "")]
    return _layout(f"Channel {channel} of {package}", body, crumbs)


def _layout_svg(catalog: Catalog, package: str, channel: str) -> tuple[bytes, bool]:
    """The channel's drawing as SVG, and whether graphviz drew it (False: a message drawn as
    SVG text, e.g. graphviz missing, too large, too slow)."""
    graphs = channel_graphs(catalog, package, channel)
    pkg = catalog.package(package)
    default = pkg.default_channel if pkg is not None else ""
    try:
        text = to_dot(graphs, default)
    except GraphTooLarge as err:
        return _svg_message(str(err)).body, False
    dot = shutil.which("dot")
    if dot is None:
        message = "graphviz is not installed; Mermaid:\n" + to_mermaid(graphs, default)
        return _svg_message(message).body, False
    try:
        done = subprocess.run(
            [dot, "-Tsvg"],
            input=text.encode(),
            capture_output=True,
            timeout=GRAPH_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        message = f"graphviz took more than {GRAPH_TIMEOUT:g} s for this channel"
        return _svg_message(message).body, False
    if done.returncode != 0:
        return _svg_message("graphviz failed: " + done.stderr.decode(errors="replace")).body, False
    return done.stdout, True


def _inline_graph(catalog: Catalog, package: str, channel: str, svg_href: str) -> str:
    """The drawing inline (so ``#node-...`` links reach its nodes), or as an image when it is
    not graphviz's own SVG or holds anything a script-free page must not."""
    svg, drawn = _layout_svg(catalog, package, channel)
    text = svg.decode(errors="replace")
    start = text.find("<svg")
    if not drawn or start < 0 or _UNSAFE_SVG.search(text):
        return f'<img alt="upgrade graph of {_e(channel)}" src="{svg_href}">'
    return text[start:]


def _graph_svg(catalog: Catalog, package: str, channel: str) -> Page:
    svg, _ = _layout_svg(catalog, package, channel)
    return Page(HTTPStatus.OK, svg, "image/svg+xml")


def _svg_message(text: str) -> Page:
    lines = text.splitlines()[:40]
    tspans = "".join(
        f'<text x="10" y="{20 + 16 * i}" font-family="monospace" font-size="12">{_e(line)}</text>'
        for i, line in enumerate(lines)
    )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="900" height="{40 + 16 * len(lines)}">'
        f"{tspans}</svg>"
    )
    return Page(HTTPStatus.OK, svg.encode(), "image/svg+xml")


def _bundle(catalog: Catalog, package: str, name: str) -> Page:
    bundle = catalog.bundle(package, name)
    if bundle is None:
        return _not_found(f"package {package!r} has no bundle {name!r}")
    channels = [
        c.name for c in catalog.channels_of(package) if any(e.name == name for e in c.entries)
    ]
    links = ", ".join(
        f'<a href="/ui/p/{_u(package)}/c/{_u(c)}">{_e(c)}</a>' for c in sorted(channels)
    )
    props = "".join(
        f"<tr><td>{_e(p.type)}</td><td><pre>{_e(_short(p.value))}</pre></td></tr>"
        for p in bundle.properties
    )
    related = "".join(f"<li>{_e(r.name)} {_e(r.image)}</li>" for r in bundle.related_images)
    body = (
        f"<p>Version <b>{_e(bundle.version)}</b>; image <code>{_e(bundle.image)}</code>; "
        f"channels: {links or 'none'}</p><h2>Properties</h2><table><tr><th>type</th>"
        f"<th>value</th></tr>{props}</table><h2>Related images</h2><ul>{related}</ul>"
    )
    crumbs = [("packages", "/ui/"), (package, f"/ui/p/{_u(package)}"), (name, "")]
    return _layout(f"Bundle {name}", body, crumbs)


def _short(value: object) -> str:
    text = json.dumps(value, indent=1, sort_keys=True, default=str)
    return text if len(text) <= 4000 else text[:4000] + "\n… (truncated)"
