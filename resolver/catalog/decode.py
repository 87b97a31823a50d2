"""Turn one decoded FBC object (a dict) into a model object, with opm's typing rules.

operator-registry reads every object first as a ``Meta`` (``schema``, ``package``, ``name``, matched
case-insensitively; keys that differ only by case are an error), then decodes the well-known
schemas into Go structs with ``encoding/json`` (fields matched exactly or else case-insensitively,
a value of the wrong JSON type is an error, ``null`` leaves the zero value, unknown fields are
dropped). :func:`decode_object` applies the same rules and reports what opm's loader would refuse
as problems, so that a catalog opm cannot load is never half-loaded here. Called by
:mod:`resolver.catalog.load` for files and for objects received over the wire.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from resolver.catalog.model import (
    ABSENT,
    PROP_BUNDLE_OBJECT,
    SCHEMA_BUNDLE,
    SCHEMA_CHANNEL,
    SCHEMA_DEPRECATIONS,
    SCHEMA_PACKAGE,
    Bundle,
    Channel,
    ChannelEntry,
    Deprecation,
    DeprecationEntry,
    Icon,
    Meta,
    Origin,
    Package,
    Property,
    RelatedImage,
    decode_bundle_object,
)

CatalogObject = Package | Channel | Bundle | Deprecation | Meta
"""Any object a catalog holds."""

_META_KEYS = ("schema", "package", "name")


class DecodeError(ValueError):
    """An object that opm's loader would refuse; the message says which field and why."""


_SHOWN = 10
"""Keys named in one message at most: an object of a million keys is still a one-line problem."""


def _first(items: list[str]) -> str:
    shown = "; ".join(item[:200] for item in items[:_SHOWN])
    return shown + (f"; and {len(items) - _SHOWN:,} more" if len(items) > _SHOWN else "")


def _some_keys(blob: Mapping[str, Any]) -> str:
    keys = sorted(blob, key=str)
    if not keys:
        return "none"
    shown = ", ".join(str(k)[:200] for k in keys[:_SHOWN])
    return shown + (f", and {len(keys) - _SHOWN:,} more" if len(keys) > _SHOWN else "")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _fields(obj: Mapping[str, Any], known: frozenset[str]) -> Mapping[str, Any]:
    """Return ``obj`` keyed by the canonical field names Go's case-insensitive matching finds."""
    extra = obj.keys() - known
    if not extra:
        return obj
    folded = {k.casefold(): k for k in known}
    out: dict[str, Any] = {}
    for key, value in obj.items():
        canonical = key if key in known else folded.get(str(key).casefold())
        if canonical is not None:
            out[canonical] = value  # the later key wins, as in encoding/json
    return out


def _str(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DecodeError(f"{where}: field {key!r} must be a string, got {_type_name(value)}")
    return value


def _list(obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise DecodeError(f"{where}: field {key!r} must be an array, got {_type_name(value)}")
    return value


def _obj(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DecodeError(f"{where} must be an object, got {_type_name(value)}")
    return value


def meta_of(blob: Any) -> tuple[str, str, str]:
    """Return ``(schema, package, name)`` of a decoded object, matched case-insensitively.

    Raises DecodeError for a non-object, two keys differing only by case, or a non-string value.
    """
    if not isinstance(blob, dict):
        raise DecodeError(f"a catalog object must be a JSON/YAML object, got {_type_name(blob)}")
    values = {"schema": "", "package": "", "name": ""}
    keys = list(blob)
    folded = [str(k).casefold() for k in keys]
    if len(set(folded)) != len(folded):
        seen: dict[str, list[str]] = {}
        for key, fold in zip(keys, folded, strict=True):
            seen.setdefault(fold, []).append(str(key))
        dups = [f"{f!r}: {ks}" for f, ks in seen.items() if len(ks) > 1]
        raise DecodeError(f"duplicate keys that differ only by case: {_first(dups)}")
    for key, fold in zip(keys, folded, strict=True):
        if fold in values:
            value = blob[key]
            if not isinstance(value, str):
                raise DecodeError(
                    f"expected value for key {key!r} to be a string, got {_type_name(value)}"
                )
            values[fold] = value
    return values["schema"], values["package"], values["name"]


def _properties(items: list[Any], where: str) -> tuple[Property, ...]:
    out = []
    for i, item in enumerate(items):
        prop = _fields(_obj(item, f"{where} properties[{i}]"), _PROPERTY_KEYS)
        value = prop.get("value", ABSENT)
        out.append(Property(_str(prop, "type", f"{where} properties[{i}]"), value))
    return tuple(out)


_PROPERTY_KEYS = frozenset(("type", "value"))
_PACKAGE_KEYS = frozenset(("schema", "name", "defaultChannel", "icon", "description", "properties"))
_ICON_KEYS = frozenset(("base64data", "mediatype"))
_CHANNEL_KEYS = frozenset(("schema", "name", "package", "entries", "properties"))
_ENTRY_KEYS = frozenset(("name", "replaces", "skips", "skipRange"))
_BUNDLE_KEYS = frozenset(("schema", "name", "package", "image", "properties", "relatedImages"))
_RELATED_KEYS = frozenset(("name", "image"))
_DEPRECATION_KEYS = frozenset(("schema", "package", "entries"))
_DEP_ENTRY_KEYS = frozenset(("reference", "message"))
_REFERENCE_KEYS = frozenset(("schema", "name"))


def canonical_base64(data: str, where: str) -> str:
    """Check base64 text as Go's ``[]byte`` JSON decoding does; return it re-encoded canonically."""
    try:
        raw = base64.b64decode(data.replace("\n", "").replace("\r", ""), validate=True)
    except binascii.Error as err:
        raise DecodeError(f"{where}: illegal base64 data: {err}") from None
    return base64.b64encode(raw).decode("ascii")


def _package(blob: Mapping[str, Any], origin: Origin) -> Package:
    obj = _fields(blob, _PACKAGE_KEYS)
    name = _str(obj, "name", "olm.package")
    where = f"olm.package {name!r}"
    icon = None
    if obj.get("icon") is not None:
        raw_icon = _fields(_obj(obj["icon"], f"{where} icon"), _ICON_KEYS)
        data = _str(raw_icon, "base64data", f"{where} icon")
        icon = Icon(
            canonical_base64(data, f"{where} icon.base64data"),
            _str(raw_icon, "mediatype", f"{where} icon"),
        )
    return Package(
        name=name,
        default_channel=_str(obj, "defaultChannel", where),
        icon=icon,
        description=_str(obj, "description", where),
        properties=_properties(_list(obj, "properties", where), where),
        origin=origin,
    )


def _channel(blob: Mapping[str, Any], origin: Origin) -> Channel:
    obj = _fields(blob, _CHANNEL_KEYS)
    name = _str(obj, "name", "olm.channel")
    package = _str(obj, "package", "olm.channel")
    where = f"olm.channel {package}/{name}"
    entries = []
    for i, item in enumerate(_list(obj, "entries", where)):
        ewhere = f"{where} entries[{i}]"
        entry = _fields(_obj(item, ewhere), _ENTRY_KEYS)
        skips = []
        for j, skip in enumerate(_list(entry, "skips", ewhere)):
            if skip is not None and not isinstance(skip, str):
                raise DecodeError(f"{ewhere}: skips[{j}] must be a string, got {_type_name(skip)}")
            skips.append(skip or "")
        entries.append(
            ChannelEntry(
                name=_str(entry, "name", ewhere),
                replaces=_str(entry, "replaces", ewhere),
                skips=tuple(skips),
                skip_range=_str(entry, "skipRange", ewhere),
            )
        )
    return Channel(
        package=package,
        name=name,
        entries=tuple(entries),
        properties=_properties(_list(obj, "properties", where), where),
        origin=origin,
    )


def _bundle(blob: Mapping[str, Any], origin: Origin) -> Bundle:
    obj = _fields(blob, _BUNDLE_KEYS)
    name = _str(obj, "name", "olm.bundle")
    package = _str(obj, "package", "olm.bundle")
    where = f"olm.bundle {package}/{name}"
    properties = _properties(_list(obj, "properties", where), where)
    for i, prop in enumerate(properties):
        if prop.type == PROP_BUNDLE_OBJECT:
            # opm decodes inlined manifests while loading; a broken one fails the load.
            try:
                decode_bundle_object(None if prop.value is ABSENT else prop.value)
            except ValueError as err:
                raise DecodeError(f"{where}: property [{i}] olm.bundle.object: {err}") from None
    related = []
    for i, item in enumerate(_list(obj, "relatedImages", where)):
        rwhere = f"{where} relatedImages[{i}]"
        rel = _fields(_obj(item, rwhere), _RELATED_KEYS)
        related.append(RelatedImage(_str(rel, "name", rwhere), _str(rel, "image", rwhere)))
    return Bundle(
        package=package,
        name=name,
        image=_str(obj, "image", where),
        properties=properties,
        related_images=tuple(related),
        origin=origin,
    )


def _deprecation(blob: Mapping[str, Any], origin: Origin) -> Deprecation:
    obj = _fields(blob, _DEPRECATION_KEYS)
    package = _str(obj, "package", "olm.deprecations")
    where = f"olm.deprecations {package!r}"
    entries = []
    for i, item in enumerate(_list(obj, "entries", where)):
        ewhere = f"{where} entries[{i}]"
        entry = _fields(_obj(item, ewhere), _DEP_ENTRY_KEYS)
        ref = _fields(_obj(entry.get("reference"), f"{ewhere} reference"), _REFERENCE_KEYS)
        entries.append(
            DeprecationEntry(
                schema=_str(ref, "schema", f"{ewhere} reference"),
                name=_str(ref, "name", f"{ewhere} reference"),
                message=_str(entry, "message", ewhere),
            )
        )
    return Deprecation(package=package, entries=tuple(entries), origin=origin)


def decode_object(blob: Any, origin: Origin) -> CatalogObject:
    """Decode one FBC object into its model object; raise DecodeError when opm would refuse it.

    Inlined manifests are parsed here (:func:`resolver.catalog.model.decode_bundle_object`),
    within the memory budget the caller made current (:func:`resolver.safedata.spending`).
    """
    schema, package, name = meta_of(blob)
    if schema == SCHEMA_PACKAGE:
        return _package(blob, origin)
    if schema == SCHEMA_CHANNEL:
        return _channel(blob, origin)
    if schema == SCHEMA_BUNDLE:
        return _bundle(blob, origin)
    if schema == SCHEMA_DEPRECATIONS:
        return _deprecation(blob, origin)
    if schema == "":
        raise DecodeError(f"object is missing the root 'schema' field (keys: {_some_keys(blob)})")
    return Meta(schema=schema, package=package, name=name, blob=blob, origin=origin)
