"""Checks on one channel's upgrade graph: paths to the head, stranded, skipped, unreachable
entries, downgrade edges and skipRanges that match nothing or reach back in time.

Called by :func:`resolver.channeltest.report.run_catalog_test` for every channel it tests;
each check
returns findings (see :mod:`resolver.channeltest.findings` for the codes).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from resolver.catalog.model import Catalog, Origin
from resolver.channeltest.findings import Finding, Place, finding
from resolver.channeltest.graph import ChannelGraph, Path
from resolver.channeltest.marks import is_downgrade, unreachable_entries
from resolver.rules.inputs import safe_version
from resolver.versions import RangeSyntaxError, Version, parse_range


def check_channel(graph: ChannelGraph, catalog: Catalog, origin: Origin | None) -> list[Finding]:
    """Every finding about the upgrade graph of one channel."""
    out: list[Finding] = []
    out.extend(_paths(graph, origin))
    out.extend(_skipped_and_unreachable(graph, origin))
    out.extend(_downgrades(graph, origin))
    out.extend(_skip_ranges(graph, _package_versions(catalog, graph.package), origin))
    return out


def _where(graph: ChannelGraph) -> str:
    return f"package {graph.package!r}, channel {graph.channel!r}"


def _label(graph: ChannelGraph, name: str) -> str:
    version = graph.versions.get(name)
    return f"{name} ({version})" if version is not None else name


def _paths(graph: ChannelGraph, origin: Origin | None) -> Iterable[Finding]:
    head = graph.head
    if head is None:
        return
    for name in graph.by_version():
        if name == head:
            continue
        path: Path = graph.path(name)
        kw: Place = {
            "package": graph.package,
            "channel": graph.channel,
            "bundle": name,
            "origin": origin,
        }
        if path.cycle:
            loop = " -> ".join([name, *path.steps])
            yield finding(
                "upgrade-cycle",
                f"{_where(graph)}: upgrades from {_label(graph, name)} go round in a cycle: {loop}",
                **kw,
            )
        elif path.length == 0:
            yield finding(
                "stranded-entry",
                f"{_where(graph)}: users of {_label(graph, name)} are never upgraded: no entry "
                f"replaces it, skips it or has a skipRange containing its version (head is "
                f"{_label(graph, head)})",
                **kw,
            )
        elif path.end != head:
            yield finding(
                "no-path-to-head",
                f"{_where(graph)}: upgrades from {_label(graph, name)} stop at "
                f"{_label(graph, path.end)} after {path.length} step(s), not at the head "
                f"{_label(graph, head)}",
                detail=path.end,
                **kw,
            )


def _skipped_and_unreachable(graph: ChannelGraph, origin: Origin | None) -> Iterable[Finding]:
    skipped_by: dict[str, list[str]] = {}
    for entry in graph.entries.values():
        for skip in entry.skips:
            if skip in graph.entries:
                skipped_by.setdefault(skip, []).append(entry.name)
    if skipped_by:
        # One finding per channel: skipping is common practice, a line per entry would drown
        # the rest of the report.
        shown = "; ".join(
            f"{_label(graph, n)} by {', '.join(sorted(by))}" for n, by in sorted(skipped_by.items())
        )
        count = "1 entry is" if len(skipped_by) == 1 else f"{len(skipped_by)} entries are"
        yield finding(
            "skipped-entry",
            f"{_where(graph)}: {count} skipped, so OLM v0 never offers them for a new "
            f"installation: {shown}",
            package=graph.package,
            channel=graph.channel,
            bundle=sorted(skipped_by)[0],
            origin=origin,
        )
    ordered = graph.by_version()
    for name in unreachable_entries(graph):
        before = ordered[: ordered.index(name)]
        older = [n for n in before if graph.versions.get(n) is not None]
        yield finding(
            "unreachable-entry",
            f"{_where(graph)}: no upgrade leads to {_label(graph, name)} although "
            f"{len(older)} older entr{'y' if len(older) == 1 else 'ies'} exist: only a "
            "direct install gets it",
            package=graph.package,
            channel=graph.channel,
            bundle=name,
            origin=origin,
        )


def _downgrades(graph: ChannelGraph, origin: Origin | None) -> Iterable[Finding]:
    for edge in graph.edges:
        if edge.kind == "skipRange":
            continue  # reported once per skipRange by _skip_ranges
        if is_downgrade(graph, edge.source, edge.target):
            yield finding(
                "downgrade-edge",
                f"{_where(graph)}: {edge.target} ({graph.versions[edge.target]}) {edge.kind} "
                f"{edge.source} ({graph.versions[edge.source]}), a newer version",
                package=graph.package,
                channel=graph.channel,
                bundle=edge.target,
                origin=origin,
                detail=f"{edge.kind} {edge.source}",
            )


def _package_versions(catalog: Catalog, package: str) -> list[tuple[str, Version]]:
    out = []
    for bundle in catalog.bundles_of(package):
        version = safe_version(bundle.version)
        if version is not None:
            out.append((bundle.name, version))
    return out


def _skip_ranges(
    graph: ChannelGraph, versions: Sequence[tuple[str, Version]], origin: Origin | None
) -> Iterable[Finding]:
    for entry in graph.entries.values():
        if not entry.skip_range:
            continue
        try:
            rng = parse_range(entry.skip_range, "blang")
        except RangeSyntaxError:
            continue  # validation reports it
        matched = [(n, v) for n, v in versions if rng.contains(v)]
        kw: Place = {
            "package": graph.package,
            "channel": graph.channel,
            "bundle": entry.name,
            "origin": origin,
        }
        if not matched:
            yield finding(
                "skiprange-matches-nothing",
                f"{_where(graph)}: skipRange {entry.skip_range!r} of {_label(graph, entry.name)} "
                "contains no version of any bundle of the package",
                detail=entry.skip_range,
                **kw,
            )
            continue
        mine = graph.versions.get(entry.name)
        if mine is None:
            continue
        newer = sorted((v, n) for n, v in matched if v >= mine)
        if newer:
            shown = ", ".join(f"{n} ({v})" for v, n in newer[:5])
            more = f" and {len(newer) - 5} more" if len(newer) > 5 else ""
            yield finding(
                "skiprange-covers-newer",
                f"{_where(graph)}: skipRange {entry.skip_range!r} of {_label(graph, entry.name)} "
                f"contains its own or newer versions: {shown}{more}",
                detail=entry.skip_range,
                **kw,
            )
