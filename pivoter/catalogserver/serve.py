"""Run ``pivoter catalog serve``: one in-memory catalog over gRPC and HTTP, reloaded on change.

Called by :mod:`pivoter.cli.catalog_serve`. Loads the directory (refusing to start on a broken
one), starts the gRPC server (:mod:`.grpcserver`), the HTTP server (:mod:`.httpserver`) and the
reload poller (:mod:`.reload`), prints one ``serving`` line per protocol with the bound address
(so port 0 can be used), and stops cleanly on SIGINT/SIGTERM.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from dataclasses import dataclass
from types import FrameType

from pivoter.catalogserver.grpcserver import DEFAULT_MAX_MESSAGE_BYTES, build_server
from pivoter.catalogserver.httpserver import CatalogHTTPServer
from pivoter.catalogserver.reload import Reloader

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What ``pivoter catalog serve`` was asked to do."""

    directory: str
    name: str
    host: str = "127.0.0.1"
    grpc_port: int | None = 50051
    http_port: int | None = 8080
    poll_interval: float = 2.0
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES


def serve(options: ServeOptions, stop: threading.Event | None = None) -> None:
    """Serve until ``stop`` is set or the process gets SIGINT/SIGTERM.

    Raises :class:`pivoter.catalogserver.reload.SnapshotError` when the first load fails and
    OSError when a port cannot be bound.
    """
    stop = stop or threading.Event()
    reloader = Reloader(options.directory, name=options.name, poll_interval=options.poll_interval)
    grpc_server = None
    http_server = None
    try:
        if options.grpc_port is not None:
            grpc_server, port = build_server(
                reloader.view,
                address=f"{options.host}:{options.grpc_port}",
                max_message_bytes=options.max_message_bytes,
            )
            grpc_server.start()
            _announce(f"serving gRPC api.Registry on {options.host}:{port}")
        if options.http_port is not None:
            http_server = CatalogHTTPServer(
                (options.host, options.http_port),
                name=options.name,
                snapshot=lambda: reloader.current,
                metrics=reloader.metrics_registry,
            )
            http_server.serve_in_thread()
            port = http_server.server_address[1]
            _announce(
                f"serving HTTP http://{options.host}:{port}/catalogs/{options.name}/api/v1/all"
            )
        reloader.start()
        if threading.current_thread() is threading.main_thread():

            def _on_signal(_signum: int, _frame: FrameType | None) -> None:
                stop.set()

            signal.signal(signal.SIGTERM, _on_signal)
            signal.signal(signal.SIGINT, _on_signal)
        stop.wait()
    finally:
        reloader.stop()
        if http_server is not None:
            http_server.shutdown()
            http_server.server_close()
        if grpc_server is not None:
            grpc_server.stop(grace=2).wait()


def _announce(line: str) -> None:
    sys.stderr.write(f"pivoter: {line}\n")
    sys.stderr.flush()
