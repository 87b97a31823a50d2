"""The daemon's servers against idle, stalled, flooding and greedy clients (real sockets, real TLS).

Idle TCP connections and half-sent ClientHellos must not delay other HTTPS clients of the admission
webhook or the content server (the handshake used to run inside ``accept()``), the server closes
them after its timeouts, and a request dripped byte by byte is cut off at the head deadline. The
second round (issue 34): 80 idle keep-alive, pipelining, slow-header or non-reading clients never
make normal requests fail or wait (a worker is taken only by a whole request; at the connection
cap the longest-waiting connection is closed; one peer gets at most half the workers and its own
share of connections), answers go at a minimum rate, and what the front end refuses is one line.
Hostile clients come from 127.0.0.2 where the test is about another peer, from 127.0.0.1 (the
normal client's own address) where it is about one peer's own connections.
"""

from __future__ import annotations

import http.client
import json
import logging
import resource
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from datetime import timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, cast

import pytest

from pivoter.catalogserver.httpserver import CatalogHTTPServer
from pivoter.catalogserver.reload import Snapshot
from pivoter.contentserver import UNAUTHENTICATED, ContentServer
from pivoter.controllers.bundle import BundleReconciler
from pivoter.httpserving import (
    ConnectionLimits,
    HardenedHTTPServer,
    peer_key,
    tls_server_context,
)
from pivoter.kube import Kube
from pivoter.observability.server import Endpoints
from pivoter.webhook.server import PATHS, WebhookServer
from provisioners.certs import issue_serving_certificate

# Waits on purpose (deadlines, stalled and dripping peers, floods): in CI, not the inner loop.
pytestmark = pytest.mark.slow

LIMITS = ConnectionLimits(
    handshake_timeout=1.0,
    header_timeout=1.0,
    read_timeout=1.0,
    idle_timeout=1.0,
    write_timeout=1.0,
    max_workers=8,
)
IDLE = 20
STALLED = 10
HOSTILE = 80
"""Hostile connections per test: more than the old server's 64 threads."""
NORMAL = 20
"""Normal requests that must all succeed, one after the other, while they are connected."""
OTHER_PEER = "127.0.0.2"


@dataclass
class Served:
    """A running server, how to reach it, and one real request that it must answer."""

    port: int
    context: ssl.SSLContext | None
    request: Callable[[http.client.HTTPConnection], int]


class _NoKube:
    """The servers' lookups must not be needed by the requests made here."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected Kubernetes call: {name}")


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    issued = issue_serving_certificate(
        ["127.0.0.1", "localhost"], ca_name="test-ca", validity=timedelta(hours=1)
    )
    directory = tmp_path_factory.mktemp("tls")
    for name, data in (
        ("ca.crt", issued.ca),
        ("tls.crt", issued.certificate),
        ("tls.key", issued.private_key),
    ):
        (directory / name).write_bytes(data)
    return directory / "ca.crt", directory / "tls.crt", directory / "tls.key"


def _client_context(ca: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False  # the certificate names 127.0.0.1 as an IP SAN
    return context


def _admission(connection: http.client.HTTPConnection) -> int:
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "operation": "CREATE",
            "kind": {"group": "core.rukpak.io", "version": "v1alpha1", "kind": "Bundle"},
            "name": "b",
            "object": {
                "metadata": {"name": "b"},
                "spec": {
                    "provisionerClassName": "core-rukpak-io-plain",
                    "source": {"type": "image", "image": {"ref": "registry/repo:v1"}},
                },
            },
            "userInfo": {"username": "alice", "groups": []},
        },
    }
    body = json.dumps(review).encode()
    connection.request("POST", PATHS["bundles"], body, headers={"Content-Type": "application/json"})
    answer = connection.getresponse()
    decision = json.loads(answer.read())
    assert decision["response"]["allowed"] is True
    return answer.status


def _bundle_without_token(connection: http.client.HTTPConnection) -> int:
    connection.request("GET", "/bundles/b.tgz", headers={"Authorization": "Bearer nope"})
    answer = connection.getresponse()
    assert b"not valid" in answer.read()
    return answer.status


@pytest.fixture(params=["webhook", "content"])
def served(request: pytest.FixtureRequest, tls_files: tuple[Path, Path, Path]) -> Iterator[Served]:
    ca, cert, key = tls_files
    kube = cast(Kube, _NoKube())
    if request.param == "webhook":
        webhook = WebhookServer(
            kube,
            system_namespace="pivoter-system",
            cert=cert,
            key=key,
            host="127.0.0.1",
            port=0,
            limits=LIMITS,
        )
        webhook.start()
        yield Served(webhook.port, _client_context(ca), _admission)
        webhook.stop()
    else:
        content = ContentServer(
            kube,
            cast(BundleReconciler, None),
            host="127.0.0.1",
            port=0,
            authorize=lambda token, path: (False, UNAUTHENTICATED),
            tls_cert=cert,
            tls_key=key,
            limits=LIMITS,
        )
        content.start()
        yield Served(content.port, _client_context(ca), _bundle_without_token)
        content.stop()


def _client_hello() -> bytes:
    """The first flight of a real TLS client."""
    context = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        client.do_handshake()
    return outgoing.read()


def _connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server closes ``sock`` within ``within`` seconds (reads until EOF)."""
    deadline = time.monotonic() + within
    try:
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except (TimeoutError, ssl.SSLWantReadError):
        return False
    return False


def _real_request(served: Served) -> tuple[int, float]:
    start = time.monotonic()
    if served.context is None:
        connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
    else:
        connection = http.client.HTTPSConnection(
            "127.0.0.1", served.port, timeout=10, context=served.context
        )
    try:
        status = served.request(connection)
    finally:
        connection.close()
    return status, time.monotonic() - start


def _normal_requests(served: Served, count: int = NORMAL) -> float:
    """Make ``count`` requests one after the other; all must succeed. Returns the slowest."""
    slowest = 0.0
    for _ in range(count):
        status, seconds = _real_request(served)
        assert status in (200, 401)
        slowest = max(slowest, seconds)
    return slowest


def test_defaults_are_sane() -> None:
    limits = ConnectionLimits()
    # Below the API server's webhook timeout (10 s) where a client is waited for before a
    # request, and long enough for a real client on a slow link everywhere.
    assert 5 <= limits.handshake_timeout <= 10
    assert 5 <= limits.header_timeout <= 10
    assert 10 <= limits.read_timeout <= 60
    assert 5 <= limits.idle_timeout <= 30
    assert 10 <= limits.write_timeout <= 60
    assert 1024 <= limits.min_rate <= 64 * 1024
    assert 8 <= limits.max_workers <= 64
    assert limits.max_connections >= 8 * limits.max_workers
    assert limits.max_connections_per_peer <= limits.max_connections // 2
    assert limits.max_body_bytes >= 8 * 1024 * 1024  # the webhook takes 8 MiB reviews
    assert limits.max_buffered_bytes >= 4 * limits.max_body_bytes
    with pytest.raises(ValueError, match="must be above zero"):
        ConnectionLimits(idle_timeout=0)
    # The cap never reaches the open-files limit.
    server = HardenedHTTPServer(("127.0.0.1", 0), _Answers)
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        assert server._max_connections() <= max(8, soft // 4)
    finally:
        server.server_close()


def test_tls_servers_refuse_renegotiation_and_old_protocols(
    tls_files: tuple[Path, Path, Path],
) -> None:
    _, cert, key = tls_files
    context = tls_server_context(cert, key)
    assert context.options & ssl.OP_NO_RENEGOTIATION
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2


def test_peers_are_counted_by_address_and_ipv6_prefix() -> None:
    assert peer_key("10.0.0.1") == "10.0.0.1"
    assert peer_key("::ffff:10.0.0.1") == "10.0.0.1"
    assert peer_key("2001:db8::1") == peer_key("2001:db8::ffff") == "2001:db8::/64"
    assert peer_key("2001:db8:0:1::1") != peer_key("2001:db8::1")


# -- the first round: handshakes and slow requests on the TLS servers -----------------------------


def test_idle_and_stalled_clients_do_not_delay_a_real_https_client(served: Served) -> None:
    hello = _client_hello()
    with ExitStack() as stack:
        idle = [stack.enter_context(_connect(served.port)) for _ in range(IDLE)]
        stalled = []
        for _ in range(STALLED):
            sock = stack.enter_context(_connect(served.port))
            sock.sendall(hello[: len(hello) // 2])  # half a ClientHello, then nothing
            stalled.append(sock)
        time.sleep(0.2)  # all of them accepted before the real client comes
        status, seconds = _real_request(served)
        # Served at once: well before the handshake timeout frees anything.
        assert status in (200, 401)
        assert seconds < LIMITS.handshake_timeout / 2
        # And the server itself closes every one of them after its handshake timeout.
        for sock in idle + stalled:
            assert _closed_by_server(sock, within=LIMITS.handshake_timeout + 3)


def test_connections_that_send_no_request_are_closed_after_the_header_timeout(
    served: Served,
) -> None:
    assert served.context is not None
    with ExitStack() as stack:
        raw = stack.enter_context(_connect(served.port))
        tls = stack.enter_context(served.context.wrap_socket(raw, server_hostname="127.0.0.1"))
        start = time.monotonic()
        assert _closed_by_server(tls, within=LIMITS.header_timeout + 3)
        assert time.monotonic() - start >= LIMITS.header_timeout - 0.3


def test_keep_alive_connections_idle_after_a_request_are_closed(served: Served) -> None:
    assert served.context is not None
    connection = http.client.HTTPSConnection(
        "127.0.0.1", served.port, timeout=10, context=served.context
    )
    try:
        served.request(connection)
        assert connection.sock is not None
        start = time.monotonic()
        assert _closed_by_server(connection.sock, within=LIMITS.idle_timeout + 3)
        assert time.monotonic() - start >= LIMITS.idle_timeout - 0.3
    finally:
        connection.close()


def test_a_request_dripped_byte_by_byte_is_cut_off_at_the_deadline(served: Served) -> None:
    assert served.context is not None
    with ExitStack() as stack:
        raw = stack.enter_context(_connect(served.port))
        tls = stack.enter_context(served.context.wrap_socket(raw, server_hostname="127.0.0.1"))
        head = b"GET /bundles/b.tgz HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: y\r\n" * 50
        start = time.monotonic()
        closed = False
        for byte in head:
            try:
                tls.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                closed = True
                break
            time.sleep(0.05)  # every single read is quick: only an overall deadline stops this
            if time.monotonic() - start > LIMITS.header_timeout + 3:
                break
        closed = closed or _closed_by_server(tls, within=1.0)
        assert closed
        assert time.monotonic() - start < LIMITS.header_timeout + 3


def test_broken_clients_leave_no_traceback_on_stderr(
    served: Served, capfd: pytest.CaptureFixture[str]
) -> None:
    with _connect(served.port) as sock:
        sock.sendall(b"\x16\x03\x01\x00\x05hello" + b"\0" * 100)  # not TLS
        assert _closed_by_server(sock, within=5)
    with _connect(served.port) as sock:
        sock.sendall(_client_hello())
        sock.close()  # gone mid-handshake
    status, _ = _real_request(served)
    assert status in (200, 401)
    assert "Traceback" not in capfd.readouterr().err


# -- the second round: no client takes the server --------------------------------------------------


def _tls_request_then_idle(served: Served, source: str) -> ssl.SSLSocket:
    """A keep-alive connection that made one request and then says nothing."""
    assert served.context is not None
    raw = _connect(served.port, source)
    tls = served.context.wrap_socket(raw, server_hostname="127.0.0.1")
    connection = http.client.HTTPSConnection("127.0.0.1", served.port, context=served.context)
    connection.sock = tls
    served.request(connection)
    return tls


@pytest.mark.parametrize("source", ["127.0.0.1", OTHER_PEER])
def test_80_idle_keep_alive_connections_do_not_delay_normal_requests(
    served: Served, source: str
) -> None:
    with ExitStack() as stack:
        for _ in range(HOSTILE):
            stack.enter_context(_tls_request_then_idle(served, source))
        start = time.monotonic()
        slowest = _normal_requests(served)
        assert slowest < 1.0
        assert time.monotonic() - start < 5


def test_80_slow_header_clients_do_not_delay_normal_requests(served: Served) -> None:
    """The old slowloris: each connection drips a header line now and then (every read is
    quick), so only a deadline on the whole head ends it; meanwhile nothing waits for them."""
    assert served.context is not None
    stop = threading.Event()
    with ExitStack() as stack:
        drippers = []
        for _ in range(HOSTILE):
            raw = stack.enter_context(_connect(served.port))
            tls = stack.enter_context(served.context.wrap_socket(raw, server_hostname="127.0.0.1"))
            tls.sendall(b"GET /bundles/b.tgz HTTP/1.1\r\nHost: x\r\n")
            drippers.append(tls)

        def drip() -> None:
            while not stop.wait(0.1):
                for tls in drippers:
                    with suppress(OSError):
                        tls.sendall(b"X: y\r\n")

        thread = threading.Thread(target=drip, daemon=True)
        thread.start()
        try:
            start = time.monotonic()
            slowest = _normal_requests(served)
            assert slowest < 1.0
            assert time.monotonic() - start < 5
        finally:
            stop.set()
            thread.join(5)
        # And the server cuts every one of them off at the head deadline.
        for tls in drippers:
            assert _closed_by_server(tls, within=LIMITS.header_timeout + 3)


# -- a plain server with a handler whose answers can be large -------------------------------------

BIG = 4 * 1024 * 1024


class _Answers(BaseHTTPRequestHandler):
    """``/big``: 4 MiB; ``/boom``: the handler fails; anything else: ``ok``; POST echoes."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        if self.path == "/boom":
            raise RuntimeError("the handler failed")
        body = b"x" * BIG if self.path == "/big" else b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def plain() -> Iterator[Callable[..., Served]]:
    """Start a plain-HTTP server of :class:`_Answers` with the given limits."""
    started: list[tuple[HardenedHTTPServer, threading.Thread]] = []

    def start(**limits: Any) -> Served:
        settings = {**vars(LIMITS), **limits}
        server = HardenedHTTPServer(
            ("127.0.0.1", 0), _Answers, limits=ConnectionLimits(**settings), name="test"
        )
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        started.append((server, thread))
        return Served(server.server_address[1], None, _ok)

    yield start
    for server, thread in started:
        server.shutdown()
        server.server_close()
        thread.join(5)
        assert not thread.is_alive()


def _ok(connection: http.client.HTTPConnection) -> int:
    connection.request("GET", "/ok")
    answer = connection.getresponse()
    assert answer.read() == b"ok\n"
    return answer.status


def _raw(port: int, data: bytes, source: str = "127.0.0.1") -> bytes:
    """Send ``data`` on a new connection; return everything the server sends until it closes."""
    with _connect(port, source) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def _worker_threads(name: str = "test") -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith(f"{name}-"))


def test_idle_connections_take_no_worker_and_the_cap_closes_the_longest_waiting(
    plain: Callable[..., Served],
) -> None:
    served = plain(max_connections=16, idle_timeout=30.0, header_timeout=30.0)
    with ExitStack() as stack:
        flood = [stack.enter_context(_connect(served.port)) for _ in range(HOSTILE)]
        time.sleep(0.3)
        assert _worker_threads() == 0  # nobody sent a whole request
        # At the cap, each newcomer closed the connection that had waited longest: the first
        # ones are gone, the newest are still open.
        assert all(_closed_by_server(sock, within=0.5) for sock in flood[:40])
        assert not any(_closed_by_server(sock, within=0.05) for sock in flood[-8:])
        assert _normal_requests(served) < 1.0


def test_one_peer_cannot_push_out_another(plain: Callable[..., Served]) -> None:
    served = plain(
        max_connections=64, max_connections_per_peer=16, idle_timeout=30.0, header_timeout=30.0
    )
    with ExitStack() as stack:
        mine = [stack.enter_context(_connect(served.port)) for _ in range(8)]
        theirs = [stack.enter_context(_connect(served.port, OTHER_PEER)) for _ in range(HOSTILE)]
        time.sleep(0.3)
        # The other peer's flood closed only its own connections (its 16 newest are open).
        assert not any(_closed_by_server(sock, within=0.05) for sock in mine)
        assert all(_closed_by_server(sock, within=0.5) for sock in theirs[: HOSTILE - 16])
        assert _normal_requests(served) < 1.0


def _greedy(port: int, source: str) -> socket.socket:
    """A connection that asks for 20 answers of 4 MiB at once and never reads."""
    sock = _connect(port, source)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n" * 20)
    return sock


def test_pipelining_clients_that_never_read_do_not_delay_normal_requests(
    plain: Callable[..., Served],
) -> None:
    """80 such connections from another peer: a worker is taken by one of their requests at a
    time, and by at most half of the workers for that peer."""
    served = plain()
    with ExitStack() as stack:
        for _ in range(HOSTILE):
            stack.enter_context(_greedy(served.port, OTHER_PEER))
        time.sleep(0.2)
        start = time.monotonic()
        slowest = _normal_requests(served)
        assert slowest < 1.0
        assert time.monotonic() - start < 5
        assert _worker_threads() <= LIMITS.max_workers


def test_a_client_that_does_not_read_is_closed_after_the_write_timeout(
    plain: Callable[..., Served],
) -> None:
    served = plain()
    with ExitStack() as stack:
        greedy = [stack.enter_context(_greedy(served.port, OTHER_PEER)) for _ in range(4)]
        time.sleep(LIMITS.write_timeout + 1)
        for sock in greedy:
            assert _closed_by_server(sock, within=1)


def test_small_pipelined_requests_from_many_connections_are_answered_fairly(
    plain: Callable[..., Served],
) -> None:
    served = plain()
    with ExitStack() as stack:
        for _ in range(HOSTILE):
            sock = stack.enter_context(_connect(served.port))
            sock.sendall(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n" * 20)
        assert _normal_requests(served) < 1.0
    # And a pipelined pair on one connection is answered in order.
    answer = _raw(
        served.port,
        b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nonePOST /b HTTP/1.1\r\n"
        b"Content-Length: 3\r\nConnection: close\r\n\r\ntwo",
    )
    assert answer.count(b"HTTP/1.1 200") == 2
    assert answer.index(b"one") < answer.index(b"two")


def test_a_client_that_reads_too_slowly_is_cut_off_at_the_minimum_rate(
    plain: Callable[..., Served],
) -> None:
    """A reader that makes progress within every ``write_timeout`` (128 KiB/s) but is slower
    than ``min_rate`` (512 KiB/s here): cut off (a reset) long before its 4 MiB are through."""
    served = plain(write_timeout=2.0, min_rate=512 * 1024)
    with _connect(served.port) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        closed, received, seconds = _read_slowly(sock, per_read=16384, pause=0.125, limit=40)
    # 4 MiB at 128 KiB/s would take 32 s; at 512 KiB/s after the 2 s grace the server gives
    # up within a few seconds.
    assert closed
    assert seconds < 12
    assert received < BIG // 2


def _read_slowly(
    sock: socket.socket, *, per_read: int, pause: float, limit: float
) -> tuple[bool, int, float]:
    """Read ``per_read`` bytes every ``pause`` seconds (progress on every read, but slow);
    return whether the server closed the connection within ``limit``, bytes and seconds."""
    start = time.monotonic()
    received = 0
    try:
        while time.monotonic() - start < limit:
            chunk = sock.recv(per_read)
            if not chunk:
                return True, received, time.monotonic() - start
            received += len(chunk)
            time.sleep(pause)
    except ConnectionResetError:
        return True, received, time.monotonic() - start
    return False, received, time.monotonic() - start


def test_requests_the_front_end_refuses_get_one_line(plain: Callable[..., Served]) -> None:
    served = plain(max_header_bytes=4096, max_body_bytes=1024, max_buffered_bytes=4096)
    cases = [
        (
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"501",
            b"Content-Length",
        ),
        (
            b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
            b"400",
            b"conflicting",
        ),
        (b"POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", b"400", b"bad Content-Length"),
        (b"POST / HTTP/1.1\r\nContent-Length : 3\r\n\r\nabc", b"400", b"malformed header"),
        (b"GET / HTTP/1.1\r\nX: a\r\n  folded\r\n\r\n", b"400", b"folded"),
        (b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 1000 + b"\r\n", b"431", b"over 4096 bytes"),
        (b"POST / HTTP/1.1\r\nContent-Length: 2048\r\n\r\n", b"413", b"over 1024 bytes"),
    ]
    for request, status, line in cases:
        answer = _raw(served.port, request)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 " + status), (request, answer)
        assert line in body, (request, answer)
        assert body.count(b"\n") == 1
    # Bodies in flight are capped per peer (half of max_buffered_bytes): a third of 1 KiB
    # reservations from one peer at once gets 503; another peer is still served.
    with ExitStack() as stack:
        for _ in range(2):
            sock = stack.enter_context(_connect(served.port))
            sock.sendall(b"POST / HTTP/1.1\r\nContent-Length: 1024\r\n\r\n")
        time.sleep(0.2)
        answer = _raw(served.port, b"POST / HTTP/1.1\r\nContent-Length: 1024\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 503"), answer
        assert b"Retry-After: 1" in answer
        echoed = _raw(
            served.port,
            b"POST / HTTP/1.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
            OTHER_PEER,
        )
        assert echoed.startswith(b"HTTP/1.1 200")
        assert echoed.endswith(b"abc")


def test_expect_100_continue_and_a_failing_handler(
    plain: Callable[..., Served], caplog: pytest.LogCaptureFixture
) -> None:
    served = plain()
    with _connect(served.port) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"hello")
        answer = b""
        while not answer.endswith(b"hello"):
            answer += sock.recv(1000)
        assert answer.startswith(b"HTTP/1.1 200")
    with caplog.at_level(logging.DEBUG, logger="pivoter.httpserving"):
        answer = _raw(served.port, b"GET /boom HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 500")
    assert answer.endswith(b"\r\n\r\ninternal error\n")
    (record,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert "RuntimeError: the handler failed" in record.getMessage()
    assert record.exc_info is None
    assert _normal_requests(served, 3) < 1.0


def test_shutdown_with_clients_connected_is_quick(plain: Callable[..., Served]) -> None:
    served = plain(idle_timeout=30.0, header_timeout=30.0)
    server = HardenedHTTPServer(("127.0.0.1", 0), _Answers, limits=LIMITS)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    with ExitStack() as stack:
        socks = [stack.enter_context(_connect(server.server_address[1])) for _ in range(20)]
        stack.enter_context(_connect(served.port)).sendall(b"GET /big HTTP/1.1\r\n\r\n")
        time.sleep(0.2)
        start = time.monotonic()
        server.shutdown()
        server.server_close()
        thread.join(5)
        assert not thread.is_alive()
        assert time.monotonic() - start < 1
        assert all(_closed_by_server(sock, within=1) for sock in socks)


# -- the same server class on the plain-HTTP probe endpoints and catalog serve --------------------


def _healthz(connection: http.client.HTTPConnection) -> int:
    connection.request("GET", "/healthz")
    answer = connection.getresponse()
    assert answer.read() in (b"ok\n", b"healthz check passed\n")
    return answer.status


def test_probes_answer_while_80_idle_and_pipelining_clients_are_connected() -> None:
    endpoints = Endpoints(("127.0.0.1", 0), healthz={}, what="probes", limits=LIMITS)
    endpoints.start()
    served = Served(endpoints.port, None, _healthz)
    try:
        with ExitStack() as stack:
            for number in range(HOSTILE):
                sock = stack.enter_context(_connect(endpoints.port))
                if number % 2:
                    sock.sendall(b"GET /healthz HTTP/1.1\r\n\r\n" * 20)  # HTTP/1.0 handler
            assert _normal_requests(served) < 1.0
    finally:
        endpoints.stop()


def test_catalog_serve_http_times_out_idle_clients_too() -> None:
    server = CatalogHTTPServer(
        ("127.0.0.1", 0),
        name="c",
        snapshot=lambda: cast(Snapshot, None),
        metrics=None,
        limits=ConnectionLimits(header_timeout=1.0, idle_timeout=1.0, max_connections=8),
    )
    thread = server.serve_in_thread()
    port = int(server.server_address[1])
    try:
        with ExitStack() as stack:
            idle = [stack.enter_context(_connect(port)) for _ in range(HOSTILE)]
            time.sleep(0.2)
            # Idle clients hold no worker, and at the cap the oldest make room: served at once.
            status, seconds = _real_request(Served(port, None, _healthz))
            assert status == 200
            assert seconds < 1.0
            for sock in idle[-4:]:
                assert _closed_by_server(sock, within=3)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
