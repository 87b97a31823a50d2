"""The Prometheus metrics of the controller machinery, in one registry served on ``/metrics``.

Names follow client-go's and controller-runtime's (``workqueue_*``, ``*_reconcile_*``,
``leader_election_master_status``) so existing dashboards and alerts read them unchanged; the
product prefix is ``pivoter_``. One :class:`Metrics` (with its own registry) belongs to one
:class:`pivoter.runtime.Manager`; the work queue, the controllers, the informers and the leader
elector record into it, and :mod:`pivoter.observability.server` serves it.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)

from pivoter.kube.requests import request_kind

__all__ = ["Metrics"]

# Queue wait and work time: from a millisecond to ~17 minutes (client-go's buckets).
_QUEUE_BUCKETS = tuple(10.0**e for e in range(-8, 4))
_RECONCILE_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)


class Metrics:
    """Every metric pivoter's controller core exports, registered in :attr:`registry`."""

    def __init__(self, registry: CollectorRegistry | None = None, *, process: bool = True) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        if process:
            ProcessCollector(registry=self.registry)
            PlatformCollector(registry=self.registry)
        r = self.registry
        self.queue_depth = Gauge(
            "workqueue_depth", "Current depth of the work queue.", ["name"], registry=r
        )
        self.queue_adds = Counter(
            "workqueue_adds", "Keys added to the work queue.", ["name"], registry=r
        )
        self.queue_retries = Counter(
            "workqueue_retries",
            "Keys re-added with rate limiting (backoff).",
            ["name"],
            registry=r,
        )
        self.queue_latency = Histogram(
            "workqueue_queue_duration_seconds",
            "Seconds a key waits in the queue before a worker takes it.",
            ["name"],
            buckets=_QUEUE_BUCKETS,
            registry=r,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "Seconds a worker spends on one key.",
            ["name"],
            buckets=_QUEUE_BUCKETS,
            registry=r,
        )
        self.reconcile_total = Counter(
            "pivoter_reconcile",
            "Reconciles per controller and result.",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            "pivoter_reconcile_errors",
            "Reconciles that raised, per controller.",
            ["controller"],
            registry=r,
        )
        self.reconcile_duration = Histogram(
            "pivoter_reconcile_duration_seconds",
            "Seconds per reconcile, per controller.",
            ["controller"],
            buckets=_RECONCILE_BUCKETS,
            registry=r,
        )
        self.active_workers = Gauge(
            "pivoter_controller_active_workers",
            "Workers busy reconciling, per controller.",
            ["controller"],
            registry=r,
        )
        self.informer_relists = Counter(
            "pivoter_informer_relists",
            "Full lists by an informer, per resource and reason.",
            ["resource", "reason"],
            registry=r,
        )
        self.informer_objects = Gauge(
            "pivoter_informer_objects",
            "Objects in an informer's cache, per resource.",
            ["resource"],
            registry=r,
        )
        self.leader_status = Gauge(
            "leader_election_master_status",
            "1 while this process holds the named lease, 0 otherwise.",
            ["name"],
            registry=r,
        )
        self.leader_transitions = Counter(
            "pivoter_leader_election_transitions",
            "Times this process started or stopped leading, per lease.",
            ["name", "to"],
            registry=r,
        )
        self.kube_requests = Counter(
            "pivoter_kube_requests",
            "Requests sent to the API server, per verb, resource and status code (0: no answer).",
            ["verb", "resource", "code"],
            registry=r,
        )

    def count_kube_request(
        self, method: str, path: str, query: list[tuple[str, str]], code: int
    ) -> None:
        """Count one request to the API server (a
        :data:`provisioners.apply.kubeapi.RequestObserver`)."""
        verb, resource = request_kind(method, path, query)
        self.kube_requests.labels(verb, resource, str(code)).inc()
