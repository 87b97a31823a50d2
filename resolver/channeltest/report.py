"""``catalog test`` as a library call: validation, then every channel, package and cross-package
check, and the upgrade paths of every entry.

:func:`run_catalog_test` returns a :class:`Report`: findings (validation and load problems first,
then errors, then warnings) and, per channel, every entry's next upgrade and path to the head.
:meth:`Report.groups` says them once per package and defect
(:mod:`resolver.channeltest.grouping`); the summary counts groups. Called by ``pivoter catalog
test``, the template checks, the ``/ui/`` pages, the bench and the tests.
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
from resolver.channeltest.grouping import FindingGroup, group_findings
from resolver.channeltest.locate import locate
from resolver.channeltest.packages import check_package
from resolver.rules.inputs import safe_version
from resolver.versions import Version

VALIDATION_PREFIX = "validation."


@dataclass(slots=True)
class Report:
    """What ``catalog test`` found in one catalog."""

    catalog: str
    findings: list[Finding]
    graphs: list[ChannelGraph] = field(default_factory=list)
    defaults: dict[str, str] = field(default_factory=dict)
    versions: dict[tuple[str, str], Version] = field(default_factory=dict)
    """(package, bundle) -> version, for every bundle of the catalog with a valid version."""
    changed: dict[str, Any] | None = None
    """With ``--changed-since``/``--changed-files``: the ref, the changed files, the packages
    they touch and the other packages with findings the change introduced
    (:mod:`resolver.channeltest.changes`)."""

    def version_of(self, package: str, bundle: str) -> Version | None:
        """The version of ``bundle`` of ``package`` (None when unknown)."""
        return self.versions.get((package, bundle))

    def groups(self) -> list[FindingGroup]:
        """The findings once per package and defect (errors first, as the findings are)."""
        heads = {(g.package, g.channel): g.head for g in self.graphs if g.head}
        return group_findings(self.findings, self.version_of, heads)

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
        """The whole report as plain data: every single finding in ``errors``/``warnings`` (as
        before grouping), the groups in ``groups`` and both counts in ``counts``."""
        groups = self.groups()
        return {
            "catalog": self.catalog,
            "passed": not self.errors,
            "errors": [f.to_dict() for f in self.errors],
            "warnings": [f.to_dict() for f in self.warnings],
            "groups": [g.to_dict() for g in groups],
            "counts": self.counts(groups),
            "channels": self.channels_data(),
            "summary": self.summary(groups),
        } | ({"changed": self.changed} if self.changed is not None else {})

    def counts(self, groups: list[FindingGroup] | None = None) -> dict[str, int]:
        """Grouped errors and warnings (``errors``, ``warnings``) and single findings
        (``error_findings``, ``warning_findings``)."""
        groups = self.groups() if groups is None else groups
        return {
            "errors": sum(g.severity == ERROR for g in groups),
            "warnings": sum(g.severity == WARNING for g in groups),
            "error_findings": len(self.errors),
            "warning_findings": len(self.warnings),
        }

    def summary(self, groups: list[FindingGroup] | None = None) -> str:
        """One line: how many channels, errors and warnings (grouped; single findings after)."""
        c = self.counts(groups)
        text = (
            f"{self.catalog}: {len(self.graphs)} channel(s) tested, "
            f"{c['errors']} error(s), {c['warnings']} warning(s)"
        )
        if (c["errors"], c["warnings"]) != (c["error_findings"], c["warning_findings"]):
            text += f" (from {c['error_findings']} and {c['warning_findings']} single findings)"
        return text


def run_catalog_test(
    catalog: Catalog,
    *,
    others: Sequence[Catalog] = (),
    package: str | None = None,
    channel: str | None = None,
    load_problems: Sequence[Problem] = (),
    root: str | None = None,
) -> Report:
    """Run every check of ``catalog test`` on ``catalog`` (restricted to a package/channel).

    ``others`` are the ``--with`` catalogs: they may satisfy dependencies and claim APIs.
    ``load_problems`` (from :func:`resolver.channeltest.loading.load_for_test`) are reported first.
    ``root``, the directory the catalog's origins are relative to, lets findings point at their
    entry's line (:func:`resolver.channeltest.locate.locate`).
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
    found = findings + checked
    if root is not None:
        found = locate(found, catalog, root)
    versions = {}
    for b in catalog.bundles:
        version = safe_version(b.version)
        if version is not None:
            versions[(b.package, b.name)] = version
    return Report(catalog.name, found, graphs, defaults, versions)


def _subject_package(subject: object) -> str:
    name = getattr(subject, "package", None)
    if isinstance(name, str) and name:
        return name
    if subject is not None and type(subject).__name__ == "Package":
        return str(getattr(subject, "name", ""))
    return ""
