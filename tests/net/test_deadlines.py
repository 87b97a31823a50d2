"""Every network client of pivoter ends by its overall deadline against a peer that drips bytes,
stalls after the headers or never ends a line; and a body is refused at its size cap.

The peers are real sockets on 127.0.0.1 (:mod:`tests.net.hostile`). Deadlines are small (2 s)
and the drips would take a minute or more, so "returns within deadline + margin" is a check of
behaviour, not a benchmark: before the fix, each of these ran for the whole drip.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from pivoter.catalogs.errors import FetchFailed
from pivoter.catalogs.image import ImageCatalogSource
from provisioners.errors import ContentTooLargeError, SourceError, SourceUnavailableError
from provisioners.sources import FetchOptions, GitRef, GitSpec, HttpSpec, ImageSpec, fetch
from resolver.catalog.registryapi import registry_pb2 as api
from resolver.catalog.sources import CatalogdSource, CatalogSourceError, RegistrySource
from tests.net.hostile import Hostile, Step, hostile_server, timed

# Waits on purpose (deadlines, stalled and dripping peers, floods): in CI, not the inner loop.
pytestmark = pytest.mark.slow

DRIP = 0.25
"""Seconds between two bytes of a dripping peer."""
DEADLINE = 1.0
STALL = DRIP + 0.5
"""Longer than the drip interval: a per-read timeout alone never fires on a drip (half a second
to spare for a loaded machine)."""
MARGIN = 2.0
OPTIONS = FetchOptions(timeout_seconds=STALL, deadline_seconds=DEADLINE)

OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\n"
DRIPS: dict[str, list[Step]] = {
    # Every part of a response can be dripped: each would take a minute or more.
    "status line": [("drip", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", DRIP)],
    "headers": [("send", OK_HEAD), ("drip", b"X-Slow: " + b"a" * 80 + b"\r\n\r\n", DRIP)],
    "body": [("send", OK_HEAD + b"Content-Length: 500\r\n\r\n"), ("drip", b"x" * 500, DRIP)],
    "chunked body": [
        ("send", OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"),
        ("drip", b"1\r\na\r\n" * 100, DRIP / 2),
    ],
}


def _catalogd(server: Hostile, _: Path) -> None:
    CatalogdSource(f"{server.url}/catalogs/x", timeout=STALL, deadline=DEADLINE).fetch()


def _http_source(server: Hostile, tmp: Path) -> None:
    fetch(HttpSpec(f"{server.url}/bundle.tgz"), tmp / "dest", OPTIONS)


def _image_source(server: Hostile, tmp: Path) -> None:
    fetch(ImageSpec(f"127.0.0.1:{server.port}/team/bundle:v1"), tmp / "dest", OPTIONS)


def _catalog_image(server: Hostile, _: Path) -> None:
    ImageCatalogSource(f"127.0.0.1:{server.port}/team/catalog:v1", options=OPTIONS).fetch()


CLIENTS: dict[str, tuple[Callable[[Hostile, Path], None], type[Exception]]] = {
    "catalogd client": (_catalogd, CatalogSourceError),
    "http bundle source": (_http_source, SourceUnavailableError),
    "image bundle source": (_image_source, SourceUnavailableError),
    "catalog image source": (_catalog_image, FetchFailed),
}


@pytest.fixture
def dest(tmp_path: Path) -> Path:
    (tmp_path / "dest").mkdir()
    return tmp_path


@pytest.mark.parametrize("drip", sorted(DRIPS))
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_dripping_peer_is_cut_off_at_the_deadline(client: str, drip: str, dest: Path) -> None:
    call, error = CLIENTS[client]
    with hostile_server(DRIPS[drip]) as server:
        exc, seconds = timed(lambda: call(server, dest))
    assert isinstance(exc, error), exc
    assert "deadline" in str(exc), exc
    assert f"127.0.0.1:{server.port}" in str(exc)
    assert "\n" not in str(exc)
    assert seconds < DEADLINE + MARGIN, f"{client} took {seconds:.1f}s on a dripped {drip}"


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_headers_then_silence_is_a_stall(client: str, dest: Path) -> None:
    error = CLIENTS[client][1]
    deadline_far = FetchOptions(timeout_seconds=STALL, deadline_seconds=30)
    script: list[Step] = [("send", OK_HEAD + b"Content-Length: 100\r\n\r\n"), ("stall", 60)]
    with hostile_server(script) as server:
        if client == "catalogd client":
            source = CatalogdSource(f"{server.url}/catalogs/x", timeout=STALL, deadline=30)
            exc, seconds = timed(source.fetch)
        elif client == "catalog image source":
            ref = f"127.0.0.1:{server.port}/team/catalog:v1"
            exc, seconds = timed(ImageCatalogSource(ref, options=deadline_far).fetch)
        else:
            spec: HttpSpec | ImageSpec = (
                HttpSpec(f"{server.url}/b.tgz")
                if client == "http bundle source"
                else ImageSpec(f"127.0.0.1:{server.port}/team/bundle:v1")
            )
            exc, seconds = timed(lambda: fetch(spec, dest / "dest", deadline_far))
    assert isinstance(exc, error), exc
    assert "stalled" in str(exc), exc
    assert seconds < STALL + MARGIN


def test_the_deadline_spans_every_request_of_a_fetch(dest: Path) -> None:
    """A registry that answers each request just under the stall timeout cannot stretch a pull
    to (requests x stall): the image source has one deadline for the whole pull."""

    def script(head: bytes) -> list[Step]:
        if b"/manifests/" in head:
            return [
                ("stall", 0.5),
                (
                    "send",
                    b"HTTP/1.1 307 Again\r\nLocation: /v2/team/b/manifests/v1\r\n"
                    b"Content-Length: 0\r\n\r\n",
                ),
            ]
        return [("send", b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")]

    with hostile_server(script) as server:
        exc, seconds = timed(
            lambda: fetch(
                ImageSpec(f"127.0.0.1:{server.port}/team/b:v1"),
                dest / "dest",
                FetchOptions(timeout_seconds=1.0, deadline_seconds=1.75),
            )
        )
    # Five redirects of 0.5 s each would be 3 s; the deadline stops it at 1.75 s.
    assert isinstance(exc, SourceUnavailableError), exc
    assert "deadline" in str(exc)
    assert seconds < 1.75 + MARGIN


def test_an_endless_json_line_is_refused_at_the_line_cap() -> None:
    cap = 1 << 20
    script: list[Step] = [
        ("send", OK_HEAD + b"Connection: close\r\n\r\n"),
        ("endless", b"a" * 65536),
    ]
    with hostile_server(script) as server:
        source = CatalogdSource(f"{server.url}/catalogs/x", max_line_bytes=cap, deadline=60)
        exc, _ = timed(source.fetch)
    assert isinstance(exc, CatalogSourceError), exc
    assert f"larger than {cap} bytes" in str(exc)
    # Refused as soon as the unfinished line passed the cap: one read of slack at most.
    assert cap < source.fetched_bytes <= cap + 65536


def test_a_50_mb_single_line_is_refused_at_the_cap_not_buffered() -> None:
    line = b'{"schema":"olm.package","name":"' + b"x" * (50 << 20) + b'"}\n'
    cap = 8 << 20
    script: list[Step] = [
        ("send", OK_HEAD + f"Content-Length: {len(line)}\r\n\r\n".encode()),
        ("send", line),
    ]
    with hostile_server(script) as server:
        source = CatalogdSource(f"{server.url}/catalogs/x", max_line_bytes=cap, deadline=60)
        exc, seconds = timed(source.fetch)
    assert isinstance(exc, CatalogSourceError), exc
    assert f"an object is larger than {cap} bytes" in str(exc)
    assert source.fetched_bytes <= cap + 65536
    assert seconds < 10


def test_an_endless_manifest_is_refused_at_its_size_cap(dest: Path) -> None:
    script: list[Step] = [
        ("send", b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"),
        ("endless", b" " * 65536),
    ]
    with hostile_server(script) as server:
        exc, seconds = timed(
            lambda: fetch(
                ImageSpec(f"127.0.0.1:{server.port}/team/b:v1"),
                dest / "dest",
                FetchOptions(timeout_seconds=STALL, deadline_seconds=60),
            )
        )
    assert isinstance(exc, ContentTooLargeError), exc
    assert seconds < 20


# -- git --------------------------------------------------------------------------------------


def _git_helpers_for(marker: str) -> list[str]:
    """Processes whose command line names ``marker`` (git and its remote helpers)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(cmdline.decode(errors="replace"))
    return found


@pytest.mark.tools  # the git source runs git
def test_git_against_a_dripping_server_ends_by_the_deadline_and_leaves_no_process(
    dest: Path,
) -> None:
    # 4 bytes a second keeps git's own low-speed check (1 byte/s) satisfied.
    script: list[Step] = [
        (
            "send",
            b"HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-advertisement\r\n",
        ),
        ("drip", b"X-Slow: " + b"a" * 200 + b"\r\n\r\n", DRIP),
    ]
    with hostile_server(script) as server:
        repository = f"{server.url}/drip-{os.getpid()}.git"
        spec = GitSpec(repository=repository, ref=GitRef(branch="main"))
        exc, seconds = timed(lambda: fetch(spec, dest / "dest", OPTIONS))
        assert isinstance(exc, SourceError), exc
        assert seconds < DEADLINE + MARGIN
        time.sleep(0.3)
        assert _git_helpers_for(repository) == []


# -- gRPC -------------------------------------------------------------------------------------


@pytest.fixture
def dripping_registry() -> Iterator[str]:
    """An api.Registry server whose ListBundles sends one message every DRIP seconds, forever."""
    stop = futures.Future[None]()

    def list_packages(_: api.ListPackageRequest, __: grpc.ServicerContext) -> Iterator[object]:
        return iter([])

    def list_bundles(_: api.ListBundlesRequest, context: grpc.ServicerContext) -> Iterator[object]:
        n = 0
        while context.is_active() and not stop.done():
            time.sleep(DRIP)
            n += 1
            yield api.Bundle(csvName=f"b.v{n}", packageName="p", channelName="c")

    handler = grpc.method_handlers_generic_handler(
        "api.Registry",
        {
            "ListPackages": grpc.unary_stream_rpc_method_handler(
                list_packages,
                request_deserializer=api.ListPackageRequest.FromString,
                response_serializer=api.PackageName.SerializeToString,
            ),
            "ListBundles": grpc.unary_stream_rpc_method_handler(
                list_bundles,
                request_deserializer=api.ListBundlesRequest.FromString,
                response_serializer=api.Bundle.SerializeToString,
            ),
        },
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"grpc://127.0.0.1:{port}"
    finally:
        stop.set_result(None)
        server.stop(0).wait()


def test_grpc_stream_that_trickles_ends_by_the_deadline(dripping_registry: str) -> None:
    source = RegistrySource(dripping_registry, timeout=STALL, deadline=DEADLINE)
    exc, seconds = timed(source.fetch)
    assert isinstance(exc, CatalogSourceError), exc
    assert f"longer than {DEADLINE:g}s" in str(exc)
    assert seconds < DEADLINE + MARGIN


def test_a_dripped_tls_handshake_is_cut_off(dest: Path) -> None:
    # A TLS record header, then its body one byte a second: the handshake never completes.
    script: list[Step] = [("drip", b"\x16\x03\x03\x40\x00" + b"\x02" * 200, DRIP)]
    with hostile_server(script) as server:
        https = f"https://127.0.0.1:{server.port}"
        exc, seconds = timed(
            lambda: CatalogdSource(f"{https}/c/x", timeout=STALL, deadline=DEADLINE).fetch()
        )
        assert isinstance(exc, CatalogSourceError), exc
        assert seconds < DEADLINE + MARGIN
        exc, seconds = timed(lambda: fetch(HttpSpec(f"{https}/b.tgz"), dest / "dest", OPTIONS))
        assert isinstance(exc, SourceUnavailableError), exc
        assert seconds < DEADLINE + MARGIN


def test_grpc_fetch_is_refused_past_its_total_byte_cap(dripping_registry: str) -> None:
    source = RegistrySource(dripping_registry, timeout=STALL, deadline=30, max_bytes=40)
    exc, seconds = timed(source.fetch)
    assert isinstance(exc, CatalogSourceError), exc
    assert "larger than 40 bytes" in str(exc)
    assert 40 < source.fetched_bytes < 80
    assert seconds < 10


def test_a_name_lookup_that_hangs_is_abandoned_at_the_deadline(
    monkeypatch: pytest.MonkeyPatch, dest: Path
) -> None:
    """A hostile authoritative DNS server can make the lookup hang; the budget still holds."""
    release = futures.Future[None]()

    def slow_lookup(*_: object, **__: object) -> list[object]:
        release.result(timeout=30)
        raise OSError("released")

    monkeypatch.setattr("socket.getaddrinfo", slow_lookup)
    try:
        exc, seconds = timed(
            lambda: CatalogdSource("http://slow.test/c/x", timeout=5, deadline=DEADLINE).fetch()
        )
        assert isinstance(exc, CatalogSourceError), exc
        assert "deadline" in str(exc)
        assert seconds < DEADLINE + MARGIN
        exc, seconds = timed(
            lambda: fetch(
                HttpSpec("http://slow.test/b.tgz"),
                dest / "dest",
                FetchOptions(timeout_seconds=5, deadline_seconds=DEADLINE),
            )
        )
        assert isinstance(exc, SourceUnavailableError), exc
        assert seconds < DEADLINE + MARGIN
    finally:
        release.set_result(None)
