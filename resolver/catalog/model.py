"""The file-based catalog (FBC) model: packages, channels, bundles, deprecations, other blobs.

This is the one in-memory form every catalog source produces (a directory, catalogd's HTTP API,
operator-registry's gRPC ``api.Registry``) and every consumer reads (validation, the servers, the
resolver). Objects are immutable once loaded; a reload builds a new :class:`Catalog` and swaps it.

Property values are kept as the decoded JSON they were in the catalog (``dict``/``list``/scalars);
typed accessors on :class:`Bundle` decode the well-known ones on demand.
"""

from __future__ import annotations

import base64
import binascii
import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

import orjson

from resolver import safedata

JSON = Any
_T = TypeVar("_T")
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
PROP_LABEL = "olm.label"
PROP_LABEL_REQUIRED = "olm.label.required"

SCHEMA_PACKAGE = "olm.package"
SCHEMA_CHANNEL = "olm.channel"
SCHEMA_BUNDLE = "olm.bundle"
SCHEMA_DEPRECATIONS = "olm.deprecations"


def _pickled_by_fields(cls: type[_T]) -> type[_T]:
    """Pickle a frozen dataclass as ``cls(*field values)``.

    The default for frozen, slotted dataclasses (``dataclasses._dataclass_setstate``) looks the
    fields up again for every object it restores, about half of reading a warm catalog cache
    (:mod:`resolver.catalog.cache`) of 55,000 bundles; the generated ``__init__`` sets them in
    one call. Only classes the cache's unpickler admits are ever restored this way.
    """
    names = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]

    def __reduce__(self: _T) -> tuple[type[_T], tuple[Any, ...]]:
        return (cls, tuple(getattr(self, name) for name in names))

    cls.__reduce__ = __reduce__  # type: ignore[assignment,method-assign]
    return cls


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Origin:
    """Where an object was read from: a file relative to the catalog root and a 1-based line.

    ``line`` is 0 when unknown (e.g. objects that arrived over gRPC or HTTP).
    """

    path: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


class Absent(enum.Enum):
    """The type of :data:`ABSENT`."""

    VALUE = "absent"


ABSENT = Absent.VALUE
"""The ``Property.value`` of a property that had no ``value`` key at all (opm refuses those on
bundles); distinct from a JSON ``null`` value, and preserved by pickling."""


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Property:
    """A typed property ``{type, value}`` of a bundle, package or channel."""

    type: str
    value: JSON


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class GVK:
    """A Kubernetes API (group, version, kind) provided or required by a bundle."""

    group: str
    version: str
    kind: str

    def __str__(self) -> str:
        return f"{self.group}/{self.version}/{self.kind}"


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Icon:
    """A package icon: base64 data and its media type."""

    base64data: str
    mediatype: str


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class RelatedImage:
    """An image a bundle refers to (``relatedImages``); ``name`` may be empty."""

    name: str
    image: str


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Package:
    """An ``olm.package`` object."""

    name: str
    default_channel: str = ""
    icon: Icon | None = None
    description: str = ""
    properties: tuple[Property, ...] = ()
    origin: Origin | None = None


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class ChannelEntry:
    """One entry of a channel: a bundle name and its upgrade edges within this channel."""

    name: str
    replaces: str = ""
    skips: tuple[str, ...] = ()
    skip_range: str = ""


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Channel:
    """An ``olm.channel`` object: the ordered entries of one channel of one package."""

    package: str
    name: str
    entries: tuple[ChannelEntry, ...] = ()
    properties: tuple[Property, ...] = ()
    origin: Origin | None = None


@_pickled_by_fields
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

    @property
    def objects(self) -> tuple[str, ...]:
        """The manifests inlined as ``olm.bundle.object`` properties, each as compact JSON text.

        Decoded on every call (they are large and rarely needed); the loader has already
        checked that each one decodes.
        """
        return tuple(decode_bundle_object(v) for v in self.props(PROP_BUNDLE_OBJECT))

    @property
    def csv_json(self) -> str:
        """The inlined ClusterServiceVersion manifest as JSON text ("" when none is inlined)."""
        for text in self.objects:
            obj = safedata.load_json(text, limits=BUNDLE_OBJECT_LIMITS)
            if isinstance(obj, dict) and obj.get("kind") == "ClusterServiceVersion":
                return text
        return ""


BUNDLE_OBJECT_LIMITS = safedata.Limits(
    max_bytes=64 << 20, max_depth=200, max_nodes=1_000_000, max_expanded_bytes=32 << 20
)
"""Limits on one decoded ``olm.bundle.object`` manifest (as for a catalog document: it may become
32 MiB of JSON through aliases, or twice its own length)."""


def decode_bundle_object(value: JSON) -> str:
    """Decode one ``olm.bundle.object`` value (``{data: <base64 YAML or JSON>}``) to JSON text.

    Raises ValueError when the data is not base64 or does not hold one YAML/JSON document of
    plain JSON data within :data:`BUNDLE_OBJECT_LIMITS` (nesting, alias expansion by count and
    by size, size): the same checks as catalog files, so what loads here can be rendered, served
    and cached. Within a :func:`resolver.safedata.spending` block (a catalog file's load) what
    its YAML aliases add is charged to that budget: base64 hides a second amplification inside
    a document that looked small.
    """
    if not isinstance(value, dict):
        raise ValueError("olm.bundle.object value must be an object with a base64 'data' field")
    data = value.get("data")
    if data is None:
        return "null"
    if not isinstance(data, str):
        raise ValueError("olm.bundle.object 'data' must be a base64 string")
    try:
        raw = base64.b64decode(data.replace("\n", "").replace("\r", ""), validate=True)
    except binascii.Error as err:
        raise ValueError(f"olm.bundle.object 'data' is not valid base64: {err}") from None
    try:
        obj = safedata.load_json_or_yaml(raw, limits=BUNDLE_OBJECT_LIMITS, go_yaml=True)
    except safedata.SafeDataError as err:
        raise ValueError(f"olm.bundle.object 'data' (decoded): {err}") from None
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode()


def _gvk(value: Mapping[str, JSON]) -> GVK:
    return GVK(
        group=str(value.get("group", "")),
        version=str(value.get("version", "")),
        kind=str(value.get("kind", "")),
    )


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class DeprecationEntry:
    """One deprecation: a reference (schema ``olm.package``/``olm.channel``/``olm.bundle`` and a
    name, empty for the package itself) and the message shown to users."""

    schema: str
    name: str
    message: str


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Deprecation:
    """An ``olm.deprecations`` object: the deprecations of one package."""

    package: str
    entries: tuple[DeprecationEntry, ...] = ()
    origin: Origin | None = None


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Meta:
    """Any object of a schema the model does not interpret (kept opaque, as opm does)."""

    schema: str
    package: str
    name: str
    blob: Mapping[str, JSON]
    origin: Origin | None = None


@dataclass(slots=True)
class _Index:
    """Lookups by name, built once per catalog (see :meth:`Catalog.index`)."""

    packages: dict[str, Package]
    channels: dict[str, list[Channel]]
    bundles: dict[str, list[Bundle]]
    bundle: dict[tuple[str, str], Bundle]
    deprecations: dict[str, Deprecation]


@dataclass(slots=True)
class Catalog:
    """A whole catalog: every object, grouped by kind, in the order they were read.

    Lookups by name are built once by :meth:`index` (on first use); callers must not mutate a
    catalog that is in use (build a new one and swap). When names repeat (an invalid catalog),
    lookups return the first object of that name, in catalog order.
    """

    name: str = ""
    packages: list[Package] = field(default_factory=list)
    channels: list[Channel] = field(default_factory=list)
    bundles: list[Bundle] = field(default_factory=list)
    deprecations: list[Deprecation] = field(default_factory=list)
    others: list[Meta] = field(default_factory=list)
    _index: _Index | None = field(default=None, init=False, repr=False, compare=False)
    memo: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    """What the layers above derive from this catalog and keep as long as it lives (a catalog is
    not changed once loaded), e.g. the resolver's candidates
    (:class:`resolver.rules.inputs.Index`). Not pickled."""

    def index(self) -> _Index:
        """Return the lookups by name, building them on first use (O(n) once, O(1) after)."""
        if self._index is None:
            packages: dict[str, Package] = {}
            for p in self.packages:
                packages.setdefault(p.name, p)
            channels: dict[str, list[Channel]] = {}
            for c in self.channels:
                channels.setdefault(c.package, []).append(c)
            bundles: dict[str, list[Bundle]] = {}
            bundle: dict[tuple[str, str], Bundle] = {}
            for b in self.bundles:
                bundles.setdefault(b.package, []).append(b)
                bundle.setdefault((b.package, b.name), b)
            deprecations: dict[str, Deprecation] = {}
            for d in self.deprecations:
                deprecations.setdefault(d.package, d)
            self._index = _Index(packages, channels, bundles, bundle, deprecations)
        return self._index

    def package(self, name: str) -> Package | None:
        """Return the package called ``name``, or None."""
        return self.index().packages.get(name)

    def channels_of(self, package: str) -> list[Channel]:
        """Return the channels of ``package`` in catalog order."""
        return list(self.index().channels.get(package, ()))

    def channel(self, package: str, name: str) -> Channel | None:
        """Return the channel ``name`` of ``package``, or None."""
        return next((c for c in self.index().channels.get(package, ()) if c.name == name), None)

    def bundles_of(self, package: str) -> list[Bundle]:
        """Return the bundles of ``package`` in catalog order."""
        return list(self.index().bundles.get(package, ()))

    def bundle(self, package: str, name: str) -> Bundle | None:
        """Return the bundle ``name`` of ``package``, or None."""
        return self.index().bundle.get((package, name))

    def deprecation_of(self, package: str) -> Deprecation | None:
        """Return the ``olm.deprecations`` object of ``package``, or None."""
        return self.index().deprecations.get(package)

    def __getstate__(self) -> tuple[Any, ...]:
        # The index is derived data: leave it out of pickles (the parsed-catalog cache).
        return (
            self.name,
            self.packages,
            self.channels,
            self.bundles,
            self.deprecations,
            self.others,
        )

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        (self.name, self.packages, self.channels, self.bundles, self.deprecations, self.others) = (
            state
        )
        self._index = None
        self.memo = {}
