"""HTTP(S) connections whose every socket wait is bounded by a :class:`~resolver.net.budget.Budget`.

:mod:`http.client` sets one socket timeout per connection, which bounds each ``recv`` but not a
response: a status line, a header or a body dripped one byte at a time never times out. The
connections built by :func:`open_connection` put the budget under :mod:`http.client` instead: the
socket's reader re-arms the timeout before every ``recv`` with what is left of the deadline
(stall timeout at most), counts every byte received against the budget's cap, and the TLS
handshake and request sending are clipped the same way. So connect, handshake, status line,
headers and body together end by the deadline, whatever the peer does, and whatever reading
method the caller uses. :func:`read_body` reads a whole body with its own size cap.

They are also the backstop for text that cannot go into a request: http.client refuses a header
value with a line break by raising ``ValueError`` *with the value in its message* (a credential in
a traceback), lets a NUL through, and fails on a non-ASCII target with ``UnicodeEncodeError``.
Here every request target and header value is checked first (:func:`~resolver.net.credentials.
url_problem`, :func:`~resolver.net.credentials.header_problem`) and refused with
:class:`~resolver.net.credentials.UnsendableText`, naming the header and the server, never the
value. Credentials are checked earlier, where they enter; this catches what no entry check knew.

Errors are :class:`~resolver.net.budget.NetError` subclasses (deadline, stall, too large);
callers map them to their own error types.
"""

from __future__ import annotations

import http.client
import io
import socket
import ssl
import threading
from typing import Any, cast

from resolver.net.budget import Budget, TooLarge
from resolver.net.credentials import UnsendableText, header_problem, url_problem

_CHUNK = 1 << 16


class _BudgetReader(io.RawIOBase):
    """The raw reader under a response's buffered file: every ``recv`` obeys the budget."""

    def __init__(self, sock: socket.socket, budget: Budget, peer: str) -> None:
        super().__init__()
        self._sock = sock
        self._budget = budget
        self._peer = peer

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        # Like socket.SocketIO: the socket closes once its last reader and owner have let go.
        if not self.closed:
            super().close()
            self._sock._decref_socketios()  # type: ignore[attr-defined]

    def readinto(self, buffer: Any, /) -> int:
        self._sock.settimeout(self._budget.timeout(self._peer))
        try:
            count = self._sock.recv_into(buffer)
        except TimeoutError:
            raise self._budget.timed_out(self._peer) from None
        self._budget.received(count, self._peer)
        return count


class _BudgetSocket:
    """A connected socket seen through a budget: reads via :class:`_BudgetReader`, bounded
    sends; everything else is the socket's own."""

    def __init__(self, sock: socket.socket, budget: Budget, peer: str) -> None:
        self._sock = sock
        self._budget = budget
        self._peer = peer

    def makefile(self, mode: str = "rb", *_: object, **__: object) -> io.BufferedReader:
        if mode != "rb":
            raise ValueError(f"only binary reading is supported, not {mode!r}")
        self._sock._io_refs += 1  # type: ignore[attr-defined]  # as socket.makefile does
        return io.BufferedReader(_BudgetReader(self._sock, self._budget, self._peer), _CHUNK)

    def sendall(self, data: Any, /) -> None:
        self._sock.settimeout(self._budget.timeout(self._peer))
        try:
            self._sock.sendall(data)
        except TimeoutError:
            raise self._budget.timed_out(self._peer) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class BudgetHTTPConnection(http.client.HTTPConnection):
    """A plain-http connection bounded by ``budget`` (see the module docstring)."""

    def __init__(self, host: str, port: int | None, budget: Budget) -> None:
        super().__init__(host, port, timeout=budget.stall)
        self.budget = budget
        self.peer = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        """``host:port``, as errors name the server."""
        self._create_connection = self._connect_within_budget

    def putrequest(
        self, method: str, url: str, skip_host: bool = False, skip_accept_encoding: bool = False
    ) -> None:
        """Refuse a target that cannot be sent as it stands, naming the server, not the URL."""
        problem = url_problem(url)
        if problem is not None:
            raise UnsendableText(f"refusing to request a URL from {self.peer}: it {problem}")
        super().putrequest(method, url, skip_host, skip_accept_encoding)

    def putheader(self, header: str | bytes, *values: Any) -> None:
        """Refuse a header value that cannot be sent, naming the header, never the value."""
        for value in values:
            text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
            problem = header_problem(text)
            if problem is not None:
                name = header.decode("latin-1") if isinstance(header, bytes) else header
                raise UnsendableText(
                    f"refusing to send the {name} header to {self.peer}: its value {problem}"
                )
        super().putheader(header, *values)

    def _connect_within_budget(
        self, address: tuple[str, int], timeout: object = None, source: object = None
    ) -> socket.socket:
        """Like :func:`socket.create_connection`, but the name lookup and every address tried
        share the budget (a name with many unreachable addresses cannot multiply the timeout)."""
        infos = _resolve(address[0], address[1], self.budget, self.peer)
        failure: OSError | None = None
        for family, kind, proto, _, sockaddr in infos:
            sock = socket.socket(family, kind, proto)
            try:
                sock.settimeout(self.budget.timeout(self.peer))
                sock.connect(sockaddr)
            except TimeoutError:
                sock.close()
                failure = TimeoutError(f"connecting to {sockaddr[0]} timed out")
                continue
            except OSError as exc:
                sock.close()
                failure = exc
                continue
            except BaseException:
                sock.close()
                raise
            return sock
        if isinstance(failure, TimeoutError):
            raise self.budget.timed_out(self.peer)
        raise failure or OSError(f"{address[0]} has no address")

    def _open(self) -> socket.socket:
        """Connect the TCP socket within the budget."""
        self.timeout = self.budget.timeout(self.peer)
        try:
            http.client.HTTPConnection.connect(self)
        except TimeoutError:
            self.close()
            raise self.budget.timed_out(self.peer) from None
        return cast(socket.socket, self.sock)

    def connect(self) -> None:
        self.sock = cast(socket.socket, _BudgetSocket(self._open(), self.budget, self.peer))


class BudgetHTTPSConnection(BudgetHTTPConnection):
    """An https connection bounded by ``budget``; the TLS handshake is clipped to it too."""

    default_port = http.client.HTTPS_PORT

    def __init__(
        self, host: str, port: int | None, budget: Budget, context: ssl.SSLContext
    ) -> None:
        super().__init__(host, port, budget)
        self.context = context

    def connect(self) -> None:
        sock = self._open()
        try:
            sock.settimeout(self.budget.timeout(self.peer))
            tls = self.context.wrap_socket(sock, server_hostname=self.host)
        except TimeoutError:
            sock.close()
            self.sock = None
            raise self.budget.timed_out(self.peer) from None
        except BaseException:
            sock.close()
            self.sock = None
            raise
        self.sock = cast(socket.socket, _BudgetSocket(tls, self.budget, self.peer))


def _resolve(host: str, port: int, budget: Budget, peer: str) -> list[Any]:
    """``getaddrinfo`` within the budget: a lookup that hangs is abandoned (to its thread, which
    the system resolver's own timeouts end) when the budget runs out."""
    found: list[Any] = []
    failed: list[OSError] = []

    def lookup() -> None:
        try:
            found.extend(socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM))
        except OSError as exc:
            failed.append(exc)

    thread = threading.Thread(target=lookup, name=f"resolve {host}", daemon=True)
    thread.start()
    thread.join(budget.timeout(peer))
    if thread.is_alive():
        raise budget.timed_out(peer)
    if failed:
        raise failed[0]
    return found


def open_connection(
    scheme: str,
    host: str,
    port: int | None,
    budget: Budget,
    *,
    context: ssl.SSLContext | None = None,
) -> BudgetHTTPConnection:
    """A (not yet connected) connection to ``host:port`` over ``scheme`` bounded by ``budget``.

    ``context`` verifies https servers (the system's default roots when None). Raises
    ValueError for a scheme other than http or https.
    """
    if scheme == "https":
        return BudgetHTTPSConnection(host, port, budget, context or ssl.create_default_context())
    if scheme == "http":
        return BudgetHTTPConnection(host, port, budget)
    raise ValueError(f"unsupported URL scheme {scheme!r}: use http or https")


def read_body(response: http.client.HTTPResponse, limit: int, *, what: str = "the body") -> bytes:
    """Read the whole body of ``response``, refusing one longer than ``limit`` bytes.

    The time the read may take is the connection's budget (when it came from
    :func:`open_connection`); the size is capped here, before more than ``limit + 1`` bytes are
    held.
    """
    data = bytearray()
    while chunk := response.read1(min(_CHUNK, limit + 1 - len(data))):
        data += chunk
        if len(data) > limit:
            raise TooLarge(f"{what} is larger than {limit} bytes")
    return bytes(data)
