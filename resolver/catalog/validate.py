"""Validate a loaded catalog with the rules of ``opm validate``, reporting every defect at once.

The rules are operator-registry's (``alpha/declcfg/declcfg_to_model.go`` ``ConvertToModel`` and
``alpha/model/model.go`` ``Validate``): unique, DNS-1123 package names; a default channel that
exists; channels of known packages with unique, bundle-backed entries, exactly one head, no
cycles and no stranded entries in the replaces chain; valid skipRanges; bundles with exactly one
matching ``olm.package`` property, a semver version (and release), parseable image references,
membership in some channel, and versions unique in their package; deprecations that reference
existing objects. Unlike opm, which stops at the first failure of most rules, :func:`validate`
returns every finding, each with the file and line of the object it is about.

Each :class:`ValidationFinding` has a ``category`` (e.g. ``multiple-heads``) naming the defect in
words that also appear in opm's message, so tests and tools can match defects without matching
prose. Called by ``pivoter catalog validate``, the daemon's catalog sources and the tests.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from resolver.catalog.imageref import pull_spec_error
from resolver.catalog.model import (
    ABSENT,
    PROP_BUNDLE_OBJECT,
    PROP_CSV_METADATA,
    PROP_GVK,
    PROP_GVK_REQUIRED,
    PROP_PACKAGE,
    PROP_PACKAGE_REQUIRED,
    SCHEMA_BUNDLE,
    SCHEMA_CHANNEL,
    SCHEMA_PACKAGE,
    Bundle,
    Catalog,
    Channel,
    Deprecation,
    Origin,
    Package,
)
from resolver.versions import (
    RangeSyntaxError,
    Version,
    VersionSyntaxError,
    parse_range,
    parse_strict_version,
)

ERROR = "error"
"""Severity of a defect that makes opm reject the catalog."""

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_PRERELEASE_ID = re.compile(r"^(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)$")
_RELEASE_MAX = 20

Subject = Package | Channel | Bundle | Deprecation | None


@dataclass(frozen=True, slots=True)
class ValidationFinding:
    """One defect: how bad, which kind (``category``), what, where, and the object concerned."""

    severity: str
    category: str
    message: str
    origin: Origin | None = None
    subject: Subject = None

    def __str__(self) -> str:
        where = f"{self.origin}: " if self.origin else ""
        return f"{where}{self.severity}: {self.message} [{self.category}]"

    def to_dict(self) -> dict[str, Any]:
        """Return the finding as plain data (for ``-o json``)."""
        return {
            "severity": self.severity,
            "category": self.category,
            "message": self.message,
            "file": self.origin.path if self.origin else "",
            "line": self.origin.line if self.origin else 0,
            "object": _describe(self.subject),
        }


def _describe(subject: Subject) -> dict[str, str] | None:
    if isinstance(subject, Package):
        return {"schema": SCHEMA_PACKAGE, "name": subject.name}
    if isinstance(subject, Channel):
        return {"schema": SCHEMA_CHANNEL, "package": subject.package, "name": subject.name}
    if isinstance(subject, Bundle):
        return {"schema": SCHEMA_BUNDLE, "package": subject.package, "name": subject.name}
    if isinstance(subject, Deprecation):
        return {"schema": "olm.deprecations", "package": subject.package}
    return None


class _Report:
    def __init__(self) -> None:
        self.findings: list[ValidationFinding] = []

    def error(self, category: str, message: str, subject: Subject) -> None:
        origin = subject.origin if subject is not None else None
        self.findings.append(ValidationFinding(ERROR, category, message, origin, subject))


def validate(catalog: Catalog) -> list[ValidationFinding]:
    """Return every defect ``opm validate`` would reject ``catalog`` for (empty list: valid)."""
    report = _Report()
    packages = _check_packages(catalog.packages, report)
    channels = _check_channels(catalog.channels, packages, report)
    bundle_names = _check_bundles(catalog.bundles, packages, channels, report)
    _check_package_channels(packages, channels, report)
    _check_deprecations(catalog.deprecations, packages, channels, bundle_names, report)
    return sorted(
        report.findings,
        key=lambda f: (f.origin.path, f.origin.line) if f.origin else ("", 0),
    )


def _check_packages(items: Iterable[Package], report: _Report) -> dict[str, Package]:
    packages: dict[str, Package] = {}
    for pkg in items:
        if not pkg.name:
            report.error("package-name", "package with no name", pkg)
            continue
        if pkg.name in packages:
            first = packages[pkg.name].origin
            report.error(
                "duplicate-package", f"duplicate package {pkg.name!r} (first at {first})", pkg
            )
            continue
        if len(pkg.name) > 63 or not _DNS1123_LABEL.match(pkg.name):
            report.error(
                "package-name",
                f"invalid package name {pkg.name!r}: must be a DNS-1123 label (lower case "
                "alphanumerics and '-', starting and ending alphanumeric, at most 63 characters)",
                pkg,
            )
        packages[pkg.name] = pkg
    return packages


def _check_channels(
    items: Iterable[Channel], packages: Mapping[str, Package], report: _Report
) -> dict[str, dict[str, Channel]]:
    channels: dict[str, dict[str, Channel]] = {}
    for ch in items:
        if ch.package not in packages:
            report.error(
                "unknown-package", f"unknown package {ch.package!r} for channel {ch.name!r}", ch
            )
            continue
        if not ch.name:
            report.error(
                "channel-name", f"package {ch.package!r} contains channel with no name", ch
            )
            continue
        of_package = channels.setdefault(ch.package, {})
        if ch.name in of_package:
            report.error(
                "duplicate-channel",
                f"package {ch.package!r} has duplicate channel {ch.name!r} "
                f"(first at {of_package[ch.name].origin})",
                ch,
            )
            continue
        of_package[ch.name] = ch
        _check_entries(ch, report)
    return channels


def _check_entries(ch: Channel, report: _Report) -> None:
    where = f"package {ch.package!r}, channel {ch.name!r}"
    counts = Counter(e.name for e in ch.entries)
    for name, n in counts.items():
        if n > 1:
            report.error("duplicate-entry", f"{where}: duplicate entry {name!r}", ch)
    if not ch.entries:
        report.error("empty-channel", f"{where}: channel must contain at least one bundle", ch)
        return
    for entry in ch.entries:
        for i, skip in enumerate(entry.skips):
            if not skip:
                report.error("empty-skip", f"{where}, entry {entry.name!r}: skip[{i}] is empty", ch)
        if entry.skip_range:
            try:
                parse_range(entry.skip_range, "blang", strict=True)
            except RangeSyntaxError as err:
                report.error(
                    "skip-range",
                    f"{where}, entry {entry.name!r}: invalid skipRange {entry.skip_range!r}: {err}",
                    ch,
                )
    _check_replaces_chain(ch, where, report)


def _check_replaces_chain(ch: Channel, where: str, report: _Report) -> None:
    # opm keys entries by name (a later duplicate replaces an earlier one).
    entries = {e.name: e for e in ch.entries}
    incoming: set[str] = set()
    skipped: set[str] = set()
    for e in entries.values():
        if e.replaces:
            incoming.add(e.replaces)
        incoming.update(e.skips)
        skipped.update(e.skips)
    heads = sorted(name for name in entries if name not in incoming)
    if not heads:
        report.error(
            "no-head",
            f"{where}: no channel head found in graph (every entry is replaced or skipped)",
            ch,
        )
        return
    if len(heads) > 1:
        report.error(
            "multiple-heads",
            f"{where}: multiple channel heads found in graph: {', '.join(heads)}",
            ch,
        )
        return
    chain = [heads[0]]
    reached = {heads[0]}
    current: str | None = heads[0]
    while current is not None:
        replaces = entries[current].replaces
        if replaces in skipped:
            break
        if replaces in reached:
            cycle = [*chain[chain.index(replaces) :], replaces]
            report.error(
                "cycle",
                f"{where}: detected cycle in replaces chain of upgrade graph: {' -> '.join(cycle)}",
                ch,
            )
            return
        reached.add(replaces)
        chain.append(replaces)
        current = replaces if replaces in entries else None
    stranded = sorted(set(entries) - reached - skipped)
    if stranded:
        report.error(
            "stranded",
            f"{where}: channel contains one or more stranded bundles: {', '.join(stranded)}",
            ch,
        )


@dataclass(slots=True)
class _Versioned:
    version: Version | None
    release: str


def _check_bundles(
    items: Sequence[Bundle],
    packages: Mapping[str, Package],
    channels: Mapping[str, Mapping[str, Channel]],
    report: _Report,
) -> dict[str, set[str]]:
    names: dict[str, set[str]] = {}
    versions: dict[str, dict[str, list[str]]] = {}
    image_problems: dict[str, str | None] = {}  # bundles share many related images
    entries_of: dict[str, set[str]] = {
        pkg: {e.name for ch in chans.values() for e in ch.entries}
        for pkg, chans in channels.items()
    }
    for b in items:
        where = f"package {b.package!r}, bundle {b.name!r}"
        if not b.package:
            report.error("bundle-package", f"package name must be set for bundle {b.name!r}", b)
            continue
        if b.package not in packages:
            report.error(
                "unknown-package", f"unknown package {b.package!r} for bundle {b.name!r}", b
            )
            continue
        seen = names.setdefault(b.package, set())
        if b.name in seen:
            report.error(
                "duplicate-bundle", f"package {b.package!r} has duplicate bundle {b.name!r}", b
            )
            continue
        seen.add(b.name)
        versioned = _check_bundle(b, where, report, image_problems)
        in_channel = b.name in entries_of.get(b.package, set())
        if not in_channel:
            report.error("not-in-channel", f"{where}: bundle not found in any channel entries", b)
        elif versioned is not None and versioned.version is not None:
            key = str(versioned.version) + (f"-{versioned.release}" if versioned.release else "")
            versions.setdefault(b.package, {}).setdefault(key, []).append(b.name)
    for pkg, by_version in versions.items():
        for version, bundle_names in sorted(by_version.items()):
            if len(bundle_names) > 1:
                subject = next(
                    (b for b in items if b.package == pkg and b.name == bundle_names[1]), None
                )
                report.error(
                    "duplicate-version",
                    f"package {pkg!r}: duplicate versions found in bundles: "
                    f"{{{version}: [{', '.join(sorted(bundle_names))}]}}",
                    subject,
                )
    for pkg, entry_names in entries_of.items():
        missing = sorted(entry_names - names.get(pkg, set()))
        if missing:
            chans = channels[pkg]
            holder = next(
                (c for c in chans.values() if any(e.name in missing for e in c.entries)), None
            )
            report.error(
                "missing-bundle",
                f"no olm.bundle blobs found in package {pkg!r} for olm.channel entries "
                f"{', '.join(missing)}",
                holder,
            )
    return names


def _check_bundle(
    b: Bundle, where: str, report: _Report, image_problems: dict[str, str | None]
) -> _Versioned | None:
    ok = True
    for i, prop in enumerate(b.properties):
        problem = _property_problem(prop.type, prop.value)
        if problem:
            report.error("property", f"{where}: property [{i}] {prop.type!r}: {problem}", b)
            ok = False
    package_props = [p.value for p in b.properties if p.type == PROP_PACKAGE]
    if not ok:
        return None
    if len(package_props) != 1:
        report.error(
            "package-property",
            f"{where}: must have exactly 1 {PROP_PACKAGE!r} property, found {len(package_props)}",
            b,
        )
        return None
    value = package_props[0] if isinstance(package_props[0], dict) else {}
    prop_package = value.get("packageName") or ""
    if prop_package != b.package:
        report.error(
            "package-property",
            f"{where}: package {b.package!r} does not match {PROP_PACKAGE!r} property "
            f"{prop_package!r}",
            b,
        )
        return None
    for label, spec in [("image", b.image)] + [
        (f"relatedImages[{i}].image", r.image) for i, r in enumerate(b.related_images)
    ]:
        if spec in image_problems:
            problem = image_problems[spec]
        else:
            problem = image_problems[spec] = pull_spec_error(spec)
        if problem:
            report.error(
                "image", f"{where}: {label}: invalid image pull spec {spec!r}: {problem}", b
            )
    raw_version = value.get("version") or ""
    try:
        version: Version | None = parse_strict_version(raw_version)
    except VersionSyntaxError as err:
        # A number past uint64 is invalid for blang too; say so rather than "not semver".
        why = "a number is above 2^64-1" if "above 2^64-1" in str(err) else "not semver"
        shown = raw_version if len(raw_version) <= 80 else raw_version[:60] + "..."
        report.error("version", f"{where}: error parsing bundle version {shown!r}: {why}", b)
        version = None
    release = value.get("release") or ""
    if release:
        problem = _release_problem(release)
        if problem:
            report.error(
                "release",
                f"{where}: error parsing bundle release version {release!r}: {problem}",
                b,
            )
            return _Versioned(version, "")
        if version is not None and version.build:
            report.error(
                "release",
                f"{where}: cannot use build metadata in version with a release version",
                b,
            )
        if version is not None:
            normalized = f"{b.package}-v{version}-{release}"
            if b.name != normalized:
                report.error(
                    "bundle-name",
                    f"{where}: name {b.name!r} does not match normalized name {normalized!r}",
                    b,
                )
    if not b.name:
        report.error("bundle-name", f"{where}: name must be set", b)
    if not b.image and not any(p.type == PROP_BUNDLE_OBJECT for p in b.properties):
        report.error("image", f"{where}: bundle image must be set", b)
    return _Versioned(version, release)


def _release_problem(release: str) -> str | None:
    if len(release) > _RELEASE_MAX:
        return f"exceeds maximum length of {_RELEASE_MAX} characters"
    for i, segment in enumerate(release.split(".")):
        if not _PRERELEASE_ID.match(segment):
            return f"segment {i}: {segment!r} is not a valid prerelease identifier"
    return None


_STRING_FIELDS: dict[str, tuple[str, ...]] = {
    PROP_PACKAGE: ("packageName", "version", "release"),
    PROP_PACKAGE_REQUIRED: ("packageName", "versionRange"),
    PROP_GVK: ("group", "kind", "version"),
    PROP_GVK_REQUIRED: ("group", "kind", "version"),
    "olm.channel": ("channelName",),
}
_CSV_STRINGS = ("description", "displayName", "maturity", "minKubeVersion")
_CSV_STRING_MAPS = ("annotations", "labels")
_CSV_LISTS = ("installModes", "keywords", "links", "maintainers", "nativeAPIs")


def _property_problem(type_: str, value: Any) -> str | None:
    """Why a bundle property's value would not decode into opm's Go type (None if it would)."""
    if value is ABSENT:
        return "value must be set"
    if type_ in _STRING_FIELDS:
        if value is None:
            return None
        if not isinstance(value, dict):
            return f"value must be an object, got {type(value).__name__}"
        fields = _casefold_view(value)
        for name in _STRING_FIELDS[type_]:
            v = fields.get(name.casefold())
            if v is not None and not isinstance(v, str):
                return f"field {name!r} must be a string"
        if type_ == "olm.channel":
            priority = fields.get("priority")
            if priority is not None and (
                isinstance(priority, bool) or not isinstance(priority, int)
            ):
                return "field 'priority' must be an integer"
    elif type_ == PROP_CSV_METADATA and value is not None:
        if not isinstance(value, dict):
            return f"value must be an object, got {type(value).__name__}"
        fields = _casefold_view(value)
        for name in _CSV_STRINGS:
            v = fields.get(name.casefold())
            if v is not None and not isinstance(v, str):
                return f"field {name!r} must be a string"
        for name in _CSV_STRING_MAPS:
            v = fields.get(name.casefold())
            if v is not None and (
                not isinstance(v, dict)
                or not all(isinstance(x, str) or x is None for x in v.values())
            ):
                return f"field {name!r} must be a map of strings"
        for name in _CSV_LISTS:
            v = fields.get(name.casefold())
            if v is not None and not isinstance(v, list):
                return f"field {name!r} must be an array"
    return None


class _CasefoldView:
    """``value`` looked up by casefolded key; of keys folding alike, the last one wins."""

    __slots__ = ("_keys", "_value")

    def __init__(self, value: Mapping[str, Any]) -> None:
        self._value = value
        keys = tuple(value)
        self._keys = _folded_keys(keys) if len(keys) <= _MEMO_KEYS else _fold(keys)

    def get(self, folded: str) -> Any:
        key = self._keys.get(folded)
        return None if key is None else self._value[key]


_MEMO_KEYS = 16


def _fold(keys: tuple[str, ...]) -> dict[str, str]:
    return {str(k).casefold(): k for k in keys}


# Property values of one type share a handful of (small) key sets: fold each set once.
_folded_keys = functools.lru_cache(maxsize=256)(_fold)


def _casefold_view(value: Mapping[str, Any]) -> _CasefoldView:
    return _CasefoldView(value)


def _check_package_channels(
    packages: Mapping[str, Package],
    channels: Mapping[str, Mapping[str, Channel]],
    report: _Report,
) -> None:
    for name, pkg in packages.items():
        chans = channels.get(name, {})
        if not pkg.default_channel:
            report.error("default-channel", f"package {name!r}: default channel must be set", pkg)
            if not chans:
                report.error(
                    "no-channels",
                    f"package {name!r}: package must contain at least one channel",
                    pkg,
                )
        elif pkg.default_channel not in chans:
            # opm creates the missing default channel empty, then rejects it as empty.
            report.error(
                "default-channel",
                f"package {name!r}: default channel {pkg.default_channel!r} not found "
                "(channel must contain at least one bundle)",
                pkg,
            )


def _check_deprecations(
    items: Iterable[Deprecation],
    packages: Mapping[str, Package],
    channels: Mapping[str, Mapping[str, Channel]],
    bundle_names: Mapping[str, set[str]],
    report: _Report,
) -> None:
    seen: set[str] = set()
    for i, dep in enumerate(items):
        if not dep.package:
            report.error("deprecation", f"package name must be set for deprecation item {i}", dep)
            continue
        if dep.package not in packages:
            report.error(
                "deprecation",
                f"cannot apply deprecations to an unknown package {dep.package!r}",
                dep,
            )
            continue
        if dep.package in seen:
            report.error(
                "deprecation",
                f"expected a maximum of one deprecation per package: {dep.package!r}",
                dep,
            )
            continue
        seen.add(dep.package)
        refs: set[tuple[str, str]] = set()
        pkg_channels = channels.get(dep.package, {})
        default = packages[dep.package].default_channel
        for j, entry in enumerate(dep.entries):
            where = f"deprecation entry [{j}] for package {dep.package!r}"
            if not entry.schema:
                report.error("deprecation", f"schema must be set for {where}", dep)
                continue
            ref = (entry.schema, entry.name)
            if ref in refs:
                report.error("deprecation", f"duplicate {where}: {ref}", dep)
                continue
            refs.add(ref)
            if entry.schema == SCHEMA_BUNDLE:
                if entry.name not in bundle_names.get(dep.package, set()):
                    report.error(
                        "deprecation-reference",
                        f"cannot deprecate bundle {entry.name!r} for package {dep.package!r}: "
                        "bundle not found",
                        dep,
                    )
                    continue
            elif entry.schema == SCHEMA_CHANNEL:
                if entry.name not in pkg_channels and entry.name != default:
                    report.error(
                        "deprecation-reference",
                        f"cannot deprecate channel {entry.name!r} for package {dep.package!r}: "
                        "channel not found",
                        dep,
                    )
                    continue
            elif entry.schema == SCHEMA_PACKAGE:
                if entry.name:
                    report.error(
                        "deprecation-reference",
                        f"package name must be empty for deprecated package {dep.package!r} "
                        f"(specified {entry.name!r})",
                        dep,
                    )
                    continue
            else:
                report.error(
                    "deprecation-reference",
                    f"cannot deprecate object with schema {entry.schema!r} referenced by {where}: "
                    "object schema unknown",
                    dep,
                )
                continue
            if not entry.message:
                report.error(
                    "deprecation", f"{where}: invalid deprecation: message must be set", dep
                )
