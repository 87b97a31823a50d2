"""One poll of one catalog source: fetch, decide whether the content changed, check it, cache it.

Shared by the reconcilers of pivoter's ``Catalog`` and of OLM's ``CatalogSource`` and catalogd's
``ClusterCatalog``. The cheap path matters because gRPC has no change signal and every catalog
is polled: when the source's own digest (HTTP body, gRPC messages, image manifest, ConfigMap
data) is the one of the last poll, nothing else is computed. Only a moved source digest costs
the canonical content digest, and only a moved content digest costs validation and a cache
update, which is what fires the cache's ``on_change`` callbacks. A failed fetch or an invalid
catalog leaves the cache as it was: the last good content keeps serving resolution. A source
that answers but says its content is stale (the ``stale`` attribute of the catalogd and registry
sources, sent by ``pivoter catalog serve`` whose directory broke) is used like any other answer
and reported as a :class:`SourceStale` problem naming the server's reason.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from pivoter.catalogs.cache import CachedCatalog, CatalogCache
from pivoter.catalogs.digest import content_digest
from pivoter.catalogs.errors import CatalogProblem, FetchFailed, InvalidCatalog, SourceStale
from pivoter.catalogs.sources import BuiltSource
from pivoter.kube import KubeError
from resolver.catalog.model import Catalog
from resolver.catalog.sources import CatalogSourceError
from resolver.catalog.validate import validate

__all__ = ["MAX_FINDINGS_REPORTED", "PollOutcome", "Poller"]

log = logging.getLogger(__name__)

MAX_FINDINGS_REPORTED = 5


@dataclass(frozen=True, slots=True)
class PollOutcome:
    """What one poll found."""

    entry: CachedCatalog | None
    """What the cache holds for the catalog after the poll (the last good content on failure)."""
    changed: bool = False
    """The content digest moved (the cache's callbacks fired)."""
    problem: CatalogProblem | None = None
    seconds: float = 0.0
    """Wall time of the fetch (and, when the source digest moved, digest and validation)."""
    fetched_bytes: int | None = None
    """Bytes the fetch received, when the source counts them."""


@dataclass
class Poller:
    """Polls one source into one cache entry; keeps the source (and its caches) between polls."""

    cache_name: str
    built: BuiltSource
    validate: bool = True
    source_digest: str | None = field(default=None, init=False)
    failures: int = field(default=0, init=False)
    rejected: tuple[str, InvalidCatalog] | None = field(default=None, init=False)
    """The content digest last refused by validation, and why: not validated again."""

    def poll(self, cache: CatalogCache, priority: int) -> PollOutcome:
        """Fetch once and update ``cache``; never raises but for an API server error (a
        :class:`~pivoter.kube.KubeError` reading a ConfigMap): any other exception becomes a
        ``FetchFailed`` problem."""
        started = time.monotonic()
        try:
            changed = self._poll(cache, priority)
        except KubeError:
            raise  # the API server's trouble, not the source's: the controller retries
        except Exception as exc:
            problem = exc if isinstance(exc, CatalogProblem) else self._unexpected(exc)
            self.failures += 1
            return PollOutcome(
                cache.get(self.cache_name),
                problem=problem,
                seconds=time.monotonic() - started,
                fetched_bytes=getattr(self.built.source, "fetched_bytes", None),
            )
        stale = getattr(self.built.source, "stale", None)
        if stale:
            # Counted as a failure: the next poll comes sooner, so the fix is seen soon.
            self.failures += 1
            return PollOutcome(
                cache.get(self.cache_name),
                changed=changed,
                problem=SourceStale(
                    f"{self.built.description} serves stale content: {str(stale)[:1000]}"
                ),
                seconds=time.monotonic() - started,
                fetched_bytes=getattr(self.built.source, "fetched_bytes", None),
            )
        self.failures = 0
        return PollOutcome(
            cache.get(self.cache_name),
            changed=changed,
            seconds=time.monotonic() - started,
            fetched_bytes=getattr(self.built.source, "fetched_bytes", None),
        )

    def _unexpected(self, exc: Exception) -> FetchFailed:
        """A bug or an exhausted resource in a source or a check: reported like any failed
        fetch (status, metrics, a log line with the traceback), never a silent retry that leaves
        the status saying all is well."""
        log.exception("catalog %s: unexpected error while polling", self.cache_name)
        text = " ".join(str(exc).split())[:500] or "no message"
        return FetchFailed(
            f"{self.built.description}: unexpected error while fetching "
            f"({type(exc).__name__}: {text})"
        )

    def _poll(self, cache: CatalogCache, priority: int) -> bool:
        try:
            catalog = self.built.source.fetch()
        except CatalogSourceError as exc:
            raise FetchFailed(str(exc)) from exc
        source_digest = self.built.source.digest
        cached = cache.get(self.cache_name)
        if cached is not None and source_digest is not None and source_digest == self.source_digest:
            if cached.priority != priority:
                cache.set_priority(self.cache_name, priority)
            return False
        digest = content_digest(catalog)
        if cached is not None and cached.digest == digest:
            self.source_digest = source_digest
            if cached.priority != priority:
                cache.set_priority(self.cache_name, priority)
            return False
        if self.validate:
            if self.rejected is not None and self.rejected[0] == digest:
                raise InvalidCatalog(str(self.rejected[1]))
            try:
                _check(catalog, self.built.description)
            except InvalidCatalog as problem:
                self.rejected = (digest, problem)
                raise
        self.rejected = None
        self.source_digest = source_digest
        log.info(
            "catalog %s: content %s from %s (%d packages, %d bundles)",
            self.cache_name,
            digest,
            self.built.description,
            len(catalog.packages),
            len(catalog.bundles),
        )
        return cache.put(self.cache_name, catalog, digest, priority)


def _check(catalog: Catalog, description: str) -> None:
    errors = [f for f in validate(catalog) if f.severity == "error"]
    if not errors:
        return
    shown = "; ".join(str(f) for f in errors[:MAX_FINDINGS_REPORTED])
    more = len(errors) - MAX_FINDINGS_REPORTED
    raise InvalidCatalog(
        f"{description} serves an invalid catalog ({len(errors)} errors): {shown}"
        + (f"; and {more} more" if more > 0 else "")
        + " (run `pivoter catalog validate` on its content)"
    )
