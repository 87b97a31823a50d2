"""The HTTP endpoints a kubelet and Prometheus poll: ``/metrics``, ``/healthz`` and ``/readyz``.

:class:`Endpoints` serves any subset of them on one address; :class:`pivoter.runtime.Manager`
runs one for metrics and one for probes (controller-runtime's split, so the two ports can be
exposed differently). Health checks are named callables that return None when fine and raise
(or return a message) when not; a failing probe answers 500 and lists which check failed and why.
"""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from pivoter.httpserving import ConnectionLimits, HardenedHTTPServer

__all__ = ["Check", "Endpoints", "EndpointsError", "parse_address"]

log = logging.getLogger(__name__)

Check = Callable[[], "str | None"]


class EndpointsError(Exception):
    """An endpoint cannot be served (bad address, port in use); the message says which."""


def parse_address(value: str) -> tuple[str, int] | None:
    """``"host:port"``, ``":port"`` (all interfaces) or ``"0"`` (disabled, returns None)."""
    if value in ("0", ""):
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise EndpointsError(f"bind address {value!r} is not host:port, :port or 0 (disabled)")
    return host.strip("[]") or "0.0.0.0", int(port)


class Endpoints:
    """One HTTP server on one address serving metrics and/or probes."""

    def __init__(
        self,
        address: tuple[str, int],
        *,
        registry: CollectorRegistry | None = None,
        healthz: dict[str, Check] | None = None,
        readyz: dict[str, Check] | None = None,
        what: str = "endpoints",
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.registry = registry
        self.checks: dict[str, dict[str, Check]] = {}
        if healthz is not None:
            self.checks["/healthz"] = healthz
        if readyz is not None:
            self.checks["/readyz"] = readyz
        handler = _handler_for(self)
        try:
            # Idle or slow clients time out and are capped (a kubelet probe must get through).
            self._server = HardenedHTTPServer(address, handler, limits=limits, name=what)
        except OSError as exc:
            host, port = address
            if exc.errno == errno.EADDRINUSE:
                raise EndpointsError(
                    f"cannot serve {what} on {host}:{port}: the port is in use "
                    f"(pick another with the bind-address flag, or 0 to disable)"
                ) from exc
            raise EndpointsError(f"cannot serve {what} on {host}:{port}: {exc}") from exc
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (useful when asked for port 0)."""
        return int(self._server.server_address[1])

    def start(self) -> None:
        """Serve on a background thread."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="http-endpoints", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
        self._server.server_close()

    def run_checks(self, path: str) -> tuple[bool, list[str]]:
        """Run the checks of ``/healthz`` or ``/readyz``; return (all fine, one line per check)."""
        lines = []
        ok = True
        for name, check in self.checks.get(path, {}).items():
            try:
                problem = check()
            except Exception as exc:
                problem = str(exc) or type(exc).__name__
            if problem:
                ok = False
                lines.append(f"[-]{name} failed: {problem}")
            else:
                lines.append(f"[+]{name} ok")
        return ok, lines


def _handler_for(endpoints: Endpoints) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            path = url.path.rstrip("/") or "/"
            if path == "/metrics" and endpoints.registry is not None:
                self._send(200, CONTENT_TYPE_LATEST, generate_latest(endpoints.registry))
            elif path in endpoints.checks:
                ok, lines = endpoints.run_checks(path)
                verbose = "verbose" in url.query
                text = "\n".join(lines) + "\n" if verbose or not ok else ""
                text += f"{path[1:]} check {'passed' if ok else 'failed'}\n"
                self._send(200 if ok else 500, "text/plain; charset=utf-8", text.encode())
            else:
                self._send(404, "text/plain; charset=utf-8", b"not found\n")

        def _send(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            log.debug("%s %s", self.address_string(), format % args)

    return Handler
