"""Safe reading and parsing of untrusted manifest files (YAML or JSON, single- or multi-document).

Used by every bundle format (plain+v0, registry+v1, helm charts, their rendered output and
values). A file of a bundle tree is read only through :func:`read_bundle_file`, which is
:mod:`resolver.safefiles`' guarded reader with the bundle as the root: a FIFO, socket or device, a
link leaving the bundle, a chain of more than 40 links, a link to a directory or a file over the
limit is refused with one line naming the file (:class:`InvalidManifestError`), never opened in a
way that blocks, escapes or reads without end. Parsing is :mod:`resolver.safedata`'s: plain JSON
data only, nesting, alias expansion ("billion laughs", recursive aliases), file size and document
count capped, tags and numbers JSON cannot hold refused; its errors become
:class:`InvalidManifestError` naming the file, the document and the line.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provisioners.formats.base import InvalidManifestError
from resolver import safedata, safefiles


@dataclass(frozen=True)
class ManifestLimits:
    """Caps on one manifest file."""

    max_file_bytes: int = 32 << 20
    max_documents: int = 10_000
    max_nodes: int = 2_000_000
    """Nodes of one document with aliases expanded; the guard against alias bombs."""
    max_depth: int = 200
    """Nesting of collections (deeper input would crash C parsers and encoders)."""


def bundle_path(root: Path, path: Path) -> str:
    """``path`` relative to the bundle ``root``, ``/``-separated, for messages."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def read_bundle_file(root: Path, path: Path, *, max_bytes: int, what: str) -> bytes:
    """The bytes of ``path``, a file of the bundle tree at ``root``, read through the guard.

    Raises :class:`InvalidManifestError` (``<path in the bundle>: <why>``) for anything that is
    not a regular file inside the bundle of at most ``max_bytes`` (``what`` names the kind of file
    in the size message).
    """
    try:
        return safefiles.read_bytes(root, path, max_bytes=max_bytes, what=what, tree="bundle")
    except safefiles.RefusedFile as err:
        raise InvalidManifestError(f"{safefiles.shown(bundle_path(root, path))}: {err}") from None


def directory_entries(root: Path, directory: str) -> list[tuple[Path, bool]]:
    """The entries of ``root/directory`` sorted by name, each with whether it is a directory
    (by ``lstat``: a link is not one). A directory that cannot be listed, or an entry that cannot
    be stat'ed, is an :class:`InvalidManifestError` naming it, not a raw ``OSError``."""
    path = root / directory
    try:
        names = sorted(os.listdir(path))
    except OSError as err:
        raise InvalidManifestError(
            f"{directory}/: cannot read the directory: {err.strerror}"
        ) from None
    entries: list[tuple[Path, bool]] = []
    for name in names:
        entry = path / name
        try:
            mode = os.lstat(entry).st_mode
        except OSError as err:
            shown = safefiles.shown(f"{directory}/{name}")
            raise InvalidManifestError(f"{shown}: cannot stat: {err.strerror}") from None
        entries.append((entry, stat.S_ISDIR(mode)))
    return entries


def load_documents(root: Path, path: Path, limits: ManifestLimits | None = None) -> list[Any]:
    """Parse every non-empty document of the YAML or JSON file ``path`` of the bundle at
    ``root``, read through :func:`read_bundle_file` and parsed within ``limits``."""
    limits = limits or ManifestLimits()
    data = read_bundle_file(root, path, max_bytes=limits.max_file_bytes, what="manifest file")
    return parse_documents(data, bundle_path(root, path), limits)


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
