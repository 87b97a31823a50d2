"""A hostile HTTP peer on 127.0.0.1 for the deadline tests: it drips, stalls or never ends.

Each connection is answered by a *script*: a list of steps, ``("send", bytes)`` (at once),
``("drip", bytes, seconds)`` (one byte every ``seconds``), ``("stall", seconds)`` (say nothing),
``("endless", bytes)`` (repeat a chunk until the client hangs up). The server records every
request head it read (for the credential tests), and stops its threads when closed.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

Step = tuple[Any, ...]


@dataclass
class Hostile:
    """A running hostile server."""

    port: int
    heads: list[bytes] = field(default_factory=list)
    """The request heads received, in order (request line and headers)."""
    sent: list[int] = field(default_factory=list)
    """Bytes sent per connection, in the order connections ended."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _read_head(sock: socket.socket) -> bytes:
    data = b""
    sock.settimeout(10)
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n\r\n", 1)[0]


@contextmanager
def hostile_server(
    script: list[Step] | Callable[[bytes], list[Step]],
) -> Iterator[Hostile]:
    """Serve ``script`` (or ``script(request_head)``) to every connection on 127.0.0.1."""
    stop = threading.Event()
    state = Hostile(port=0)

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            sock: socket.socket = self.request
            sent = 0
            try:
                head = _read_head(sock)
                state.heads.append(head)
                steps = script(head) if callable(script) else script
                for step in steps:
                    if step[0] == "send":
                        sock.sendall(step[1])
                        sent += len(step[1])
                    elif step[0] == "drip":
                        for byte in step[1]:
                            if stop.wait(step[2]):
                                return
                            sock.sendall(bytes([byte]))
                            sent += 1
                    elif step[0] == "stall":
                        if stop.wait(step[1]):
                            return
                    elif step[0] == "endless":
                        while not stop.is_set():
                            sock.sendall(step[1])
                            sent += len(step[1])
            except OSError:
                pass  # the client gave up: that is what the tests want
            finally:
                state.sent.append(sent)

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    server = Server(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def timed(call: Callable[[], object]) -> tuple[BaseException | None, float]:
    """Run ``call``; return the exception it raised (None if none) and the seconds it took."""
    started = time.monotonic()
    try:
        call()
    except Exception as exc:  # the tests inspect it
        return exc, time.monotonic() - started
    return None, time.monotonic() - started
