"""Prometheus metrics of the ResolveSet revisions: written and garbage-collected, by input kind.

| metric | labels |
|---|---|
| ``pivoter_resolveset_revisions_written_total`` | ``kind`` (Resolution, PlatformOperator) |
| ``pivoter_resolveset_revisions_collected_total`` | ``kind`` |

Registered in the manager's registry by :func:`pivoter.resolvesets.setup`; recorded by
:class:`pivoter.resolvesets.RevisionStore`.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

__all__ = ["RevisionMetrics"]


class RevisionMetrics:
    """The counters above, in one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.written = Counter(
            "pivoter_resolveset_revisions_written",
            "ResolveSet revisions written (a new selection of an input).",
            ["kind"],
            registry=registry,
        )
        self.collected = Counter(
            "pivoter_resolveset_revisions_collected",
            "ResolveSet revisions deleted by the history limit.",
            ["kind"],
            registry=registry,
        )
