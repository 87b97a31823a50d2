"""``catalog test`` as a library call: validation, then every channel, package and cross-package
check, and the upgrade paths of every entry.

:func:`run_catalog_test` returns a :class:`Report`: findings (validation and load problems first,
then errors, then warnings) and, per channel, every entry's next upgrade and path to the head.
Called by ``pivoter catalog test``, the template checks, the bench and the tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from resolver.catalog.errors import Problem
from resolver.catalog.model import Catalog
from resolver.catalog.validate import validate
from resolver.channeltest.checks import check_channel
from resolver.channeltest.dependencies import check_dependencies, check_provided_apis
from resolver.channeltest.findings import ERROR, WARNING, Finding
from resolver.channeltest.graph import ChannelGraph, channel_graphs
from resolver.channeltest.packages import check_package

VALIDATION_PREFIX = "validation."


@dataclass(slots=True)
class Report:
    """What ``catalog test`` found in one catalog."""

    catalog: str
    findings: list[Finding]
    graphs: list[ChannelGraph] = field(default_factory=list)
    defaults: dict[str, str] = field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        """Findings of severity error (validation ones included)."""
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        """Findings of severity warning."""
        return [f for f in self.findings if f.severity == WARNING]

    def graph(self, package: str, channel: str) -> ChannelGraph | None:
        """The graph of one channel, or None."""
        return next((g for g in self.graphs if g.package == package and g.channel == channel), None)

    def channels_data(self) -> list[dict[str, Any]]:
        """Per channel: head, default flag and every entry's path (for ``-o json``)."""
        out = []
        for g in self.graphs:
            entries = []
            for name in reversed(g.by_version()):
                path = g.path(name)
                version = g.versions.get(name)
                entries.append(
                    {
                        "bundle": name,
                        "version": str(version) if version is not None else "",
                        "next": g.next_upgrade(name) or "",
                        "path": list(path.steps),
                        "length": path.length,
                        "reaches_head": path.end == g.head and not path.cycle,
                        "deprecated": name in g.deprecated,
                    }
                )
            out.append(
                {
                    "package": g.package,
                    "channel": g.channel,
                    "default": self.defaults.get(g.package) == g.channel,
                    "head": g.head or "",
                    "deprecated": bool(g.channel_deprecated or g.package_deprecated),
                    "entries": entries,
                }
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """The whole report as plain data."""
        return {
            "catalog": self.catalog,
            "passed": not self.errors,
            "errors": [f.to_dict() for f in self.errors],
            "warnings": [f.to_dict() for f in self.warnings],
            "channels": self.channels_data(),
            "summary": self.summary(),
        }

    def summary(self) -> str:
        """One line: how many channels, errors and warnings."""
        return (
            f"{self.catalog}: {len(self.graphs)} channel(s) tested, "
            f"{len(self.errors)} error(s), {len(self.warnings)} warning(s)"
        )


def run_catalog_test(
    catalog: Catalog,
    *,
    others: Sequence[Catalog] = (),
    package: str | None = None,
    channel: str | None = None,
    load_problems: Sequence[Problem] = (),
) -> Report:
    """Run every check of ``catalog test`` on ``catalog`` (restricted to a package/channel).

    ``others`` are the ``--with`` catalogs: they may satisfy dependencies and claim APIs.
    ``load_problems`` (from :func:`resolver.channeltest.loading.load_for_test`) are reported first.
    """
    findings: list[Finding] = [
        Finding(ERROR, VALIDATION_PREFIX + ("io" if p.io else "load"), p.message, origin=p.origin)
        for p in load_problems
    ]
    for v in validate(catalog):
        subject_package = _subject_package(v.subject)
        if package is not None and subject_package not in ("", package):
            continue
        findings.append(
            Finding(
                ERROR,
                VALIDATION_PREFIX + v.category,
                v.message,
                package=subject_package,
                origin=v.origin,
            )
        )
    graphs = channel_graphs(catalog, package, channel)
    checked: list[Finding] = []
    for g in graphs:
        ch = catalog.channel(g.package, g.channel)
        checked.extend(check_channel(g, catalog, ch.origin if ch else None))
    by_package: dict[str, list[ChannelGraph]] = {}
    for g in graphs:
        by_package.setdefault(g.package, []).append(g)
    for name, pkg_graphs in by_package.items():
        pkg = catalog.package(name)
        if pkg is not None and channel is None:
            checked.extend(check_package(pkg, pkg_graphs))
    heads = {(g.package, g.head) for g in graphs if g.head}
    scope = {package} if package is not None else None
    checked.extend(check_dependencies(catalog, others, heads, scope))
    checked.extend(check_provided_apis(catalog, others, scope))
    checked.sort(key=lambda f: (f.severity != ERROR, f.package, f.channel, f.code, f.bundle))
    defaults = {p.name: p.default_channel for p in catalog.packages}
    return Report(catalog.name, findings + checked, graphs, defaults)


def _subject_package(subject: object) -> str:
    name = getattr(subject, "package", None)
    if isinstance(name, str) and name:
        return name
    if subject is not None and type(subject).__name__ == "Package":
        return str(getattr(subject, "name", ""))
    return ""
