"""The daemon's servers against idle, stalled and flooding clients (real sockets, real TLS).

Idle TCP connections and half-sent ClientHellos must not delay other HTTPS clients of the admission
webhook or the content server (the handshake used to run inside ``accept()``), the server closes
them after its timeouts, a request dripped byte by byte is cut off at the read deadline, and a flood
is served by at most ``max_connections`` threads.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from pivoter.catalogserver.httpserver import CatalogHTTPServer
from pivoter.catalogserver.reload import Snapshot
from pivoter.contentserver import UNAUTHENTICATED, ContentServer
from pivoter.controllers.bundle import BundleReconciler
from pivoter.httpserving import ConnectionLimits
from pivoter.kube import Kube
from pivoter.observability.server import Endpoints
from pivoter.webhook.server import PATHS, WebhookServer
from provisioners.certs import issue_serving_certificate

LIMITS = ConnectionLimits(
    handshake_timeout=1.0, read_timeout=1.5, write_timeout=5.0, max_connections=64
)
IDLE = 20
STALLED = 10


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


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server closes ``sock`` within ``within`` seconds (reads until EOF)."""
    sock.settimeout(within)
    deadline = time.monotonic() + within
    try:
        while time.monotonic() < deadline:
            if not sock.recv(4096):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
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


def test_connections_that_send_no_request_are_closed_after_the_read_timeout(
    served: Served,
) -> None:
    assert served.context is not None
    with ExitStack() as stack:
        raw = stack.enter_context(_connect(served.port))
        tls = stack.enter_context(served.context.wrap_socket(raw, server_hostname="127.0.0.1"))
        start = time.monotonic()
        assert _closed_by_server(tls, within=LIMITS.read_timeout + 3)
        assert time.monotonic() - start >= LIMITS.read_timeout - 0.3


def test_keep_alive_connections_idle_after_a_request_are_closed(served: Served) -> None:
    assert served.context is not None
    connection = http.client.HTTPSConnection(
        "127.0.0.1", served.port, timeout=10, context=served.context
    )
    try:
        served.request(connection)
        assert connection.sock is not None
        assert _closed_by_server(connection.sock, within=LIMITS.read_timeout + 3)
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
            time.sleep(0.1)  # every single read is quick: only an overall deadline stops this
            if time.monotonic() - start > LIMITS.read_timeout + 3:
                break
        closed = closed or _closed_by_server(tls, within=1.0)
        assert closed
        assert time.monotonic() - start < LIMITS.read_timeout + 3


# -- the cap, on the plain-HTTP metrics/probe endpoints (same server class) ----------------------


def _healthz(connection: http.client.HTTPConnection) -> int:
    connection.request("GET", "/healthz")
    answer = connection.getresponse()
    assert answer.read() in (b"ok\n", b"healthz check passed\n")
    return answer.status


def test_a_flood_is_served_by_at_most_max_connections_threads_and_then_recovers() -> None:
    limits = ConnectionLimits(
        handshake_timeout=0.5, read_timeout=0.5, write_timeout=5.0, max_connections=4
    )
    endpoints = Endpoints(("127.0.0.1", 0), healthz={}, what="probes", limits=limits)
    endpoints.start()
    before = threading.active_count()
    try:
        with ExitStack() as stack:
            flood = [stack.enter_context(_connect(endpoints.port)) for _ in range(16)]
            time.sleep(0.5)
            assert threading.active_count() - before <= limits.max_connections
            # Every flooding connection is closed in turn (4 at a time, half a second each).
            for sock in flood:
                assert _closed_by_server(sock, within=15)
        status, seconds = _real_request(Served(endpoints.port, None, _healthz))
        assert status == 200
        assert seconds < 1.0
    finally:
        endpoints.stop()


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


def test_catalog_serve_http_times_out_idle_clients_too() -> None:
    server = CatalogHTTPServer(
        ("127.0.0.1", 0), name="c", snapshot=lambda: cast(Snapshot, None), metrics=None
    )
    server.limits = ConnectionLimits(read_timeout=1.0, max_connections=8)
    thread = server.serve_in_thread()
    port = int(server.server_address[1])
    try:
        with ExitStack() as stack:
            idle = [stack.enter_context(_connect(port)) for _ in range(8)]
            time.sleep(0.2)

            # All 8 slots are held by idle clients: the real one waits for the first to time out.
            status, seconds = _real_request(Served(port, None, _healthz))
            assert status == 200
            assert seconds < 1.0 + 1.0
            for sock in idle:
                assert _closed_by_server(sock, within=3)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
