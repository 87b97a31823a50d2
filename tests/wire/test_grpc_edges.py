"""gRPC edges of ``pivoter catalog serve``: reflection v1 and v1alpha, health ``Watch``, and a
negative-zero property value, each checked with a real gRPC client (and against ``opm serve``
where opm has an answer)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from pivoter.catalogserver.grpcserver import SERVICE_NAMES
from tests.wire.conftest import DATA, OpmServer, PivoterServer, free_port
from tests.wire.rpc import METHODS, Registry

V1 = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
V1ALPHA = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"


def _reflect(target: str, path: str, **request: str) -> reflection_pb2.ServerReflectionResponse:
    """One reflection request on ``path``; v1 and v1alpha messages are the same bytes, so the
    v1alpha classes serve as the wire format for both."""
    with grpc.insecure_channel(target) as channel:
        call = channel.stream_stream(
            path,
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        (answer,) = list(
            call(iter([reflection_pb2.ServerReflectionRequest(**request)]), timeout=10)
        )
        return answer


def _listed(target: str, path: str) -> set[str]:
    answer = _reflect(target, path, list_services="")
    return {s.name for s in answer.list_services_response.service}


def test_reflection_v1_and_v1alpha_list_every_service(
    pivoter_server: Callable[..., PivoterServer],
) -> None:
    server = pivoter_server(DATA / "crafted")
    v1 = _listed(server.target, V1)
    assert v1 == _listed(server.target, V1ALPHA) == set(SERVICE_NAMES)
    assert {
        "api.Registry",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    } <= v1


def test_reflection_v1_describes_the_registry_and_itself(
    pivoter_server: Callable[..., PivoterServer],
) -> None:
    server = pivoter_server(DATA / "crafted")
    answer = _reflect(server.target, V1, file_containing_symbol="api.Registry")
    files = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in answer.file_descriptor_response.file_descriptor_proto
    ]
    (registry,) = [
        s for f in files if f.package == "api" for s in f.service if s.name == "Registry"
    ]
    assert len(registry.method) == 10

    # The v1 service is described under its own package; a client building its classes from
    # that descriptor alone (a fresh pool) reads the server's answers with them.
    answer = _reflect(
        server.target, V1, file_containing_symbol="grpc.reflection.v1.ServerReflection"
    )
    (raw,) = answer.file_descriptor_response.file_descriptor_proto
    proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
    assert (proto.name, proto.package) == (
        "grpc/reflection/v1/reflection.proto",
        "grpc.reflection.v1",
    )
    (service,) = proto.service
    assert [m.input_type for m in service.method] == [".grpc.reflection.v1.ServerReflectionRequest"]
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    request_class = message_factory.GetMessageClass(
        pool.FindMessageTypeByName("grpc.reflection.v1.ServerReflectionRequest")
    )
    response_class = message_factory.GetMessageClass(
        pool.FindMessageTypeByName("grpc.reflection.v1.ServerReflectionResponse")
    )
    with grpc.insecure_channel(server.target) as channel:
        call = channel.stream_stream(
            V1,
            request_serializer=request_class.SerializeToString,
            response_deserializer=response_class.FromString,
        )
        (reply,) = list(call(iter([request_class(list_services="")]), timeout=10))
    assert {s.name for s in reply.list_services_response.service} == set(SERVICE_NAMES)


@pytest.mark.opm
def test_reflection_v1_lists_what_opm_lists_under_v1(
    opm_server: Callable[[Path], OpmServer], pivoter_server: Callable[..., PivoterServer]
) -> None:
    """opm (grpc-go) serves reflection v1 too: the same protocol answers both."""
    theirs = _listed(opm_server(DATA / "crafted").target, V1)
    ours = _listed(pivoter_server(DATA / "crafted").target, V1)
    assert "grpc.reflection.v1.ServerReflection" in theirs
    assert {"api.Registry", "grpc.health.v1.Health"} <= theirs & ours


# -- health Watch ---------------------------------------------------------------------------------


def _wait_for_serving(process: subprocess.Popen[str], target: str) -> None:
    with grpc.insecure_channel(target) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=60)
        except grpc.FutureTimeoutError:
            process.kill()
            pytest.fail(f"catalog serve did not start: {process.communicate()[1]}")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``pivoter catalog serve`` in its own process; its stderr is its log."""
    port = free_port()
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "pivoter.cli.main", "catalog", "serve", str(DATA / "crafted")),
            *("--grpc-port", str(port), "--http-port", "-1"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PIVOTER_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"},
    )
    target = f"127.0.0.1:{port}"
    _wait_for_serving(process, target)
    yield process, target
    if process.poll() is None:
        process.kill()
        process.communicate()


def _stop(process: subprocess.Popen[str]) -> str:
    process.terminate()
    _, log = process.communicate(timeout=30)
    return log


def test_health_watch_answers_serving_without_a_traceback_in_the_log(
    served: tuple[subprocess.Popen[str], str],
) -> None:
    process, target = served
    with grpc.insecure_channel(target) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "api.Registry"):
            stream = health.Watch(health_pb2.HealthCheckRequest(service=service), timeout=30)
            first = next(stream)
            assert first.status == health_pb2.HealthCheckResponse.SERVING
            # The stream stays open (the status does not change) until the client leaves.
            time.sleep(0.5)
            assert stream.is_active()
            stream.cancel()
        check = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
        assert check.status == health_pb2.HealthCheckResponse.SERVING
    time.sleep(0.5)
    log = _stop(process)
    assert process.returncode == 0, log
    assert "Traceback" not in log, log
    assert "Exception" not in log, log
    assert "serving gRPC api.Registry" in log


def test_health_watches_cannot_take_every_worker(
    served: tuple[subprocess.Popen[str], str],
) -> None:
    """Each open Watch holds a worker thread: past the cap, one more is refused with
    RESOURCE_EXHAUSTED while every other call is still answered."""
    process, target = served
    channels = [grpc.insecure_channel(target) for _ in range(12)]
    streams = []
    try:
        codes: list[grpc.StatusCode] = []
        for channel in channels:
            stream = health_pb2_grpc.HealthStub(channel).Watch(
                health_pb2.HealthCheckRequest(), timeout=60
            )
            try:
                first = next(stream)
            except grpc.RpcError as err:
                codes.append(err.code())
                continue
            assert first.status == health_pb2.HealthCheckResponse.SERVING
            streams.append(stream)
        assert streams, codes
        assert codes, len(streams)
        assert set(codes) == {grpc.StatusCode.RESOURCE_EXHAUSTED}
        registry = Registry(target)
        assert registry.call("GetPackage", name="etcd").code is None
        assert len(registry.call("ListBundles").messages) > 0
        registry.close()
        # A watcher that leaves gives its place back.
        streams.pop().cancel()
        time.sleep(0.5)
        with grpc.insecure_channel(target) as channel:
            again = health_pb2_grpc.HealthStub(channel).Watch(
                health_pb2.HealthCheckRequest(), timeout=30
            )
            assert next(again).status == health_pb2.HealthCheckResponse.SERVING
            again.cancel()
    finally:
        for stream in streams:
            stream.cancel()
        for channel in channels:
            channel.close()
    log = _stop(process)
    assert "Traceback" not in log, log


def test_odd_and_malformed_calls_leave_one_line_not_a_traceback_in_the_log(
    served: tuple[subprocess.Popen[str], str],
) -> None:
    process, target = served
    registry = Registry(target)
    for method in METHODS:  # every RPC with an empty request: answered, never a crash
        answer = registry.call(method)
        assert answer.code in (None, grpc.StatusCode.UNKNOWN), (method, answer)
    assert registry.custom_schemas("", "").code == grpc.StatusCode.INVALID_ARGUMENT
    registry.close()
    with grpc.insecure_channel(target) as channel:
        for path in ("/api.Registry/GetPackage", "/grpc.health.v1.Health/Check", V1):
            with pytest.raises(grpc.RpcError) as err:
                _send_garbage(channel, path)
            assert err.value.code() == grpc.StatusCode.INTERNAL, path
        answer = _reflect(target, V1, file_by_filename="no/such.proto")
        assert answer.WhichOneof("message_response") == "error_response"
    log = _stop(process)
    assert "Traceback" not in log, log
    assert log.count("a gRPC peer sent bytes that are not a valid message") == 3, log


def _raw(data: bytes) -> bytes:
    return data


def _send_garbage(channel: grpc.Channel, path: str) -> None:
    """Send bytes that are no protobuf message to ``path`` and read the answer."""
    garbage = b"\xff\xff\xff"
    if path == V1:
        stream = channel.stream_stream(path, request_serializer=_raw, response_deserializer=_raw)
        list(stream(iter([garbage]), timeout=10))
    else:
        unary = channel.unary_unary(path, request_serializer=_raw, response_deserializer=_raw)
        unary(garbage, timeout=10)


# -- negative zero --------------------------------------------------------------------------------


def _negative_zero_catalog(root: Path) -> Path:
    directory = root / "negzero"
    (directory / "neg").mkdir(parents=True)
    bundle = {
        "schema": "olm.bundle",
        "name": "neg.v1.0.0",
        "package": "neg",
        "image": "example.com/neg:v1.0.0",
        "properties": [
            {"type": "olm.package", "value": {"packageName": "neg", "version": "1.0.0"}},
            {"type": "example.zero", "value": -0.0},
            {"type": "example.intzero", "value": "INTEGER-ZERO"},
            {"type": "example.nested", "value": {"a": -0.0, "b": [-0.0, 0.0, 1.5, -2.5]}},
        ],
    }
    text = "\n".join(
        json.dumps(o)
        for o in (
            {"schema": "olm.package", "name": "neg", "defaultChannel": "stable"},
            {
                "schema": "olm.channel",
                "package": "neg",
                "name": "stable",
                "entries": [{"name": "neg.v1.0.0"}],
            },
            bundle,
        )
    )
    # An integer -0 (json.dumps cannot write one): orjson alone reads it as 0; opm keeps "-0".
    text = text.replace('"INTEGER-ZERO"', "-0")
    assert '"value": -0.0' in text
    assert '"value": -0}' in text
    (directory / "neg" / "catalog.json").write_text(text + "\n")
    # The same value written in YAML reaches clients the same way.
    (directory / "yaml").mkdir()
    (directory / "yaml" / "catalog.yaml").write_text(
        "schema: olm.package\nname: negy\ndefaultChannel: stable\n---\n"
        "schema: olm.channel\npackage: negy\nname: stable\nentries: [{name: negy.v1.0.0}]\n---\n"
        "schema: olm.bundle\nname: negy.v1.0.0\npackage: negy\nimage: example.com/negy:v1\n"
        "properties:\n"
        "- {type: olm.package, value: {packageName: negy, version: 1.0.0}}\n"
        "- {type: example.zero, value: -0.0}\n"
    )
    return directory


def _properties(registry: Registry, package: str) -> dict[str, str]:
    answer = registry.call("GetBundleForChannel", pkgName=package, channelName="stable")
    assert answer.code is None, answer
    (bundle,) = answer.messages
    return {p.type: p.value for p in bundle.properties}  # type: ignore[attr-defined]


def test_negative_zero_reaches_grpc_and_http_clients_as_minus_zero(
    tmp_path: Path, pivoter_server: Callable[..., PivoterServer]
) -> None:
    server = pivoter_server(_negative_zero_catalog(tmp_path))
    registry = Registry(server.target)
    props = _properties(registry, "neg")
    assert props["example.zero"] == "-0"
    assert props["example.intzero"] == "-0"
    assert props["example.nested"] == '{"a":-0,"b":[-0,0,1.5,-2.5]}'
    assert _properties(registry, "negy")["example.zero"] == "-0"
    listed = [b for b in registry.call("ListBundles").messages if b.packageName == "neg"]  # type: ignore[attr-defined]
    assert {p.value for p in listed[0].properties if p.type == "example.zero"} == {"-0"}  # type: ignore[attr-defined]
    registry.close()
    with urllib.request.urlopen(server.base_url + "/api/v1/all", timeout=10) as response:
        body = response.read().decode()
    assert '{"type":"example.zero","value":-0}' in body
    assert '"value":{"a":-0,"b":[-0,0,1.5,-2.5]}' in body


@pytest.mark.opm
def test_negative_zero_property_matches_opm(
    tmp_path: Path,
    opm_server: Callable[[Path], OpmServer],
    pivoter_server: Callable[..., PivoterServer],
) -> None:
    directory = _negative_zero_catalog(tmp_path)
    theirs = Registry(opm_server(directory).target)
    ours = Registry(pivoter_server(directory).target)
    for package in ("neg", "negy"):
        assert _properties(ours, package) == _properties(theirs, package)
    theirs.close()
    ours.close()
