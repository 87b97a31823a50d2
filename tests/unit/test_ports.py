"""Ports for servers that start later are picked outside the kernel's ephemeral range, where an
outgoing connection could take them before the server binds, and never handed to two processes
of a run at once (tests/ports.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from localcluster import ports

from tests.ports import free_port, free_ports

REPO = Path(__file__).resolve().parents[2]


def _ephemeral() -> tuple[int, int]:
    low, high = (int(p) for p in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    return low, high


def test_ports_are_free_distinct_and_outside_the_ephemeral_range() -> None:
    low, high = _ephemeral()
    ports = free_ports(20)
    assert len(set(ports)) == 20
    for port in ports:
        assert not low <= port <= high, port
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # free: binding it works


def test_a_taken_or_busy_port_is_not_picked() -> None:
    with socket.socket() as busy:
        port = free_port()
        busy.bind(("127.0.0.1", port))
        busy.listen()
        others = {free_port(taken=[port]) for _ in range(50)}
    assert port not in others


def test_a_port_picked_by_another_process_is_not_picked_again() -> None:
    # Another xdist worker picks ports and does not bind them yet; this process, picking after it,
    # never gets one of them although each is still free.
    script = "from tests.ports import free_ports; print(*free_ports(300))"
    other = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO
    )
    theirs = {int(port) for port in other.stdout.split()}
    assert len(theirs) == 300
    mine = set(free_ports(300))
    assert not mine & theirs


def test_a_stale_reservation_is_taken_over(monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    marker = ports._RESERVATIONS / str(port)
    assert not ports._reserve(port)  # reserved by the pick above
    old = time.time() - ports._RESERVED_FOR - 1
    os.utime(marker, (old, old))
    assert ports._reserve(port)
    assert time.time() - marker.stat().st_mtime < 60
