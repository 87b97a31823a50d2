"""Run ``pivoter catalog serve``: one in-memory catalog over gRPC and HTTP, reloaded on change.

Called by :mod:`pivoter.cli.catalog_serve`. Loads the directory (refusing to start on a broken
one), starts the gRPC server (:mod:`.grpcserver`), the HTTP server (:mod:`.httpserver`) and the
reload poller (:mod:`.reload`), prints one ``serving`` line per protocol with the bound address
(so port 0 can be used), and stops on SIGINT/SIGTERM within :data:`SHUTDOWN_SECONDS`, even while
a reload is stuck: the reload threads are daemons that shutdown does not wait for, and a shutdown
that still does not finish in time ends the process (a second signal ends it at once). Both
servers advertise a stale catalog (:meth:`.reload.Reloader.stale_reason`) to their clients.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from types import FrameType

from pivoter.catalogserver.grpcguard import GrpcLimits
from pivoter.catalogserver.grpcserver import DEFAULT_MAX_MESSAGE_BYTES, build_server
from pivoter.catalogserver.httpserver import CatalogHTTPServer
from pivoter.catalogserver.reload import Reloader
from pivoter.httpserving import ConnectionLimits

log = logging.getLogger(__name__)

SHUTDOWN_SECONDS = 5.0
"""Longest a SIGTERM/SIGINT shutdown may take before the process exits anyway."""

SIGNAL_CHECK_SECONDS = 0.25
"""How long the main thread may sleep before it runs a signal handler another thread took."""


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
    grpc_limits: GrpcLimits | None = None
    """Budgets of gRPC clients (:mod:`pivoter.catalogserver.grpcguard`; None: the defaults)."""
    http_limits: ConnectionLimits | None = None
    """Budgets of HTTP clients (:mod:`pivoter.httpserving`; None: the defaults)."""


def serve(options: ServeOptions, stop: threading.Event | None = None) -> None:
    """Serve until ``stop`` is set or the process gets SIGINT/SIGTERM.

    Raises :class:`pivoter.catalogserver.reload.SnapshotError` when the first load fails and
    OSError when a port cannot be bound.
    """
    stop = stop or threading.Event()
    reloader = Reloader(options.directory, name=options.name, poll_interval=options.poll_interval)
    signalled = threading.Event()
    grpc_server = None
    http_server = None
    try:
        if options.grpc_port is not None:
            grpc_server, port = build_server(
                reloader.view,
                # An IPv6 literal needs brackets in a gRPC target.
                address=f"[{options.host}]:{options.grpc_port}"
                if ":" in options.host
                else f"{options.host}:{options.grpc_port}",
                max_message_bytes=options.max_message_bytes,
                stale=reloader.stale_reason,
                limits=options.grpc_limits,
            )
            grpc_server.start()
            _announce(f"serving gRPC api.Registry on {options.host}:{port}")
        if options.http_port is not None:
            http_server = CatalogHTTPServer(
                (options.host, options.http_port),
                name=options.name,
                snapshot=lambda: reloader.current,
                metrics=reloader.metrics_registry,
                stale=reloader.stale_reason,
                limits=options.http_limits,
            )
            http_server.serve_in_thread()
            port = http_server.server_address[1]
            _announce(
                f"serving HTTP http://{options.host}:{port}/catalogs/{options.name}/api/v1/all"
            )
        reloader.start()
        if threading.current_thread() is threading.main_thread():

            def _on_signal(signum: int, _frame: FrameType | None) -> None:
                if signalled.is_set():
                    os._exit(128 + signum)  # a second signal: no more waiting
                signalled.set()
                stop.set()
                _exit_after(SHUTDOWN_SECONDS, 128 + signum)

            signal.signal(signal.SIGTERM, _on_signal)
            signal.signal(signal.SIGINT, _on_signal)
        # In slices: the kernel may deliver a signal to any of the process's threads, and Python
        # runs its handler only in the main thread, the next time that thread runs. A wait
        # without a timeout would then sleep through SIGTERM (the HTTP and gRPC threads and the
        # reloader take signals too).
        while not stop.wait(SIGNAL_CHECK_SECONDS):
            pass
    finally:
        reloader.stop()
        if http_server is not None:
            http_server.shutdown()
            http_server.server_close()
        if grpc_server is not None:
            grpc_server.stop(grace=2).wait()


def _exit_after(seconds: float, code: int) -> None:
    """End the process after ``seconds`` unless it has ended by then (a shutdown that hangs)."""

    def _later() -> None:
        time.sleep(seconds)
        sys.stderr.write(f"pivoter: shutdown took over {seconds:g}s; exiting now\n")
        sys.stderr.flush()
        os._exit(code)

    try:
        threading.Thread(target=_later, name="shutdown-deadline", daemon=True).start()
    except RuntimeError:
        # No address space for another thread's stack: let the kernel keep the deadline
        # (SIGALRM ends the process) instead of a traceback from the signal handler.
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(max(1, math.ceil(seconds)))


def _announce(line: str) -> None:
    sys.stderr.write(f"pivoter: {line}\n")
    sys.stderr.flush()
