"""Prometheus metrics of the Catalog controller's polls, by Catalog.

* ``pivoter_catalog_polls_total{catalog, outcome}``: ``changed``, ``unchanged`` or ``failed``;
* ``pivoter_catalog_poll_duration_seconds{catalog}``: the fetch, plus digest and validation
  when the content changed;
* ``pivoter_catalog_poll_bytes_total{catalog}``: bytes received, as the source counts them;
* ``pivoter_catalog_poll_errors_total{catalog, reason}``: ``FetchFailed``, ``Invalid``,
  ``Unavailable`` or ``Stale`` (the ``Serving`` condition's reason; a stale source's poll is
  counted ``failed`` too, though its content is used).

Bytes: the catalogd HTTP body as received (0 for a 304), the gRPC response messages (the whole
catalog every poll: the registry API has no change signal), an image's layers and config when
it is pulled again (0 for the one-manifest poll); directories and ConfigMaps count nothing.
Registered by :func:`pivoter.catalogs.setup` in the manager's registry.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["CatalogMetrics"]

_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class CatalogMetrics:
    """The metrics above, in one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.polls = Counter(
            "pivoter_catalog_polls",
            "Polls of Catalog sources, by outcome.",
            ["catalog", "outcome"],
            registry=registry,
        )
        self.duration = Histogram(
            "pivoter_catalog_poll_duration_seconds",
            "Time of one poll of a Catalog source.",
            ["catalog"],
            buckets=_BUCKETS,
            registry=registry,
        )
        self.bytes = Counter(
            "pivoter_catalog_poll_bytes",
            "Bytes received by polls of a Catalog source.",
            ["catalog"],
            registry=registry,
        )
        self.errors = Counter(
            "pivoter_catalog_poll_errors",
            "Failed polls of a Catalog source, by the Serving condition's reason.",
            ["catalog", "reason"],
            registry=registry,
        )

    def record(
        self, catalog: str, *, seconds: float, changed: bool, fetched: int | None, reason: str
    ) -> None:
        """Count one poll (``reason`` set: it failed)."""
        outcome = "failed" if reason else ("changed" if changed else "unchanged")
        self.polls.labels(catalog, outcome).inc()
        self.duration.labels(catalog).observe(seconds)
        if fetched:
            self.bytes.labels(catalog).inc(fetched)
        if reason:
            self.errors.labels(catalog, reason).inc()

    def forget(self, catalog: str) -> None:
        """Drop the series of a deleted Catalog."""
        for metric in (self.polls, self.duration, self.bytes, self.errors):
            for labels in list(metric._metrics):
                if labels[0] == catalog:
                    metric.remove(*labels)
