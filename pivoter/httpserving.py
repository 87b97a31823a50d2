"""A threaded HTTP(S) server that runs in the background: the base of the daemon's own servers
(the content server and the admission webhook).

TLS, when a certificate is given, is TLS 1.2 or newer. ``start`` serves on a daemon thread;
``stop`` shuts it down and closes the socket.
"""

from __future__ import annotations

import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

__all__ = ["BackgroundHTTPServer"]


class BackgroundHTTPServer:
    """Serves ``handler`` on ``host:port`` (port 0: a free one), over TLS when given a cert."""

    def __init__(
        self,
        handler: type[BaseHTTPRequestHandler],
        *,
        host: str,
        port: int,
        name: str,
        tls_cert: Path | None = None,
        tls_key: Path | None = None,
    ) -> None:
        self.name = name
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.scheme = "http"
        if tls_cert is not None and tls_key is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(tls_cert, tls_key)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            self.scheme = "https"
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (useful with port 0)."""
        return int(self.httpd.server_address[1])

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, name=self.name, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.httpd.shutdown()
        self.httpd.server_close()
