"""Free TCP ports on 127.0.0.1 for servers that start later (the control plane, test servers).

A port is picked now and bound by its server seconds later. A port from the kernel's
ephemeral range (what binding port 0 returns) can meanwhile become the local end of any
outgoing connection on the machine, and then the server cannot bind it: seen in CI, where
kube-scheduler's port was taken between the pick and its start, and every cluster test of the
run errored. So ports are picked at random below the ephemeral range, where only explicit
binds go, and each is checked to be free now.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Collection
from pathlib import Path

__all__ = ["free_port", "free_ports"]

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10000
"""Below this, well-known and registered services may listen."""


def _pool() -> range | None:
    """The ports to pick from: below the ephemeral range (or above it), None when neither
    leaves room (then any free port will do)."""
    try:
        low, high = (int(part) for part in _RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999  # Linux's default
    if low - _LOWEST >= 2000:
        return range(_LOWEST, low)
    if 65535 - high >= 2000:
        return range(high + 1, 65536)
    return None


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(taken: Collection[int] = ()) -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now, outside the ephemeral range and
    not in ``taken``."""
    pool = _pool()
    if pool is not None:
        for _ in range(500):
            port = random.choice(pool)
            if port not in taken and _bindable(port):
                return port
    while True:  # no room outside the ephemeral range, or it is all in use
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in taken:
            return port


def free_ports(count: int, taken: Collection[int] = ()) -> list[int]:
    """``count`` different free ports, none in ``taken``."""
    ports: list[int] = []
    for _ in range(count):
        ports.append(free_port([*taken, *ports]))
    return ports
