"""Serve unpacked bundles at ``/bundles/<bundle>.tgz`` to callers the cluster authorizes.

This is ``status.contentURL``: like rukpak's ``bundle-reader`` role, a caller needs a bearer token
that passes a TokenReview and a SubjectAccessReview for ``get`` on the non-resource URL it asks
for (``/bundles/*`` in a ClusterRole grants every bundle). The tar.gz is streamed from the
content store; a Bundle whose content the store lacks (a new leader on another node) is unpacked
again on demand before it is served. Started by ``pivoter run`` (``--content-bind-address``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from pivoter.apis.resources import BUNDLES, TOKEN_REVIEWS
from pivoter.controllers.bundle import BundleReconciler
from pivoter.httpserving import BackgroundHTTPServer, ConnectionLimits
from pivoter.kube import Kube, KubeError, NotFound
from pivoter.kube.access import Subject, subject_access_review
from provisioners.store import BundleNotStoredError, StoreError

__all__ = ["Authorizer", "ContentServer", "KubeAuthorizer"]

log = logging.getLogger(__name__)

_PATH = re.compile(r"^/bundles/(?P<name>[a-z0-9]([-a-z0-9.]*[a-z0-9])?)\.tgz$")

UNAUTHENTICATED = "the bearer token is not valid (TokenReview did not authenticate it)"
"""The ``why`` of an :data:`Authorizer` refusing a token it could not authenticate (HTTP 401)."""

Authorizer = Callable[[str, str], tuple[bool, str]]
"""``authorize(token, path) -> (allowed, why)``."""


class KubeAuthorizer:
    """Authenticates with TokenReview and authorizes with SubjectAccessReview."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def __call__(self, token: str, path: str) -> tuple[bool, str]:
        """Whether the bearer of ``token`` may ``get`` the non-resource URL ``path``."""
        review = self.kube.create(
            TOKEN_REVIEWS,
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": token},
            },
        )
        status = review.get("status") or {}
        if not status.get("authenticated"):
            return False, UNAUTHENTICATED
        user = status.get("user") or {}
        subject = Subject(
            username=str(user.get("username", "")),
            groups=user.get("groups") or [],
            uid=str(user.get("uid", "")),
            extra=user.get("extra") or {},
        )
        allowed, _ = subject_access_review(
            self.kube, subject, non_resource={"path": path, "verb": "get"}
        )
        if allowed:
            return True, ""
        return False, f"{user.get('username', '?')} may not get {path}"


class ContentServer:
    """An HTTP server for bundle content; ``start`` runs it in a daemon thread."""

    def __init__(
        self,
        kube: Kube,
        bundles: BundleReconciler,
        *,
        host: str = "0.0.0.0",  # the daemon's Service reaches it on the pod IP
        port: int = 8443,
        authorize: Authorizer | None = None,
        tls_cert: Path | None = None,
        tls_key: Path | None = None,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.kube = kube
        self.bundles = bundles
        self.authorize: Authorizer = authorize or KubeAuthorizer(kube)
        # Bearer tokens cross this connection: serve TLS whenever a certificate is given. The
        # handshake, idle clients and the number of connections are bounded (pivoter.httpserving).
        self.server = BackgroundHTTPServer(
            _handler(self),
            host=host,
            port=port,
            name="content-server",
            tls_cert=tls_cert,
            tls_key=tls_key,
            limits=limits,
        )
        self.scheme = self.server.scheme

    @property
    def port(self) -> int:
        """The bound port (useful with port 0)."""
        return self.server.port

    def start(self) -> None:
        """Serve in a background thread."""
        self.server.start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.server.stop()

    def bundle_digest(self, name: str) -> str | None:
        """The store key of Bundle ``name``'s content, unpacking it again if the store lacks it."""
        try:
            bundle = self.kube.get(BUNDLES, name)
        except NotFound:
            return None
        if not self.bundles.is_current(bundle):
            self.bundles.reconcile(name)
            bundle = self.kube.get(BUNDLES, name)
            if not self.bundles.is_current(bundle):
                return None
        return str(bundle["status"]["digest"])


def _handler(server: ContentServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("content: " + format, *args)

        def _fail(self, status: HTTPStatus, message: str) -> None:
            body = (message + "\n").encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            match = _PATH.match(self.path)
            if match is None:
                self._fail(HTTPStatus.NOT_FOUND, "not found: paths are /bundles/<bundle>.tgz")
                return
            header = self.headers.get("Authorization", "")
            if not header.startswith("Bearer "):
                self._fail(HTTPStatus.UNAUTHORIZED, "a bearer token is required")
                return
            try:
                allowed, why = server.authorize(header.removeprefix("Bearer ").strip(), self.path)
            except KubeError as exc:
                self._fail(HTTPStatus.SERVICE_UNAVAILABLE, f"cannot review the token: {exc}")
                return
            if not allowed:
                # An unauthenticated caller gets 401 (retry with a valid token), an authenticated
                # one without the right gets 403 (ask for the bundle-reader role).
                status = HTTPStatus.UNAUTHORIZED if why == UNAUTHENTICATED else HTTPStatus.FORBIDDEN
                self._fail(status, why)
                return
            name = match.group("name")
            digest = server.bundle_digest(name)
            if digest is None:
                self._fail(HTTPStatus.NOT_FOUND, f"bundle {name} is not unpacked")
                return
            try:
                chunks = server.bundles.store.tar_gz(digest)
            except BundleNotStoredError as exc:
                self._fail(HTTPStatus.NOT_FOUND, str(exc))
                return
            except StoreError as exc:  # a stored tree the store refuses to serve
                log.error("content: cannot serve bundle %s: %s", name, exc)
                self._fail(HTTPStatus.INTERNAL_SERVER_ERROR, f"cannot serve bundle {name}: {exc}")
                return
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "application/gzip")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("ETag", f'"{digest}"')
            self.end_headers()
            try:
                for chunk in chunks:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            except StoreError as exc:
                # The headers are gone: ending without the last chunk tells the client the
                # body is incomplete, and the connection cannot carry another response.
                log.error("content: bundle %s changed while it was served: %s", name, exc)
                self.close_connection = True
                return
            self.wfile.write(b"0\r\n\r\n")

    return Handler
