"""HTTP(S) servers that no client can take: the base of every server the daemon and ``catalog
serve`` run (content server, admission webhook, metrics and probes, catalog HTTP API).

A thread per connection is a wall, not a queue: 64 idle keep-alive, dripping or pipelining
clients held all 64 threads, and every other request waited (or failed) until one timed out,
over and over. So :class:`HardenedHTTPServer` splits the work in two. One event loop (asyncio,
in the thread that runs :meth:`HardenedHTTPServer.serve_forever`) owns every connection and
everything that waits for a client: the accept, the TLS handshake, the wait for a request,
reading its head and body into memory, and sending what the handler wrote. A small pool of
worker threads runs the handlers, and a connection gets a worker only once a whole request has
arrived, so an idle, handshaking or dripping client costs a socket and a small buffer, never a
worker. The front end alone decides where a request ends (the handler reads its own request
from memory): nothing a handler leaves unread can be taken for the next request.

The budgets (:class:`ConnectionLimits`), all per connection:

- the TLS handshake within ``handshake_timeout``;
- a request's head (request line and headers, at most ``max_header_bytes``, else 431) within
  ``header_timeout`` of the connection being ready or of the request's first byte; a
  keep-alive connection waits ``idle_timeout`` for that first byte;
- its body (a ``Content-Length`` of at most ``max_body_bytes``, else 413; a
  ``Transfer-Encoding``, 501; conflicting or malformed framing, 400) within ``read_timeout``
  plus its length at ``min_rate``;
- the answer: every wait for the client to take bytes ends after ``write_timeout``, and what
  the client has taken (handed over, less what waits in the server and in the kernel's send
  queue) must keep up with ``min_rate`` after a grace of ``write_timeout``. The worker hands
  the answer over in pieces of 256 KiB and waits while a piece is unsent; the kernel's send
  buffer is ``send_buffer_bytes`` (Linux's default grows to 4 MiB). A client cut off for not
  reading gets a reset, which drops what the kernel still held for it.

And for the whole server:

- at most ``max_connections`` open (at most a quarter of the open-files limit); when a new
  client comes at the cap, the connection that has waited longest on its client (idle,
  handshaking, dripping its request or not reading its answer) is closed to make room: a queue
  with fair timeouts, not a wall. Only when every connection is being served does a new
  client wait in the listen backlog;
- at most ``max_connections_per_peer`` from one address (an IPv6 /64 counts as one): past it,
  that peer's own longest-waiting connection is closed, or the new one refused, so one peer
  cannot push others out;
- ``max_workers`` handler threads, taken round-robin across peers and at most half of them by
  one peer, so a peer with many requests ready (pipelining, or answers its clients do not
  read) waits its turn behind nobody and ahead of nobody; a thread that cannot be started (no
  address space for its stack) is one log line, and with no thread at all the request gets 503;
- request bodies held in memory at once: ``max_buffered_bytes``, half of that per peer; a body
  that would go past it is answered 503 at once.

Pipelined requests are read one at a time: the next one is parsed only after the previous
answer has been handed to the kernel, and reading stops meanwhile. Refusals are one
``text/plain`` line with the status; a client that is too slow is closed. Connection errors
are logged in one line, never as a traceback on stderr. Sockets get ``TCP_NODELAY`` (a
handler writes its head and body apart, and the body used to wait 40 ms for the client's
delayed ACK). :class:`BackgroundHTTPServer` runs one on a daemon thread, over TLS 1.2+ when
given a certificate.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import fcntl
import inspect
import io
import ipaddress
import logging
import queue
import resource
import socket
import socketserver
import ssl
import struct
import termios
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent import futures
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, NoReturn

__all__ = [
    "BackgroundHTTPServer",
    "ConnectionLimits",
    "HardenedHTTPServer",
    "tls_server_context",
]

log = logging.getLogger(__name__)

_PIECE = 256 * 1024
"""Largest piece of an answer handed to the event loop at once (and its send buffer's mark)."""
_STOP_SECONDS = 5.0
"""How long :meth:`HardenedHTTPServer.shutdown` waits for the event loop to finish."""
_BACKLOG_RETRY_SECONDS = 0.1
"""Pause of the accept loop after the process ran out of file descriptors."""


@dataclass(frozen=True)
class ConnectionLimits:
    """Per-connection budgets and server-wide caps (see the module docstring)."""

    handshake_timeout: float = 10.0
    """Seconds for the whole TLS handshake (the API server's webhook timeout is 10 s)."""
    header_timeout: float = 10.0
    """Seconds for a request's head: from the connection being ready, or from the first byte."""
    read_timeout: float = 30.0
    """Seconds for a request's body, plus its length at ``min_rate``."""
    idle_timeout: float = 15.0
    """Seconds a keep-alive connection may wait for its next request."""
    write_timeout: float = 30.0
    """Seconds any wait for the client to take answer bytes may last; also the grace before
    ``min_rate`` applies to the answer."""
    min_rate: float = 16 * 1024
    """Bytes per second a client must send its body and take its answer at (after the grace)."""
    max_workers: int = 16
    """Handler threads; one peer may hold at most half of them (each thread reserves a stack:
    8 MiB of address space by default)."""
    max_connections: int = 1024
    """Open connections (lowered to a quarter of the open-files limit); at the cap the one that
    has waited longest on its client is closed to make room."""
    max_connections_per_peer: int = 256
    """Open connections from one address (an IPv6 /64)."""
    max_header_bytes: int = 64 * 1024
    """Size of a request's line and headers (431 past it)."""
    max_body_bytes: int = 16 * 1024 * 1024
    """Size of one request body (413 past it)."""
    max_buffered_bytes: int = 128 * 1024 * 1024
    """Request bodies held at once (half per peer); a body that does not fit gets 503."""
    send_buffer_bytes: int = 256 * 1024
    """The kernel's send buffer per connection (``SO_SNDBUF``; Linux doubles it; its default
    grows to 4 MiB): with the 256 KiB the server holds, what a client that does not read pins."""

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not value > 0:
                raise ValueError(f"ConnectionLimits.{name} must be above zero, not {value!r}")


def tls_server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A server-side TLS 1.2+ context with the PEM certificate chain and key; TLS 1.2 clients
    may not renegotiate (each renegotiation is a handshake's CPU on the server's side, on a
    connection that is already open: CVE-2011-1473)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= ssl.OP_NO_RENEGOTIATION
    context.load_cert_chain(cert, key)
    return context


def _unsent(sock: socket.socket | None) -> int:
    """Bytes in the kernel's send queue not yet acknowledged by the client (Linux SIOCOUTQ;
    0 where it cannot be read)."""
    if sock is None:
        return 0
    try:
        raw = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
    except (OSError, ValueError):
        return 0
    return max(0, int(struct.unpack("i", raw)[0]))


def _reset_on_close(sock: socket.socket | None) -> None:
    """Make the next close send RST and drop what the kernel still holds for the client (a
    plain close would keep sending it, at the client's pace, after the server gave up)."""
    if sock is None:
        return
    with contextlib.suppress(OSError, ValueError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def peer_key(host: str) -> str:
    """The address connections are counted under: the IP, an IPv6 address's /64 (one host
    usually has the whole prefix), an IPv4-mapped IPv6 address as IPv4."""
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


# -- request framing (the event loop's side) ------------------------------------------------------


class _Refusal(Exception):
    """A request the front end answers itself, with this status and one line."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def _head_end(buffer: bytearray, start: int) -> int:
    """Where the head ends (after its empty line), or -1; lines may end in LF or CRLF."""
    found = [i for i in (buffer.find(b"\n\r\n", start), buffer.find(b"\n\n", start)) if i >= 0]
    if not found:
        return -1
    first = min(found)
    return first + (3 if buffer[first + 1 : first + 2] == b"\r" else 2)


def _framing(head: bytes) -> tuple[int, bool]:
    """The body length a head announces and whether it expects ``100 Continue``.

    The front end is the one authority on where a request ends (the handler only ever sees the
    bytes of its own request), so anything that could be read two ways is refused: folded or
    malformed header lines, differing or non-decimal ``Content-Length`` values, and any
    ``Transfer-Encoding`` (none of pivoter's clients send one).
    """
    length: int | None = None
    expect = False
    for raw in head.split(b"\n")[1:]:
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if not line:
            continue
        if line[:1] in (b" ", b"\t"):
            raise _Refusal(HTTPStatus.BAD_REQUEST, "folded header lines are not accepted")
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise _Refusal(HTTPStatus.BAD_REQUEST, "malformed header line")
        key = name.lower()
        if key == b"content-length":
            for part in value.split(b","):
                digits = part.strip()
                if not digits.isdigit() or len(digits) > 18:
                    raise _Refusal(HTTPStatus.BAD_REQUEST, "bad Content-Length")
                if length is not None and int(digits) != length:
                    raise _Refusal(HTTPStatus.BAD_REQUEST, "conflicting Content-Length values")
                length = int(digits)
        elif key == b"transfer-encoding":
            raise _Refusal(
                HTTPStatus.NOT_IMPLEMENTED,
                "Transfer-Encoding is not supported in requests; send a Content-Length",
            )
        elif key == b"expect" and value.strip().lower() == b"100-continue":
            expect = True
    return length or 0, expect


# -- connections ----------------------------------------------------------------------------------

_HANDSHAKE, _WAITING, _HEAD, _BODY, _QUEUED, _WORKING, _DRAINING, _CLOSING, _CLOSED = range(9)
_OWED = frozenset({_HANDSHAKE, _WAITING, _HEAD, _BODY, _DRAINING, _CLOSING})
"""States in which the server waits on the client: such a connection may be closed for room."""


class _Peer:
    """What one address holds: connections, workers, reserved body bytes, ready requests."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.connections: set[_Connection] = set()
        self.waiting: dict[_Connection, None] = {}
        """Its connections waiting on the client, longest-waiting first."""
        self.ready: collections.deque[_Connection] = collections.deque()
        self.workers = 0
        self.reserved = 0


class _Connection(asyncio.Protocol):
    """One client connection, driven by the event loop."""

    def __init__(self, server: HardenedHTTPServer, peer: _Peer, address: Any) -> None:
        self.server = server
        self.loop = server.loop
        self.limits = server.limits
        self.peer = peer
        self.address = address
        self.transport: asyncio.Transport | None = None
        self.state = _HANDSHAKE
        self.buffer = bytearray()
        self.scanned = 0
        self.fresh = True
        self.request = b""
        self.body_length = 0
        self.reserved = 0
        self.client_done = False
        self.reading_paused = False
        self.writing_paused = False
        self.drain: asyncio.Future[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.handshake: asyncio.Task[None] | None = None
        self.sock: socket.socket | None = None
        """The accepted socket until its task has taken it over."""
        self.raw: socket.socket | None = None
        """The TCP socket (under TLS too), for its send queue and its way of closing."""
        self.answer_bytes = 0
        self.waited = 0.0
        """Seconds this answer has waited for the client to take bytes."""
        self.waited_taken = 0
        """Bytes the client took meanwhile."""

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self, sock: socket.socket) -> None:
        """Take over an accepted socket: handshake (TLS) or wait for the first request."""
        self._enter(_HANDSHAKE)
        self._deadline(self.limits.handshake_timeout)
        self.sock = self.raw = sock
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.limits.send_buffer_bytes)
            # A handler writes its head and its body apart: without this, the body waits for
            # the client's delayed ACK of the head (40 ms a request). asyncio sets it only on
            # sockets whose proto is IPPROTO_TCP, and accepted ones say 0.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.handshake = self.loop.create_task(self._connect(sock))

    async def _connect(self, sock: socket.socket) -> None:
        tls = self.server.tls
        self.sock = None  # from here on, closing is this task's job
        try:
            if tls is None:
                await self.loop.connect_accepted_socket(lambda: self, sock)
            else:
                await self.loop.connect_accepted_socket(
                    lambda: self,
                    sock,
                    ssl=tls,
                    ssl_handshake_timeout=self.limits.handshake_timeout,
                    ssl_shutdown_timeout=min(self.limits.write_timeout, 5.0),
                )
        except asyncio.CancelledError:
            pass
        except (OSError, ValueError, EOFError) as exc:
            log.debug("%s: TLS handshake with %s failed: %s", self.server.name, self.address, exc)
        finally:
            if self.transport is None:
                sock.close()
                self._forget()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Ready for requests (after the TLS handshake, when there is one)."""
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.state == _CLOSED:  # closed for room while the handshake finished
            transport.abort()
            return
        transport.set_write_buffer_limits(high=_PIECE, low=_PIECE // 4)
        self._enter(_WAITING)
        self._deadline(self.limits.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the connection; a worker still writing to it gets an error."""
        self._forget()
        if self.drain is not None and not self.drain.done():
            self.drain.set_result(None)

    def _forget(self) -> None:
        if self.state == _CLOSED and self.server.is_forgotten(self):
            return
        self.state = _CLOSED
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self._release()
        self.server.forget(self)

    def close_now(self, why: str, *, reset: bool = False) -> None:
        """Drop the connection at once (no TLS goodbye, no waiting for unsent bytes); with
        ``reset``, also what the kernel still holds for the client."""
        log.debug("%s: closing the connection from %s: %s", self.server.name, self.address, why)
        if reset and self.state != _CLOSED:
            _reset_on_close(self.raw)
        if self.transport is not None:
            self.transport.abort()
        elif self.handshake is not None:
            self.handshake.cancel()
            if self.sock is not None:  # the task never started: nothing else will close it
                self.sock.close()
                self.sock = None
        self._forget()

    def _close_after_answer(self) -> None:
        """Close once what was written has been sent (or ``write_timeout`` has passed)."""
        self._enter(_CLOSING)
        self._deadline(self.limits.write_timeout)
        if self.transport is not None:
            self.transport.close()

    # -- state and deadlines ----------------------------------------------------------------------

    def _enter(self, state: int) -> None:
        self.state = state
        if state in _OWED:
            self.server.waits_on_client(self)
        else:
            self.server.served(self)

    def _deadline(self, seconds: float) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer = self.loop.call_later(seconds, self._expired)

    def _expired(self) -> None:
        self.timer = None
        reasons = {
            _HANDSHAKE: "no TLS handshake in time",
            _WAITING: "no request in time",
            _HEAD: "the request head did not arrive in time",
            _BODY: "the request body did not arrive in time",
            _DRAINING: "the client did not read the answer in time",
            _CLOSING: "the client did not read the answer in time",
        }
        if self.state in reasons:
            self.close_now(reasons[self.state], reset=self.state in (_DRAINING, _CLOSING))

    # -- reading requests -------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        """Collect request bytes; a connection being served buffers at most one head's worth."""
        self.buffer += data
        if self.state in (_WAITING, _HEAD, _BODY):
            self._advance()
        elif len(self.buffer) > self.limits.max_header_bytes and not self.reading_paused:
            if self.transport is not None:
                self.transport.pause_reading()
            self.reading_paused = True

    def eof_received(self) -> bool:
        """The client will send nothing more: finish the request being served, then close."""
        self.client_done = True
        if self.state in (_QUEUED, _WORKING, _DRAINING) and self.server.tls is None:
            return True  # keep the socket open for the answer
        if self.state in (_HEAD, _BODY):
            log.debug("%s: %s sent half a request", self.server.name, self.address)
        return False

    def _advance(self) -> None:
        limits = self.limits
        if self.state == _WAITING:
            # Empty lines before a request are ignored (RFC 9112 2.2).
            del self.buffer[: len(self.buffer) - len(self.buffer.lstrip(b"\r\n"))]
            if not self.buffer:
                return
            self._enter(_HEAD)
            self.scanned = 0
            if not self.fresh:  # a fresh connection's deadline already covers its head
                self._deadline(limits.header_timeout)
        if self.state == _HEAD:
            end = _head_end(self.buffer, max(0, self.scanned - 2))
            if end < 0:
                self.scanned = len(self.buffer)
                if len(self.buffer) > limits.max_header_bytes:
                    self.refuse(
                        HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                        f"the request head is over {limits.max_header_bytes} bytes",
                    )
                return
            if end > limits.max_header_bytes:
                self.refuse(
                    HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                    f"the request head is over {limits.max_header_bytes} bytes",
                )
                return
            head = bytes(self.buffer[:end])
            try:
                length, expect = _framing(head)
                self._reserve(length)
            except _Refusal as refusal:
                self.refuse(refusal.status, str(refusal))
                return
            del self.buffer[:end]
            self.request = head
            self.body_length = length
            self._enter(_BODY)
            self._deadline(limits.read_timeout + length / limits.min_rate)
            if expect and length > len(self.buffer) and self.transport is not None:
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        if self.state == _BODY and len(self.buffer) >= self.body_length:
            self.request += bytes(self.buffer[: self.body_length])
            del self.buffer[: self.body_length]
            self.fresh = False
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            self._enter(_QUEUED)
            self.server.ready(self)

    def _reserve(self, length: int) -> None:
        limits = self.limits
        if length > limits.max_body_bytes:
            raise _Refusal(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"the request body is over {limits.max_body_bytes} bytes",
            )
        if not self.server.reserve(self.peer, length):
            raise _Refusal(
                HTTPStatus.SERVICE_UNAVAILABLE, "too many request bodies in flight; retry later"
            )
        self.reserved = length

    def _release(self) -> None:
        if self.reserved:
            self.server.unreserve(self.peer, self.reserved)
            self.reserved = 0

    def refuse(self, status: HTTPStatus, message: str) -> None:
        """Answer a request the handler never sees, then close."""
        log.debug("%s: refused a request from %s: %s", self.server.name, self.address, message)
        body = (message + "\n").encode()
        head = (
            f"HTTP/1.1 {status.value} {status.phrase}\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Connection: close\r\n"
        )
        if status == HTTPStatus.SERVICE_UNAVAILABLE:
            head += "Retry-After: 1\r\n"
        if self.transport is not None:
            self.transport.write(head.encode() + b"\r\n" + body)
        self.buffer.clear()
        self._close_after_answer()

    # -- serving ----------------------------------------------------------------------------------

    def working(self) -> None:
        """A worker has taken the request."""
        self._enter(_WORKING)
        self.answer_bytes = 0
        self.waited = 0.0
        self.waited_taken = 0

    async def send(self, piece: bytes) -> None:
        """Hand ``piece`` of the answer to the transport; wait while the client lags behind,
        within ``write_timeout`` per wait and ``min_rate`` overall (called by the worker)."""
        limits = self.limits
        transport = self.transport
        if self.state != _WORKING or transport is None or transport.is_closing():
            raise ConnectionResetError("the client closed the connection")
        transport.write(piece)
        self.answer_bytes += len(piece)
        # Only time spent waiting for the client counts (not the handler's own pace): the
        # client earns 1 s of waiting per min_rate bytes it takes, after a grace of
        # write_timeout, and one whole wait without a byte taken ends it.
        while self.writing_paused and self.state == _WORKING:
            budget = limits.write_timeout + self.waited_taken / limits.min_rate - self.waited
            if budget <= 0:
                self._too_slow()
            began, taken = self.loop.time(), self._taken(transport)
            self.drain = self.loop.create_future()
            try:
                await asyncio.wait_for(self.drain, min(limits.write_timeout, budget))
                timed_out = False
            except TimeoutError:
                timed_out = True
            finally:
                self.drain = None
            if self.state != _WORKING:
                break
            progress = self._taken(transport) - taken
            self.waited += self.loop.time() - began
            self.waited_taken += max(0, progress)
            if timed_out and progress <= 0:
                self._too_slow()
        if self.state != _WORKING:
            raise ConnectionResetError("the client closed the connection")

    def _taken(self, transport: asyncio.Transport) -> int:
        """Answer bytes the client has taken: handed over, less what waits in the transport
        and in the kernel's send queue."""
        return self.answer_bytes - transport.get_write_buffer_size() - _unsent(self.raw)

    def _too_slow(self) -> NoReturn:
        self.close_now("the client did not read the answer in time", reset=True)
        raise TimeoutError("the client did not read the answer in time")

    def pause_writing(self) -> None:
        """The send buffer is over its mark: the worker waits."""
        self.writing_paused = True

    def resume_writing(self) -> None:
        """The send buffer is below its low mark."""
        self.writing_paused = False
        if self.drain is not None and not self.drain.done():
            self.drain.set_result(None)
        if self.state == _DRAINING:
            self._next_request()

    def handled(self, keep_alive: bool) -> None:
        """The worker is done: close, or wait for the answer to leave and read the next request."""
        self._release()
        self.request = b""
        if self.state != _WORKING:
            return  # closed meanwhile
        if not keep_alive or self.client_done:
            self._close_after_answer()
        elif self.writing_paused:
            self._enter(_DRAINING)
            self._deadline(self.limits.write_timeout)
        else:
            self._next_request()

    def _next_request(self) -> None:
        self._enter(_WAITING)
        self._deadline(self.limits.idle_timeout)
        if self.reading_paused and self.transport is not None:
            self.reading_paused = False
            self.transport.resume_reading()
        if self.buffer:
            self._advance()


# -- the handler's side ---------------------------------------------------------------------------


class _Exchange:
    """One request as a worker sees it: its bytes, and a way to send the answer."""

    def __init__(self, connection: _Connection, data: bytes) -> None:
        self.connection = connection
        self.data = data
        self.wrote = False


def _close_unstarted(sending: Coroutine[Any, Any, None]) -> None:
    """Close a send the event loop never started and never will (its future was cancelled
    before it ran, e.g. the loop stopped first): left alone it warns "coroutine was never
    awaited" when collected, an error in whatever test runs then (seen once in CI)."""
    if inspect.getcoroutinestate(sending) == inspect.CORO_CREATED:
        sending.close()


class _AnswerWriter(io.BufferedIOBase):
    """The handler's ``wfile``: every write goes through the event loop, in bounded pieces."""

    def __init__(self, exchange: _Exchange) -> None:
        self._exchange = exchange

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        connection = self._exchange.connection
        limits = connection.limits
        with memoryview(data) as view, view.cast("B") as octets:
            for start in range(0, len(octets), _PIECE):
                piece = bytes(octets[start : start + _PIECE])
                self._exchange.wrote = True
                sending = connection.send(piece)
                try:
                    future = asyncio.run_coroutine_threadsafe(sending, connection.loop)
                except RuntimeError:  # the loop is closed: the server has stopped
                    sending.close()  # never scheduled: not a "coroutine never awaited" warning
                    raise ConnectionResetError("the server is shutting down") from None
                try:
                    future.result(timeout=limits.write_timeout + _STOP_SECONDS)
                except futures.TimeoutError:
                    if future.cancel():  # still pending: the loop will never start it
                        _close_unstarted(sending)
                    raise TimeoutError("the client did not read the answer in time") from None
                except futures.CancelledError:
                    _close_unstarted(sending)
                    raise ConnectionResetError("the server is shutting down") from None
            return len(octets)


class _Exchanging(BaseHTTPRequestHandler):
    """Mixed into every handler class a :class:`HardenedHTTPServer` serves: one request from
    memory, the answer through the event loop."""

    server: HardenedHTTPServer
    request: _Exchange

    def setup(self) -> None:
        self.connection = self.request
        self.rfile = io.BytesIO(self.request.data)
        self.wfile = _AnswerWriter(self.request)

    def handle(self) -> None:
        self.close_connection = True
        self.handle_one_request()

    def finish(self) -> None:
        return

    def handle_expect_100(self) -> bool:
        return True  # the front end answered it before reading the body


class _Workers:
    """Daemon threads running handlers; the server never gives them more than ``size`` jobs at
    once, so one thread per job in flight is started the first time it is needed."""

    def __init__(self, size: int, name: str) -> None:
        self._size = size
        self._name = name
        self._jobs: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]] | None]
        self._jobs = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._warned = -60.0

    def submit(self, in_flight: int, job: Callable[..., None], *args: Any) -> bool:
        """Queue ``job``; ``in_flight`` counts it with the others not yet finished. False when
        no thread runs to take it and none can be started."""
        if in_flight > len(self._threads) and len(self._threads) < self._size:
            thread = threading.Thread(
                target=self._run, name=f"{self._name}-{len(self._threads)}", daemon=True
            )
            try:
                thread.start()
            except RuntimeError as exc:
                # No address space for its stack: the threads that run take the job (never an
                # error in the event loop); with none, the caller refuses the request.
                now = time.monotonic()
                if now - self._warned > 10:
                    self._warned = now
                    log.warning("%s: cannot start a worker thread: %s", self._name, exc)
                if not self._threads:
                    return False
            else:
                self._threads.append(thread)
        self._jobs.put((job, args))
        return True

    def _run(self) -> None:
        while (item := self._jobs.get()) is not None:
            job, args = item
            job(*args)

    def stop(self) -> None:
        """Let every thread end after its current job."""
        for _ in self._threads:
            self._jobs.put(None)


# -- the server -----------------------------------------------------------------------------------


def _open_files_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


class HardenedHTTPServer(socketserver.BaseServer):
    """Serves a :class:`BaseHTTPRequestHandler` class with the budgets of :class:`ConnectionLimits`.

    A :class:`socketserver.BaseServer` (what handlers expect as ``self.server``) with the surface
    of :class:`http.server.ThreadingHTTPServer` that pivoter uses: construct (binds, or raises
    OSError), :meth:`serve_forever` in a thread, :meth:`shutdown` from another,
    :meth:`server_close`, ``server_address``. ``handle_request`` is not supported.
    """

    request_queue_size = 128
    server_address: tuple[str, int]
    RequestHandlerClass: type[BaseHTTPRequestHandler]

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
        guarded = type(handler.__name__, (_Exchanging, handler), {"__module__": handler.__module__})
        host, port = address
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.create_server(
            (host, port), family=family, backlog=self.request_queue_size
        )
        self.socket.setblocking(False)
        super().__init__(self.socket.getsockname()[:2], guarded)
        self.loop = asyncio.new_event_loop()
        self._closing = threading.Event()
        self._serving = False
        self._stopped = threading.Event()
        self._stop: asyncio.Future[None] = self.loop.create_future()
        # Event-loop state (touched only in the loop's thread).
        self._connections: set[_Connection] = set()
        self._waiting: dict[_Connection, None] = {}
        self._peers: dict[str, _Peer] = {}
        self._ready: collections.OrderedDict[str, _Peer] = collections.OrderedDict()
        self._room = asyncio.Event()
        self._busy = 0
        self._reserved = 0
        self._workers: _Workers | None = None

    # -- the threading surface --------------------------------------------------------------------

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Serve until :meth:`shutdown` (``poll_interval`` is accepted for compatibility)."""
        self._serving = True  # set before reading _closing: see shutdown()
        if self._closing.is_set():
            self._stopped.set()
            return
        self._workers = _Workers(self.limits.max_workers, self.name)
        self.loop.set_exception_handler(self._loop_error)
        try:
            self.loop.run_until_complete(self._serve())
        finally:
            self._workers.stop()
            self.loop.close()
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop serving (from another thread); open connections are dropped."""
        self._closing.set()  # set before reading _serving: one of the two sees the other
        if not self._serving:
            return
        try:
            self.loop.call_soon_threadsafe(self._request_stop)
        except RuntimeError:
            return  # the loop has already stopped
        self._stopped.wait(_STOP_SECONDS)

    def server_close(self) -> None:
        """Close the listening socket (and the event loop, when it never ran)."""
        self.socket.close()
        if not self._serving and not self.loop.is_closed():
            self.loop.close()

    def handle_request(self) -> None:
        """Not supported: requests are served by :meth:`serve_forever`'s event loop."""
        raise NotImplementedError("HardenedHTTPServer serves only through serve_forever()")

    def fileno(self) -> int:
        """The listening socket's descriptor."""
        return self.socket.fileno()

    def _request_stop(self) -> None:
        if not self._stop.done():
            self._stop.set_result(None)

    # -- the event loop ---------------------------------------------------------------------------

    async def _serve(self) -> None:
        accepting = asyncio.create_task(self._accept())
        try:
            await self._stop
        finally:
            accepting.cancel()
            for connection in list(self._connections):
                connection.close_now("the server is stopping")
            for _ in range(3):  # let the transports and handshakes see it
                await asyncio.sleep(0)

    def _max_connections(self) -> int:
        return max(8, min(self.limits.max_connections, _open_files_limit() // 4))

    async def _accept(self) -> None:
        cap = self._max_connections()
        per_peer = min(self.limits.max_connections_per_peer, cap)
        while True:
            while len(self._connections) >= cap:
                if not self._make_room(self._waiting, "room for a new client"):
                    self._room.clear()
                    await self._room.wait()  # every connection is being served: wait
            try:
                sock, address = await self.loop.sock_accept(self.socket)
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    log.warning("%s: cannot accept a connection: %s", self.name, exc)
                    self._make_room(self._waiting, "out of file descriptors")
                    await asyncio.sleep(_BACKLOG_RETRY_SECONDS)
                continue
            key = peer_key(str(address[0]))
            peer = self._peers.get(key) or self._peers.setdefault(key, _Peer(key))
            if len(peer.connections) >= per_peer and not self._make_room(
                peer.waiting, f"{key} has {per_peer} connections open"
            ):
                log.debug("%s: refused a connection from %s: too many open", self.name, key)
                sock.close()
                self._drop_peer(peer)
                continue
            connection = _Connection(self, peer, address)
            self._connections.add(connection)
            peer.connections.add(connection)
            connection.start(sock)

    def _make_room(self, waiting: dict[_Connection, None], why: str) -> bool:
        """Close the connection that has waited longest on its client, if any."""
        for connection in waiting:
            connection.close_now(why)
            return True
        return False

    def waits_on_client(self, connection: _Connection) -> None:
        """Note that ``connection`` now waits on its client (keeps its place if it already did)."""
        if connection not in self._waiting:
            self._waiting[connection] = None
            connection.peer.waiting[connection] = None
            self._room.set()  # a client waiting for room may now get this one's

    def served(self, connection: _Connection) -> None:
        """Note that the server, not the client, owes ``connection`` the next step."""
        self._waiting.pop(connection, None)
        connection.peer.waiting.pop(connection, None)

    def is_forgotten(self, connection: _Connection) -> bool:
        """Whether ``connection`` has already been forgotten."""
        return connection not in self._connections

    def forget(self, connection: _Connection) -> None:
        """Drop a closed connection from every count, and give its room to a waiting client."""
        self.served(connection)
        self._connections.discard(connection)
        peer = connection.peer
        peer.connections.discard(connection)
        with contextlib.suppress(ValueError):
            peer.ready.remove(connection)
        self._drop_peer(peer)
        self._room.set()

    def _drop_peer(self, peer: _Peer) -> None:
        if peer.connections or peer.workers or peer.reserved:
            return
        if self._peers.get(peer.key) is peer:
            del self._peers[peer.key]
        if self._ready.get(peer.key) is peer:
            del self._ready[peer.key]

    def reserve(self, peer: _Peer, length: int) -> bool:
        """Count ``length`` body bytes against the server's and the peer's shares, if they fit."""
        cap = self.limits.max_buffered_bytes
        if self._reserved + length > cap or peer.reserved + length > cap // 2:
            return False
        self._reserved += length
        peer.reserved += length
        return True

    def unreserve(self, peer: _Peer, length: int) -> None:
        """Give back body bytes counted by :meth:`reserve`."""
        self._reserved -= length
        peer.reserved -= length

    # -- dispatching to workers -------------------------------------------------------------------

    def ready(self, connection: _Connection) -> None:
        """A whole request has arrived: queue it behind its peer's others."""
        peer = connection.peer
        peer.ready.append(connection)
        if peer.key not in self._ready:
            self._ready[peer.key] = peer
        self._dispatch()

    def _dispatch(self) -> None:
        """Give free workers to ready requests, one peer after the other."""
        per_peer = max(1, self.limits.max_workers // 2)
        while self._busy < self.limits.max_workers and self._ready:
            chosen = None
            for key, peer in self._ready.items():
                if peer.workers < per_peer:
                    chosen = key
                    break
            if chosen is None:
                return
            peer = self._ready[chosen]
            connection = peer.ready.popleft()
            if peer.ready:
                self._ready.move_to_end(chosen)
            else:
                del self._ready[chosen]
            self._busy += 1
            peer.workers += 1
            connection.working()
            exchange = _Exchange(connection, connection.request)
            assert self._workers is not None
            if not self._workers.submit(self._busy, self._handle, exchange):
                self._busy -= 1
                peer.workers -= 1
                connection.refuse(
                    HTTPStatus.SERVICE_UNAVAILABLE, "no worker thread can be started; retry later"
                )

    def _handle(self, exchange: _Exchange) -> None:
        """Run the handler on one request (in a worker thread)."""
        connection = exchange.connection
        keep_alive = False
        try:
            handler = self.RequestHandlerClass(exchange, connection.address, self)  # type: ignore[arg-type]
            keep_alive = not handler.close_connection
        except (ConnectionError, TimeoutError, ssl.SSLError) as exc:
            log.debug("%s: connection from %s ended: %s", self.name, connection.address, exc)
        except Exception as exc:
            log.warning(
                "%s: request from %s failed: %s: %s",
                self.name,
                connection.address,
                type(exc).__name__,
                exc,
            )
            if not exchange.wrote:
                self._internal_error(exchange)
        with contextlib.suppress(RuntimeError):  # a closed loop: the server has stopped
            self.loop.call_soon_threadsafe(self._handled, connection, keep_alive)

    def _internal_error(self, exchange: _Exchange) -> None:
        body = b"internal error\n"
        head = (
            "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        with contextlib.suppress(ConnectionError, TimeoutError):
            _AnswerWriter(exchange).write(head.encode() + body)

    def _handled(self, connection: _Connection, keep_alive: bool) -> None:
        self._busy -= 1
        connection.peer.workers -= 1
        connection.handled(keep_alive)
        self._drop_peer(connection.peer)
        self._dispatch()

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """One line for what asyncio would log with a traceback."""
        error = context.get("exception")
        log.debug(
            "%s: %s%s", self.name, context.get("message", "error"), f": {error}" if error else ""
        )


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
