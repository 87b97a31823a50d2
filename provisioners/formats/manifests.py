"""Safe parsing of untrusted manifest files (YAML or JSON, single- or multi-document).

Used by every bundle format (plain+v0, registry+v1, helm charts, their rendered output and
values). Parsing is :mod:`resolver.safedata`'s: plain JSON data only, nesting, alias expansion
("billion laughs", recursive aliases), file size and document count capped, tags and numbers
JSON cannot hold refused; its errors become :class:`InvalidManifestError` naming the file, the
document and the line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provisioners.formats.base import InvalidManifestError
from resolver import safedata


@dataclass(frozen=True)
class ManifestLimits:
    """Caps on one manifest file."""

    max_file_bytes: int = 32 << 20
    max_documents: int = 10_000
    max_nodes: int = 2_000_000
    """Nodes of one document with aliases expanded; the guard against alias bombs."""
    max_depth: int = 200
    """Nesting of collections (deeper input would crash C parsers and encoders)."""


def load_documents(path: Path, limits: ManifestLimits | None = None) -> list[Any]:
    """Parse every non-empty document of a YAML or JSON file, enforcing ``limits``."""
    limits = limits or ManifestLimits()
    size = path.stat().st_size
    if size > limits.max_file_bytes:
        raise InvalidManifestError(
            f"{path.name}: {size} bytes exceeds the manifest file limit of {limits.max_file_bytes}"
        )
    return parse_documents(path.read_bytes(), path.name, limits)


def parse_documents(text: bytes, where: str, limits: ManifestLimits | None = None) -> list[Any]:
    """Parse every non-empty document of a YAML or JSON stream named ``where`` (for messages)."""
    limits = limits or ManifestLimits()
    if len(text) > limits.max_file_bytes:
        raise InvalidManifestError(
            f"{where}: {len(text)} bytes exceeds the manifest file limit of {limits.max_file_bytes}"
        )
    safe_limits = safedata.Limits(
        max_bytes=limits.max_file_bytes,
        max_depth=limits.max_depth,
        max_nodes=limits.max_nodes,
        max_documents=limits.max_documents,
    )
    documents: list[Any] = []
    index = 0
    try:
        for document, _line in safedata.iter_yaml_documents(text, limits=safe_limits):
            index += 1
            if document is not None:
                documents.append(document)
    except safedata.SafeDataError as err:
        at = f" line {err.line}" if err.line else ""
        if "documents in one stream" in err.reason:
            raise InvalidManifestError(
                f"{where}: more than {limits.max_documents} documents in one file"
            ) from None
        raise InvalidManifestError(
            f"{where} (document {index + 1}{at}): not valid YAML or JSON data: {err.reason}"
        ) from None
    return documents
