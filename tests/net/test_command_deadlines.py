"""``pivoter catalog render --timeout T`` ends by T (plus a little) whatever the server does.

Before: ``--timeout`` was only the stall timeout (the longest silence) and the deadline of the
fetch stayed at the sources' default of 600 s, so a server dripping one byte every 0.2 s in its
status line, its headers or a chunked body held the command for ten minutes (reported: still
running after 120 s with ``--timeout 5``). Now ``--timeout`` is the deadline of the whole fetch,
for the catalogd (HTTP) and registry (gRPC) sources alike.

The peers are real sockets on 127.0.0.1 (:mod:`tests.net.hostile`, and raw TCP servers for gRPC
that accept and then say nothing, or drip an HTTP/2 preface); the command runs as a real
``pivoter`` process (:func:`tests.clirun.pivoter`). Each drip would take a minute or more; the
command must end within the deadline plus :data:`MARGIN` with one line and exit code 1.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pivoter.cli.exitcodes import ExitCode
from tests.clirun import pivoter
from tests.net.hostile import Step, hostile_server

# Waits on purpose (deadlines, stalled and dripping peers, floods): in CI, not the inner loop.
pytestmark = pytest.mark.slow

DEADLINE = 1.5
"""``--timeout`` of the commands here."""
MARGIN = 2.5
"""Seconds allowed past the deadline: process start-up, a loaded machine."""
DRIP = 0.2

OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\n"
DRIPS: dict[str, list[Step]] = {
    "status line": [("drip", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", DRIP)],
    "headers": [("send", OK_HEAD), ("drip", b"X-Slow: " + b"a" * 300 + b"\r\n\r\n", DRIP)],
    "chunked body": [
        ("send", OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"),
        ("drip", b"1\r\n \r\n" * 200, DRIP),
    ],
    "TLS handshake": [("drip", b"\x16\x03\x03\x40\x00" + b"\x02" * 200, DRIP)],
}


@pytest.fixture(scope="module", autouse=True)
def _started() -> None:
    """Start the fork server before any clock runs: its imports are not the command's time."""
    assert pivoter("version").returncode == ExitCode.OK


def _render(url: str) -> tuple[int, str, float]:
    started = time.monotonic()
    result = pivoter("catalog", "render", "--timeout", f"{DEADLINE:g}", url, timeout=60)
    return result.returncode, result.stderr, time.monotonic() - started


@pytest.mark.parametrize("drip", sorted(DRIPS))
def test_catalog_render_ends_at_its_timeout_against_a_dripping_http_server(drip: str) -> None:
    with hostile_server(DRIPS[drip]) as server:
        scheme = "https" if drip == "TLS handshake" else "http"
        code, stderr, seconds = _render(f"{scheme}://127.0.0.1:{server.port}/catalogs/x")
    assert code == ExitCode.FAILURE, stderr
    assert len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith("pivoter: error: catalog source "), stderr
    assert f"passed its {DEADLINE:g}s deadline" in stderr
    assert seconds < DEADLINE + MARGIN, f"a dripped {drip} held the command {seconds:.1f}s"


@contextmanager
def _tcp_server(mode: str) -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts every connection, then says nothing (``silent``)
    or sends an HTTP/2 SETTINGS frame one byte every :data:`DRIP` seconds (``drip``)."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    settings = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # an empty SETTINGS frame

    def serve(conn: socket.socket) -> None:
        with conn:
            for byte in settings * 50 if mode == "drip" else b"":
                if stop.wait(DRIP):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
            stop.wait(60)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()


@pytest.mark.parametrize("mode", ["silent", "drip"])
def test_catalog_render_ends_at_its_timeout_against_a_grpc_server_that_stalls(mode: str) -> None:
    with _tcp_server(mode) as port:
        code, stderr, seconds = _render(f"grpc://127.0.0.1:{port}")
    assert code == ExitCode.FAILURE, stderr
    assert len(stderr.splitlines()) == 1, stderr
    assert f"catalog source grpc://127.0.0.1:{port}: ListPackages: " in stderr
    assert f"longer than {DEADLINE:g}s" in stderr
    assert seconds < DEADLINE + MARGIN, f"a {mode} gRPC server held the command {seconds:.1f}s"


def test_resolve_shares_its_timeout_across_every_remote_catalog() -> None:
    """The first catalog takes 4 s of a 5 s deadline and arrives whole; the second drips and gets
    only what is left (1 s), not a deadline of its own (which would end the command at 9 s)."""
    body = b'{"schema":"olm.package","name":"x","defaultChannel":"s"}\n'
    slow: list[Step] = [
        ("send", OK_HEAD + b"Content-Length: %d\r\n\r\n" % len(body)),
        ("drip", body, 4.0 / len(body)),
    ]
    deadline = 5.0
    with hostile_server(slow) as first, hostile_server(DRIPS["headers"]) as second:
        started = time.monotonic()
        result = pivoter(
            "resolve",
            "--timeout",
            f"{deadline:g}",
            "--package",
            "x",
            "--catalog",
            f"http://127.0.0.1:{first.port}/catalogs/a",
            "--catalog",
            f"http://127.0.0.1:{second.port}/catalogs/b",
            timeout=60,
        )
        seconds = time.monotonic() - started
    assert result.returncode == ExitCode.FAILURE, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert f"http://127.0.0.1:{second.port}/catalogs/b" in result.stderr, result.stderr
    assert "deadline" in result.stderr, result.stderr
    assert 4.0 <= seconds < deadline + MARGIN, f"resolve took {seconds:.1f}s"
