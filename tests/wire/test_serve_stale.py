"""``pivoter catalog serve`` when its directory breaks: the reload loop survives every failure
(malformed file, FIFO, unreadable file, an exception in a reload step, a reload that never
finishes), keeps serving the last good catalog, says so (metrics, log, the ``X-Pivoter-Stale``
header and ``x-pivoter-stale`` gRPC metadata, read back by our own clients), picks up the fix,
and stops promptly on SIGTERM even while a reload is stuck."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

import pivoter.catalogserver.reload as reload_module
from pivoter.catalogserver.grpcserver import build_server
from pivoter.catalogserver.httpserver import CatalogHTTPServer
from pivoter.catalogserver.reload import Reloader
from resolver.catalog.registryapi import registry_pb2 as api
from resolver.catalog.sources import CatalogdSource, RegistrySource
from resolver.catalog.sources.stale import STALE_HEADER, STALE_METADATA
from tests.polling import wait_for
from tests.wire.conftest import DATA

# Waits on purpose (deadlines, stalled and dripping peers, floods): in CI, not the inner loop.
pytestmark = pytest.mark.slow

NAME = "live"
_PIVOTER = (sys.executable, "-m", "pivoter.cli.main")
REDIS = (
    "schema: olm.package\nname: redis\ndefaultChannel: stable\n---\n"
    "schema: olm.channel\npackage: redis\nname: stable\nentries:\n  - name: redis.v1.0.0\n"
    "---\nschema: olm.bundle\npackage: redis\nname: redis.v1.0.0\nimage: example.com/r:1\n"
    "properties:\n  - {type: olm.package, value: {packageName: redis, version: 1.0.0}}\n"
)


class StaleServer:
    """Reloader + gRPC + HTTP in this process, wired as ``serve()`` wires them."""

    def __init__(self, directory: Path, *, reload_timeout: float = 60.0) -> None:
        self.directory = directory
        self.reloader = Reloader(
            str(directory), name=NAME, poll_interval=0.05, reload_timeout=reload_timeout
        )
        self.grpc, port = build_server(
            self.reloader.view, address="127.0.0.1:0", stale=self.reloader.stale_reason
        )
        self.grpc.start()
        self.target = f"127.0.0.1:{port}"
        self.http = CatalogHTTPServer(
            ("127.0.0.1", 0),
            name=NAME,
            snapshot=lambda: self.reloader.current,
            metrics=self.reloader.metrics_registry,
            stale=self.reloader.stale_reason,
        )
        self.http.serve_in_thread()
        self.root_url = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.base_url = f"{self.root_url}/catalogs/{NAME}"
        self.channel = grpc.insecure_channel(self.target)
        self.reloader.start()

    def close(self) -> None:
        self.channel.close()
        self.reloader.stop()
        self.http.shutdown()
        self.http.server_close()
        self.grpc.stop(grace=None).wait()

    # ---------------------------------------------------------------- what clients see

    def http_get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any, bytes]:
        request = urllib.request.Request(self.base_url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as err:
            return err.code, err.headers, err.read()

    def grpc_stale(self) -> tuple[list[str], str | None]:
        """Package names and the stale metadata of one ListPackages call."""
        call = self.channel.unary_stream(
            "/api.Registry/ListPackages",
            request_serializer=api.ListPackageRequest.SerializeToString,
            response_deserializer=api.PackageName.FromString,
        )(api.ListPackageRequest(), timeout=10)
        names = sorted(m.name for m in call)
        metadata = dict(call.initial_metadata())
        return names, metadata.get(STALE_METADATA)

    def metric(self, name: str) -> float:
        """The value of one series: ``name`` with its labels, or without them (catalog "live")."""
        if "{" not in name:
            name += f'{{catalog="{NAME}"}}'
        with urllib.request.urlopen(self.root_url + "/metrics", timeout=10) as response:
            for line in response.read().decode().splitlines():
                if line.split(" ")[0] == name:
                    return float(line.rsplit(" ", 1)[1])
        raise AssertionError(f"{name} not in /metrics")

    def packages(self) -> list[str]:
        return sorted(p.name for p in self.reloader.current.catalog.packages)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[StaleServer]:
    directory = tmp_path / NAME
    shutil.copytree(DATA / "crafted", directory)
    started = StaleServer(directory)
    yield started
    started.close()


GOOD = ["etcd", "prometheus"]


def _assert_stale_everywhere(server: StaleServer, *needles: str) -> None:
    """The last good catalog is served, and every channel says it is stale and why."""
    assert server.reloader._thread is not None
    assert server.reloader._thread.is_alive()
    reason = server.reloader.stale_reason()
    assert reason is not None
    for needle in needles:
        assert needle in reason, reason
    # HTTP: the body is the last good catalog, the header says why.
    status, headers, body = server.http_get("/api/v1/all")
    assert status == 200
    assert b'"name":"etcd"' in body
    header = headers.get(STALE_HEADER)
    assert header is not None
    assert needles[0] in header, header
    status, headers, _ = server.http_get("/api/v1/metas?schema=olm.package")
    assert status == 200
    assert headers.get(STALE_HEADER) == header
    # ... on a 304 as well: a client with the same content still learns it is stale.
    status, headers, _ = server.http_get(
        "/api/v1/all", {"If-Modified-Since": headers.get("Last-Modified") or ""}
    )
    assert status == 304
    assert headers.get(STALE_HEADER) == header
    # gRPC: the metadata says the same.
    names, metadata = server.grpc_stale()
    assert names == GOOD
    assert metadata == header
    # Our own clients read it.
    http_source = CatalogdSource(server.base_url)
    assert sorted(p.name for p in http_source.fetch().packages) == GOOD
    assert http_source.stale == header
    grpc_source = RegistrySource(f"grpc://{server.target}")
    assert sorted(p.name for p in grpc_source.fetch().packages) == GOOD
    assert grpc_source.stale == header
    # Metrics.
    assert server.metric("pivoter_catalog_stale") == 1
    assert server.metric("pivoter_catalog_reload_last_success") == 0


def _assert_current(server: StaleServer, packages: list[str]) -> None:
    wait_for(
        lambda: server.reloader.stale_reason() is None,
        what="the stale state to clear",
        timeout=10.0,
        interval=0.05,
    )
    assert server.packages() == packages
    _, headers, _ = server.http_get("/api/v1/all")
    assert headers.get(STALE_HEADER) is None
    names, metadata = server.grpc_stale()
    assert names == packages
    assert metadata is None
    source = CatalogdSource(server.base_url)
    source.fetch()
    assert source.stale is None
    assert server.metric("pivoter_catalog_stale") == 0
    assert server.metric("pivoter_catalog_reload_last_success") == 1


def _touch_later(path: Path) -> None:
    """Rewrite ``path`` so that the directory's signature moves (mtime has ns resolution)."""
    time.sleep(0.01)
    path.write_text(path.read_text())


def test_a_malformed_file_is_reported_stale_then_the_fix_is_picked_up(
    server: StaleServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="pivoter.catalogserver.reload")
    (server.directory / "broken.yaml").write_text("schema: [unterminated\n")
    wait_for(server.reloader.stale_reason, what="the reload to fail", timeout=10.0, interval=0.05)
    _assert_stale_everywhere(server, "broken.yaml")
    assert server.metric('pivoter_catalog_reload_errors_total{catalog="live",kind="invalid"}') >= 1
    assert any("keeping the last good catalog" in r.getMessage() for r in caplog.records)
    # The fix: a good edit replaces the broken one.
    (server.directory / "broken.yaml").write_text(REDIS)
    _assert_current(server, [*GOOD, "redis"])


def test_a_fifo_is_refused_without_blocking_the_reload(server: StaleServer) -> None:
    os.mkfifo(server.directory / "pipe.yaml")
    wait_for(server.reloader.stale_reason, what="the reload to fail", timeout=10.0, interval=0.05)
    _assert_stale_everywhere(server, "pipe.yaml", "FIFO")
    (server.directory / "pipe.yaml").unlink()
    # Back to exactly the content served: no reload needed, but no longer stale.
    _assert_current(server, GOOD)


def test_an_unreadable_file_is_reported_stale(server: StaleServer) -> None:
    # A dangling link (root reads any file whatever its mode) and a link to a device.
    os.symlink("nowhere.yaml", server.directory / "dangling.yaml")
    wait_for(server.reloader.stale_reason, what="the reload to fail", timeout=10.0, interval=0.05)
    _assert_stale_everywhere(server, "dangling.yaml")
    (server.directory / "dangling.yaml").unlink()
    os.symlink("/dev/zero", server.directory / "zero.yaml")
    wait_for(
        lambda: "zero.yaml" in (server.reloader.stale_reason() or ""),
        what="the device link",
        timeout=10.0,
        interval=0.05,
    )
    _assert_stale_everywhere(server, "zero.yaml", "leaves the catalog root")
    (server.directory / "zero.yaml").unlink()
    (server.directory / "redis.yaml").write_text(REDIS)
    _assert_current(server, [*GOOD, "redis"])


@pytest.mark.parametrize("step", ["validate", "load_served", "directory_signature"])
def test_an_exception_in_a_reload_step_keeps_the_loop_alive(
    server: StaleServer, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    real = getattr(reload_module, step)
    broken = threading.Event()
    broken.set()

    def failing(*args: Any, **kwargs: Any) -> Any:
        if broken.is_set():
            raise RuntimeError(f"injected failure in {step}")
        return real(*args, **kwargs)

    monkeypatch.setattr(reload_module, step, failing)
    (server.directory / "redis.yaml").write_text(REDIS)
    wait_for(server.reloader.stale_reason, what="the reload to fail", timeout=10.0, interval=0.05)
    _assert_stale_everywhere(server, "injected failure", "RuntimeError")
    kind = 'pivoter_catalog_reload_errors_total{catalog="live",kind="unexpected"}'
    assert server.metric(kind) >= 1
    # The code is fixed and the directory edited again: the next poll picks it up.
    broken.clear()
    _touch_later(server.directory / "redis.yaml")
    _assert_current(server, [*GOOD, "redis"])


def test_a_stuck_reload_is_reported_and_the_loop_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / NAME
    shutil.copytree(DATA / "crafted", directory)
    server = StaleServer(directory, reload_timeout=0.5)
    try:
        release = threading.Event()
        real = reload_module.load_snapshot

        def stuck(root: str, *, name: str) -> Any:
            release.wait(30)
            return real(root, name=name)

        monkeypatch.setattr(reload_module, "load_snapshot", stuck)
        (directory / "redis.yaml").write_text(REDIS)
        wait_for(
            server.reloader.stale_reason,
            what="the reload to be reported stuck",
            timeout=10.0,
            interval=0.05,
        )
        _assert_stale_everywhere(server, "without finishing")
        assert (
            server.metric('pivoter_catalog_reload_errors_total{catalog="live",kind="stuck"}') == 1
        )
        release.set()
        _assert_current(server, [*GOOD, "redis"])
        # stop() does not wait for a reload that never ends.
        release.clear()
        _touch_later(directory / "redis.yaml")
        wait_for(
            server.reloader.stale_reason,
            what="the second reload to be reported stuck",
            timeout=10.0,
            interval=0.05,
        )
        started = time.monotonic()
        server.reloader.stop()
        assert time.monotonic() - started < 3
    finally:
        release.set()
        server.close()


# ------------------------------------------------------------------ the command, end to end

_STUCK_SERVE = """
import pathlib, sys, threading
import pivoter.catalogserver.reload as reload
real = reload.load_snapshot
calls = []

def load_snapshot(root, *, name):
    if calls:  # every reload after the first load blocks for good, like a read of a FIFO
        pathlib.Path(sys.argv[1]).write_text("stuck")
        threading.Event().wait()
    calls.append(1)
    return real(root, name=name)

reload.load_snapshot = load_snapshot
from pivoter.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


_SIGNAL_IN_A_THREAD = """
import pathlib, signal, sys, threading, time

def later():  # once the test says so, SIGTERM arrives in this thread, not the main one
    while not pathlib.Path(sys.argv[1]).exists():
        time.sleep(0.02)
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

threading.Thread(target=later, daemon=True).start()
from pivoter.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def _start(args: list[str], *, script: str | None = None) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-c", script, *args] if script else [sys.executable, *args]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    line = process.stderr.readline()
    assert "serving HTTP" in line, line
    return process, line.rsplit(" ", 1)[1].strip()


def _serve_args(directory: Path) -> list[str]:
    return [
        "catalog",
        "serve",
        str(directory),
        "--grpc-port",
        "-1",
        "--http-port",
        "0",
        "--poll-interval",
        "0.1",
    ]


def test_cli_serve_reports_stale_over_http_and_clears_after_the_fix(tmp_path: Path) -> None:
    directory = tmp_path / NAME
    shutil.copytree(DATA / "crafted", directory)
    process, url = _start(["-m", "pivoter.cli.main", *_serve_args(directory)])
    try:
        header = lambda: urllib.request.urlopen(url, timeout=10).headers.get(STALE_HEADER)  # noqa: E731
        assert header() is None
        (directory / "broken.yaml").write_text("schema: [unterminated\n")
        assert "broken.yaml" in wait_for(
            header, what="the stale header", timeout=10.0, interval=0.05
        )
        # A client command says so too, and still prints the (last good) catalog.
        rendered = subprocess.run(
            [*_PIVOTER, "catalog", "render", url.removesuffix("/api/v1/all")],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert rendered.returncode == 0, rendered.stderr
        assert '"etcd"' in rendered.stdout
        assert "serves stale content" in rendered.stderr
        assert "broken.yaml" in rendered.stderr
        (directory / "broken.yaml").write_text(REDIS)
        wait_for(
            lambda: header() is None, what="the stale header to go", timeout=10.0, interval=0.05
        )
        with urllib.request.urlopen(url, timeout=10) as response:
            assert b'"name":"redis"' in response.read()
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        assert process.stderr is not None
        errors = process.stderr.read()
        process.stderr.close()
    assert "Traceback" not in errors
    assert "keeping the last good catalog" in errors


def test_sigterm_stops_the_server_while_a_reload_is_stuck(tmp_path: Path) -> None:
    directory = tmp_path / NAME
    shutil.copytree(DATA / "crafted", directory)
    marker = tmp_path / "stuck"
    process, url = _start([str(marker), *_serve_args(directory)], script=_STUCK_SERVE)
    try:
        (directory / "redis.yaml").write_text(REDIS)
        wait_for(marker.exists, what="a reload to get stuck", timeout=10.0, interval=0.05)
        with urllib.request.urlopen(url, timeout=10) as response:  # still serving
            assert b'"name":"etcd"' in response.read()
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)
        assert time.monotonic() - started < 6
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stderr is not None
        errors = process.stderr.read()
        process.stderr.close()
    assert "Traceback" not in errors


def test_sigterm_stops_the_server_whichever_thread_the_kernel_hands_it_to(
    tmp_path: Path,
) -> None:
    """The kernel delivers a process signal to any thread that does not block it. Python runs
    the handler in the main thread, which must therefore not sleep where only its own signals
    wake it (seen: a server that kept running after SIGTERM, about once in 60 starts)."""
    directory = tmp_path / NAME
    shutil.copytree(DATA / "crafted", directory)
    marker = tmp_path / "signal"
    process, url = _start([str(marker), *_serve_args(directory)], script=_SIGNAL_IN_A_THREAD)
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            assert b'"name":"etcd"' in response.read()
        marker.touch()
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stderr is not None
        errors = process.stderr.read()
        process.stderr.close()
    assert "Traceback" not in errors
