"""A catalog source for a live operator-registry ``api.Registry`` gRPC server (``opm serve``,
an OLM v0 CatalogSource pod, or ``pivoter catalog serve``).

The catalog is rebuilt from ``ListPackages`` + ``GetPackage`` (packages, default channels, heads,
package and channel deprecations) and ``ListBundles`` (one message per channel membership: the
entry's replaces/skips/skipRange, the bundle's image and properties, and the requirements OLM v0
reads from a sqlite-built index's older fields: dependencies, required and provided APIs). The
FBC objects are assembled first and handed to the shared loader, so the model is the one a
directory holding them would give. What the wire does not carry (icons, descriptions, package
and channel properties, ``olm.csv.metadata``/``olm.bundle.object`` of bundles with an image,
related images, package-less custom schemas) is absent; docs/catalogs-wire.md lists it. Opened by
:func:`resolver.catalog.sources.open_source` for ``grpc://host:port``.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from resolver import safedata
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.load import charge_message, load_objects, message_budget
from resolver.catalog.model import (
    JSON,
    PROP_BUNDLE_OBJECT,
    PROP_CONSTRAINT,
    PROP_GVK,
    PROP_GVK_REQUIRED,
    PROP_LABEL_REQUIRED,
    PROP_PACKAGE_REQUIRED,
    SCHEMA_BUNDLE,
    SCHEMA_CHANNEL,
    SCHEMA_DEPRECATIONS,
    SCHEMA_PACKAGE,
    Catalog,
    Origin,
)
from resolver.catalog.registryapi import registry_pb2 as api
from resolver.catalog.sources.base import CatalogSourceError
from resolver.catalog.sources.stale import STALE_METADATA

_M = TypeVar("_M")

DEFAULT_TIMEOUT = 30.0
"""Seconds each call may take before the server counts as stalled."""
DEFAULT_DEADLINE = 600.0
"""Seconds a whole fetch may take."""
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024**2
"""Largest single message accepted (OLM uses 100 MiB; real bundles are well under 16 MiB)."""
DEFAULT_MAX_BYTES = 2 * 1024**3
"""Largest catalog accepted, all messages of one fetch together."""

_SERVICE = "/api.Registry/"


class RegistrySource:
    """Fetches a catalog from an ``api.Registry`` server."""

    def __init__(
        self,
        target: str,
        *,
        name: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        deadline: float = DEFAULT_DEADLINE,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        ca_file: str | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.spec = target
        self.target = target.removeprefix("grpc://").removeprefix("grpcs://")
        self.secure = target.startswith("grpcs://") or ca_file is not None
        self.name = name
        self.timeout = timeout
        self.deadline = deadline
        self.max_message_bytes = max_message_bytes
        self.max_bytes = max_bytes
        self.ca_file = ca_file
        self._digest: str | None = None
        self.fetched_bytes = 0
        """Bytes of the response messages the last fetch received (the whole catalog: the
        registry API has no change signal)."""
        self.stale: str | None = None
        """Why the server says the content of the last fetch is stale (its ``x-pivoter-stale``
        metadata, :mod:`.stale`); None when it did not say so."""

    @property
    def digest(self) -> str | None:
        """sha256 over every message received in the last fetch, in order."""
        return self._digest

    def _channel(self) -> grpc.Channel:
        options = [
            ("grpc.max_receive_message_length", self.max_message_bytes),
            ("grpc.enable_retries", 0),
        ]
        if self.secure:
            root = None
            if self.ca_file:
                with open(self.ca_file, "rb") as f:
                    root = f.read()
            credentials = grpc.ssl_channel_credentials(root_certificates=root)
            return grpc.secure_channel(self.target, credentials, options=options)
        return grpc.insecure_channel(self.target, options=options)

    def _fail(self, method: str, err: grpc.RpcError) -> CatalogSourceError:
        code = err.code() if isinstance(err, grpc.Call) else None
        details = err.details() if isinstance(err, grpc.Call) else str(err)
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return CatalogSourceError(self.spec, f"{method}: no answer within {self.timeout:g}s")
        if code == grpc.StatusCode.UNAVAILABLE:
            return CatalogSourceError(self.spec, f"{method}: server unavailable: {details}")
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            return CatalogSourceError(
                self.spec,
                f"{method}: a message is larger than the {self.max_message_bytes}-byte limit "
                f"({details})",
            )
        name = code.name if code is not None else "error"
        return CatalogSourceError(self.spec, f"{method}: {name}: {details}")

    def fetch(self) -> Catalog:
        """Read every package and bundle and build the catalog (raises CatalogSourceError)."""
        started = time.monotonic()
        hasher = hashlib.sha256()
        self.fetched_bytes = 0

        memory = message_budget()
        refused: list[str] = []

        def counted(parse: Callable[[bytes], _M]) -> Callable[[bytes], _M]:
            def deserialize(data: bytes) -> _M:
                self.fetched_bytes += len(data)
                try:
                    charge_message(memory, data)
                except safedata.BudgetExceeded as err:
                    refused.append(err.reason)  # grpcio reports it as INTERNAL, without it
                    raise
                return parse(data)

            return deserialize

        def remaining() -> float:
            left = self.deadline - (time.monotonic() - started)
            if left <= 0:
                raise CatalogSourceError(self.spec, f"fetch took longer than {self.deadline:g}s")
            if self.fetched_bytes > self.max_bytes:
                raise CatalogSourceError(
                    self.spec, f"catalog is larger than {self.max_bytes} bytes"
                )
            return left

        def budget() -> float:
            # One call: the stall timeout, clipped to what is left of the fetch's deadline.
            return min(self.timeout, remaining())

        with self._channel() as channel:
            list_packages = channel.unary_stream(
                _SERVICE + "ListPackages",
                request_serializer=api.ListPackageRequest.SerializeToString,
                response_deserializer=counted(api.PackageName.FromString),
            )
            get_package = channel.unary_unary(
                _SERVICE + "GetPackage",
                request_serializer=api.GetPackageRequest.SerializeToString,
                response_deserializer=counted(api.Package.FromString),
            )
            list_bundles = channel.unary_stream(
                _SERVICE + "ListBundles",
                request_serializer=api.ListBundlesRequest.SerializeToString,
                response_deserializer=counted(api.Bundle.FromString),
            )
            method = "ListPackages"
            try:
                names = sorted(
                    m.name
                    for m in _stream(
                        list_packages(api.ListPackageRequest(), timeout=budget()), remaining
                    )
                )
                packages: list[Any] = []
                for pkg_name in names:
                    method = f"GetPackage({pkg_name})"
                    packages.append(
                        get_package(api.GetPackageRequest(name=pkg_name), timeout=budget())
                    )
                method = "ListBundles"
                # The whole stream within what is left of the deadline, however it trickles.
                bundles_call = list_bundles(api.ListBundlesRequest(), timeout=remaining())
                bundles = list(_stream(bundles_call, remaining))
                stale = _stale(bundles_call.initial_metadata())
            except grpc.RpcError as err:
                if refused:
                    raise CatalogSourceError(self.spec, f"{method}: {refused[0]}") from None
                if time.monotonic() - started >= self.deadline:
                    raise CatalogSourceError(
                        self.spec, f"{method}: fetch took longer than {self.deadline:g}s"
                    ) from None
                raise self._fail(method, err) from None
        for message in (*packages, *bundles):
            hasher.update(message.SerializeToString(deterministic=True))
        objects = _objects(packages, bundles, origin=Origin(self.spec))
        try:
            catalog = load_objects(objects, name=self.name, budget=memory)
        except CatalogLoadError as err:
            raise CatalogSourceError(self.spec, str(err)) from None
        self._digest = hasher.hexdigest()
        self.stale = stale
        return catalog


def _stale(metadata: Any) -> str | None:
    """The ``x-pivoter-stale`` value of a call's initial metadata, if any."""
    for key, value in metadata or ():
        if key == STALE_METADATA:
            return value if isinstance(value, str) else bytes(value).decode("ascii", "replace")
    return None


def _stream(call: Any, check: Any) -> Any:
    """Iterate a response stream, checking the fetch deadline and size between messages;
    a failed check cancels the stream."""
    for message in call:
        try:
            check()
        except CatalogSourceError:
            call.cancel()
            raise
        yield message


def _objects(
    packages: list[api.Package], bundles: list[api.Bundle], *, origin: Origin
) -> list[tuple[JSON, Origin]]:
    """Rebuild the FBC objects (dicts) the registry messages were made from."""
    objects: list[tuple[JSON, Origin]] = []
    entries: dict[tuple[str, str], list[dict[str, JSON]]] = {}
    seen: dict[tuple[str, str], api.Bundle] = {}
    bundle_deprecations: dict[str, dict[str, str]] = {}
    for b in bundles:
        entry: dict[str, JSON] = {"name": b.csvName}
        if b.replaces:
            entry["replaces"] = b.replaces
        if b.skips:
            entry["skips"] = list(b.skips)
        if b.skipRange:
            entry["skipRange"] = b.skipRange
        entries.setdefault((b.packageName, b.channelName), []).append(entry)
        seen.setdefault((b.packageName, b.csvName), b)
        if b.HasField("deprecation"):
            bundle_deprecations.setdefault(b.packageName, {})[b.csvName] = b.deprecation.message
    for pkg in packages:
        objects.append(
            (
                {
                    "schema": SCHEMA_PACKAGE,
                    "name": pkg.name,
                    "defaultChannel": pkg.defaultChannelName,
                },
                origin,
            )
        )
        deprecations: list[dict[str, JSON]] = []
        if pkg.HasField("deprecation"):
            deprecations.append(
                {"reference": {"schema": SCHEMA_PACKAGE}, "message": pkg.deprecation.message}
            )
        for ch in pkg.channels:
            objects.append(
                (
                    {
                        "schema": SCHEMA_CHANNEL,
                        "package": pkg.name,
                        "name": ch.name,
                        "entries": entries.get((pkg.name, ch.name), []),
                    },
                    origin,
                )
            )
            if ch.HasField("deprecation"):
                deprecations.append(
                    {
                        "reference": {"schema": SCHEMA_CHANNEL, "name": ch.name},
                        "message": ch.deprecation.message,
                    }
                )
        for bundle_name, message in sorted(bundle_deprecations.get(pkg.name, {}).items()):
            deprecations.append(
                {"reference": {"schema": SCHEMA_BUNDLE, "name": bundle_name}, "message": message}
            )
        if deprecations:
            objects.append(
                (
                    {"schema": SCHEMA_DEPRECATIONS, "package": pkg.name, "entries": deprecations},
                    origin,
                )
            )
    for (package, _), b in sorted(seen.items()):
        properties: list[JSON] = []
        for prop in b.properties:
            try:
                value = safedata.load_json(prop.value)
            except safedata.SafeDataError:
                value = prop.value
            properties.append({"type": prop.type, "value": value})
        properties += _legacy_properties(b, properties)
        if not b.bundlePath:
            # Without an image the inline manifests are the bundle: keep them as opm's FBC did.
            for obj in b.object:
                data = base64.b64encode(obj.encode()).decode()
                properties.append({"type": PROP_BUNDLE_OBJECT, "value": {"data": data}})
        blob: dict[str, JSON] = {
            "schema": SCHEMA_BUNDLE,
            "package": package,
            "name": b.csvName,
            "image": b.bundlePath,
            "properties": properties,
        }
        objects.append((blob, origin))
    return objects


def _legacy_properties(b: api.Bundle, properties: list[JSON]) -> list[JSON]:
    """The properties OLM v0 reads from a bundle's older fields, not already among ``properties``.

    An index built with sqlite serves dependencies.yaml's entries (``olm.gvk``, ``olm.package``,
    ``olm.label``, ``olm.constraint``) only as ``dependencies`` and a CSV's required APIs only as
    ``requiredApis``; OLM v0 turns them into requirement properties (``source_registry.go``):
    the dependencies when there are any, else the required APIs, plus the provided APIs as
    ``olm.gvk`` when the bundle has no properties at all. ``opm serve`` derives the same fields
    from the properties, so for a file-based catalog this adds nothing.
    """
    extra: list[JSON] = []
    if not b.properties:
        extra += [{"type": PROP_GVK, "value": _gvk_value(g)} for g in b.providedApis]
    if b.dependencies:
        for dep in b.dependencies:
            try:
                value = safedata.load_json(dep.value)
            except safedata.SafeDataError:
                continue  # OLM fails the bundle; the loader would not read it either
            if dep.type == "olm.gvk" and isinstance(value, dict):
                gvk = {k: value.get(k, "") for k in ("group", "version", "kind")}
                extra.append({"type": PROP_GVK_REQUIRED, "value": gvk})
            elif dep.type == "olm.package" and isinstance(value, dict):
                required = {
                    "packageName": value.get("packageName", ""),
                    "versionRange": value.get("version", ""),
                }
                extra.append({"type": PROP_PACKAGE_REQUIRED, "value": required})
            elif dep.type == "olm.label":
                extra.append({"type": PROP_LABEL_REQUIRED, "value": value})
            elif dep.type == "olm.constraint":
                extra.append({"type": PROP_CONSTRAINT, "value": value})
    else:
        extra += [{"type": PROP_GVK_REQUIRED, "value": _gvk_value(g)} for g in b.requiredApis]
    result: list[JSON] = []
    for prop in extra:
        if prop not in properties and prop not in result:
            result.append(prop)
    return result


def _gvk_value(gvk: api.GroupVersionKind) -> JSON:
    return {"group": gvk.group, "version": gvk.version, "kind": gvk.kind}
