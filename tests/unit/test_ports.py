"""Ports for servers that start later are picked outside the kernel's ephemeral range, where an
outgoing connection could take them before the server binds (tests/ports.py)."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.ports import free_port, free_ports


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
