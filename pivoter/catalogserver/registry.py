"""The ``api.Registry`` view of one catalog: heads, channel entries and ``api.Bundle`` messages.

Built once per loaded catalog by :mod:`pivoter.catalogserver.reload` and queried by the gRPC
servicer (:mod:`pivoter.catalogserver.grpc`). The semantics follow operator-registry's reference
server (``pkg/cache/pkgs.go``, ``pkg/cache/cache.go``, ``pkg/api/model_to_api.go`` at v1.73.0):
one ``api.Bundle`` per (package, channel, bundle), ``replaces``/``skips`` trimmed on single-bundle
answers, ``csvJson``/``object`` blanked in ``ListBundles`` when the bundle has an image, property
values as Go re-encodes them.

What every answer needs is built once per catalog: the bundle-level part of each ``api.Bundle``
(names, APIs, properties and dependencies as Go re-encodes them), serialized; every ``ListBundles``
message of a bundle with an image (about 1 MiB for the largest shared catalog); and indexes of
the entries that replace a name and of the bundles that provide a GVK. A call then copies a few
fields into a message instead of encoding properties again or scanning the catalog. Inline
manifests (``csvJson``, ``object``) are still built on demand so that they are held once (in the
model), not twice.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import orjson
from google.protobuf import struct_pb2

from pivoter.catalogserver.csv import synthesize_csv
from resolver.catalog import gojson, model
from resolver.catalog.registryapi import registry_pb2 as api

# opm refuses custom-schema keys that could escape its cache directory; same rule here.
ANSWER_CACHE_BYTES = 16 << 20
"""Serialized bundle answers kept per catalog snapshot (least recently used first out). Building a
bundle's manifests costs 0.3 ms (a CSV synthesized from ``olm.csv.metadata``) to several ms (inline
objects decoded and re-encoded) per call; clients such as OLM's catalog operator ask for the same
few bundles again and again. opm reads finished answers from its cache directory."""


class _AnswerCache:
    """Serialized answers by key, least recently used dropped past ``max_bytes``; thread-safe."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        self._answers: OrderedDict[tuple[str, ...], bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, ...], build: Callable[[], bytes]) -> bytes:
        with self._lock:
            found = self._answers.get(key)
            if found is not None:
                self._answers.move_to_end(key)
                return found
        answer = build()  # outside the lock: concurrent builds of one key give equal bytes
        if len(answer) > self._max_bytes:
            return answer
        with self._lock:
            if key not in self._answers:
                self._answers[key] = answer
                self._bytes += len(answer)
                while self._bytes > self._max_bytes:
                    _, dropped = self._answers.popitem(last=False)
                    self._bytes -= len(dropped)
        return answer


_META_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


class RegistryError(Exception):
    """A query that has no answer; the message is what opm says in the same case."""


@dataclass(slots=True)
class ChannelView:
    """One channel as the registry sees it: its head and its entries by bundle name."""

    name: str
    head: str
    entries: dict[str, model.ChannelEntry]
    deprecation: str | None = None


@dataclass(slots=True)
class PackageView:
    """One package: default channel, deprecation and channels by name."""

    name: str
    default_channel: str
    channels: dict[str, ChannelView] = field(default_factory=dict)
    deprecation: str | None = None


def channel_head(channel: model.Channel) -> str:
    """Return the one entry no other entry replaces or skips (operator-registry Channel.Head).

    Raises RegistryError when there is none or more than one (an invalid catalog).
    """
    incoming: set[str] = set()
    for entry in channel.entries:
        if entry.replaces:
            incoming.add(entry.replaces)
        incoming.update(entry.skips)
    heads = [e.name for e in channel.entries if e.name not in incoming]
    if not heads:
        raise RegistryError(f"package {channel.package!r}, channel {channel.name!r}: no head")
    if len(heads) > 1:
        raise RegistryError(
            f"package {channel.package!r}, channel {channel.name!r}: multiple heads {heads}"
        )
    return heads[0]


def _valid_meta_key(value: str) -> bool:
    return bool(value) and value[0] not in "._-" and set(value) <= _META_KEY_CHARS


class RegistryView:
    """Answers every ``api.Registry`` query about one (validated) catalog."""

    def __init__(self, catalog: model.Catalog) -> None:
        self.catalog = catalog
        self.packages: dict[str, PackageView] = {}
        self._bundle_deprecations: dict[tuple[str, str], str] = {}
        self._channel_deprecations: dict[tuple[str, str], str] = {}
        self._package_deprecations: dict[str, str] = {}
        self._metas: dict[tuple[str, str], list[model.Meta]] = {}
        for deprecation in catalog.deprecations:
            for d in deprecation.entries:
                if d.schema == model.SCHEMA_BUNDLE:
                    self._bundle_deprecations[(deprecation.package, d.name)] = d.message
                elif d.schema == model.SCHEMA_CHANNEL:
                    self._channel_deprecations[(deprecation.package, d.name)] = d.message
                elif d.schema == model.SCHEMA_PACKAGE:
                    self._package_deprecations[deprecation.package] = d.message
        for pkg in catalog.packages:
            self.packages[pkg.name] = PackageView(
                name=pkg.name,
                default_channel=pkg.default_channel,
                deprecation=self._package_deprecations.get(pkg.name),
            )
        for channel in catalog.channels:
            view = self.packages.get(channel.package)
            if view is None:
                continue
            view.channels[channel.name] = ChannelView(
                name=channel.name,
                head=channel_head(channel),
                entries={e.name: e for e in channel.entries},
                deprecation=self._channel_deprecations.get((channel.package, channel.name)),
            )
        for meta in catalog.others:
            package = meta.package
            if _valid_meta_key(meta.schema) and (not package or _valid_meta_key(package)):
                self._metas.setdefault((meta.schema, package), []).append(meta)
        # Built when first asked for, not here: a server answers as soon as the catalog is
        # loaded and validated, and each of these costs about as much as the load itself at
        # 55,000 bundles. The bundle-level fields of each bundle's api.Bundle, serialized once:
        self._bases: dict[tuple[str, str], bytes] = {}
        self._answers = _AnswerCache(ANSWER_CACHE_BYTES)
        self._lock = threading.Lock()  # guards building the two indexes below
        self._replacing: dict[str, list[tuple[PackageView, ChannelView, model.ChannelEntry]]] = {}
        self._providers: dict[model.GVK, list[tuple[PackageView, ChannelView, str]]] = {}
        self._latest_providers: dict[model.GVK, list[tuple[PackageView, ChannelView]]] = {}
        self._indexed = False
        self._listed: list[bytes | tuple[str, str, str]] | None = None

    def _base(self, package: str, name: str) -> bytes | None:
        """The serialized bundle-level fields of a bundle (the first of that name)."""
        key = (package, name)
        base = self._bases.get(key)
        if base is None:
            found = self.catalog.bundle(package, name)
            if found is None:
                return None
            message = bundle_base(found, self._bundle_deprecations.get(key))
            base = self._bases[key] = message.SerializeToString()  # equal bytes if built twice
        return base

    def _list(self) -> list[bytes | tuple[str, str, str]]:
        """ListBundles in opm's cache key order: (channel, package, bundle); the messages of
        bundles with an image are small and kept serialized, the others (with manifests) are
        built when streamed."""
        with self._lock:
            if self._listed is not None:
                return self._listed
            listed: list[bytes | tuple[str, str, str]] = []
            for channel_name, package, name in sorted(
                (c.name, p.name, n)
                for p in self.packages.values()
                for c in p.channels.values()
                for n in c.entries
            ):
                found = self.catalog.bundle(package, name)
                if found is not None and found.image:
                    member = self.packages[package].channels[channel_name]
                    message = self._api_bundle(package, member, name, trim=False, for_list=True)
                    listed.append(message.SerializeToString())
                else:
                    listed.append((channel_name, package, name))
            self._listed = listed
            return listed

    def _indexes(self) -> None:
        """Build the replace and provide indexes once (:meth:`_index_entries`)."""
        with self._lock:
            if not self._indexed:
                self._index_entries()
                self._indexed = True

    def _index_entries(self) -> None:
        """Index entries by the names they replace or skip, and bundles by the GVKs they provide,
        in the order the RPCs answer (package, channel, entry order of the catalog)."""
        provided: dict[tuple[str, str], tuple[model.GVK, ...]] = {}  # a bundle is in many channels
        for pkg in self.packages.values():
            for ch in pkg.channels.values():
                for entry in ch.entries.values():
                    self._replacing.setdefault(entry.replaces, []).append((pkg, ch, entry))
                    for skip in entry.skips:
                        if skip != entry.replaces:
                            self._replacing.setdefault(skip, []).append((pkg, ch, entry))
                    apis = provided.get((pkg.name, entry.name))
                    if apis is None:
                        found = self.catalog.bundle(pkg.name, entry.name)
                        if found is None:
                            continue
                        apis = provided[(pkg.name, entry.name)] = tuple(
                            dict.fromkeys(found.provided_apis)
                        )
                    for gvk in apis:
                        self._providers.setdefault(gvk, []).append((pkg, ch, entry.name))
                        if entry.name == ch.head:
                            self._latest_providers.setdefault(gvk, []).append((pkg, ch))

    # -- lookups shared by the RPCs -------------------------------------------------------------

    def _package(self, name: str) -> PackageView:
        try:
            return self.packages[name]
        except KeyError:
            raise RegistryError(f"package {_q(name)} not found") from None

    def _channel(self, package: str, channel: str) -> tuple[PackageView, ChannelView]:
        pkg = self._package(package)
        try:
            return pkg, pkg.channels[channel]
        except KeyError:
            raise RegistryError(f"package {_q(package)}, channel {_q(channel)} not found") from None

    def bundle(self, package: str, channel: str, name: str, *, trim: bool = True) -> api.Bundle:
        """Return the ``api.Bundle`` of one channel membership (``GetBundle``)."""
        _, ch = self._channel(package, channel)
        if name not in ch.entries:
            raise RegistryError(
                f"package {_q(package)}, channel {_q(channel)}, bundle {_q(name)} not found"
            )
        return self._api_bundle(package, ch, name, trim=trim)

    def _api_bundle(
        self, package: str, ch: ChannelView, name: str, *, trim: bool, for_list: bool = False
    ) -> api.Bundle:
        if for_list:  # ListBundles: serialized at load, or streamed once
            return self._build_api_bundle(package, ch, name, trim=trim, for_list=True)
        answer = self._answers.get(
            (package, ch.name, name, "trim" if trim else "full"),
            lambda: self._build_api_bundle(package, ch, name, trim=trim).SerializeToString(),
        )
        return api.Bundle.FromString(answer)

    def _build_api_bundle(
        self, package: str, ch: ChannelView, name: str, *, trim: bool, for_list: bool = False
    ) -> api.Bundle:
        base = self._base(package, name)
        found = self.catalog.bundle(package, name)
        if base is None or found is None:  # validation guarantees every entry has a bundle
            raise RegistryError(f"package {_q(package)}, bundle {_q(name)} not found")
        entry = ch.entries[name]
        message = api.Bundle.FromString(base)
        message.channelName = ch.name
        message.skipRange = entry.skip_range
        if not trim:
            message.replaces = entry.replaces
            message.skips.extend(entry.skips)
        # ListBundles blanks the manifests of bundles with an image: do not build them.
        if not (for_list and found.image):
            add_manifests(message, found, self.catalog.package(package))
        return message

    # -- the RPCs -------------------------------------------------------------------------------

    def list_packages(self) -> Iterator[str]:
        """Package names (``ListPackages``; opm's order is random, ours is catalog order)."""
        return iter(self.packages)

    def get_package(self, name: str) -> api.Package:
        """The package with its channels sorted by name and their heads (``GetPackage``)."""
        pkg = self._package(name)
        message = api.Package(name=pkg.name, defaultChannelName=pkg.default_channel)
        for ch in sorted(pkg.channels.values(), key=lambda c: c.name):
            channel = message.channels.add(name=ch.name, csvName=ch.head)
            if ch.deprecation is not None:
                channel.deprecation.message = ch.deprecation
        if pkg.deprecation is not None:
            message.deprecation.message = pkg.deprecation
        return message

    def list_bundles(self) -> Iterator[bytes]:
        """Every (package, channel, bundle), untrimmed, in opm's order (``ListBundles``), each
        an ``api.Bundle`` serialized."""
        for item in self._list():
            if isinstance(item, bytes):
                yield item
            else:
                channel, package, name = item
                ch = self.packages[package].channels[channel]
                message = self._api_bundle(package, ch, name, trim=False, for_list=True)
                yield message.SerializeToString()

    def bundle_for_channel(self, package: str, channel: str) -> api.Bundle:
        """The head of a channel (``GetBundleForChannel``)."""
        _, ch = self._channel(package, channel)
        return self._api_bundle(package, ch, ch.head, trim=True)

    def entries_that_replace(self, name: str) -> list[api.ChannelEntry]:
        """Every entry whose replaces or skips names ``name`` (``GetChannelEntriesThatReplace``)."""
        out: list[api.ChannelEntry] = []
        self._indexes()
        for pkg, ch, entry in self._replacing.get(name, ()):
            out.append(_entry(pkg.name, ch.name, entry.name, entry.replaces))
        if not out:
            raise RegistryError(f"no channel entries found that replace {name}")
        return out

    def bundle_that_replaces(self, name: str, package: str, channel: str) -> api.Bundle:
        """A bundle of the channel replacing or skipping ``name`` (``GetBundleThatReplaces``).

        opm picks one at random when several do; this picks the first in channel order.
        """
        if package not in self.packages:
            raise RegistryError(f"package {package} not found")
        _, ch = self._channel(package, channel)
        for entry in ch.entries.values():
            if entry.replaces == name or name in entry.skips:
                return self._api_bundle(package, ch, entry.name, trim=True)
        raise RegistryError(f"no entry found for package {_q(package)}, channel {_q(channel)}")

    def _entries_for(
        self, pkg: PackageView, ch: ChannelView, name: str, *, any_channel: bool
    ) -> list[api.ChannelEntry]:
        entry = ch.entries[name]
        out = [_entry(pkg.name, ch.name, name, entry.replaces)]
        out.extend(
            _entry(pkg.name, ch.name, name, s)
            for s in entry.skips
            if s != entry.replaces and (any_channel or s in ch.entries)
        )
        return out

    def entries_that_provide(self, gvk: model.GVK) -> list[api.ChannelEntry]:
        """Entries (plus one per skip) of bundles providing ``gvk``
        (``GetChannelEntriesThatProvide``; the plural is ignored, as opm does)."""
        out: list[api.ChannelEntry] = []
        self._indexes()
        for pkg, ch, name in self._providers.get(gvk, ()):
            out.extend(self._entries_for(pkg, ch, name, any_channel=True))
        if not out:
            raise RegistryError(f"no channel entries found that provide {_gvk_text(gvk)}")
        return out

    def latest_entries_that_provide(self, gvk: model.GVK) -> list[api.ChannelEntry]:
        """Like :meth:`entries_that_provide` for channel heads only
        (``GetLatestChannelEntriesThatProvide``)."""
        out: list[api.ChannelEntry] = []
        self._indexes()
        for pkg, ch in self._latest_providers.get(gvk, ()):
            out.extend(self._entries_for(pkg, ch, ch.head, any_channel=False))
        if not out:
            raise RegistryError(f"no channel entries found that provide {_gvk_text(gvk)}")
        return out

    def default_bundle_that_provides(self, gvk: model.GVK) -> api.Bundle:
        """The default-channel head providing ``gvk`` of the first package by name
        (``GetDefaultBundleThatProvides``)."""
        latest = sorted(self.latest_entries_that_provide(gvk), key=lambda e: e.packageName)
        for entry in latest:
            pkg = self.packages[entry.packageName]
            if entry.channelName == pkg.default_channel:
                return self.bundle(entry.packageName, entry.channelName, entry.bundleName)
        raise RegistryError(f"no entry found that provides {_gvk_text(gvk)}")

    def custom_schema_objects(self, schema: str, package: str) -> Iterator[struct_pb2.Struct]:
        """Objects of a custom schema in one package ("" = package-less ones), in catalog order
        (``ExperimentalListPackageCustomSchemas``)."""
        for label, value in (("schema", schema), ("packageName", package)):
            if label == "packageName" and not value:
                continue
            if not value:
                raise ValueError(f"invalid {label}: must not be empty")
            if not _valid_meta_key(value):
                raise ValueError(
                    f"invalid {label} {_q(value)}: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]*$"
                )
        for meta in self._metas.get((schema, package), ()):
            message = struct_pb2.Struct()
            message.update(dict(meta.blob))
            yield message


def _q(text: str) -> str:
    """Quote like Go's %q for the names that appear in error messages."""
    return orjson.dumps(text).decode()


def _gvk_text(gvk: model.GVK) -> str:
    return f"group:{_q(gvk.group)} version:{_q(gvk.version)} kind:{_q(gvk.kind)}"


def _entry(package: str, channel: str, name: str, replaces: str) -> api.ChannelEntry:
    return api.ChannelEntry(
        packageName=package, channelName=channel, bundleName=name, replaces=replaces
    )


def to_api_bundle(
    bundle: model.Bundle,
    package: model.Package | None,
    *,
    channel: str,
    entry: model.ChannelEntry,
    deprecation: str | None,
    with_manifests: bool = True,
) -> api.Bundle:
    """Convert one bundle, as a member of ``channel``, to ``api.Bundle`` (model_to_api.go).

    ``with_manifests=False`` leaves ``csvJson`` and ``object`` empty (what ListBundles sends for
    bundles that have an image).
    """
    message = bundle_base(bundle, deprecation)
    message.channelName = channel
    message.skipRange = entry.skip_range
    message.replaces = entry.replaces
    message.skips.extend(entry.skips)
    if with_manifests:
        add_manifests(message, bundle, package)
    return message


def bundle_base(bundle: model.Bundle, deprecation: str | None) -> api.Bundle:
    """The fields of ``api.Bundle`` that do not depend on the channel, without manifests."""
    message = api.Bundle(
        csvName=bundle.name,
        packageName=bundle.package,
        bundlePath=bundle.image,
        version=bundle.version,
    )
    for gvk in bundle.provided_apis:
        message.providedApis.add(group=gvk.group, version=gvk.version, kind=gvk.kind)
    for gvk in bundle.required_apis:
        message.requiredApis.add(group=gvk.group, version=gvk.version, kind=gvk.kind)
    for prop in bundle.properties:
        if prop.type == model.PROP_GVK_REQUIRED:
            message.dependencies.add(type=model.PROP_GVK, value=gojson.dumps(prop.value))
        elif prop.type == model.PROP_PACKAGE_REQUIRED and isinstance(prop.value, dict):
            # opm rebuilds these as an olm.package property: {"packageName", "version"} in
            # struct order, the range moved to "version".
            value = orjson.dumps(
                {
                    "packageName": str(prop.value.get("packageName", "")),
                    "version": str(prop.value.get("versionRange", "")),
                }
            ).decode()
            message.dependencies.add(type=model.PROP_PACKAGE, value=value)
        if prop.type not in (model.PROP_BUNDLE_OBJECT, model.PROP_CSV_METADATA):
            message.properties.add(type=prop.type, value=gojson.dumps(prop.value))
    if deprecation is not None:
        message.deprecation.message = deprecation
    return message


def add_manifests(message: api.Bundle, bundle: model.Bundle, package: model.Package | None) -> None:
    """Set ``csvJson`` and ``object``: the inline manifests, or the CSV opm synthesizes from
    ``olm.csv.metadata``."""
    # opm's inline objects are yaml.ToJSON output: Go map order and HTML escaping. The texts
    # come from orjson after the loader's checks, so orjson reads them back as they were.
    decoded = [orjson.loads(o) for o in bundle.objects]
    objects = [gojson.dumps(o, escape_html=True) for o in decoded]
    csv_json = next(
        (
            text
            for obj, text in zip(decoded, objects, strict=True)
            if isinstance(obj, dict) and obj.get("kind") == "ClusterServiceVersion"
        ),
        "",
    )
    metadata = [v for v in bundle.props(model.PROP_CSV_METADATA) if isinstance(v, dict)]
    if not csv_json and len(metadata) == 1:
        csv_json = synthesize_csv(bundle, package, metadata[0])
        if not objects:
            objects = [csv_json]
    message.csvJson = csv_json
    message.object.extend(objects)
