"""Fixtures for the wire tests: the real ``opm serve`` and our servers on free 127.0.0.1 ports."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from pivoter.catalogserver.grpcguard import GrpcLimits
from pivoter.catalogserver.grpcserver import build_server
from pivoter.catalogserver.httpserver import CatalogHTTPServer
from pivoter.catalogserver.reload import Reloader
from pivoter.httpserving import ConnectionLimits
from tests.ports import free_port
from tests.tools import tool

DATA = Path(__file__).resolve().parents[1] / "data" / "wire"
CATALOGS = sorted(p.name for p in DATA.iterdir() if p.is_dir())


class OpmServer:
    """``opm serve DIR`` on a free port; stopped by :meth:`close`."""

    def __init__(self, directory: Path, tmp: Path) -> None:
        self.port = free_port()
        self.log = (tmp / f"opm-{self.port}.log").open("w")
        # opm listens on ":PORT" (every interface) and has no flag to change it; its pprof
        # endpoint is kept on loopback.
        self.process = subprocess.Popen(
            [
                str(tool("opm")),
                "serve",
                str(directory),
                "-p",
                str(self.port),
                "--pprof-addr",
                f"127.0.0.1:{free_port()}",
                "--termination-log",
                str(tmp / "termination-log"),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.target = f"127.0.0.1:{self.port}"
        channel = grpc.insecure_channel(self.target)
        try:
            grpc.channel_ready_future(channel).result(timeout=120)
        except grpc.FutureTimeoutError:
            self.close()
            pytest.fail(f"opm serve {directory} did not become ready; see {self.log.name}")
        finally:
            channel.close()

    def close(self) -> None:
        """Stop opm."""
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


class PivoterServer:
    """Our gRPC and HTTP servers over one directory, in this process."""

    def __init__(
        self,
        directory: Path,
        *,
        poll_interval: float = 3600.0,
        grpc_limits: GrpcLimits | None = None,
        http_limits: ConnectionLimits | None = None,
    ) -> None:
        self.reloader = Reloader(str(directory), name=directory.name, poll_interval=poll_interval)
        self.grpc, port = build_server(
            self.reloader.view, address="127.0.0.1:0", limits=grpc_limits
        )
        self.grpc.start()
        self.target = f"127.0.0.1:{port}"
        self.port = port
        self.http = CatalogHTTPServer(
            ("127.0.0.1", 0),
            name=directory.name,
            snapshot=lambda: self.reloader.current,
            metrics=self.reloader.metrics_registry,
            limits=http_limits,
        )
        self.http.serve_in_thread()
        self.base_url = f"http://127.0.0.1:{self.http.server_address[1]}/catalogs/{directory.name}"

    def close(self) -> None:
        """Stop both servers."""
        self.reloader.stop()
        self.http.shutdown()
        self.http.server_close()
        self.grpc.stop(grace=None).wait()


@pytest.fixture
def opm_server(tmp_path: Path) -> Iterator[Callable[[Path], OpmServer]]:
    """Start ``opm serve`` on a directory (stopped after the test)."""
    started: list[OpmServer] = []

    def start(directory: Path) -> OpmServer:
        server = OpmServer(directory, tmp_path)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


@pytest.fixture
def pivoter_server() -> Iterator[Callable[..., PivoterServer]]:
    """Start our servers on a directory (stopped after the test)."""
    started: list[PivoterServer] = []

    def start(directory: Path, **kwargs: Any) -> PivoterServer:
        server = PivoterServer(directory, **kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


def run_in_thread(target: Callable[[], None]) -> threading.Thread:
    """Run ``target`` in a daemon thread (for the misbehaving test servers)."""
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread
