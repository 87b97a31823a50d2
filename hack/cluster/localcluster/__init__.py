"""Run a local Kubernetes control plane (etcd, kube-apiserver, controllers, kwok) for pivoter.

Shared by hack/cluster-up.sh, hack/cluster-down.sh, the pytest fixtures (tests/cluster.py) and the
demo. Import with ``hack/cluster`` on ``sys.path``; it needs only the standard library and
``cryptography``.
"""

from .cluster import (
    KWOK_NODE_NAME,
    ClusterConfig,
    LocalCluster,
    default_binary,
    destroy,
    running_components,
    sweep_orphans,
)
from .processes import ClusterError

__all__ = [
    "KWOK_NODE_NAME",
    "ClusterConfig",
    "ClusterError",
    "LocalCluster",
    "default_binary",
    "destroy",
    "running_components",
    "sweep_orphans",
]
