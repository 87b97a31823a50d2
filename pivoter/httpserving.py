"""Threaded HTTP(S) servers that one slow or idle client cannot stall: the base of every server the
daemon and ``catalog serve`` run (content server, admission webhook, metrics and probes, catalog
HTTP API).

:class:`HardenedHTTPServer` accepts on a plain socket and does everything that waits for a client
in that connection's own thread: the TLS handshake (``do_handshake_on_connect=False``, then a
handshake bounded by ``handshake_timeout``), reading each request (the wait for it, its head and
its body together within ``read_timeout``; an idle keep-alive connection is closed after that
long), and each write (``write_timeout``). At most ``max_connections`` are served at once; more
wait in the listen backlog until one finishes, so a flood cannot exhaust threads or memory.
Connection errors are logged in one line, never as a traceback on stderr.
:class:`BackgroundHTTPServer` runs one on a daemon thread, over TLS 1.2+ when given a certificate.
"""

from __future__ import annotations

import io
import logging
import socket
import ssl
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "BackgroundHTTPServer",
    "ConnectionLimits",
    "HardenedHTTPServer",
    "tls_server_context",
]

log = logging.getLogger(__name__)

_SLOT_POLL_SECONDS = 0.25
_QUIET_ERRORS = (ConnectionError, TimeoutError, ssl.SSLError)


@dataclass(frozen=True)
class ConnectionLimits:
    """How long a client may take, and how many are served at once."""

    handshake_timeout: float = 10.0
    """Seconds for the whole TLS handshake (the API server's webhook timeout is 10 s)."""
    read_timeout: float = 30.0
    """Seconds to wait for a request and read its head and body; also the keep-alive idle time."""
    write_timeout: float = 30.0
    """Seconds one write of the answer may block on a client that does not read."""
    max_connections: int = 64
    """Connections served at once; further clients wait in the listen backlog."""


def tls_server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A server-side TLS 1.2+ context with the PEM certificate chain and key."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    return context


class _DeadlineReader(io.RawIOBase):
    """Socket reads that all end by the handler's current request deadline."""

    def __init__(self, sock: socket.socket, handler: _Deadlines) -> None:
        self._sock = sock
        self._handler = handler

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        remaining = self._handler.request_deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the client did not send its request in time")
        self._sock.settimeout(remaining)
        return self._sock.recv_into(buffer)


class _TimedWriter(io.BufferedIOBase):
    """Unbuffered socket writes, each bounded by the write timeout."""

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self._sock = sock
        self._timeout = timeout

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._sock.settimeout(self._timeout)
        self._sock.sendall(data)
        with memoryview(data) as view:
            return view.nbytes

    def fileno(self) -> int:
        return self._sock.fileno()


class _Deadlines(BaseHTTPRequestHandler):
    """Mixed into every handler class a :class:`HardenedHTTPServer` serves."""

    server: HardenedHTTPServer
    request_deadline = 0.0

    def setup(self) -> None:
        super().setup()
        limits = self.server.limits
        self.request_deadline = time.monotonic() + limits.read_timeout
        # Replace the socket files the base class made (closing them leaves the socket open).
        self.rfile.close()
        self.wfile.close()
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, self))
        self.wfile = _TimedWriter(self.connection, limits.write_timeout)

    def handle_one_request(self) -> None:
        # Waiting for the request, its head and its body share one deadline per request.
        self.request_deadline = time.monotonic() + self.server.limits.read_timeout
        super().handle_one_request()


class HardenedHTTPServer(ThreadingHTTPServer):
    """A :class:`ThreadingHTTPServer` with per-connection TLS handshakes, timeouts and a cap."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        tls: ssl.SSLContext | None = None,
        limits: ConnectionLimits | None = None,
        name: str = "http",
    ) -> None:
        self.limits = limits or ConnectionLimits()
        self.tls = tls
        self.name = name
        self._slots = threading.BoundedSemaphore(self.limits.max_connections)
        self._closing = threading.Event()
        guarded = type(handler.__name__, (_Deadlines, handler), {"__module__": handler.__module__})
        super().__init__(address, guarded)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Start the connection's thread once a slot is free (the accept loop waits till then)."""
        while not self._slots.acquire(timeout=_SLOT_POLL_SECONDS):
            if self._closing.is_set():
                self.shutdown_request(request)
                return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """Serve one connection in its own thread, then give its slot back."""
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def finish_request(self, request: Any, client_address: Any) -> None:
        """Handshake (in this connection's thread, with a deadline), then serve the requests."""
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(self.limits.handshake_timeout)
        try:
            connection = self.tls.wrap_socket(
                request, server_side=True, do_handshake_on_connect=False
            )
        except OSError as exc:
            log.debug("%s: connection from %s failed: %s", self.name, client_address, exc)
            return
        try:
            connection.do_handshake()  # the socket timeout bounds the whole handshake
        except (OSError, ValueError) as exc:
            log.debug("%s: TLS handshake with %s failed: %s", self.name, client_address, exc)
            connection.close()
            return
        try:
            super().finish_request(connection, client_address)
        finally:
            self.shutdown_request(connection)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Log a failed connection in one line (the base class prints a traceback to stderr)."""
        error = sys.exc_info()[1]
        if isinstance(error, _QUIET_ERRORS):
            log.debug("%s: connection from %s ended: %s", self.name, client_address, error)
        else:
            log.warning(
                "%s: request from %s failed: %s: %s",
                self.name,
                client_address,
                type(error).__name__,
                error,
            )

    def shutdown(self) -> None:
        """Stop the accept loop, also when it waits for a free slot."""
        self._closing.set()
        super().shutdown()


class BackgroundHTTPServer:
    """Serves ``handler`` on ``host:port`` (port 0: a free one), over TLS when given a cert."""

    def __init__(
        self,
        handler: type[BaseHTTPRequestHandler],
        *,
        host: str,
        port: int,
        name: str,
        tls_cert: Path | None = None,
        tls_key: Path | None = None,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.name = name
        tls = None
        self.scheme = "http"
        if tls_cert is not None and tls_key is not None:
            tls = tls_server_context(tls_cert, tls_key)
            self.scheme = "https"
        self.httpd = HardenedHTTPServer((host, port), handler, tls=tls, limits=limits, name=name)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (useful with port 0)."""
        return int(self.httpd.server_address[1])

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, name=self.name, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.httpd.shutdown()
        self.httpd.server_close()
