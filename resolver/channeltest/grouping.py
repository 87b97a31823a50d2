"""One finding per package and defect: the findings of one code in one package (and channel) as a
group that names the bundles and the APIs or edges it covers.

``catalog test`` checks bundle by bundle and requirement by requirement, so one missing API of a
package with nine bundles is nine findings, three missing APIs twenty-seven. A
:class:`FindingGroup` gathers the findings of one code, one package and one channel (channel ""
for package and bundle codes) and says it once: "alloydb-omni-operator 1.3.0-1.7.1 (9 bundles)
require cert-manager.io/v1 Certificate, ClusterIssuer, Issuer; no catalog tested provides
them". A group of one finding keeps that finding's message. Findings without a package
(``validation.load``, ``validation.io``) and ``expectation-failed`` are never grouped: each is
its own defect. Called by :class:`resolver.channeltest.report.Report` (summary counts, ``-o json``)
and by the CLI's outputs; ``-v`` prints each group's findings under it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from resolver.catalog.model import Origin
from resolver.channeltest.findings import Finding
from resolver.channeltest.graph import node_id
from resolver.versions import Version

VersionOf = Callable[[str, str], Version | None]
"""(package, bundle) -> the bundle's version, None when unknown."""

UNGROUPED = frozenset({"expectation-failed"})
"""Codes whose findings each stand for themselves (one statement of --expect each)."""


@dataclass(frozen=True, slots=True)
class FindingGroup:
    """The findings of one code in one package (and channel), said once."""

    severity: str
    code: str
    package: str
    channel: str
    message: str
    findings: tuple[Finding, ...]
    bundles: tuple[str, ...]
    """The bundles the findings are about, oldest version first."""

    @property
    def origin(self) -> Origin | None:
        """Where the group points: its first finding's place."""
        return next((f.origin for f in self.findings if f.origin is not None), None)

    @property
    def details(self) -> list[str]:
        """The distinct details of the findings (requirements, edges, ranges), in order."""
        return list(dict.fromkeys(f.detail for f in self.findings if f.detail))

    @property
    def node(self) -> str:
        """The drawing node the group points at (its first bundle in its channel), or ""."""
        first = self.findings[0]
        channel = self.channel or first.channel
        return node_id(channel, first.bundle) if channel and first.bundle else ""

    def to_dict(self) -> dict[str, Any]:
        """The group as plain data (``-o json``: ``groups``); ``findings`` indexes nothing, it
        repeats the grouped findings in full."""
        origin = self.origin
        return {
            "severity": self.severity,
            "code": self.code,
            "package": self.package,
            "channel": self.channel,
            "message": self.message,
            "count": len(self.findings),
            "bundles": list(self.bundles),
            "details": self.details,
            "node": self.node,
            "file": origin.path if origin else "",
            "line": origin.line if origin else 0,
            "findings": [f.to_dict() for f in self.findings],
        }


def group_key(f: Finding) -> tuple[str, ...]:
    """Findings with equal keys form one group."""
    if not f.package or f.code in UNGROUPED:
        return (f.code, f.package, f.channel, f.bundle, f.message)
    return (f.code, f.package, f.channel)


def group_findings(
    findings: Sequence[Finding],
    version_of: VersionOf,
    heads: Mapping[tuple[str, str], str] | None = None,
) -> list[FindingGroup]:
    """Group ``findings`` (kept in their order: a group sits where its first finding was).

    ``heads`` maps (package, channel) to the channel head, named in path findings.
    """
    keyed: dict[tuple[str, ...], list[Finding]] = {}
    for f in findings:
        keyed.setdefault(group_key(f), []).append(f)
    return [_group(members, version_of, heads or {}) for members in keyed.values()]


def singletons(findings: Sequence[Finding]) -> list[FindingGroup]:
    """Each finding as a group of its own (``-v``: the expanded list)."""
    return [
        FindingGroup(
            f.severity,
            f.code,
            f.package,
            f.channel,
            f.message,
            (f,),
            (f.bundle,) if f.bundle else (),
        )
        for f in findings
    ]


def _group(
    members: list[Finding], version_of: VersionOf, heads: Mapping[tuple[str, str], str]
) -> FindingGroup:
    first = members[0]
    bundles = _by_version(first.package, {f.bundle for f in members if f.bundle}, version_of)
    message = first.message
    if len(members) > 1:
        summarise = _SUMMARIES.get(first.code, _generic)
        message = summarise(_Context(first.package, first.channel, members, version_of, heads))
    return FindingGroup(
        first.severity,
        first.code,
        first.package,
        first.channel,
        message,
        tuple(members),
        tuple(bundles),
    )


def _by_version(package: str, names: set[str], version_of: VersionOf) -> list[str]:
    def key(name: str) -> tuple[int, Version, str]:
        v = version_of(package, name)
        return (0, Version(0), name) if v is None else (1, v, name)

    return sorted(names, key=key)


@dataclass(frozen=True, slots=True)
class _Context:
    package: str
    channel: str
    findings: list[Finding]
    version_of: VersionOf
    heads: Mapping[tuple[str, str], str]

    def where(self) -> str:
        if self.channel:
            return f"package {self.package!r}, channel {self.channel!r}"
        return f"package {self.package!r}"

    def short(self, name: str) -> str:
        """A bundle by its version when known, else by name."""
        v = self.version_of(self.package, name)
        return str(v) if v is not None else name

    def span(self, names: set[str] | list[str], noun: str = "bundles") -> str:
        """``1.3.0-1.7.1 (9 bundles)``, ``1.3.0``, or names when versions are unknown."""
        ordered = _by_version(self.package, set(names), self.version_of)
        if len(ordered) == 1:
            return self.short(ordered[0])
        if all(self.version_of(self.package, n) is not None for n in ordered):
            return f"{self.short(ordered[0])}-{self.short(ordered[-1])} ({len(ordered)} {noun})"
        shown = ", ".join(self.short(n) for n in ordered[:5])
        more = f" and {len(ordered) - 5} more" if len(ordered) > 5 else ""
        return f"{shown}{more} ({len(ordered)} {noun})"

    def head(self) -> str:
        head = self.heads.get((self.package, self.channel), "")
        return self.short(head) if head else "unknown"


def _verb(count: int, singular: str, plural: str) -> str:
    return singular if count == 1 else plural


def _apis(details: list[str]) -> str:
    """``a/v1 X, Y and package b >=1`` from ``a/v1 X``, ``a/v1 Y``, ``package b >=1``."""
    by_prefix: dict[str, list[str]] = {}
    for d in details:
        prefix, sep, kind = d.rpartition(" ")
        if sep and "/" in prefix and not prefix.startswith("package "):
            by_prefix.setdefault(prefix, []).append(kind)
        else:
            by_prefix.setdefault(d, [])
    parts = [f"{p} {', '.join(kinds)}" if kinds else p for p, kinds in by_prefix.items()]
    return " and ".join(parts)


def _requirements(ctx: _Context) -> str:
    """Dependency findings: which bundles require what; requirements every bundle shares
    first, then the ones only some bundles have."""
    needs: dict[str, set[str]] = {}
    for f in ctx.findings:
        needs.setdefault(f.detail or f.message, set()).add(f.bundle)
    everyone = {f.bundle for f in ctx.findings}
    common = [r for r, who in needs.items() if who == everyone]
    partial: dict[frozenset[str], list[str]] = {}
    for r, who in needs.items():
        if who != everyone:
            partial.setdefault(frozenset(who), []).append(r)
    role = ""
    if ctx.findings[0].code == "unsatisfied-dependency":
        role = "channel head " if len(everyone) == 1 else "channel heads "
    subject = role + ctx.span(everyone)
    clauses = []
    if common:
        clauses.append(f"{subject} {_verb(len(everyone), 'requires', 'require')} {_apis(common)}")
    else:
        clauses.append(f"{subject} {_verb(len(everyone), 'has', 'have')} unmet requirements")
    for subset, reqs in sorted(partial.items(), key=lambda kv: sorted(kv[0])):
        also = "also " if common else ""
        verb = _verb(len(subset), "requires", "require")
        clauses.append(f"{ctx.span(set(subset))} {also}{verb} {_apis(reqs)}")
    return f"{ctx.package} {'; '.join(clauses)}; no catalog tested provides them"


def _stranded(ctx: _Context) -> str:
    names = {f.bundle for f in ctx.findings}
    return (
        f"{ctx.where()}: users of {ctx.span(names, 'entries')} are never upgraded: no entry "
        f"replaces them, skips them or has a skipRange containing their versions (head is "
        f"{ctx.head()})"
    )


def _no_path(ctx: _Context) -> str:
    ends: dict[str, set[str]] = {}
    for f in ctx.findings:
        ends.setdefault(f.detail, set()).add(f.bundle)
    parts = [
        f"from {ctx.span(who, 'entries')} stop at {ctx.short(end) if end else 'another entry'}"
        for end, who in sorted(ends.items())
    ]
    return f"{ctx.where()}: upgrades {'; '.join(parts)}, not at the head {ctx.head()}"


def _cycle(ctx: _Context) -> str:
    names = {f.bundle for f in ctx.findings}
    return f"{ctx.where()}: upgrades from {ctx.span(names, 'entries')} go round in a cycle"


def _unreachable(ctx: _Context) -> str:
    names = {f.bundle for f in ctx.findings}
    return (
        f"{ctx.where()}: no upgrade leads to {ctx.span(names, 'entries')} although older entries "
        "exist: only a direct install gets them"
    )


def _downgrade(ctx: _Context) -> str:
    edges = "; ".join(f"{ctx.short(f.bundle)} {f.detail}" for f in ctx.findings)
    return f"{ctx.where()}: {len(ctx.findings)} upgrade edges to lower versions: {edges}"


def _skip_ranges(ctx: _Context) -> str:
    shown = "; ".join(f"{f.detail!r} of {ctx.short(f.bundle)}" for f in ctx.findings)
    what = (
        "contain no version of any bundle of the package"
        if ctx.findings[0].code == "skiprange-matches-nothing"
        else "contain their own or newer versions"
    )
    return f"{ctx.where()}: {len(ctx.findings)} skipRanges {what}: {shown}"


def _claimed(ctx: _Context) -> str:
    shown = "; ".join(f.detail or f.message for f in ctx.findings)
    return f"{ctx.where()}: {len(ctx.findings)} APIs are provided by several packages: {shown}"


def _generic(ctx: _Context) -> str:
    names = {f.bundle for f in ctx.findings if f.bundle}
    about = f" ({ctx.span(names)})" if names else ""
    return (
        f"{ctx.where()}: {len(ctx.findings)} findings{about}, the first: {ctx.findings[0].message}"
    )


_SUMMARIES: dict[str, Callable[[_Context], str]] = {
    "unsatisfied-dependency": _requirements,
    "unsatisfied-dependency-old": _requirements,
    "stranded-entry": _stranded,
    "no-path-to-head": _no_path,
    "upgrade-cycle": _cycle,
    "unreachable-entry": _unreachable,
    "downgrade-edge": _downgrade,
    "skiprange-matches-nothing": _skip_ranges,
    "skiprange-covers-newer": _skip_ranges,
    "api-claimed-twice": _claimed,
}
"""How a group of more than one finding of each code is said (others: :func:`_generic`)."""
