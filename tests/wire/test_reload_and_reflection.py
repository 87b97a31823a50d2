"""``pivoter catalog serve`` end to end: reflection lists our services, health answers, and a
changed directory is reloaded atomically while a broken edit keeps the last good catalog."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from pivoter.catalogserver.grpcserver import SERVICE_NAMES
from tests.wire.conftest import DATA, PivoterServer
from tests.wire.rpc import Registry


def test_reflection_lists_our_services(pivoter_server: Callable[..., PivoterServer]) -> None:
    server = pivoter_server(DATA / "crafted")
    with grpc.insecure_channel(server.target) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        (answer,) = list(stub.ServerReflectionInfo(iter([request]), timeout=10))
        listed = {s.name for s in answer.list_services_response.service}
        assert {"api.Registry", "api.ExperimentalRegistry", "grpc.health.v1.Health"} <= listed
        assert listed == set(SERVICE_NAMES)
        # The descriptor a reflection client downloads describes the ten Registry methods.
        request = reflection_pb2.ServerReflectionRequest(file_containing_symbol="api.Registry")
        (answer,) = list(stub.ServerReflectionInfo(iter([request]), timeout=10))
        from google.protobuf import descriptor_pb2

        files = [
            descriptor_pb2.FileDescriptorProto.FromString(raw)
            for raw in answer.file_descriptor_response.file_descriptor_proto
        ]
        registry = next(f for f in files if f.package == "api")
        (service,) = [s for s in registry.service if s.name == "Registry"]
        assert len(service.method) == 10

        health = health_pb2_grpc.HealthStub(channel)
        status = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10).status
        assert status == health_pb2.HealthCheckResponse.SERVING


def _fetch(url: str) -> tuple[int, dict[str, str], bytes]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, dict(response.headers), response.read()


def _metric(base_url: str, name: str) -> float:
    metrics_url = base_url.split("/catalogs/", maxsplit=1)[0] + "/metrics"
    with urllib.request.urlopen(metrics_url, timeout=10) as response:
        text = response.read().decode()
    for line in text.splitlines():
        if line.startswith(name):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


def test_reload_swaps_good_edits_and_keeps_serving_through_broken_ones(
    tmp_path: Path, pivoter_server: Callable[..., PivoterServer]
) -> None:
    directory = tmp_path / "live"
    shutil.copytree(DATA / "crafted", directory)
    server = pivoter_server(directory)
    client = Registry(server.target)
    names = lambda: sorted(m.name for m in client.call("ListPackages").messages)  # noqa: E731
    assert names() == ["etcd", "prometheus"]

    # A good edit: a new package appears after the next check.
    (directory / "redis.yaml").write_text(
        "schema: olm.package\nname: redis\ndefaultChannel: stable\n---\n"
        "schema: olm.channel\npackage: redis\nname: stable\nentries:\n  - name: redis.v1.0.0\n"
        "---\nschema: olm.bundle\npackage: redis\nname: redis.v1.0.0\nimage: example.com/r:1\n"
        "properties:\n  - {type: olm.package, value: {packageName: redis, version: 1.0.0}}\n"
    )
    assert server.reloader.check()
    good = names()
    assert good == ["etcd", "prometheus", "redis"]
    _, _, body = _fetch(server.base_url + "/api/v1/all")
    assert b'"name":"redis.v1.0.0"' in body  # HTTP swapped together with gRPC

    # A broken edit (a channel naming a bundle that does not exist): keep serving the last good.
    (directory / "broken.yaml").write_text(
        "schema: olm.channel\npackage: etcd\nname: beta\nentries:\n  - name: etcd.v9.9.9\n"
    )
    assert not server.reloader.check()
    assert names() == good
    assert server.reloader.last_error is not None
    assert _metric(server.base_url, "pivoter_catalog_reload_last_success") == 0
    assert (
        _metric(server.base_url, 'pivoter_catalog_reloads_total{catalog="live",result="failure"}')
        == 1
    )

    # Unparsable YAML is reported the same way.
    (directory / "broken.yaml").write_text("schema: [unterminated\n")
    assert not server.reloader.check()
    assert names() == good

    # Fixing it makes the server current again.
    (directory / "broken.yaml").unlink()
    time.sleep(0.01)
    (directory / "etcd" / "catalog.yaml").touch()
    assert server.reloader.check()
    assert _metric(server.base_url, "pivoter_catalog_reload_last_success") == 1
    client.close()


def test_cli_serve_starts_and_answers(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pivoter.cli.main",
            "catalog",
            "serve",
            str(DATA / "test-catalog"),
            "--grpc-port",
            "0",
            "--http-port",
            "0",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        lines = [process.stderr.readline(), process.stderr.readline()]
        grpc_line = next(line for line in lines if "gRPC" in line)
        http_line = next(line for line in lines if "HTTP" in line)
        target = grpc_line.rsplit(" ", 1)[1].strip()
        url = http_line.rsplit(" ", 1)[1].strip()
        assert "/catalogs/test-catalog/api/v1/all" in url  # the name defaults to the base name
        with urllib.request.urlopen(url, timeout=10) as response:
            expected = (DATA / "test-catalog" / "expected_all.json").read_bytes()
            assert response.read() == expected
        client = Registry(target)
        assert [m.name for m in client.call("ListPackages").messages] == ["prometheus"]
        client.close()
    finally:
        process.terminate()
        assert process.wait(timeout=20) == 0
        if process.stderr is not None:
            process.stderr.close()


def test_cli_serve_refuses_a_broken_directory(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("schema: olm.package\nname: Bad_Name\n")
    result = subprocess.run(
        # Port 0: the default ports may be taken by another test or program on this machine.
        [
            sys.executable,
            "-m",
            "pivoter.cli.main",
            "catalog",
            "serve",
            str(tmp_path),
            "--grpc-port",
            "0",
            "--http-port",
            "0",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3
    assert "cannot serve" in result.stderr


def test_cli_render_reads_http_and_grpc_sources(
    pivoter_server: Callable[..., PivoterServer],
) -> None:
    import json

    server = pivoter_server(DATA / "test-catalog")
    outputs = {}
    for spec in (server.base_url, f"grpc://{server.target}", str(DATA / "test-catalog")):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pivoter.cli.main",
                "catalog",
                "render",
                spec,
                "--timeout",
                "10",
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        decoder = json.JSONDecoder()
        text, objects, pos = result.stdout, [], 0
        while pos < len(text.rstrip()):
            obj, pos = decoder.raw_decode(text, pos)
            objects.append(obj)
            while pos < len(text) and text[pos].isspace():
                pos += 1
        outputs[spec] = objects
    http_objects, grpc_objects, dir_objects = outputs.values()
    assert http_objects == dir_objects  # the JSONL carries every field
    assert [o["name"] for o in grpc_objects] == [o["name"] for o in dir_objects]


def test_cli_render_names_an_unreachable_source() -> None:
    from tests.wire.conftest import free_port

    spec = f"grpc://127.0.0.1:{free_port()}"
    result = subprocess.run(
        [sys.executable, "-m", "pivoter.cli.main", "catalog", "render", spec, "--timeout", "2"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert spec in result.stderr
