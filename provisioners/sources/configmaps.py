"""The configMaps source: map ConfigMap data onto files of the bundle tree (rukpak
``source.configMaps``).

The cluster side reads the referenced ConfigMaps (and checks they are immutable) and passes
their ``data``/``binaryData`` here with the target directory of each; this module validates keys
and paths, refuses two ConfigMaps writing the same file, applies the unpack limits and writes the
files. The revision is the digest of the resulting content, so the same data gives the same
revision. Called via :func:`provisioners.sources.fetch`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from provisioners.errors import ContentTooLargeError, InvalidSourceError
from provisioners.sources.base import FetchOptions, FetchResult
from provisioners.unpack import checked_path

# The Kubernetes rule for ConfigMap keys (IsConfigMapKey).
_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


@dataclass(frozen=True)
class ConfigMapContent:
    """One ConfigMap's data and where its keys go in the bundle (``path``, "" for the root)."""

    name: str
    data: Mapping[str, str] = field(default_factory=dict)
    binary_data: Mapping[str, str | bytes] = field(default_factory=dict)
    """Values as the API returns them (base64 text) or already decoded bytes."""
    path: str = ""


@dataclass(frozen=True)
class ConfigMapsSpec:
    """The ConfigMaps that make up a bundle."""

    config_maps: tuple[ConfigMapContent, ...]


def _directory(path: str, name: str) -> tuple[str, ...]:
    if path.startswith("/"):
        raise InvalidSourceError(
            f"configMap {name}: path {path!r} is absolute; paths are relative to the bundle root"
        )
    parts = tuple(p for p in path.split("/") if p not in ("", "."))
    if ".." in parts:
        raise InvalidSourceError(f"configMap {name}: path {path!r} leaves the bundle root")
    return parts


def _decode(value: str | bytes, name: str, key: str) -> bytes:
    if isinstance(value, bytes):
        return value
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise InvalidSourceError(f"configMap {name}: binaryData[{key!r}] is not base64") from exc


class ConfigMapsSource:
    """Writes ConfigMap data into a bundle tree."""

    def fetch(self, spec: ConfigMapsSpec, dest: Path, options: FetchOptions) -> FetchResult:
        """Validate every ConfigMap, then write one file per key into ``dest``."""
        if not spec.config_maps:
            raise InvalidSourceError("the configMaps source lists no ConfigMaps")
        limits = options.limits
        files: dict[tuple[str, ...], tuple[str, bytes]] = {}
        total = 0
        for config_map in spec.config_maps:
            directory = _directory(config_map.path, config_map.name)
            items = [(k, v.encode()) for k, v in config_map.data.items()] + [
                (k, _decode(v, config_map.name, k)) for k, v in config_map.binary_data.items()
            ]
            if not items:
                raise InvalidSourceError(f"configMap {config_map.name} has no data")
            for key, content in items:
                if not _KEY.match(key) or key in (".", ".."):
                    raise InvalidSourceError(
                        f"configMap {config_map.name}: key {key!r} is not a valid file name"
                    )
                target = (*directory, key)
                # The unpacker's path rules: depth, name and path length (a 1000-deep path
                # used to raise RecursionError, a 300-byte one OSError).
                checked_path(
                    "/".join(target),
                    limits,
                    f"configMap {config_map.name}: file",
                    root_bytes=len(bytes(dest)),
                )
                if target in files:
                    raise InvalidSourceError(
                        f"configMaps {files[target][0]} and {config_map.name} both write "
                        f"{'/'.join(target)}"
                    )
                files[target] = (config_map.name, content)
                total += len(content)
        if total > limits.max_total_bytes:
            raise ContentTooLargeError(
                f"the ConfigMaps hold {total} bytes, more than max_total_bytes="
                f"{limits.max_total_bytes}"
            )
        if len(files) > limits.max_entries:
            raise ContentTooLargeError(f"the ConfigMaps hold more than {limits.max_entries} files")
        directories = {target[:i] for target in files for i in range(1, len(target))}
        clash = sorted(d for d in directories if d in files)
        if clash:
            raise InvalidSourceError(
                f"{'/'.join(clash[0])} is both a file and a directory in the ConfigMaps"
            )
        digest = hashlib.sha256()
        for target in sorted(files):
            path = dest.joinpath(*target)
            path.parent.mkdir(parents=True, exist_ok=True)
            content = files[target][1]
            path.write_bytes(content)
            digest.update("/".join(target).encode() + b"\0" + hashlib.sha256(content).digest())
        return FetchResult(
            resolved_source={
                "type": "configMaps",
                "configMaps": [
                    {"configMap": {"name": c.name}, "path": c.path} for c in spec.config_maps
                ],
            },
            revision=f"sha256:{digest.hexdigest()}",
        )
