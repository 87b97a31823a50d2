"""Free TCP ports on 127.0.0.1 for servers that start later (the control plane, test servers).

A port is picked now and bound by its server seconds later. A port from the kernel's
ephemeral range (what binding port 0 returns) can meanwhile become the local end of any
outgoing connection on the machine, and then the server cannot bind it: seen in CI, where
kube-scheduler's port was taken between the pick and its start, and every cluster test of the
run errored. So ports are picked at random below the ephemeral range, where only explicit
binds go, and each is checked to be free now.

Between the pick and the bind, another process of the same run (a pytest-xdist worker) may pick
the same port, find it free too, and then one server cannot bind while the other's answers for
both: seen in CI, where a test's daemon looked ready because another worker's daemon answered on
its health port. So every pick is also reserved, machine-wide, by creating a file named after the
port in a shared directory (exclusive create); a reservation older than ``_RESERVED_FOR`` seconds
is taken to be bound or abandoned by then and may be picked again.
"""

from __future__ import annotations

import os
import random
import socket
import tempfile
import time
from collections.abc import Collection
from pathlib import Path

__all__ = ["free_port", "free_ports"]

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10000
"""Below this, well-known and registered services may listen."""
_RESERVATIONS = Path(tempfile.gettempdir()) / "pivoter-port-reservations"
_RESERVED_FOR = 600.0
"""Seconds a pick stays reserved: far longer than any server takes to bind what it was given."""


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


def _reserve(port: int) -> bool:
    """Reserve ``port`` for this caller: False when another process picked it in the last
    ``_RESERVED_FOR`` seconds."""
    _RESERVATIONS.mkdir(mode=0o1777, parents=True, exist_ok=True)
    marker = _RESERVATIONS / str(port)
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        return True
    except FileExistsError:
        try:
            if time.time() - marker.stat().st_mtime < _RESERVED_FOR:
                return False
            os.utime(marker)  # stale: take it over (two takers at once both may; rare enough)
            return True
        except OSError:
            return False
    except OSError:
        return True  # no shared directory to reserve in: the bind check alone


def free_port(taken: Collection[int] = ()) -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now, outside the ephemeral range, not in
    ``taken`` and not handed out by this function to any process in the last few minutes."""
    pool = _pool()
    if pool is not None:
        for _ in range(500):
            port = random.choice(pool)
            if port not in taken and _bindable(port) and _reserve(port):
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
