"""Our gRPC catalog source, reading the real ``opm serve``, yields the directory's model for every
field the wire carries; failures of the server are clear, bounded and never half-load."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

from resolver.catalog import gojson, model
from resolver.catalog.load import load_directory
from resolver.catalog.sources import CatalogSourceError, RegistrySource, open_source
from tests.wire.conftest import CATALOGS, DATA, OpmServer, PivoterServer, free_port

# Dropped by opm's conversion (model_to_api.go): never on the wire.
_NOT_ON_WIRE = (model.PROP_CSV_METADATA, model.PROP_BUNDLE_OBJECT)


def wire_view(catalog: model.Catalog) -> dict[str, Any]:
    """The parts of a catalog that api.Registry carries, in a comparable form."""
    return {
        "packages": sorted((p.name, p.default_channel) for p in catalog.packages),
        "channels": sorted(
            (
                c.package,
                c.name,
                sorted((e.name, e.replaces, tuple(e.skips), e.skip_range) for e in c.entries),
            )
            for c in catalog.channels
        ),
        "bundles": sorted(
            (
                b.package,
                b.name,
                b.image,
                b.version,
                # Values cross the wire as Go re-encodes them (numbers via float64).
                tuple(
                    (p.type, gojson.dumps(p.value))
                    for p in b.properties
                    if p.type not in _NOT_ON_WIRE or not b.image
                ),
            )
            for b in catalog.bundles
        ),
        "deprecations": sorted(
            (d.package, sorted((e.schema, e.name, e.message) for e in d.entries))
            for d in catalog.deprecations
        ),
    }


@pytest.mark.opm
@pytest.mark.parametrize("name", CATALOGS)
def test_client_reading_opm_gives_the_directory_model(
    name: str, opm_server: Callable[[Path], OpmServer]
) -> None:
    directory = DATA / name
    server = opm_server(directory)
    source = open_source(f"grpc://{server.target}", name=name)
    fetched = source.fetch()
    expected = load_directory(directory, use_cache=False)
    assert fetched.bundles, "nothing fetched"
    assert wire_view(fetched) == wire_view(expected)
    assert source.digest is not None
    # Same content, same digest: a watcher can tell "unchanged" without comparing models.
    digest = source.digest
    source.fetch()
    assert source.digest == digest


@pytest.mark.parametrize("name", ["crafted", "community-v4.16"])
def test_client_reading_our_server_gives_the_directory_model(
    name: str, pivoter_server: Callable[..., PivoterServer]
) -> None:
    server = pivoter_server(DATA / name)
    fetched = RegistrySource(f"grpc://{server.target}").fetch()
    assert wire_view(fetched) == wire_view(load_directory(DATA / name, use_cache=False))


def test_server_down_is_a_clear_bounded_error() -> None:
    target = f"grpc://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(CatalogSourceError) as err:
        RegistrySource(target, timeout=2, deadline=5).fetch()
    assert target in str(err.value)
    assert "ListPackages" in str(err.value)
    assert time.monotonic() - started < 30  # bounded by the timeout, not by gRPC's backoff


def _slow_server(delay: float, bundles: int = 1) -> tuple[grpc.Server, int]:
    from resolver.catalog.registryapi import registry_pb2 as api

    def list_packages(request: Any, context: Any) -> Any:
        yield api.PackageName(name="p")

    def get_package(request: Any, context: Any) -> Any:
        return api.Package(name="p", defaultChannelName="c", channels=[api.Channel(name="c")])

    def list_bundles(request: Any, context: Any) -> Any:
        time.sleep(delay)
        for n in range(bundles):
            yield api.Bundle(csvName=f"p.v{n}", packageName="p", channelName="c")

    handlers = {
        "ListPackages": grpc.unary_stream_rpc_method_handler(
            list_packages,
            request_deserializer=api.ListPackageRequest.FromString,
            response_serializer=api.PackageName.SerializeToString,
        ),
        "GetPackage": grpc.unary_unary_rpc_method_handler(
            get_package,
            request_deserializer=api.GetPackageRequest.FromString,
            response_serializer=api.Package.SerializeToString,
        ),
        "ListBundles": grpc.unary_stream_rpc_method_handler(
            list_bundles,
            request_deserializer=api.ListBundlesRequest.FromString,
            response_serializer=api.Bundle.SerializeToString,
        ),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("api.Registry", handlers),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


def test_slow_server_times_out_with_the_source_named() -> None:
    server, port = _slow_server(delay=10)
    try:
        started = time.monotonic()
        with pytest.raises(CatalogSourceError) as err:
            RegistrySource(f"grpc://127.0.0.1:{port}", timeout=1, deadline=2).fetch()
        assert f"127.0.0.1:{port}" in str(err.value)
        assert "ListBundles" in str(err.value)
        assert time.monotonic() - started < 9
    finally:
        server.stop(grace=None)


def test_message_over_the_size_limit_is_refused(
    pivoter_server: Callable[..., PivoterServer],
) -> None:
    server = pivoter_server(DATA / "crafted")
    with pytest.raises(CatalogSourceError) as err:
        RegistrySource(f"grpc://{server.target}", max_message_bytes=100).fetch()
    assert "larger than the 100-byte limit" in str(err.value)


def test_a_stream_of_tiny_messages_is_refused_at_the_memory_ceiling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each message is charged its estimated cost (4 x its bytes + 1 KiB) before it is decoded:
    millions of tiny bundles stop at the ceiling (lowered here to 1 MiB: about 1,000 messages)."""
    from resolver.catalog import load

    monkeypatch.setattr(load, "MEMORY_CEILING", 1 << 20)
    server, port = _slow_server(delay=0, bundles=100_000)
    try:
        started = time.monotonic()
        with pytest.raises(CatalogSourceError) as err:
            RegistrySource(f"grpc://127.0.0.1:{port}", timeout=5, deadline=20).fetch()
        message = str(err.value)
        assert "ListBundles: what arrived would take about 1.0 MiB in memory" in message
        assert "more than the memory ceiling of a received catalog (1.0 MiB" in message
        assert "\n" not in message
        assert time.monotonic() - started < 10
    finally:
        server.stop(grace=None)
