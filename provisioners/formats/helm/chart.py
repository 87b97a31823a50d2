"""Where the chart is in a bundle tree: at the root, or in exactly one subdirectory (as rukpak).

:func:`find_chart` returns the chart directory and its ``Chart.yaml`` metadata, or raises a
:class:`~provisioners.formats.base.FormatError` that says what was found instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from provisioners.formats.base import FormatError, InvalidManifestError
from provisioners.formats.manifests import ManifestLimits, load_documents

__all__ = ["Chart", "NotAChartError", "find_chart"]

CHART_FILE = "Chart.yaml"


class NotAChartError(FormatError):
    """The bundle holds no Helm chart."""


@dataclass(frozen=True)
class Chart:
    """A chart directory and the facts of its ``Chart.yaml``."""

    path: Path
    name: str
    version: str
    api_version: str


def _read(path: Path) -> Chart:
    documents = load_documents(path / CHART_FILE, ManifestLimits(max_file_bytes=1 << 20))
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
    return Chart(path, str(meta["name"]), str(meta["version"]), str(meta["apiVersion"]))


def find_chart(root: Path) -> Chart:
    """The chart at ``root`` or in its only subdirectory that holds a ``Chart.yaml``."""
    if (root / CHART_FILE).is_file():
        return _read(root)
    candidates = sorted(
        entry
        for entry in root.iterdir()
        if entry.is_dir() and not entry.is_symlink() and (entry / CHART_FILE).is_file()
    )
    if len(candidates) == 1:
        return _read(candidates[0])
    if candidates:
        names = ", ".join(c.name for c in candidates)
        raise NotAChartError(f"the bundle holds several charts ({names}); keep one per bundle")
    found = ", ".join(sorted(e.name for e in root.iterdir())[:10]) or "nothing"
    raise NotAChartError(
        f"the bundle is not a Helm chart: no {CHART_FILE} at its root or in one subdirectory "
        f"(found: {found})"
    )
