"""Write a catalog as FBC JSON, byte for byte the way ``opm render`` writes a directory.

opm (``alpha/declcfg/write.go`` ``WriteJSON``, ``alpha/action/render.go``) groups objects by package
(packages sorted by name; in each: the ``olm.package``, channels by name, bundles by name, other
schemas by schema, deprecations), then the package-less objects; it prints each object as JSON
indented by four spaces, fields in its Go struct order, nested property values with sorted keys,
``olm.bundle.object`` properties moved last and ``relatedImages`` sorted by image. Numbers print
as Go prints a float64. Called by ``pivoter catalog render`` and the tests that compare with opm.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

from resolver.catalog.model import (
    ABSENT,
    PROP_BUNDLE_OBJECT,
    SCHEMA_BUNDLE,
    SCHEMA_CHANNEL,
    SCHEMA_DEPRECATIONS,
    SCHEMA_PACKAGE,
    Bundle,
    Catalog,
    Channel,
    Deprecation,
    Meta,
    Package,
    Property,
)

_INDENT = re.compile(rb"^( +)", re.MULTILINE)
# A number that is a whole float (``1.0``) alone as a value on its line: Go prints it as ``1``.
# Strings never span lines in JSON, so a line is a number value only when this matches it whole.
_WHOLE_FLOAT = re.compile(rb'^( *(?:"(?:[^"\\]|\\.)*": )?-?[0-9]+)\.0(,?)$', re.MULTILINE)


def _sorted_json(value: Any) -> Any:
    """Return ``value`` with every mapping's keys sorted (opm re-encodes values through Go maps)."""
    if value is ABSENT:
        return None
    if isinstance(value, dict | list):
        return orjson.loads(
            orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
        )
    return value


def _properties(props: tuple[Property, ...]) -> list[dict[str, Any]]:
    return [{"type": p.type, "value": _sorted_json(p.value)} for p in props]


def package_dict(p: Package) -> dict[str, Any]:
    """Return an ``olm.package`` object in opm's field order."""
    out: dict[str, Any] = {
        "schema": SCHEMA_PACKAGE,
        "name": p.name,
        "defaultChannel": p.default_channel,
    }
    if p.icon is not None:
        out["icon"] = {"base64data": p.icon.base64data, "mediatype": p.icon.mediatype}
    if p.description:
        out["description"] = p.description
    if p.properties:
        out["properties"] = _properties(p.properties)
    return out


def channel_dict(c: Channel) -> dict[str, Any]:
    """Return an ``olm.channel`` object in opm's field order."""
    entries = []
    for e in c.entries:
        entry: dict[str, Any] = {"name": e.name}
        if e.replaces:
            entry["replaces"] = e.replaces
        if e.skips:
            entry["skips"] = list(e.skips)
        if e.skip_range:
            entry["skipRange"] = e.skip_range
        entries.append(entry)
    out: dict[str, Any] = {
        "schema": SCHEMA_CHANNEL,
        "name": c.name,
        "package": c.package,
        "entries": entries or None,
    }
    if c.properties:
        out["properties"] = _properties(c.properties)
    return out


def bundle_dict(b: Bundle) -> dict[str, Any]:
    """Return an ``olm.bundle`` object as ``opm render`` prints it (objects last, images sorted)."""
    out: dict[str, Any] = {"schema": SCHEMA_BUNDLE}
    if b.name:
        out["name"] = b.name
    if b.package:
        out["package"] = b.package
    out["image"] = b.image
    props = [p for p in b.properties if p.type != PROP_BUNDLE_OBJECT] + [
        p for p in b.properties if p.type == PROP_BUNDLE_OBJECT
    ]
    if props:
        out["properties"] = _properties(tuple(props))
    if b.related_images:
        related = sorted(b.related_images, key=lambda r: r.image)
        out["relatedImages"] = [{"name": r.name, "image": r.image} for r in related]
    return out


def deprecation_dict(d: Deprecation) -> dict[str, Any]:
    """Return an ``olm.deprecations`` object in opm's field order."""
    entries = []
    for e in d.entries:
        ref: dict[str, Any] = {"schema": e.schema}
        if e.name:
            ref["name"] = e.name
        entries.append({"reference": ref, "message": e.message})
    return {"schema": SCHEMA_DEPRECATIONS, "package": d.package, "entries": entries or None}


def meta_dict(m: Meta) -> Any:
    """Return an object of another schema as opm prints it (the whole blob, keys sorted)."""
    return _sorted_json(dict(m.blob))


def objects_in_render_order(catalog: Catalog) -> Iterator[dict[str, Any]]:
    """Yield every object of ``catalog`` as a dict, in the order ``opm render`` prints them."""
    names: set[str] = set()
    names.update(p.name for p in catalog.packages if p.name)
    names.update(c.package for c in catalog.channels if c.package)
    names.update(b.package for b in catalog.bundles if b.package)
    names.update(o.package for o in catalog.others if o.package)
    names.update(d.package for d in catalog.deprecations if d.package)
    by_package: dict[str, tuple[list[Any], list[Any], list[Any], list[Any], list[Any]]] = {
        n: ([], [], [], [], []) for n in names
    }
    for p in catalog.packages:
        if p.name:
            by_package[p.name][0].append(p)
    for c in catalog.channels:
        if c.package:
            by_package[c.package][1].append(c)
    for b in catalog.bundles:
        if b.package:
            by_package[b.package][2].append(b)
    for o in catalog.others:
        if o.package:
            by_package[o.package][3].append(o)
    for d in catalog.deprecations:
        if d.package:
            by_package[d.package][4].append(d)
    for name in sorted(names, key=lambda n: n.encode("utf-8", "surrogateescape")):
        packages, channels, bundles, others, deprecations = by_package[name]
        yield from (package_dict(p) for p in packages)
        yield from (channel_dict(c) for c in sorted(channels, key=lambda c: c.name))
        yield from (bundle_dict(b) for b in sorted(bundles, key=lambda b: b.name))
        yield from (meta_dict(o) for o in sorted(others, key=lambda o: o.schema))
        yield from (deprecation_dict(d) for d in deprecations)
    yield from (meta_dict(o) for o in catalog.others if not o.package)


def encode(obj: Any) -> bytes:
    """Encode one object as Go's ``json.Encoder`` with four-space indent and no HTML escaping."""
    out = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    out = _INDENT.sub(lambda m: m.group(1) * 2, out)
    if b".0" in out:
        out = _WHOLE_FLOAT.sub(rb"\1\2", out)
    # Go escapes the two JavaScript line terminators even with HTML escaping off.
    return out.replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029") + b"\n"


def write_json(catalog: Catalog, out: BinaryIO) -> None:
    """Write ``catalog`` to ``out`` as concatenated, pretty-printed FBC JSON objects."""
    for obj in objects_in_render_order(catalog):
        out.write(encode(obj))
