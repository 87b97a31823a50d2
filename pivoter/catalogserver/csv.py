"""The ClusterServiceVersion JSON opm puts in ``api.Bundle.csvJson`` when a bundle has no inline
manifests, only an ``olm.csv.metadata`` property.

opm decodes the property into Go structs (operator-framework/api ``v1alpha1``) and encodes a
``ClusterServiceVersion`` with ``encoding/json``: struct fields in declaration order, ``omitempty``
rules, unknown fields dropped, ``<>&`` escaped. OLM's packageserver and the console read this
text, so :func:`synthesize_csv` reproduces it byte for byte from the field tables below (taken
from the Go type definitions). Called by :mod:`pivoter.catalogserver.registry`.
"""

from __future__ import annotations

from typing import Any

from resolver.catalog import gojson, model

# A field: (json name, kind, omitempty). A kind is "str", "bool", "int", "raw" (any JSON),
# "own" (a value built here, kept as is), "strs" (list of str), "map" (str -> str), or a
# tuple ("list"|"struct", <fields>).
Field = tuple[str, Any, bool]

_DESCRIPTOR: tuple[Field, ...] = (
    ("path", "str", False),
    ("displayName", "str", True),
    ("description", "str", True),
    ("x-descriptors", "strs", True),
    ("value", "raw", True),
)
_RESOURCE_REF: tuple[Field, ...] = (
    ("name", "str", False),
    ("kind", "str", False),
    ("version", "str", False),
)
_DESCRIPTIONS_TAIL: tuple[Field, ...] = (
    ("displayName", "str", True),
    ("description", "str", True),
    ("resources", ("list", _RESOURCE_REF), True),
    ("statusDescriptors", ("list", _DESCRIPTOR), True),
    ("specDescriptors", ("list", _DESCRIPTOR), True),
    ("actionDescriptors", ("list", _DESCRIPTOR), True),
)
_CRD_DESCRIPTION: tuple[Field, ...] = (
    ("name", "str", False),
    ("version", "str", False),
    ("kind", "str", False),
    *_DESCRIPTIONS_TAIL,
)
_API_SERVICE_DESCRIPTION: tuple[Field, ...] = (
    ("name", "str", False),
    ("group", "str", False),
    ("version", "str", False),
    ("kind", "str", False),
    ("deploymentName", "str", True),
    ("containerPort", "int", True),
    *_DESCRIPTIONS_TAIL,
)
_APP_LINK: tuple[Field, ...] = (("name", "str", True), ("url", "str", True))
_MAINTAINER: tuple[Field, ...] = (("name", "str", True), ("email", "str", True))
_INSTALL_MODE: tuple[Field, ...] = (("type", "str", False), ("supported", "bool", False))
_GVK: tuple[Field, ...] = (
    ("group", "str", False),
    ("version", "str", False),
    ("kind", "str", False),
)
_ICON: tuple[Field, ...] = (("base64data", "str", False), ("mediatype", "str", False))
_RELATED_IMAGE: tuple[Field, ...] = (("name", "str", False), ("image", "str", False))


def _definitions(item: tuple[Field, ...]) -> tuple[Field, ...]:
    """The owned/required pair shared by CRD and API service definitions."""
    return (("owned", ("list", item), True), ("required", ("list", item), True))


def _empty(kind: Any, value: Any) -> bool:
    """Go's omitempty: false, 0, "", and empty slices/maps are left out (structs never are)."""
    if isinstance(kind, tuple) and kind[0] == "struct":
        return False
    return value in (None, False, 0, "") or (isinstance(value, list | dict) and not value)


def _convert(kind: Any, value: Any) -> Any:
    """Coerce a decoded JSON value to what the Go field would hold, as a JSON-ready value."""
    if kind == "str":
        return value if isinstance(value, str) else ""
    if kind == "bool":
        return value if isinstance(value, bool) else False
    if kind == "int":
        return value if isinstance(value, int) and not isinstance(value, bool) else 0
    if kind == "strs":
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else None
    if kind == "map":
        return _sorted(value) if isinstance(value, dict) else None
    if kind == "raw":
        return _sorted(value)
    if kind == "own":
        return value
    shape, fields = kind
    if shape == "list":
        return [_struct(fields, v) for v in value] if isinstance(value, list) else None
    return _struct(fields, value)


def _sorted(value: Any) -> Any:
    """Order map keys as Go encodes a map (sorted), recursively."""
    if isinstance(value, dict):
        return {str(k): _sorted(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _struct(fields: tuple[Field, ...], value: Any) -> dict[str, Any]:
    source = value if isinstance(value, dict) else {}
    out: dict[str, Any] = {}
    for name, kind, omitempty in fields:
        converted = _convert(kind, source.get(name))
        if omitempty and _empty(kind, converted):
            continue
        out[name] = converted
    return out


def synthesize_csv(
    bundle: model.Bundle, package: model.Package | None, metadata: dict[str, Any]
) -> str:
    """Return the CSV JSON opm builds from ``metadata`` (one ``olm.csv.metadata`` value)."""
    crds = _struct(_definitions(_CRD_DESCRIPTION), metadata.get("crdDescriptions"))
    apis = _struct(_definitions(_API_SERVICE_DESCRIPTION), metadata.get("apiServiceDefinitions"))
    description = metadata.get("description") or (package.description if package else "")
    icons = (
        [{"base64data": package.icon.base64data, "mediatype": package.icon.mediatype}]
        if package is not None and package.icon is not None
        else None
    )
    related = [{"name": r.name, "image": r.image} for r in bundle.related_images] or None
    spec_values: dict[str, Any] = {
        "install": {"strategy": "deployment", "spec": {"deployments": None}},
        "version": bundle.version,
        "maturity": metadata.get("maturity"),
        "customresourcedefinitions": crds,
        "apiservicedefinitions": apis,
        "nativeAPIs": metadata.get("nativeAPIs"),
        "minKubeVersion": metadata.get("minKubeVersion"),
        "displayName": metadata.get("displayName"),
        "description": description,
        "keywords": metadata.get("keywords"),
        "maintainers": metadata.get("maintainers"),
        "provider": metadata.get("provider"),
        "links": metadata.get("links"),
        "icon": icons,
        "installModes": metadata.get("installModes"),
        "cleanup": {"enabled": False},
        "relatedImages": related,
    }
    spec_fields: tuple[Field, ...] = (
        ("install", "own", False),
        ("version", "str", True),
        ("maturity", "str", True),
        ("customresourcedefinitions", "own", False),
        ("apiservicedefinitions", "own", False),
        ("nativeAPIs", ("list", _GVK), True),
        ("minKubeVersion", "str", True),
        ("displayName", "str", False),
        ("description", "str", True),
        ("keywords", "strs", True),
        ("maintainers", ("list", _MAINTAINER), True),
        ("provider", ("struct", _APP_LINK), True),
        ("links", ("list", _APP_LINK), True),
        ("icon", ("list", _ICON), True),
        ("installModes", ("list", _INSTALL_MODE), True),
        ("cleanup", "own", False),
        ("relatedImages", ("list", _RELATED_IMAGE), True),
    )
    metadata_fields: tuple[Field, ...] = (
        ("name", "str", True),
        ("labels", "map", True),
        ("annotations", "map", True),
    )
    csv = {
        "kind": "ClusterServiceVersion",
        "apiVersion": "operators.coreos.com/v1alpha1",
        "metadata": _struct(
            metadata_fields,
            {
                "name": bundle.name,
                "labels": metadata.get("labels"),
                "annotations": metadata.get("annotations"),
            },
        ),
        "spec": _struct(spec_fields, spec_values),
        "status": {"cleanup": {}},
    }
    return gojson.dumps(csv, escape_html=True, sort_keys=False)
