"""``catalog serve``'s gRPC server against hostile HTTP/2 clients (issue 34).

Each hostile client is crafted frame by frame (:mod:`tests.wire.h2raw`): streams that announce a
zero flow-control window (every answer stalls), streams that never send their request message,
streams reset as fast as they are opened (CVE-2023-44487), a reader that takes answers too
slowly, and one address opening more calls than its share. While each is connected, a real
client's 20 calls must all succeed quickly, and the server must end the hostile calls itself
within its (lowered) timeouts. The guard: :mod:`pivoter.catalogserver.grpcguard`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import grpc
import pytest

from pivoter.catalogserver.grpcguard import GrpcLimits, peer_of, server_options
from resolver.catalog.registryapi import registry_pb2 as api
from tests.wire.conftest import DATA, PivoterServer
from tests.wire.h2raw import SETTINGS_MAX_CONCURRENT_STREAMS, RawH2

# Waits on purpose (deadlines, stalled and dripping peers, floods): in CI, not the inner loop.
pytestmark = pytest.mark.slow

LIMITS = GrpcLimits(read_timeout=1.0, write_timeout=1.0)
STREAMS = LIMITS.max_concurrent_streams
"""Streams a well-behaved hostile client opens per connection (the server's announced cap)."""
NORMAL = 20
OTHER_PEER = "127.0.0.2"
LIST_BUNDLES = "/api.Registry/ListBundles"
GET_PACKAGE = "/api.Registry/GetPackage"


@pytest.fixture
def server(pivoter_server: Callable[..., PivoterServer]) -> PivoterServer:
    return pivoter_server(DATA / "crafted", grpc_limits=LIMITS)


def _normal_calls(target: str, count: int = NORMAL) -> float:
    """``count`` GetPackage calls and one ListBundles, each with a 2 s deadline; all must
    succeed. Returns the seconds they took together."""
    start = time.monotonic()
    with grpc.insecure_channel(target) as channel:
        get = channel.unary_unary(
            GET_PACKAGE,
            request_serializer=api.GetPackageRequest.SerializeToString,
            response_deserializer=api.Package.FromString,
        )
        for _ in range(count):
            assert get(api.GetPackageRequest(name="etcd"), timeout=2).name == "etcd"
        listing = channel.unary_stream(
            LIST_BUNDLES,
            request_serializer=api.ListBundlesRequest.SerializeToString,
            response_deserializer=api.Bundle.FromString,
        )
        assert len(list(listing(api.ListBundlesRequest(), timeout=2))) > 0
    return time.monotonic() - start


def _all_ended(clients: list[tuple[RawH2, list[int]]], within: float) -> bool:
    """Whether the server ended every listed stream within ``within`` seconds (a cancelled
    call ends with a status and RST_STREAM; telling them apart would need an HPACK decoder,
    so the tests tell them by when they end)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(set(streams) <= client.ended for client, streams in clients):
            return True
        time.sleep(0.05)
    return False


def test_defaults_are_sane() -> None:
    limits = GrpcLimits()
    assert 5 <= limits.read_timeout <= 30
    assert 10 <= limits.write_timeout <= 60
    assert limits.max_concurrent_streams < limits.max_calls_per_peer < limits.threads
    assert 4 <= limits.max_concurrent_streams <= 100
    assert limits.handshake_timeout <= 20
    options = dict(server_options(limits))
    assert options["grpc.max_concurrent_streams"] == limits.max_concurrent_streams
    assert options["grpc.server_handshake_timeout_ms"] == 10_000
    assert options["grpc.max_connection_idle_ms"] >= 60_000
    assert options["grpc.keepalive_time_ms"] < options["grpc.max_connection_idle_ms"]
    assert options["grpc.max_connection_age_grace_ms"] < options["grpc.max_connection_age_ms"]
    assert 8 <= options["grpc.max_allowed_incoming_connections"] <= limits.max_connections
    with pytest.raises(ValueError, match="must be above zero"):
        GrpcLimits(write_timeout=0)


class _Peer:
    def __init__(self, text: str) -> None:
        self.text = text

    def peer(self) -> str:
        return self.text


@pytest.mark.parametrize(
    ("peer", "key"),
    [
        ("ipv4:10.1.2.3:5000", "10.1.2.3"),
        ("ipv6:%5B2001:db8::7%5D:5000", "2001:db8::/64"),
        ("ipv6:[::ffff:10.1.2.3]:5000", "10.1.2.3"),
        ("unix:/tmp/socket", "unix:/tmp/socket"),
    ],
)
def test_calls_are_counted_by_peer_address(peer: str, key: str) -> None:
    assert peer_of(_Peer(peer)) == key  # type: ignore[arg-type]


@pytest.mark.parametrize("source", ["127.0.0.1", OTHER_PEER])
def test_zero_window_streams_do_not_hold_the_workers(server: PivoterServer, source: str) -> None:
    """Connections that announce a zero window and open a full set of ListBundles streams each:
    every answer stalls. They used to hold all eight workers until the client left. From the
    normal client's own address one connection (the per-connection cap is below the
    per-address one), from another address enough to reach its share."""
    connections = 1 if source == "127.0.0.1" else LIMITS.max_calls_per_peer // STREAMS
    with ExitStack() as stack:
        hostile = []
        for _ in range(connections):
            client = stack.enter_context(RawH2(server.port, source=source, initial_window_size=0))
            hostile.append((client, [client.open_call(LIST_BUNDLES) for _ in range(STREAMS)]))
        time.sleep(0.3)
        assert _normal_calls(server.target) < 4
        assert _all_ended(hostile, within=LIMITS.write_timeout + 3)


def test_stalled_calls_from_many_addresses_never_take_every_thread(
    pivoter_server: Callable[..., PivoterServer],
) -> None:
    """Three addresses, each with its full share of zero-window streams (48 calls for 32
    threads), and a write timeout longer than the test: the calls that have waited longest are
    cancelled to keep a reserve of threads, and the normal client is served."""
    limits = GrpcLimits(read_timeout=1.0, write_timeout=60.0)
    server = pivoter_server(DATA / "crafted", grpc_limits=limits)
    streams = limits.max_concurrent_streams
    with ExitStack() as stack:
        hostile = []
        for source in (OTHER_PEER, "127.0.0.3", "127.0.0.4"):
            for _ in range(limits.max_calls_per_peer // streams):
                client = stack.enter_context(
                    RawH2(server.port, source=source, initial_window_size=0)
                )
                hostile.append((client, [client.open_call(LIST_BUNDLES) for _ in range(streams)]))
                time.sleep(0.05)  # an order among them: the oldest go first
        time.sleep(0.5)
        assert _normal_calls(server.target) < 4
        ended = sum(len(set(streams) & client.ended) for client, streams in hostile)
        reserve = max(2, limits.threads // 8)
        assert ended >= 48 - (limits.threads - reserve)
        # The first connection's calls were the oldest: they went first.
        assert set(hostile[0][1]) <= hostile[0][0].ended


def test_calls_whose_request_never_comes_are_cancelled(server: PivoterServer) -> None:
    with ExitStack() as stack:
        hostile = []
        for _ in range(LIMITS.max_calls_per_peer // STREAMS):
            client = stack.enter_context(RawH2(server.port, source=OTHER_PEER))
            streams = [client.open_call(GET_PACKAGE, None, end=False) for _ in range(STREAMS)]
            hostile.append((client, streams))
        time.sleep(0.3)
        assert _normal_calls(server.target) < 4
        assert _all_ended(hostile, within=LIMITS.read_timeout + 3)


def test_rapid_reset_does_not_fail_normal_calls(server: PivoterServer) -> None:
    """Eight connections open and reset streams as fast as they can (another process); the
    cap on streams per connection, announced in SETTINGS, is what holds them back."""
    with RawH2(server.port) as client:
        deadline = time.monotonic() + 5
        while SETTINGS_MAX_CONCURRENT_STREAMS not in client.settings:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert client.settings[SETTINGS_MAX_CONCURRENT_STREAMS] == LIMITS.max_concurrent_streams
    flood = subprocess.Popen([sys.executable, "-m", "tests.wire.h2raw", str(server.port), "8", "4"])
    try:
        time.sleep(0.5)
        assert _normal_calls(server.target) < 4
        assert flood.poll() is None  # still flooding while the calls were made
    finally:
        flood.kill()
        flood.wait()


def test_a_client_that_takes_answers_too_slowly_is_cancelled(server: PivoterServer) -> None:
    """It opens each stream's window by 64 bytes every 0.2 s: progress, but far below
    ``min_rate``; each stalled message is cancelled after ``write_timeout`` plus its size at
    ``min_rate``."""
    with RawH2(server.port, source=OTHER_PEER, initial_window_size=0) as client:
        streams = [client.open_call(LIST_BUNDLES) for _ in range(4)]
        start = time.monotonic()
        while time.monotonic() - start < LIMITS.write_timeout + 3:
            if set(streams) <= client.ended:
                break
            for stream in streams:
                client.window_update(stream, 64)
            time.sleep(0.2)
        assert set(streams) <= client.ended
        assert _normal_calls(server.target) < 4


def test_one_address_gets_at_most_its_share_of_calls(server: PivoterServer) -> None:
    """Connections from one address open twice its share of calls that wait for their request:
    its share is admitted (and cancelled at the read timeout), the rest refused at once;
    another address is served meanwhile."""
    share = LIMITS.max_calls_per_peer
    with ExitStack() as stack:
        clients = [
            stack.enter_context(RawH2(server.port, source=OTHER_PEER))
            for _ in range(2 * share // STREAMS)
        ]
        for client in clients:
            for _ in range(STREAMS):
                client.open_call(GET_PACKAGE, None, end=False)
        time.sleep(0.5)
        refused = sum(len(c.ended) for c in clients)  # the admitted wait for the read timeout
        assert refused == share
        assert _normal_calls(server.target) < 4
        deadline = time.monotonic() + LIMITS.read_timeout + 3
        while sum(len(c.ended) for c in clients) < 2 * share and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sum(len(c.ended) for c in clients) == 2 * share


def _iterate(stream: Iterator[object]) -> int:
    return sum(1 for _ in stream)


def test_guarded_calls_keep_grpcios_answers(server: PivoterServer) -> None:
    """A unary call half-closed without its message: UNIMPLEMENTED, as grpcio answers; the
    guard leaves no call counted afterwards."""
    with RawH2(server.port) as client:
        stream = client.open_call(GET_PACKAGE, None, end=True)
        deadline = time.monotonic() + 5
        while stream not in client.ended and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stream in client.ended
    with grpc.insecure_channel(server.target) as channel:
        call = channel.unary_unary(
            GET_PACKAGE, request_serializer=lambda b: b, response_deserializer=lambda b: b
        )
        with pytest.raises(grpc.RpcError) as err:
            call(b"\xff\xff\xff", timeout=5)
        assert err.value.code() == grpc.StatusCode.INTERNAL
    assert _normal_calls(server.target, 3) < 4


def test_malformed_stream_requests_leave_no_call_behind(server: PivoterServer) -> None:
    """grpcio ends a call whose message it cannot decode; the guard waits for that end before
    the handler's own, so no call is left unfinished: ``stop()`` returns at once (before the
    guard, one such reflection request kept ``stop()`` and so ``catalog serve``'s SIGTERM
    waiting for ever, until the 5 s shutdown deadline killed the process)."""
    reflection = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
    with grpc.insecure_channel(server.target) as channel:
        call = channel.stream_stream(
            reflection, request_serializer=lambda b: b, response_deserializer=lambda b: b
        )
        for _ in range(5):
            with pytest.raises(grpc.RpcError) as err:
                list(call(iter([b"\xff\xff\xff"]), timeout=5))
            assert err.value.code() == grpc.StatusCode.INTERNAL
    start = time.monotonic()
    assert server.grpc.stop(grace=1).wait(timeout=5)
    assert time.monotonic() - start < 0.5


def test_a_request_message_past_the_cap_is_refused(server: PivoterServer) -> None:
    """Requests are names: one of 2 MiB (the server used to take 64 MiB per call) is refused
    before the server holds it."""
    with grpc.insecure_channel(
        server.target, options=[("grpc.max_send_message_length", -1)]
    ) as channel:
        call = channel.unary_unary(
            GET_PACKAGE,
            request_serializer=api.GetPackageRequest.SerializeToString,
            response_deserializer=api.Package.FromString,
        )
        with pytest.raises(grpc.RpcError) as err:
            call(api.GetPackageRequest(name="x" * (2 << 20)), timeout=5)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert call(api.GetPackageRequest(name="etcd"), timeout=5).name == "etcd"
