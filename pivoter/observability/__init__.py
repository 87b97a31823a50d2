"""What the daemon exports about itself: Prometheus metrics, health/readiness probes, logs.

Used by :mod:`pivoter.runtime` (which records metrics) and ``pivoter run`` (which serves them
and sets up logging).
"""

from pivoter.observability.logs import JSONFormatter, setup_logging
from pivoter.observability.metrics import Metrics
from pivoter.observability.server import Check, Endpoints, EndpointsError, parse_address

__all__ = [
    "Check",
    "Endpoints",
    "EndpointsError",
    "JSONFormatter",
    "Metrics",
    "parse_address",
    "setup_logging",
]
