"""The file-based catalog (FBC) model: packages, channels, bundles, deprecations, other blobs.

This is the one in-memory form every catalog source produces (a directory, catalogd's HTTP API,
operator-registry's gRPC ``api.Registry``) and every consumer reads (validation, the servers, the
resolver). Objects are immutable once loaded; a reload builds a new :class:`Catalog` and swaps it.

Property values are kept as the decoded JSON they were in the catalog (``dict``/``list``/scalars);
typed accessors on :class:`Bundle` decode the well-known ones on demand.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

JSON = Any
"""A decoded JSON value (dict, list, str, int, float, bool or None)."""

# Well-known property types (operator-registry alpha/property).
PROP_PACKAGE = "olm.package"
PROP_GVK = "olm.gvk"
PROP_PACKAGE_REQUIRED = "olm.package.required"
PROP_GVK_REQUIRED = "olm.gvk.required"
PROP_CONSTRAINT = "olm.constraint"
PROP_CSV_METADATA = "olm.csv.metadata"
PROP_BUNDLE_OBJECT = "olm.bundle.object"
PROP_BUNDLE_MEDIATYPE = "olm.bundle.mediatype"
PROP_DEPRECATED = "olm.deprecated"

SCHEMA_PACKAGE = "olm.package"
SCHEMA_CHANNEL = "olm.channel"
SCHEMA_BUNDLE = "olm.bundle"
SCHEMA_DEPRECATIONS = "olm.deprecations"


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an object was read from: a file relative to the catalog root and a 1-based line.

    ``line`` is 0 when unknown (e.g. objects that arrived over gRPC or HTTP).
    """

    path: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass(frozen=True, slots=True)
class Property:
    """A typed property ``{type, value}`` of a bundle, package or channel."""

    type: str
    value: JSON


@dataclass(frozen=True, slots=True)
class GVK:
    """A Kubernetes API (group, version, kind) provided or required by a bundle."""

    group: str
    version: str
    kind: str

    def __str__(self) -> str:
        return f"{self.group}/{self.version}/{self.kind}"


@dataclass(frozen=True, slots=True)
class Icon:
    """A package icon: base64 data and its media type."""

    base64data: str
    mediatype: str


@dataclass(frozen=True, slots=True)
class RelatedImage:
    """An image a bundle refers to (``relatedImages``); ``name`` may be empty."""

    name: str
    image: str


@dataclass(frozen=True, slots=True)
class Package:
    """An ``olm.package`` object."""

    name: str
    default_channel: str = ""
    icon: Icon | None = None
    description: str = ""
    properties: tuple[Property, ...] = ()
    origin: Origin | None = None


@dataclass(frozen=True, slots=True)
class ChannelEntry:
    """One entry of a channel: a bundle name and its upgrade edges within this channel."""

    name: str
    replaces: str = ""
    skips: tuple[str, ...] = ()
    skip_range: str = ""


@dataclass(frozen=True, slots=True)
class Channel:
    """An ``olm.channel`` object: the ordered entries of one channel of one package."""

    package: str
    name: str
    entries: tuple[ChannelEntry, ...] = ()
    properties: tuple[Property, ...] = ()
    origin: Origin | None = None


@dataclass(frozen=True, slots=True)
class Bundle:
    """An ``olm.bundle`` object: one installable version of a package."""

    package: str
    name: str
    image: str = ""
    properties: tuple[Property, ...] = ()
    related_images: tuple[RelatedImage, ...] = ()
    origin: Origin | None = None

    def props(self, type_: str) -> Iterator[JSON]:
        """Yield the values of every property of ``type_``, in catalog order."""
        for prop in self.properties:
            if prop.type == type_:
                yield prop.value

    def prop(self, type_: str) -> JSON | None:
        """Return the value of the first property of ``type_``, or None."""
        return next(self.props(type_), None)

    @property
    def version(self) -> str:
        """The version string of the ``olm.package`` property ("" when absent)."""
        value = self.prop(PROP_PACKAGE)
        return str(value.get("version", "")) if isinstance(value, dict) else ""

    @property
    def release(self) -> str:
        """The optional release of the ``olm.package`` property ("" when absent)."""
        value = self.prop(PROP_PACKAGE)
        return str(value.get("release", "") or "") if isinstance(value, dict) else ""

    @property
    def provided_apis(self) -> tuple[GVK, ...]:
        """The APIs this bundle provides (``olm.gvk`` properties)."""
        return tuple(_gvk(v) for v in self.props(PROP_GVK) if isinstance(v, dict))

    @property
    def required_apis(self) -> tuple[GVK, ...]:
        """The APIs this bundle requires (``olm.gvk.required`` properties)."""
        return tuple(_gvk(v) for v in self.props(PROP_GVK_REQUIRED) if isinstance(v, dict))

    @property
    def mediatype(self) -> str:
        """The ``olm.bundle.mediatype`` property ("" means registry+v1)."""
        value = self.prop(PROP_BUNDLE_MEDIATYPE)
        return value if isinstance(value, str) else ""

    @property
    def csv_metadata(self) -> Mapping[str, JSON]:
        """The ``olm.csv.metadata`` property, or an empty mapping."""
        value = self.prop(PROP_CSV_METADATA)
        return value if isinstance(value, dict) else {}


def _gvk(value: Mapping[str, JSON]) -> GVK:
    return GVK(
        group=str(value.get("group", "")),
        version=str(value.get("version", "")),
        kind=str(value.get("kind", "")),
    )


@dataclass(frozen=True, slots=True)
class DeprecationEntry:
    """One deprecation: a reference (schema ``olm.package``/``olm.channel``/``olm.bundle`` and a
    name, empty for the package itself) and the message shown to users."""

    schema: str
    name: str
    message: str


@dataclass(frozen=True, slots=True)
class Deprecation:
    """An ``olm.deprecations`` object: the deprecations of one package."""

    package: str
    entries: tuple[DeprecationEntry, ...] = ()
    origin: Origin | None = None


@dataclass(frozen=True, slots=True)
class Meta:
    """Any object of a schema the model does not interpret (kept opaque, as opm does)."""

    schema: str
    package: str
    name: str
    blob: Mapping[str, JSON]
    origin: Origin | None = None


@dataclass(slots=True)
class Catalog:
    """A whole catalog: every object, grouped by kind, in the order they were read.

    Lookups by name are built once by :meth:`index`; callers must not mutate a catalog that is in
    use (build a new one and swap).
    """

    name: str = ""
    packages: list[Package] = field(default_factory=list)
    channels: list[Channel] = field(default_factory=list)
    bundles: list[Bundle] = field(default_factory=list)
    deprecations: list[Deprecation] = field(default_factory=list)
    others: list[Meta] = field(default_factory=list)

    def package(self, name: str) -> Package | None:
        """Return the package called ``name``, or None."""
        return next((p for p in self.packages if p.name == name), None)

    def channels_of(self, package: str) -> list[Channel]:
        """Return the channels of ``package`` in catalog order."""
        return [c for c in self.channels if c.package == package]

    def bundles_of(self, package: str) -> list[Bundle]:
        """Return the bundles of ``package`` in catalog order."""
        return [b for b in self.bundles if b.package == package]

    def bundle(self, package: str, name: str) -> Bundle | None:
        """Return the bundle ``name`` of ``package``, or None."""
        return next((b for b in self.bundles if b.package == package and b.name == name), None)

    def deprecation_of(self, package: str) -> Deprecation | None:
        """Return the ``olm.deprecations`` object of ``package``, or None."""
        return next((d for d in self.deprecations if d.package == package), None)
