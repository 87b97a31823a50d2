"""Build the catalog source a ``Catalog``'s ``spec.source`` describes, reading the ConfigMaps and
Secrets it names from pivoter's namespace.

| ``type`` | source | digest of the source (what a cheap poll compares) |
|---|---|---|
| ``grpc`` | :class:`resolver.catalog.sources.RegistrySource` on ``grpc.address`` | every message |
| ``http`` | :class:`resolver.catalog.sources.CatalogdSource` on ``http.url`` (CA from
  ``caConfigMap`` key ``ca.crt``, bearer token from ``tokenSecret`` key ``token``) | the body
  (``If-Modified-Since``: a 304 costs one request) |
| ``image`` | :class:`pivoter.catalogs.image.ImageCatalogSource` | the manifest digest |
| ``configMaps`` | :class:`ConfigMapsCatalogSource` (each key of each ConfigMap is one FBC
  file) | data |

:func:`build_source` returns the source with a *key* over everything it was built from (the
spec, the CA, the token, the pull secret's name): the reconciler keeps a source (and its HTTP/image
caches) as long as the key is unchanged. Called by :mod:`pivoter.catalogs.reconciler`.

Credentials are checked here, where they enter from their Secrets: the ``token`` of
``tokenSecret`` (:func:`resolver.net.bearer_token`, surrounding whitespace trimmed as client-go
trims a token file) and every entry of an image ``pullSecret``
(:meth:`provisioners.registries.auth.AuthFile.parse`), when the source is built and again at
every fetch (the Secret is read then: a fixed or rotated Secret needs no change to the Catalog);
a refusal is :class:`InvalidCatalog`
naming the field, Secret and key, never the value.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pivoter.catalogs.errors import InvalidCatalog, SourceUnavailable
from pivoter.catalogs.image import ImageCatalogSource
from pivoter.registries import RegistryAccessProvider
from provisioners.errors import InvalidSourceError
from provisioners.registries.auth import AuthFile, Keyring
from provisioners.registries.pull import RegistryAccess
from provisioners.sources import FetchOptions
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.load import load_objects
from resolver.catalog.model import JSON, Catalog, Origin
from resolver.catalog.parse import parse_text
from resolver.catalog.sources import (
    CatalogdSource,
    CatalogSource,
    CatalogSourceError,
    RegistrySource,
)
from resolver.net import InvalidCredential, bearer_token

__all__ = [
    "BuiltSource",
    "ConfigMapsCatalogSource",
    "ObjectReader",
    "SourceSettings",
    "build_source",
]

ObjectReader = Callable[[str, str], Mapping[str, Any] | None]
"""``read(kind, name)``: the ``ConfigMap`` or ``Secret`` called ``name`` in pivoter's namespace,
or None when it does not exist."""

_ADDRESS = re.compile(r"^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}\Z")


@dataclass(frozen=True, slots=True)
class SourceSettings:
    """Limits and places shared by every source the controller builds."""

    workdir: Path
    """A private directory for CA files (the HTTP client reads its CA from a file)."""
    timeout: float = 30.0
    """Longest wait for an answer or the next bytes (a stalled source)."""
    deadline: float = 600.0
    """Longest a whole fetch may take."""
    max_message_bytes: int = 64 * 1024**2
    """gRPC: largest message accepted."""
    fetch_options: FetchOptions | None = None
    """image: unpack limits and timeouts (default: :class:`FetchOptions` with the above)."""
    registries: RegistryAccessProvider | None = None
    """image: the global pull secret and the mirrors (None: neither)."""


@dataclass(frozen=True, slots=True)
class BuiltSource:
    """A source, what to call it in messages, and the key of everything it was built from."""

    source: CatalogSource
    key: str
    description: str


def build_source(
    catalog_name: str,
    spec: Mapping[str, Any],
    read: ObjectReader,
    settings: SourceSettings,
    *,
    policy: tuple[str, str] = ("", ""),
) -> BuiltSource:
    """The source for ``spec`` (a Catalog's ``spec.source``); raises :class:`InvalidCatalog` or
    :class:`SourceUnavailable` when the spec cannot be used as it stands. ``policy``: the
    verification policy the Catalog names (``(name, where)``, :func:`pivoter.registries.
    verification.named_policy`), which its image must pass besides the cluster's."""
    kind = str(spec.get("type") or "")
    if kind == "grpc":
        return _grpc(catalog_name, spec.get("grpc") or {}, settings)
    if kind == "http":
        return _http(catalog_name, spec.get("http") or {}, read, settings)
    if kind == "image":
        return _image(catalog_name, spec.get("image") or {}, read, settings, policy)
    if kind == "configMaps":
        names = [str((ref or {}).get("name") or "") for ref in spec.get("configMaps") or []]
        if not names or not all(names):
            raise InvalidCatalog("spec.source.configMaps must name at least one ConfigMap")
        source = ConfigMapsCatalogSource(names, read, name=catalog_name)
        return BuiltSource(source, _key(kind, names), f"ConfigMaps {', '.join(names)}")
    raise InvalidCatalog(f"spec.source.type {kind!r} is not one of grpc, http, image, configMaps")


def _key(*parts: Any) -> str:
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def _grpc(catalog_name: str, spec: Mapping[str, Any], settings: SourceSettings) -> BuiltSource:
    address = str(spec.get("address") or "").removeprefix("grpc://")
    if not _ADDRESS.match(address):
        raise InvalidCatalog(
            f"spec.source.grpc.address {address!r} is not host:port (e.g. my-catalog.olm.svc:50051)"
        )
    source = RegistrySource(
        f"grpc://{address}",
        name=catalog_name,
        timeout=settings.timeout,
        deadline=settings.deadline,
        max_message_bytes=settings.max_message_bytes,
    )
    return BuiltSource(source, _key("grpc", address), f"gRPC registry {address}")


def _data(obj: Mapping[str, Any], key: str) -> bytes | None:
    """One key of a ConfigMap (data or binaryData) or Secret (data, base64)."""
    if obj.get("kind") == "Secret":
        raw = (obj.get("data") or {}).get(key)
        if raw is None:
            value = (obj.get("stringData") or {}).get(key)
            return str(value).encode() if value is not None else None
        try:
            return base64.b64decode(str(raw), validate=True)
        except (binascii.Error, ValueError):
            return None
    value = (obj.get("data") or {}).get(key)
    if value is not None:
        return str(value).encode()
    binary = (obj.get("binaryData") or {}).get(key)
    if binary is None:
        return None
    try:
        return base64.b64decode(str(binary), validate=True)
    except (binascii.Error, ValueError):
        return None


def _referenced(read: ObjectReader, kind: str, name: str, key: str, field: str) -> bytes:
    obj = read(kind, name)
    if obj is None:
        raise SourceUnavailable(f"{field}: {kind} {name!r} not found in pivoter's namespace")
    value = _data(obj, key)
    if value is None:
        raise InvalidCatalog(f"{field}: {kind} {name!r} has no key {key!r}")
    return value


def _http(
    catalog_name: str, spec: Mapping[str, Any], read: ObjectReader, settings: SourceSettings
) -> BuiltSource:
    url = str(spec.get("url") or "")
    if not url.startswith(("http://", "https://")):
        raise InvalidCatalog(f"spec.source.http.url {url!r} is not an http(s) URL")
    ca_ref = str((spec.get("caConfigMap") or {}).get("name") or "")
    token_ref = str((spec.get("tokenSecret") or {}).get("name") or "")
    ca = (
        _referenced(read, "ConfigMap", ca_ref, "ca.crt", "spec.source.http.caConfigMap")
        if ca_ref
        else None
    )
    token = None
    if token_ref:
        field = "spec.source.http.tokenSecret"
        raw = _referenced(read, "Secret", token_ref, "token", field)
        try:
            token = bearer_token(raw, where=f"{field}: Secret {token_ref!r} key 'token'", trim=True)
        except InvalidCredential as exc:
            raise InvalidCatalog(str(exc)) from None
    ca_file = None
    if ca is not None:
        if not url.startswith("https://"):
            raise InvalidCatalog("spec.source.http.caConfigMap needs an https:// URL")
        ca_file = _write_private(settings.workdir / f"{catalog_name}-ca.crt", ca)
    try:
        source = CatalogdSource(
            url,
            name=catalog_name,
            ca_file=ca_file,
            token=token,
            timeout=settings.timeout,
            deadline=settings.deadline,
            insecure_send_token=bool(spec.get("insecureSendToken")),
            token_opt_in="spec.source.http.insecureSendToken",
        )
    except CatalogSourceError as exc:
        raise InvalidCatalog(f"spec.source.http.url: {exc.reason}") from exc
    key = _key(
        "http",
        url,
        hashlib.sha256(ca or b"").hexdigest(),
        token or "",
        str(bool(spec.get("insecureSendToken"))),
    )
    return BuiltSource(source, key, f"HTTP {url}")


def _write_private(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return str(path)


def _image(
    catalog_name: str,
    spec: Mapping[str, Any],
    read: ObjectReader,
    settings: SourceSettings,
    policy: tuple[str, str],
) -> BuiltSource:
    ref = str(spec.get("ref") or "")
    if not ref:
        raise InvalidCatalog("spec.source.image.ref is empty")
    secret = str(spec.get("pullSecret") or "")
    registries = settings.registries

    def access() -> RegistryAccess:
        """The Catalog's own pull secret (read now: a fixed Secret is used by the next poll),
        then the global one, and the mirrors as they are now."""
        own = _pull_secret(read, secret) if secret else None
        base = registries.access() if registries is not None else RegistryAccess()
        files = ((own,) if own is not None else ()) + base.keyring.files
        return RegistryAccess(keyring=Keyring(files), mirrors=base.mirrors)

    if secret:
        _pull_secret(read, secret)  # a Secret that cannot be used fails the spec at once
    options = settings.fetch_options or FetchOptions(
        timeout_seconds=settings.timeout, deadline_seconds=settings.deadline
    )
    source = ImageCatalogSource(
        ref,
        name=catalog_name,
        access=access,
        options=options,
        verification=(lambda: registries.verification_policies(policy)) if registries else None,
    )
    # The policy's name is part of the key: naming another one pulls and verifies again.
    return BuiltSource(source, _key("image", ref, secret, policy[0]), f"image {ref}")


def _pull_secret(read: ObjectReader, name: str) -> AuthFile:
    """The Catalog's pull secret (key ``.dockerconfigjson``, or a legacy ``.dockercfg``),
    every entry checked; :class:`InvalidCatalog` names the field, Secret and key, never a
    value."""
    field = "spec.source.image.pullSecret"
    obj = read("Secret", name)
    if obj is None:
        raise InvalidCatalog(f"{field}: Secret {name!r} not found in pivoter's namespace")
    for key in (".dockerconfigjson", ".dockercfg"):
        data = _data(obj, key)
        if data is not None:
            try:
                return AuthFile.parse(data, f"{field}: Secret {name!r} key {key!r}")
            except InvalidSourceError as exc:
                raise InvalidCatalog(str(exc)) from None
    raise InvalidCatalog(f"{field}: Secret {name!r} has no .dockerconfigjson or .dockercfg key")


class ConfigMapsCatalogSource:
    """A catalog whose files are the keys of ConfigMaps (read fresh on every fetch)."""

    def __init__(self, names: Sequence[str], read: ObjectReader, *, name: str = "") -> None:
        self.spec = "configmaps:" + ",".join(names)
        self.names = list(names)
        self.name = name
        self._read = read
        self._digest: str | None = None

    @property
    def digest(self) -> str | None:
        """sha256 over every ConfigMap's name, keys and values, at the last fetch."""
        return self._digest

    def fetch(self) -> Catalog:
        """Read the ConfigMaps and build the catalog; every file problem is reported at once."""
        hasher = hashlib.sha256()
        objects: list[tuple[JSON, Origin]] = []
        problems: list[str] = []
        for cm_name in self.names:
            config_map = self._read("ConfigMap", cm_name)
            if config_map is None:
                raise SourceUnavailable(f"ConfigMap {cm_name!r} not found in pivoter's namespace")
            files = {
                **{k: str(v) for k, v in (config_map.get("data") or {}).items()},
                **dict.fromkeys(config_map.get("binaryData") or {}, ""),
            }
            for key in sorted(files):
                data = _data(config_map, key) or b""
                hasher.update(json.dumps([cm_name, key]).encode() + b"\0" + data + b"\0")
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    problems.append(f"ConfigMap {cm_name} key {key}: not valid UTF-8")
                    continue
                parsed = parse_text(text)
                where = f"ConfigMap {cm_name} key {key}"
                problems.extend(f"{where}:{line}: {msg}" for line, msg in parsed.problems)
                objects.extend((blob, Origin(where, line)) for blob, line in parsed.objects)
        if problems:
            raise InvalidCatalog("; ".join(problems))
        try:
            catalog = load_objects(objects, name=self.name)
        except CatalogLoadError as exc:
            raise InvalidCatalog(str(exc)) from exc
        self._digest = hasher.hexdigest()
        return catalog
