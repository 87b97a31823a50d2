"""The values a chart is rendered with: ``spec.config.values`` (a YAML string, as rukpak) merged
over values read from ConfigMaps and Secrets named in ``spec.config.valuesFrom``.

Values are untrusted input: parsed with the safe loader and size limits, and each source must be
a mapping. Later sources win, key by key, as ``helm -f a -f b`` does; the inline values win last.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

from provisioners.formats.base import InvalidConfigError, InvalidManifestError
from provisioners.formats.manifests import ManifestLimits, parse_documents

__all__ = ["ObjectLookup", "merge", "values_for"]

ObjectLookup = Callable[[str, str, str], Mapping[str, Any] | None]
"""``lookup(kind, namespace, name)``: a live ConfigMap or Secret, or None."""

VALUES_LIMITS = ManifestLimits(max_file_bytes=1 << 20, max_documents=1, max_nodes=200_000)


def _parse(text: str | bytes, where: str) -> dict[str, Any]:
    data = text.encode() if isinstance(text, str) else text
    try:
        documents = parse_documents(data, where, VALUES_LIMITS)
    except InvalidManifestError as exc:
        raise InvalidConfigError(str(exc)) from exc
    if not documents:
        return {}
    if not isinstance(documents[0], dict):
        raise InvalidConfigError(f"{where}: values must be a YAML mapping")
    return documents[0]


def merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` over ``base``, recursively for mappings (Helm's coalescing)."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def _from_reference(
    index: int, ref: Mapping[str, Any], namespace: str, lookup: ObjectLookup | None
) -> dict[str, Any]:
    where = f"spec.config.valuesFrom[{index}]"
    kind = ref.get("kind")
    name = ref.get("name")
    key = str(ref.get("key") or "values.yaml")
    if kind not in ("ConfigMap", "Secret") or not name:
        raise InvalidConfigError(f"{where}: needs kind ConfigMap or Secret and a name")
    if lookup is None:
        raise InvalidConfigError(f"{where}: values from the cluster need the cluster-side reader")
    ns = str(ref.get("namespace") or namespace)
    obj = lookup(str(kind), ns, str(name))
    if obj is None:
        raise InvalidConfigError(f"{where}: {kind} {ns}/{name} not found")
    if kind == "ConfigMap":
        text = (obj.get("data") or {}).get(key)
        if text is None:
            raise InvalidConfigError(f"{where}: ConfigMap {ns}/{name} has no key {key!r}")
        return _parse(str(text), f"{where} ({kind} {ns}/{name} key {key})")
    encoded = (obj.get("data") or {}).get(key)
    if encoded is None:
        raise InvalidConfigError(f"{where}: Secret {ns}/{name} has no key {key!r}")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except binascii.Error as exc:
        raise InvalidConfigError(f"{where}: Secret {ns}/{name} key {key!r} is not base64") from exc
    return _parse(raw, f"{where} (Secret {ns}/{name} key {key})")


def values_for(
    config: Mapping[str, Any], namespace: str, lookup: ObjectLookup | None = None
) -> dict[str, Any]:
    """The merged values of a BundleDeployment ``spec.config``."""
    merged: dict[str, Any] = {}
    references = config.get("valuesFrom") or []
    if not isinstance(references, list):
        raise InvalidConfigError("spec.config.valuesFrom must be a list")
    for index, ref in enumerate(references):
        if not isinstance(ref, Mapping):
            raise InvalidConfigError(f"spec.config.valuesFrom[{index}] must be a mapping")
        merged = merge(merged, _from_reference(index, ref, namespace, lookup))
    inline = config.get("values")
    if inline is not None:
        if not isinstance(inline, str):
            raise InvalidConfigError("spec.config.values must be a YAML string (as in rukpak)")
        merged = merge(merged, _parse(inline, "spec.config.values"))
    return merged
