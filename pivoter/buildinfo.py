"""The build's identity: which version of pivoter this is, from which commit, built when.

setup.py writes it at build time into the git-ignored ``pivoter/_version.py`` (the version from
git by setuptools-scm; the commit; the date, ``$SOURCE_DATE_EPOCH`` or the commit's, so a rebuild
is identical). ``pivoter version`` prints it, ``pivoter install`` picks the image tag and labels
the manifests with it, and the image carries it in its OCI labels (hack/image/build.sh). A source
tree that was never built reports :data:`UNKNOWN_VERSION` rather than failing.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["UNKNOWN", "UNKNOWN_VERSION", "BuildInfo", "build_info"]

UNKNOWN = "unknown"
"""The commit or date of a build that could not know it (no git, nothing recorded)."""
UNKNOWN_VERSION = "0.0.0+unknown"
"""The version of a build without git metadata, as pyproject.toml's ``fallback_version``."""


@dataclass(frozen=True)
class BuildInfo:
    """Which pivoter this is."""

    version: str
    """PEP 440: ``0.1.0`` at a tag, ``0.1.1.dev3+g1a2b3c4`` after it (docs/releasing.md)."""
    commit: str
    """The full git commit, or :data:`UNKNOWN`."""
    date: str
    """The build date, RFC 3339 in UTC (``2026-11-26T12:00:00Z``), or :data:`UNKNOWN`."""


def build_info() -> BuildInfo:
    """The identity of the running pivoter, as its build recorded it."""
    try:
        from pivoter import _version
    except ImportError:
        return BuildInfo(UNKNOWN_VERSION, UNKNOWN, UNKNOWN)
    return BuildInfo(_version.VERSION, _version.COMMIT, _version.DATE)
