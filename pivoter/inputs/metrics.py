"""Prometheus metrics of the input controllers: resolutions and pivots, by kind and outcome.

Registered once per registry (the manager's, served on ``/metrics``) and shared by the
controllers of every input kind; the engine records into them. ``kind`` is the input's kind
(:data:`pivoter.apis.inputs.INPUT_KINDS`: ``Resolution``, ``PlatformOperator``,
``ClusterExtension``), taken from the input each sample is about.

| metric | labels |
|---|---|
| ``pivoter_resolutions_total`` | ``kind``, ``outcome`` (``resolved``, or the condition reason) |
| ``pivoter_resolution_duration_seconds`` | ``kind`` |
| ``pivoter_pivots_total`` | ``kind``, ``outcome`` (``Succeeded``, ``RolledBack``, ``Failed``) |
| ``pivoter_pivot_duration_seconds`` | ``kind`` (successful pivots, start to Succeeded) |
| ``pivoter_rollbacks_total`` | ``kind`` |
"""

from __future__ import annotations

import threading
import weakref

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["InputMetrics"]

_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
_lock = threading.Lock()
_by_registry: weakref.WeakKeyDictionary[CollectorRegistry, InputMetrics] = (
    weakref.WeakKeyDictionary()
)


class InputMetrics:
    """The metrics above, in one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.resolutions = Counter(
            "pivoter_resolutions",
            "Resolutions of inputs, by outcome.",
            ["kind", "outcome"],
            registry=registry,
        )
        self.resolution_duration = Histogram(
            "pivoter_resolution_duration_seconds",
            "Time to gather catalogs and resolve one input.",
            ["kind"],
            buckets=_BUCKETS,
            registry=registry,
        )
        self.pivots = Counter(
            "pivoter_pivots", "Finished pivots, by outcome.", ["kind", "outcome"], registry=registry
        )
        self.pivot_duration = Histogram(
            "pivoter_pivot_duration_seconds",
            "Time from the start of a pivot to Succeeded.",
            ["kind"],
            buckets=_BUCKETS,
            registry=registry,
        )
        self.rollbacks = Counter(
            "pivoter_rollbacks", "Pivots that started a rollback.", ["kind"], registry=registry
        )

    @classmethod
    def of(cls, registry: CollectorRegistry) -> InputMetrics:
        """The metrics registered in ``registry`` (created on first use)."""
        with _lock:
            metrics = _by_registry.get(registry)
            if metrics is None:
                metrics = _by_registry[registry] = cls(registry)
            return metrics
