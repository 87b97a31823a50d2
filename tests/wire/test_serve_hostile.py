"""The real ``pivoter catalog serve`` process under hostile clients on both protocols at once,
in a 1 GiB address space (as ``prlimit --as``): stalled gRPC streams from four addresses (more
calls than worker threads), calls that never send their request, idle, dripping and pipelining
HTTP clients. Twenty normal gRPC calls and twenty HTTP requests must succeed, and SIGTERM must end
the process cleanly (exit 0, no traceback).

glibc gives each thread that allocates its own 64 MiB malloc arena (address space, not memory):
grpc core's threads alone took 730 MiB of the 1 GiB before any client came, so no worker thread
could be started. The process runs with ``MALLOC_ARENA_MAX=2`` (what the image should set) and
then stays near 600 MiB with every thread started.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import grpc

from resolver.catalog.registryapi import registry_pb2 as api
from tests.wire.conftest import DATA
from tests.wire.h2raw import RawH2

ADDRESS_SPACE = 1 << 30
HOSTILE_ADDRESSES = ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")


def _serve(directory: Path, *extra: str) -> tuple[subprocess.Popen[str], int, int]:
    process = subprocess.Popen(
        [
            "prlimit",
            f"--as={ADDRESS_SPACE}",
            "--",
            sys.executable,
            "-m",
            "pivoter.cli.main",
            "catalog",
            "serve",
            str(directory),
            "--grpc-port",
            "0",
            "--http-port",
            "0",
            *extra,
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MALLOC_ARENA_MAX": "2"},
    )
    assert process.stderr is not None
    grpc_line = process.stderr.readline()
    http_line = process.stderr.readline()
    assert "serving gRPC" in grpc_line, grpc_line
    assert "serving HTTP" in http_line, http_line
    grpc_port = int(grpc_line.strip().rsplit(":", 1)[1])
    http_port = int(http_line.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
    return process, grpc_port, http_port


def test_catalog_serve_stays_available_under_hostile_clients_in_1_gib() -> None:
    process, grpc_port, http_port = _serve(DATA / "crafted")
    try:
        with ExitStack() as stack:
            for source in HOSTILE_ADDRESSES:
                for _ in range(2):
                    stalled = stack.enter_context(
                        RawH2(grpc_port, source=source, initial_window_size=0)
                    )
                    for _ in range(8):
                        stalled.open_call("/api.Registry/ListBundles")
                silent = stack.enter_context(RawH2(grpc_port, source=source))
                for _ in range(4):
                    silent.open_call("/api.Registry/GetPackage", None, end=False)
                for number in range(20):
                    sock = stack.enter_context(
                        socket.create_connection(
                            ("127.0.0.1", http_port), source_address=(source, 0)
                        )
                    )
                    if number % 2:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                        sock.sendall(b"GET /catalogs/crafted/api/v1/all HTTP/1.1\r\n\r\n" * 100)
                    else:
                        sock.sendall(b"GET /catalogs/crafted/api/v1/all HTTP/1.1\r\nX-Slow: ")
            time.sleep(0.5)
            assert process.poll() is None
            start = time.monotonic()
            with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                get = channel.unary_unary(
                    "/api.Registry/GetPackage",
                    request_serializer=api.GetPackageRequest.SerializeToString,
                    response_deserializer=api.Package.FromString,
                )
                for _ in range(20):
                    assert get(api.GetPackageRequest(name="etcd"), timeout=2).name == "etcd"
            url = f"http://127.0.0.1:{http_port}/catalogs/crafted/api/v1/all"
            for _ in range(20):
                with urllib.request.urlopen(url, timeout=2) as answer:
                    assert b'"name":"etcd"' in answer.read()
            assert time.monotonic() - start < 5
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        assert process.stderr is not None
        errors = process.stderr.read()
        process.stderr.close()
    assert "Traceback" not in errors
    assert "cannot start" not in errors  # every thread it needed fitted


def _alias_bomb() -> str:
    """1 MiB on disk, 5 GB once its 5,000 aliases are expanded."""
    aliases = ", ".join(["*big"] * 5000)
    return f"schema: x.custom\nname: b\nbig: &big '{'x' * (1 << 20)}'\nl: [{aliases}]\n"


def test_catalog_serve_refuses_a_bomb_at_start_and_keeps_serving_when_one_arrives(
    tmp_path: Path,
) -> None:
    """At start: one line and exit 3, within seconds, in 1 GiB. While serving: the reload that
    meets the bomb fails in one line, the last good catalog is still served, marked stale."""
    bombed = tmp_path / "bombed"
    shutil.copytree(DATA / "crafted", bombed)
    (bombed / "bomb.yaml").write_text(_alias_bomb())
    started = time.monotonic()
    refused = subprocess.run(
        ["prlimit", f"--as={ADDRESS_SPACE}", "--", sys.executable, "-m", "pivoter.cli.main",
         "catalog", "serve", str(bombed), "--grpc-port", "0", "--http-port", "0"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "MALLOC_ARENA_MAX": "2"},
    )  # fmt: skip
    assert refused.returncode == 3, refused.stderr[-2000:]
    assert "alias bomb" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert time.monotonic() - started < 15

    live = tmp_path / "live"
    shutil.copytree(DATA / "crafted", live)
    process, _, http_port = _serve(live, "--poll-interval", "0.2")
    try:
        (live / "bomb.yaml").write_text(_alias_bomb())
        url = f"http://127.0.0.1:{http_port}/catalogs/live/api/v1/all"
        deadline = time.monotonic() + 20
        stale = None
        while stale is None and time.monotonic() < deadline:
            time.sleep(0.2)
            with urllib.request.urlopen(url, timeout=5) as answer:
                body = answer.read()
                stale = answer.headers.get("X-Pivoter-Stale")
        assert stale is not None, "the failed reload was never reported"
        assert "alias bomb" in stale
        assert b'"name":"etcd"' in body  # the last good catalog
        assert process.poll() is None
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        assert process.stderr is not None
        errors = process.stderr.read()
        process.stderr.close()
    assert "Traceback" not in errors
