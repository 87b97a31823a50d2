"""The HTTP side of ``pivoter catalog serve``: catalogd's catalog API for one catalog.

Serves ``/catalogs/<name>/api/v1/all`` and ``/catalogs/<name>/api/v1/metas`` as catalogd does
(operator-controller ``internal/catalogd/server/handlers.go``): GET and HEAD only (405 otherwise),
``application/jsonl`` bodies, ``Last-Modified`` with ``If-Modified-Since`` (304) and
``If-Unmodified-Since`` (412), gzip when asked and the body is over 1400 bytes, 400 for a name
that is not a DNS-1123 subdomain or an unknown ``metas`` parameter, 404 for another catalog. Also
``/metrics`` (prometheus) and ``/healthz``. While the catalog served is stale (the directory's
last reload failed), ``/api/v1/all`` and ``/api/v1/metas`` answers (304s included) carry the
reason in the ``X-Pivoter-Stale`` header (:mod:`resolver.catalog.sources.stale`). Started by
:mod:`pivoter.catalogserver.serve` for one catalog, and by ``pivoter run`` for every ClusterCatalog
it serves (``catalogs=``: a lookup by name, :mod:`pivoter.olmv1`).
"""

from __future__ import annotations

import email.utils
import gzip
import re
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from pivoter.catalogserver import ui
from pivoter.catalogserver.reload import Snapshot
from pivoter.httpserving import ConnectionLimits, HardenedHTTPServer
from resolver.catalog.sources.stale import STALE_HEADER, encode_reason

GZIP_MIN_BYTES = 1400
"""catalogd's gzip handler leaves smaller bodies uncompressed."""

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_ROUTE = re.compile(r"^/catalogs/([^/]+)/api/v1/(all|metas)$")
_METAS_PARAMS = frozenset({"schema", "package", "name"})


def dns1123_subdomain_errors(name: str) -> list[str]:
    """Return why ``name`` is not a DNS-1123 subdomain (the messages Kubernetes gives)."""
    errors = []
    if len(name) > 253:
        errors.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(name):
        errors.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    return errors


class CatalogHTTPServer(HardenedHTTPServer):
    """A :class:`~pivoter.httpserving.HardenedHTTPServer` (no client can take it: budgets per
    connection, caps per peer, ``limits``) that knows the catalog name and how to get the
    current snapshot."""

    def __init__(
        self,
        address: tuple[str, int],
        *,
        name: str = "",
        snapshot: Callable[[], Snapshot] | None = None,
        metrics: CollectorRegistry | None = None,
        stale: Callable[[], str | None] | None = None,
        catalogs: Callable[[str], Snapshot | None] | None = None,
        limits: ConnectionLimits | None = None,
    ) -> None:
        super().__init__(address, _Handler, limits=limits, name="catalog-http")
        self.catalog_name = name
        self.snapshot = snapshot
        self.metrics = metrics
        self.stale = stale
        """Why the catalog served is stale (None: it is current); sent as a header."""
        self.catalogs = catalogs
        """Serve every catalog this lookup knows (None: only ``name``, from ``snapshot``)."""

    def snapshot_for(self, catalog: str) -> Snapshot | None:
        """The snapshot served under ``catalog``, or None (404)."""
        if self.catalogs is not None:
            return self.catalogs(catalog)
        if catalog != self.catalog_name or self.snapshot is None:
            return None
        return self.snapshot()

    def serve_in_thread(self) -> threading.Thread:
        """Start serving in a daemon thread and return it."""
        thread = threading.Thread(target=self.serve_forever, name="catalog-http", daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    server: CatalogHTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "pivoter"

    def log_message(self, format: str, *args: object) -> None:
        # Request logs would drown the reload messages; errors are still reported.
        return

    def do_GET(self) -> None:
        """Answer GET."""
        self._dispatch(head=False)

    def do_HEAD(self) -> None:
        """Answer HEAD (headers of the GET answer, no body)."""
        self._dispatch(head=True)

    def _not_allowed(self) -> None:
        self._text(HTTPStatus.METHOD_NOT_ALLOWED, "Method Not Allowed")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed

    def _text(self, status: HTTPStatus, message: str, *, head: bool = False) -> None:
        # Go's http.Error: plain text, message plus newline, nosniff.
        body = (message + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _dispatch(self, *, head: bool) -> None:
        url = urlsplit(self.path)
        if url.path == "/metrics" and self.server.metrics is not None:
            self._send(HTTPStatus.OK, generate_latest(self.server.metrics), CONTENT_TYPE_LATEST)
            return
        if (url.path == "/ui" or url.path.startswith("/ui/")) and self.server.snapshot:
            snap = self.server.snapshot()
            page = ui.render(url.path, snap.catalog, self.server.catalog_name)
            self._send(page.status, page.body, page.content_type, head=head)
            return
        if url.path == "/healthz":
            self._send(HTTPStatus.OK, b"ok\n", "text/plain; charset=utf-8", head=head)
            return
        route = _ROUTE.match(url.path)
        if route is None:
            self._text(HTTPStatus.NOT_FOUND, "404 page not found", head=head)
            return
        catalog, endpoint = route.groups()
        errors = dns1123_subdomain_errors(catalog)
        if errors:
            self._text(HTTPStatus.BAD_REQUEST, "invalid catalog name: " + "; ".join(errors))
            return
        params = parse_qs(url.query, keep_blank_values=True)
        if endpoint == "metas" and not set(params) <= _METAS_PARAMS:
            self._text(HTTPStatus.BAD_REQUEST, "400 Bad Request", head=head)
            return
        served = self.server.snapshot_for(catalog)
        if served is None:
            self._text(HTTPStatus.NOT_FOUND, "404 Not Found", head=head)
            return
        snap = served
        if self._not_modified(snap.last_modified):
            return
        if endpoint == "all" or not any(v and v[0] for v in params.values()):
            self._send_all(snap, head=head)
            return
        wanted = {k: v[0] for k, v in params.items() if v and v[0]}
        body = b"".join(
            snap.select(lambda line: all(getattr(line, k) == v for k, v in wanted.items()))
        )
        self._send(HTTPStatus.OK, body, "application/jsonl", head=head, snap=snap)

    def _send_all(self, snap: Snapshot, *, head: bool) -> None:
        """Send the whole catalog: the stored gzip body as is, or decompressed for clients that
        do not take gzip (HEAD never decompresses)."""
        gzipped = self._accepts_gzip() and snap.jsonl_size >= GZIP_MIN_BYTES
        self._headers(HTTPStatus.OK, "application/jsonl", snap=snap, gzipped=gzipped)
        length = len(snap.jsonl_gzip) if gzipped else snap.jsonl_size
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if head:
            return
        if gzipped:
            self.wfile.write(snap.jsonl_gzip)
            return
        for chunk in snap.text_chunks():  # never the whole text at once
            self.wfile.write(chunk)

    def _accepts_gzip(self) -> bool:
        return "gzip" in self.headers.get("Accept-Encoding", "")

    def _headers(
        self, status: HTTPStatus, content_type: str, *, snap: Snapshot | None, gzipped: bool
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if snap is not None:
            modified = email.utils.formatdate(snap.last_modified, usegmt=True)
            self.send_header("Last-Modified", modified)
            self.send_header("Vary", "Accept-Encoding")
            self._stale_header()
        if gzipped:
            self.send_header("Content-Encoding", "gzip")

    def _not_modified(self, last_modified: int) -> bool:
        """Evaluate the conditional headers as Go's http.ServeContent does."""
        unmodified_since = self._header_time("If-Unmodified-Since")
        if unmodified_since is not None and last_modified > unmodified_since:
            self.send_response(HTTPStatus.PRECONDITION_FAILED)
            self._stale_header()
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True
        modified_since = self._header_time("If-Modified-Since")
        if modified_since is not None and last_modified <= modified_since:
            self.send_response(HTTPStatus.NOT_MODIFIED)
            self.send_header("Last-Modified", email.utils.formatdate(last_modified, usegmt=True))
            self.send_header("Vary", "Accept-Encoding")
            self._stale_header()
            self.end_headers()
            return True
        return False

    def _stale_header(self) -> None:
        reason = self.server.stale() if self.server.stale is not None else None
        if reason:
            self.send_header(STALE_HEADER, encode_reason(reason))

    def _header_time(self, name: str) -> int | None:
        value = self.headers.get(name)
        if not value:
            return None
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None  # Go ignores unparsable dates
        return int(parsed.timestamp())

    def _send(
        self,
        status: HTTPStatus,
        body: bytes,
        content_type: str,
        *,
        head: bool = False,
        snap: Snapshot | None = None,
    ) -> None:
        gzipped = self._accepts_gzip() and len(body) >= GZIP_MIN_BYTES
        if gzipped:
            body = gzip.compress(body, mtime=0)
        self._headers(status, content_type, snap=snap, gzipped=gzipped)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)
