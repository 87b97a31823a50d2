"""The plain+v0 bundle format: a flat ``manifests/`` directory of YAML or JSON objects.

As in rukpak, ``manifests/`` must exist, hold no subdirectories and yield at least one object;
every object needs ``apiVersion``, ``kind`` and ``metadata.name``. Every file is read through
:func:`~provisioners.formats.manifests.load_documents` (the guarded reader: a FIFO, a device, a link
out of the bundle is refused in one line, never opened). Registered as ``plain+v0`` in
:mod:`provisioners.formats`; the appliers call :meth:`PlainV0.convert`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provisioners.formats.base import (
    ConvertedBundle,
    EmptyBundleError,
    InvalidConfigError,
    InvalidManifestError,
    MissingManifestsError,
    NestedManifestsError,
)
from provisioners.formats.manifests import ManifestLimits, directory_entries, load_documents

MANIFESTS_DIR = "manifests"


def _check_object(document: Any, where: str) -> dict[str, Any]:
    """Return ``document`` if it is a Kubernetes object with a name, else raise."""
    if not isinstance(document, dict):
        raise InvalidManifestError(
            f"{where}: expected a Kubernetes object (a mapping), got {type(document).__name__}"
        )
    for key in ("apiVersion", "kind"):
        value = document.get(key)
        if not isinstance(value, str) or not value:
            raise InvalidManifestError(f"{where}: the object has no {key}")
    metadata = document.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        raise InvalidManifestError(
            f"{where}: the {document['kind']} object has no metadata.name (generateName is not "
            "supported: objects must be identifiable to be managed)"
        )
    return document


@dataclass(frozen=True)
class PlainV0:
    """plain+v0: every object of every file in ``manifests/``, in file-name order."""

    limits: ManifestLimits = field(default_factory=ManifestLimits)
    name: str = "plain+v0"

    def convert(self, root: Path, config: Mapping[str, Any] | None = None) -> ConvertedBundle:
        """Read ``root/manifests`` and return its objects; plain+v0 takes no configuration."""
        if config:
            raise InvalidConfigError(
                f"plain+v0 bundles take no configuration; got keys {sorted(config)}"
            )
        manifests = root / MANIFESTS_DIR
        if manifests.is_symlink() or not manifests.is_dir():
            raise MissingManifestsError(
                f"the bundle has no {MANIFESTS_DIR}/ directory; a plain+v0 bundle keeps its "
                f"objects in {MANIFESTS_DIR}/*.yaml at the bundle root"
            )
        objects: list[dict[str, Any]] = []
        files: list[str] = []
        for entry, is_dir in directory_entries(root, MANIFESTS_DIR):
            if is_dir:
                raise NestedManifestsError(
                    f"subdirectories are not allowed in {MANIFESTS_DIR}/ of a plain+v0 bundle: "
                    f"found {MANIFESTS_DIR}/{entry.name}/"
                )
            # Links, FIFOs, devices: the guarded reader refuses what is not a file in the bundle.
            files.append(entry.name)
            documents = load_documents(root, entry, self.limits)
            for index, document in enumerate(documents, start=1):
                objects.append(_check_object(document, f"{MANIFESTS_DIR}/{entry.name}#{index}"))
        if not objects:
            raise EmptyBundleError(
                f"found zero objects in {MANIFESTS_DIR}/: plain+v0 bundles must contain at least "
                "one object"
            )
        return ConvertedBundle(
            format=self.name,
            objects=objects,
            metadata={"files": ",".join(files), "objects": str(len(objects))},
        )
