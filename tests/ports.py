"""Free TCP ports for the servers tests start: the control plane's rule
(``hack/cluster/localcluster/ports.py``: below the kernel's ephemeral range, so an outgoing
connection cannot take a port between its pick and its server's bind), for every test."""

from __future__ import annotations

import sys
from pathlib import Path

_HACK_CLUSTER = Path(__file__).resolve().parents[1] / "hack" / "cluster"
if str(_HACK_CLUSTER) not in sys.path:
    sys.path.insert(0, str(_HACK_CLUSTER))

from localcluster.ports import free_port, free_ports  # noqa: E402  (needs the path above)

__all__ = ["free_port", "free_ports"]
