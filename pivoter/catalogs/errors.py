"""Why a Catalog is not serving, as exceptions that carry the condition reason to report.

Raised by :mod:`pivoter.catalogs.sources` and :mod:`pivoter.catalogs.image`, caught by the
Catalog reconciler, which turns each into ``Serving=False`` with the exception's ``reason`` and
message (and keeps the last good content in the cache). :class:`SourceStale` is the one raised
by :mod:`pivoter.catalogs.poll` itself, after a fetch that worked, when the server says that the
content it serves is stale (``pivoter catalog serve`` whose directory broke).
"""

from __future__ import annotations

__all__ = [
    "REASON_FETCHED",
    "REASON_FETCH_FAILED",
    "REASON_INVALID",
    "REASON_STALE",
    "REASON_UNAVAILABLE",
    "CatalogProblem",
    "FetchFailed",
    "InvalidCatalog",
    "SourceStale",
    "SourceUnavailable",
]

REASON_FETCHED = "Fetched"
REASON_FETCH_FAILED = "FetchFailed"
REASON_INVALID = "Invalid"
REASON_UNAVAILABLE = "Unavailable"
REASON_STALE = "Stale"


class CatalogProblem(Exception):
    """A Catalog cannot be served from its source right now; ``reason`` is the condition reason."""

    reason = REASON_FETCH_FAILED


class FetchFailed(CatalogProblem):
    """The source did not answer, or answered with an error or garbage: check that it is up and
    reachable from pivoter's namespace."""

    reason = REASON_FETCH_FAILED


class InvalidCatalog(CatalogProblem):
    """The spec cannot be used, or the content is not a valid file-based catalog: fix the
    Catalog or its content."""

    reason = REASON_INVALID


class SourceStale(CatalogProblem):
    """The source answered, but says the content it serves is stale (its own source broke):
    the content is used, and the source's reason is reported until the source recovers."""

    reason = REASON_STALE


class SourceUnavailable(CatalogProblem):
    """Something the source needs does not exist (yet): a ConfigMap or Secret it names."""

    reason = REASON_UNAVAILABLE
