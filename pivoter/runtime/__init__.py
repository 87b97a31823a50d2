"""The controller machinery every pivoter reconciler runs on: informers and their caches, the
keyed work queue with backoff, controllers with N workers, Lease leader election and the Manager
that ties them together. See docs/controller.md for the design and how to add a controller.
"""

from pivoter.runtime.backoff import (
    BucketRateLimiter,
    ExponentialBackoff,
    MaxOfRateLimiter,
    RateLimiter,
    default_rate_limiter,
)
from pivoter.runtime.cache import Store, object_key, split_key
from pivoter.runtime.controller import (
    DEFAULT_RESYNC,
    Controller,
    Mapper,
    Reconcile,
    Result,
    owner_keys,
)
from pivoter.runtime.informer import EventHandler, Informer
from pivoter.runtime.leader import (
    KubeLeaseLock,
    LeaderElectionConfig,
    LeaderElector,
    LeaseLock,
    LeaseRecord,
)
from pivoter.runtime.manager import Manager, ManagerExit, default_identity
from pivoter.runtime.queue import WorkQueue

__all__ = [
    "DEFAULT_RESYNC",
    "BucketRateLimiter",
    "Controller",
    "EventHandler",
    "ExponentialBackoff",
    "Informer",
    "KubeLeaseLock",
    "LeaderElectionConfig",
    "LeaderElector",
    "LeaseLock",
    "LeaseRecord",
    "Manager",
    "ManagerExit",
    "Mapper",
    "MaxOfRateLimiter",
    "RateLimiter",
    "Reconcile",
    "Result",
    "Store",
    "WorkQueue",
    "default_identity",
    "default_rate_limiter",
    "object_key",
    "owner_keys",
    "split_key",
]
