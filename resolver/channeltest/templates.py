"""Expand catalog templates (``olm.template.basic``, ``olm.semver``) to channel graphs without
pulling any image, so ``catalog test`` can check them before they are rendered.

A template names bundles by image only. Each image is resolved, in order, by: a bundle of a
reference catalog (``--with``, e.g. the catalog the template was rendered into) with that exact
image; or, for a tag that is a version (``repo/name:1.2.3``), the package named after the
repository and that version. An image that neither resolves is reported as
``template-unresolved`` (it would need a pull) and left out.

``olm.semver`` channels are generated as operator-registry's semver template does
(``alpha/template/semver``): channels ``<archetype>-v<major>[.<minor>]`` for the candidate, fast
and stable archetypes; within one archetype and stream kind, the last entry of each minor version
replaces the previous minor's highest entry and skips every earlier entry of the same major but the
replaced one. Older opm releases (``legacy_skips``) skipped the replaced entry and the earlier
entries of the same minor only; community-operators-prod holds catalogs rendered both ways. The
default channel is the most stable archetype's newest channel (minor preferred unless
``DefaultChannelTypePreference`` says ``major``). Called by the CLI.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from resolver import safedata
from resolver.catalog.decode import CatalogObject, DecodeError, decode_object
from resolver.catalog.errors import CatalogLoadError, Problem
from resolver.catalog.guard import RefusedFile, read_text, real_path
from resolver.catalog.load import assemble
from resolver.catalog.model import (
    PROP_PACKAGE,
    Bundle,
    Catalog,
    Channel,
    ChannelEntry,
    Origin,
    Package,
    Property,
)
from resolver.channeltest.findings import Finding, finding
from resolver.versions import Version, VersionSyntaxError, parse_strict_version

BASIC = "olm.template.basic"
SEMVER = "olm.semver"
_ARCHETYPES = ("candidate", "fast", "stable")  # least stable first, as the semver template
_KIND_ORDER = {"major": 1, "minor": 2}


@dataclass(slots=True)
class Expanded:
    """A template expanded to a catalog, with what could not be resolved."""

    path: str
    schema: str
    catalog: Catalog
    findings: list[Finding] = field(default_factory=list)


def template_schema(doc: Any) -> str:
    """The template schema of a decoded YAML document ("" when it is not a template)."""
    if not isinstance(doc, dict):
        return ""
    for key, value in doc.items():
        if str(key).lower() == "schema" and value in (BASIC, SEMVER):
            return str(value)
    return ""


def _yaml_files(root: str) -> list[str]:
    """YAML/JSON files below ``root`` in ``os.walk`` order, without recursion (3.11's ``os.walk``
    recurses once per level: a tree 1000 directories deep raised RecursionError)."""
    found: list[str] = []
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if not entry.is_symlink():  # os.walk does not follow directory links
                    subdirs.append(entry.path)
            elif entry.name.endswith((".yaml", ".yml", ".json")):
                found.append(entry.path)
        stack.extend(reversed(subdirs))
    return found


def find_templates(root: str) -> list[str]:
    """Every YAML/JSON file under ``root`` (or ``root`` itself) holding a template, sorted."""
    paths = [root] if os.path.isfile(root) else []
    try:
        # real_path, not os.path.realpath: that recurses once per link (a chain of 1,500 links).
        base = os.path.dirname(real_path(root)) if paths else root
    except OSError:  # more than 40 links
        return []
    paths.extend(_yaml_files(root))
    out = []
    for path in paths:
        try:
            # Through the catalog file guard: no FIFO, device, link out of ``root``, huge file.
            text = read_text(base, path, what="template")
            docs = safedata.load_yaml_all(text, go_yaml=True)
        except (OSError, safedata.SafeDataError):
            continue
        if any(template_schema(d) for d in docs):
            out.append(path)
    return out


class _Images:
    """Image -> (package, bundle name, version) from reference catalogs or version tags."""

    def __init__(self, references: Sequence[Catalog]) -> None:
        self.known: dict[str, Bundle] = {}
        for cat in references:
            for b in cat.bundles:
                if b.image:
                    self.known.setdefault(b.image, b)

    def resolve(self, image: str, package_hint: str = "") -> tuple[str, str, Version] | None:
        bundle = self.known.get(image)
        if bundle is not None:
            try:
                return bundle.package, bundle.name, parse_strict_version(bundle.version)
            except VersionSyntaxError:
                return None
        name_part, sep, tag = image.rpartition(":")
        if not sep or "/" in tag or "@" in image:
            return None
        try:
            version = parse_strict_version(tag.removeprefix("v"))
        except VersionSyntaxError:
            return None
        package = package_hint or name_part.rsplit("/", 1)[-1]
        return package, f"{package}.v{version}", version


def _bundle(package: str, name: str, version: Version, image: str, origin: Origin) -> Bundle:
    prop = Property(PROP_PACKAGE, {"packageName": package, "version": str(version)})
    return Bundle(package=package, name=name, image=image, properties=(prop,), origin=origin)


def expand_file(
    path: str, references: Sequence[Catalog], relpath: str = "", *, legacy_skips: bool = False
) -> list[Expanded]:
    """Expand every template document of one file.

    ``legacy_skips`` reproduces older opm releases' semver template (see the module text).
    """
    rel = relpath or path
    try:
        # Found inside a directory by find_templates, or named by the user: links are fine here.
        text = read_text(os.path.dirname(real_path(path)), path, what="template")
    except RefusedFile as err:
        raise CatalogLoadError([Problem(f"{rel}: {err}", io=err.io)]) from None
    except OSError as err:  # real_path: more than 40 links
        raise CatalogLoadError([Problem(f"{rel}: {err.strerror}", io=True)]) from None
    try:
        docs = safedata.load_yaml_all(text, go_yaml=True)
    except safedata.SafeDataError as err:
        raise CatalogLoadError([Problem(f"{rel}: {err}")]) from None
    images = _Images(references)
    out = []
    for doc in docs:
        schema = template_schema(doc)
        if schema == BASIC:
            out.append(_expand_basic(doc, images, rel))
        elif schema == SEMVER:
            out.append(_expand_semver(doc, images, rel, legacy_skips))
    return out


def _unresolved(image: str, rel: str, package: str = "") -> Finding:
    return finding(
        "template-unresolved",
        f"{rel}: bundle image {image!r} is in no reference catalog (--with) and its tag is not a "
        "version: its name and version are unknown without pulling it",
        package=package,
        origin=Origin(rel),
        detail=image,
    )


def _expand_basic(doc: dict[str, Any], images: _Images, rel: str) -> Expanded:
    objects: list[CatalogObject] = []
    findings: list[Finding] = []
    entries = doc.get("entries") or []
    packages = [
        e.get("name", "")
        for e in entries
        if isinstance(e, dict) and e.get("schema") == "olm.package"
    ]
    hint = packages[0] if len(packages) == 1 else ""
    for i, entry in enumerate(entries):
        origin = Origin(rel, 0)
        if not isinstance(entry, dict):
            continue
        if entry.get("schema") == "olm.bundle" and set(entry) <= {"schema", "image"}:
            image = str(entry.get("image") or "")
            found = images.resolve(image, hint)
            if found is None:
                findings.append(_unresolved(image, rel, hint))
                continue
            objects.append(_bundle(found[0], found[1], found[2], image, origin))
            continue
        try:
            objects.append(decode_object(entry, Origin(rel, 0)))
        except DecodeError as err:
            # The entry's name or image, when it has one, lets the report find its line.
            named = entry.get("name") or entry.get("image") or ""
            findings.append(
                finding(
                    "template-skipped",
                    f"{rel}: entries[{i}]: {err}",
                    origin=Origin(rel),
                    detail=named if isinstance(named, str) else "",
                )
            )
    return Expanded(rel, BASIC, assemble(objects, os.path.basename(rel)), findings)


def _field(doc: dict[str, Any], name: str) -> Any:
    return next((v for k, v in doc.items() if str(k).lower() == name.lower()), None)


def _expand_semver(doc: dict[str, Any], images: _Images, rel: str, legacy_skips: bool) -> Expanded:
    major = bool(_field(doc, "GenerateMajorChannels"))
    minor = bool(_field(doc, "GenerateMinorChannels"))
    if not major and not minor:
        minor = True
    preference = str(_field(doc, "DefaultChannelTypePreference") or "")
    preference = preference or ("minor" if minor else "major")
    findings: list[Finding] = []
    bundles: dict[str, Bundle] = {}
    by_arch: dict[str, dict[str, Version]] = {}
    package = ""
    origin = Origin(rel)
    for arch in _ARCHETYPES:
        section = _field(doc, arch) or {}
        listed = _field(section, "bundles") if isinstance(section, dict) else None
        for item in listed or []:
            image = str(_field(item, "image") or "") if isinstance(item, dict) else ""
            found = images.resolve(image, package)
            if found is None:
                findings.append(_unresolved(image, rel, package))
                continue
            pkg, name, version = found
            package = package or pkg
            bundles.setdefault(name, _bundle(pkg, name, version, image, origin))
            by_arch.setdefault(arch, {})[name] = version
    kinds = [k for k, on in (("major", major), ("minor", minor)) if on]
    channels, default = _semver_channels(package, by_arch, kinds, preference, legacy_skips)
    pkg_obj = Package(name=package, default_channel=default, origin=origin)
    catalog = Catalog(
        name=os.path.basename(rel),
        packages=[pkg_obj] if package else [],
        channels=[
            Channel(package, n, tuple(e), origin=origin) for n, e in sorted(channels.items())
        ],
        bundles=list(bundles.values()),
    )
    return Expanded(rel, SEMVER, catalog, findings)


@dataclass(slots=True)
class _Tuple:
    arch: str
    kind: str
    channel: str
    name: str
    version: Version
    index: int


def _semver_channels(
    package: str,
    by_arch: dict[str, dict[str, Version]],
    kinds: list[str],
    preference: str,
    legacy_skips: bool,
) -> tuple[dict[str, list[ChannelEntry]], str]:
    channels: dict[str, list[ChannelEntry]] = {}
    tuples: list[_Tuple] = []
    best: tuple[int, Version, int, str] | None = None
    for arch_rank, arch in enumerate(_ARCHETYPES):
        for name, version in sorted(by_arch.get(arch, {}).items(), key=lambda kv: kv[1]):
            for kind in kinds:
                suffix = (
                    f"{version.major}" if kind == "major" else f"{version.major}.{version.minor}"
                )
                channel = f"{arch}-v{suffix}"
                if channel not in channels:
                    channels[channel] = []
                    kind_rank = 3 if kind == preference else _KIND_ORDER[kind]
                    candidate = (arch_rank, version, kind_rank, channel)
                    if best is None or candidate[:3] > best[:3]:
                        best = candidate
                channels[channel].append(ChannelEntry(name))
                tuples.append(
                    _Tuple(arch, kind, channel, name, version, len(channels[channel]) - 1)
                )
    tuples.sort(key=lambda t: (_ARCHETYPES.index(t.arch), _KIND_ORDER[t.kind], t.version))
    prev_z_max = ""
    skips: set[str] = set()

    def link(t: _Tuple) -> None:
        entry = channels[t.channel][t.index]
        skipped = skips if legacy_skips else skips - {prev_z_max}
        channels[t.channel][t.index] = ChannelEntry(entry.name, prev_z_max, tuple(sorted(skipped)))

    for prev, cur in itertools.pairwise(tuples):
        same_stream = prev.arch == cur.arch and prev.kind == cur.kind
        x_change = prev.version.major != cur.version.major
        y_change = prev.version.minor != cur.version.minor
        if not same_stream or x_change or y_change:
            link(prev)
        if not same_stream or x_change:
            skips = set()
            prev_z_max = ""
            continue
        if y_change:
            if legacy_skips:
                skips = set()
            prev_z_max = prev.name
        skips.add(prev.name)
    if len(tuples) > 1:
        last, before = tuples[-1], tuples[-2]
        same = (last.arch, last.kind, last.version.major)
        if same == (before.arch, before.kind, before.version.major):
            link(last)
    return channels, best[3] if best else ""
