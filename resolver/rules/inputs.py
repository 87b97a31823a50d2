"""What a resolution is asked: catalogs, installed bundles and package requests, and its answer.

These are the profile-independent inputs every profile in :mod:`resolver.profiles` reads; the
CLI builds them from catalog sources and a ResolveSet, the conformance runner from a case's
inline data. :class:`Candidate` indexes one bundle of one catalog with its channels and parsed
version, so profiles never re-scan catalogs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from resolver.catalog.model import (
    GVK,
    PROP_PACKAGE,
    SCHEMA_BUNDLE,
    SCHEMA_CHANNEL,
    SCHEMA_PACKAGE,
    Bundle,
    Catalog,
    ChannelEntry,
    Property,
)
from resolver.rules.reads import Reads
from resolver.rules.selectors import CatalogSelector
from resolver.versions import Version, VersionSyntaxError, parse_version


@dataclass(slots=True)
class CatalogInput:
    """A catalog as a resolution sees it: its name, priority, availability and contents."""

    name: str
    catalog: Catalog
    priority: int = 0
    namespace: str = ""
    available: bool = True
    labels: Mapping[str, str] = field(default_factory=dict)
    """The catalog object's labels: OLM v1 selects ClusterCatalogs by them (the name label
    every ClusterCatalog carries is implied: :func:`resolver.rules.selectors.catalog_labels`)."""


@dataclass(frozen=True, slots=True)
class Installed:
    """A bundle installed on the cluster (OLM v0: a CSV; OLM v1/pivoter: an extension's bundle)."""

    name: str
    package: str = ""
    version: str = ""
    properties: tuple[Property, ...] = ()
    replaces: str = ""
    phase: str = ""
    subscribed_by: str | None = None
    catalog: str = ""
    channel: str = ""

    def as_bundle(self) -> Bundle:
        """The installed bundle as a catalog bundle (for predicates).

        A ResolveSet carries no properties; the package and version still let package ranges
        match the installed bundle.
        """
        props = self.properties
        if self.package and not any(p.type == PROP_PACKAGE for p in props):
            version = {"packageName": self.package, "version": self.version}
            props = (Property(PROP_PACKAGE, version), *props)
        return Bundle(package=self.package, name=self.name, properties=props)


@dataclass(frozen=True, slots=True)
class Held:
    """A bundle another input of the cluster has selected: a fixed choice of this resolution.

    The resolution may depend on it (a shared dependency is satisfied by it, with no second
    copy) but may neither select another bundle of its package nor another package that
    provides one of its APIs. ``holder`` names who holds it in the words an explanation uses
    (``Resolution b``); the pivoter profile honours held bundles, the OLM profiles ignore them.
    """

    name: str
    package: str
    version: str = ""
    holder: str = ""
    properties: tuple[Property, ...] = ()
    """The held bundle's catalog properties when known (the APIs it provides, what it
    requires): used when none of this resolution's catalogs lists the bundle."""

    def as_installed(self) -> Installed:
        """The held bundle in the shape of an installed one (to find it in catalogs)."""
        return Installed(
            name=self.name, package=self.package, version=self.version, properties=self.properties
        )

    def origin(self) -> str:
        """``held at V by HOLDER``: where the choice comes from, as an explanation says it."""
        holder = f" by {self.holder}" if self.holder else ""
        return f"held at {self.version or self.name}{holder}"

    def text(self) -> str:
        """``package P is held at V by HOLDER``."""
        return f"package {self.package} is {self.origin()}"


@dataclass(frozen=True, slots=True)
class PackageRequest:
    """A request to install (or keep) one package: a Subscription or a ClusterExtension."""

    package: str
    channels: tuple[str, ...] = ()
    version_range: str = ""
    upgrade_policy: str = "CatalogProvided"
    name: str = ""
    catalog: str = ""
    starting_bundle: str = ""
    installed_bundle: str = ""
    catalog_selector: CatalogSelector | None = None
    """OLM v1: the catalogs this ClusterExtension may resolve from (None: every catalog)."""


@dataclass(slots=True)
class ResolutionInput:
    """Everything one resolution reads."""

    catalogs: list[CatalogInput]
    requests: list[PackageRequest]
    installed: list[Installed] = field(default_factory=list)
    kube_version: str = ""
    held: list[Held] = field(default_factory=list)
    """Bundles other inputs selected (see :class:`Held`); empty outside the daemon."""
    options: Mapping[str, Any] = field(default_factory=dict)
    reads: Reads | None = None
    """When set, the ``pivoter`` profile notes in it what it read from the catalogs (through
    :class:`Index`; the daemon matches catalog changes against it). The other profiles read
    the catalogs directly and leave it alone: their callers count everything as read."""


@dataclass(frozen=True, slots=True)
class Choice:
    """One selected bundle: where it comes from and, for an upgrade, what it replaces."""

    package: str
    bundle: Bundle
    catalog: str
    channel: str = ""
    replaces: str = ""
    installed: bool = False


@dataclass(frozen=True, slots=True)
class SharedChoice:
    """A held bundle the selection depends on, and the selected packages that require it."""

    held: Held
    required_by: tuple[str, ...]


@dataclass(slots=True)
class Resolution:
    """The answer of a profile: the selected bundles, plus notes for "why not newer".

    ``choices`` are the resolution's own bundles only; held bundles it depends on are listed
    in ``shared``.
    """

    choices: list[Choice]
    why_not: dict[str, list[str]] = field(default_factory=dict)
    shared: list[SharedChoice] = field(default_factory=list)


class ResolutionError(Exception):
    """A resolution that failed outside the SAT solver (bad input, ambiguous catalogs)."""


class Unsatisfiable(Exception):
    """No selection satisfies the request.

    ``lines`` is the minimal explanation (one line per constraint of the MUS); ``summary`` groups
    it for reading (see :mod:`resolver.explain`).
    """

    def __init__(
        self,
        lines: Sequence[str],
        header: str = "constraints not satisfiable",
        summary: Sequence[str] = (),
    ) -> None:
        self.lines = list(lines)
        self.header = header
        self.summary = list(summary) or list(lines)
        super().__init__(self.text())

    def text(self, separator: str = ", ") -> str:
        """The explanation on one line (OLM's format) or with another separator."""
        if not self.lines:
            return self.header
        lead = separator if "\n" in separator else " "
        return f"{self.header}:{lead}" + separator.join(self.lines)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One bundle of one catalog, with its channel entries and parsed version."""

    source: CatalogInput
    bundle: Bundle
    entries: tuple[tuple[str, ChannelEntry], ...]
    version: Version | None

    @property
    def catalog(self) -> str:
        """The catalog name."""
        return self.source.name

    @property
    def package(self) -> str:
        """The package name."""
        return self.bundle.package

    @property
    def name(self) -> str:
        """The bundle name."""
        return self.bundle.name

    @property
    def channels(self) -> tuple[str, ...]:
        """The channels this bundle is in, sorted."""
        return tuple(sorted({c for c, _ in self.entries}))

    def entry(self, channel: str) -> ChannelEntry | None:
        """The bundle's entry in ``channel``, or None."""
        return next((e for c, e in self.entries if c == channel), None)


def safe_version(text: str) -> Version | None:
    """Parse a bundle version tolerantly; None when it is not a version at all."""
    try:
        return parse_version(text) if text else None
    except VersionSyntaxError:
        return None


class Index:
    """Candidates of all available catalogs, by package, in catalog-name then bundle-name order.

    Each catalog's share (a candidate and a parsed version per bundle) is built once per catalog
    and source settings and kept with the catalog (:attr:`Catalog.memo`): the daemon resolves
    every input against the same few catalogs on every pass, and building it was most of a
    pass's resolver time (docs/benchmarks/daemon-scale.md). Read-only.
    """

    def __init__(self, sources: Sequence[CatalogInput], reads: Reads | None = None) -> None:
        """``reads``, when given, notes every lookup (:mod:`resolver.rules.reads`)."""
        # Sorted by name: the order of --catalog flags must not change any answer or explanation.
        self.sources = sorted((s for s in sources if s.available), key=lambda s: s.name)
        self.reads = reads
        self._providers: dict[GVK, list[Candidate]] | None = None
        parts = [_part(source) for source in self.sources]
        if len(parts) == 1:
            self.by_package: dict[str, list[Candidate]] = parts[0].by_package
            self.default_channel: dict[tuple[str, str], str] = parts[0].default_channel
            return
        self.by_package = {}
        self.default_channel = {}
        for part in parts:
            for package, candidates in part.by_package.items():
                self.by_package.setdefault(package, []).extend(candidates)
            self.default_channel.update(part.default_channel)

    def providers(self, gvk: GVK) -> list[Candidate]:
        """Every candidate that provides ``gvk`` (the map is built on first use)."""
        if self._providers is None:
            self._providers = {}
            for package in sorted(self.by_package):
                for cand in self.by_package[package]:
                    for api in cand.bundle.provided_apis:
                        self._providers.setdefault(api, []).append(cand)
        found = self._providers.get(gvk, [])
        if self.reads is not None:
            self.reads.apis.add(gvk)
            self.reads.packages.update(c.package for c in found)
        return found

    def candidates(self, package: str) -> list[Candidate]:
        """All candidates of ``package`` (empty when unknown)."""
        if self.reads is not None:
            self.reads.packages.add(package)
        return self.by_package.get(package, [])

    def named(self, package: str, name: str) -> list[Candidate]:
        """The candidates of bundle ``name`` of ``package`` (one per catalog that lists it);
        only that bundle counts as read."""
        if self.reads is not None:
            self.reads.bundles.add((package, name))
        return [c for c in self.by_package.get(package, ()) if c.name == name]

    def all(self) -> Iterator[Candidate]:
        """Every candidate, package by package."""
        if self.reads is not None:
            self.reads.everything = True
        for package in sorted(self.by_package):
            yield from self.by_package[package]

    def deprecated(self, cand: Candidate, channel: str = "") -> str:
        """The deprecation message that applies to ``cand`` (bundle, channel, package) or ""."""
        dep = cand.source.catalog.deprecation_of(cand.package)
        if dep is None:
            return ""
        for entry in dep.entries:
            if entry.schema == SCHEMA_BUNDLE and entry.name == cand.name:
                return entry.message or f"bundle {cand.name} is deprecated"
            if entry.schema == SCHEMA_PACKAGE:
                return entry.message or f"package {cand.package} is deprecated"
            if entry.schema == SCHEMA_CHANNEL and channel and entry.name == channel:
                return entry.message or f"channel {channel} is deprecated"
        return ""


@dataclass(frozen=True, slots=True)
class _Part:
    """One catalog's candidates as an :class:`Index` holds them (shared: read-only)."""

    by_package: dict[str, list[Candidate]]
    default_channel: dict[tuple[str, str], str]


_PARTS_LOCK = threading.Lock()


def _part(source: CatalogInput) -> _Part:
    """``source``'s share of an index, built on first use per catalog and source settings (the
    candidates refer to the source: its name, priority and namespace are part of the key)."""
    key = ("resolver.rules.inputs.Index", source.name, source.priority, source.namespace)
    memo = source.catalog.memo
    with _PARTS_LOCK:
        found = memo.get(key)
    if found is not None:
        return cast(_Part, found)
    entries: dict[tuple[str, str], list[tuple[str, ChannelEntry]]] = {}
    for channel in source.catalog.channels:
        for entry in channel.entries:
            entries.setdefault((channel.package, entry.name), []).append((channel.name, entry))
    default_channel = {(source.name, p.name): p.default_channel for p in source.catalog.packages}
    by_package: dict[str, list[Candidate]] = {}
    for bundle in sorted(source.catalog.bundles, key=lambda b: (b.package, b.name)):
        cand = Candidate(
            source,
            bundle,
            tuple(sorted(entries.get((bundle.package, bundle.name), []), key=_by_channel)),
            safe_version(bundle.version),
        )
        by_package.setdefault(bundle.package, []).append(cand)
    part = _Part(by_package, default_channel)
    with _PARTS_LOCK:
        return cast(_Part, memo.setdefault(key, part))


def _by_channel(item: tuple[str, ChannelEntry]) -> str:
    return item[0]
