"""Where the chart is in a bundle tree (at the root, or in exactly one subdirectory, as rukpak),
and the check that every file of it may be handed to Helm.

:func:`find_chart` returns the chart directory and its ``Chart.yaml`` metadata, or raises a
:class:`~provisioners.formats.base.FormatError` that says what was found instead. ``helm
template`` then reads every file of the chart directory itself, and Helm follows symbolic links
wherever they lead (a link to ``/etc/...`` in a chart is rendered into the objects by
``.Files.Get``), so before that :func:`check_chart_files` walks the chart (iteratively, links not
followed, :func:`provisioners.fstree.walk_tree`) and refuses, in one line naming the file: a link
that leaves the chart, points at a directory (Helm walks into it: loops) or a chain of more than
40 links; a FIFO, socket or device; a tree more than 128 directories deep or of more than 100,000
entries; a file over 5 MiB or files over 100 MiB together (Helm's own limits for a packaged
chart). ``Chart.yaml`` is read through the guarded reader
(:func:`~provisioners.formats.manifests.load_documents`).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from provisioners.formats.base import FormatError, InvalidManifestError
from provisioners.formats.manifests import ManifestLimits, load_documents
from provisioners.fstree import MAX_DEPTH, walk_tree
from resolver import safefiles

__all__ = [
    "MAX_CHART_BYTES",
    "MAX_CHART_ENTRIES",
    "MAX_CHART_FILE_BYTES",
    "Chart",
    "NotAChartError",
    "UnsafeChartError",
    "check_chart_files",
    "find_chart",
]

CHART_FILE = "Chart.yaml"
MAX_CHART_FILE_BYTES = 5 << 20
"""Largest file of a chart: Helm's ``MaxDecompressedFileSize``, which it applies to a chart
directory's files too."""
MAX_CHART_BYTES = 100 << 20
"""All files of a chart together: Helm's ``MaxDecompressedChartSize`` for a packaged chart (for
a chart directory Helm has no total limit and holds every file in memory)."""
MAX_CHART_ENTRIES = 100_000
"""Files, directories and links of one chart (the unpacker's ``max_entries``)."""


class NotAChartError(FormatError):
    """The bundle holds no Helm chart."""


class UnsafeChartError(InvalidManifestError):
    """A file of the chart is not one Helm may read (a link out, a FIFO, too large...)."""


@dataclass(frozen=True)
class Chart:
    """A chart directory and the facts of its ``Chart.yaml``."""

    path: Path
    name: str
    version: str
    api_version: str


def _read(root: Path, path: Path) -> Chart:
    documents = load_documents(root, path / CHART_FILE, ManifestLimits(max_file_bytes=1 << 20))
    meta = documents[0] if len(documents) == 1 else None
    if not isinstance(meta, dict):
        raise InvalidManifestError(f"{CHART_FILE}: expected one mapping")
    missing = [key for key in ("apiVersion", "name", "version") if not meta.get(key)]
    if missing:
        raise InvalidManifestError(f"{CHART_FILE}: missing {', '.join(missing)}")
    if meta["apiVersion"] not in ("v1", "v2"):
        raise InvalidManifestError(
            f"{CHART_FILE}: apiVersion {meta['apiVersion']!r} is not a Helm chart version (v1, v2)"
        )
    check_chart_files(path)
    return Chart(path, str(meta["name"]), str(meta["version"]), str(meta["apiVersion"]))


def _is_chart_dir(entry: Path) -> bool:
    """A real subdirectory (not a link) holding a ``Chart.yaml`` entry of any kind."""
    try:
        return stat.S_ISDIR(os.lstat(entry).st_mode) and os.path.lexists(entry / CHART_FILE)
    except OSError:
        return False


def _names(root: Path) -> list[str]:
    try:
        return sorted(os.listdir(root))
    except OSError as err:
        raise NotAChartError(f"the bundle cannot be listed: {err.strerror}") from None


def find_chart(root: Path) -> Chart:
    """The chart at ``root`` or in its only subdirectory that holds a ``Chart.yaml``, with every
    file of it checked by :func:`check_chart_files`."""
    if os.path.lexists(root / CHART_FILE):
        return _read(root, root)
    names = _names(root)
    candidates = [root / name for name in names if _is_chart_dir(root / name)]
    if len(candidates) == 1:
        return _read(root, candidates[0])
    if candidates:
        listed = ", ".join(c.name for c in candidates)
        raise NotAChartError(f"the bundle holds several charts ({listed}); keep one per bundle")
    found = ", ".join(names[:10]) or "nothing"
    raise NotAChartError(
        f"the bundle is not a Helm chart: no {CHART_FILE} at its root or in one subdirectory "
        f"(found: {found})"
    )


def check_chart_files(chart: Path) -> None:
    """Refuse a chart directory any of whose entries Helm should not read; see the module text.

    Raises :class:`UnsafeChartError`, one line naming the entry (relative to the chart).
    """
    real_chart = safefiles.real_path(chart)
    total = 0
    try:
        for entry in walk_tree(
            chart, max_depth=MAX_DEPTH, max_entries=MAX_CHART_ENTRIES, tree="chart"
        ):
            mode = entry.info.st_mode
            if stat.S_ISDIR(mode):
                continue
            try:
                # Regular files and links alike: inside the chart, a regular file, not too large.
                info = safefiles.inspect(
                    real_chart,
                    entry.path,
                    max_bytes=MAX_CHART_FILE_BYTES,
                    what="chart file",
                    tree="chart",
                    walked=True,
                )
            except safefiles.RefusedFile as err:
                raise UnsafeChartError(f"{safefiles.shown(entry.rel)}: {err}") from None
            total += info.st_size
            if total > MAX_CHART_BYTES:
                raise UnsafeChartError(
                    f"{safefiles.shown(entry.rel)}: the chart's files together are over "
                    f"{MAX_CHART_BYTES:,} bytes (Helm's limit for a packaged chart)"
                )
    except safefiles.RefusedFile as err:  # from the walk: it names the entry itself
        raise UnsafeChartError(str(err)) from None
