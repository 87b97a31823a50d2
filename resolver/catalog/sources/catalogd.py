"""A catalog source for catalogd's HTTP API (OLM v1 ``ClusterCatalog`` content).

``<base>/api/v1/all`` is streamed as JSON lines (gzip-compressed when the server agrees), each
line decoded as it arrives and the catalog built only once the whole body has been read and
checked, so a dropped or garbled stream never yields a partial catalog. ``If-Modified-Since``
avoids re-reading an unchanged catalog. ``<base>/api/v1/metas`` is queried where the server
offers it. https with a custom CA bundle and a bearer token are supported; the token must be one
that can go into a header (:func:`resolver.net.bearer_token`; the caller checks it first where it
read it, naming the file or Secret) and is never sent over plain http to a host other than
loopback unless ``insecure_send_token`` is set. Every
fetch has one :class:`resolver.net.Budget` (overall deadline, stall timeout, byte cap) under every
socket read, and lines are split in linear time with a cap on one line. Opened by
:func:`resolver.catalog.sources.open_source` for ``http://`` and ``https://`` addresses.
"""

from __future__ import annotations

import hashlib
import http.client
import ssl
import urllib.parse
from collections.abc import Iterator
from typing import Any

from resolver import safedata
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.load import charge_received, load_objects, received_budget
from resolver.catalog.model import JSON, Catalog, Origin
from resolver.catalog.parse import LIMITS as CATALOG_LIMITS
from resolver.catalog.sources.base import CatalogSourceError
from resolver.catalog.sources.stale import STALE_HEADER
from resolver.decompress import BoundedDecompressor, DecompressError, TruncatedStreamError
from resolver.net import (
    Budget,
    InsecureCredentials,
    InvalidCredential,
    LineSplitter,
    LineTooLong,
    NetError,
    UnsendableText,
    bearer_token,
    check_credential_transport,
    open_connection,
)

DEFAULT_TIMEOUT = 30.0
"""Seconds to wait for a connection or for the next bytes of a response (a stall)."""
DEFAULT_DEADLINE = 600.0
"""Seconds a whole fetch may take."""
DEFAULT_MAX_BYTES = 2 * 1024**3
"""Largest catalog body accepted, uncompressed (the largest public catalogs are ~200 MiB)."""
DEFAULT_MAX_LINE_BYTES = 256 * 1024**2
"""Largest single object accepted (bundles with inline manifests reach a few MiB)."""

_CHUNK = 1 << 16


class _Body:
    """The raw response body, read as the decompressor (or the line splitter) asks: network
    failures become :class:`CatalogSourceError`, and every byte counts in ``fetched_bytes``."""

    def __init__(
        self, source: CatalogdSource, response: http.client.HTTPResponse, url: str
    ) -> None:
        self._source = source
        self._response = response
        self._url = url

    def read(self, size: int = -1, /) -> bytes:
        try:
            raw = self._response.read1(size if size > 0 else _CHUNK)
        except NetError as err:
            raise CatalogSourceError(self._url, str(err)) from None
        except (OSError, http.client.HTTPException) as err:
            raise CatalogSourceError(self._url, f"connection dropped mid-stream: {err!r}") from None
        self._source.fetched_bytes += len(raw)
        return raw


class CatalogdSource:
    """Fetches a catalog from ``<base>/api/v1/all`` of a catalogd-compatible server."""

    def __init__(
        self,
        base_url: str,
        *,
        name: str | None = None,
        ca_file: str | None = None,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        deadline: float = DEFAULT_DEADLINE,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        insecure_send_token: bool = False,
        token_opt_in: str = "--insecure-send-token",
    ) -> None:
        self.spec = base_url
        self.base_url = base_url.rstrip("/")
        parts = urllib.parse.urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CatalogSourceError(base_url, "not an http(s) URL")
        try:
            parts.port  # noqa: B018 - raises for a port that is not a number in range
        except ValueError as err:
            raise CatalogSourceError(base_url, f"invalid port: {err}") from None
        self._parts = parts
        # Default name: the last path segment, as in catalogd's /catalogs/<name>.
        self.name = name if name is not None else parts.path.rstrip("/").rsplit("/", 1)[-1]
        self.ca_file = ca_file
        if token is not None:
            try:
                token = bearer_token(token, where="the bearer token")
            except InvalidCredential as err:
                raise CatalogSourceError(base_url, str(err)) from None
        self.token = token
        self.insecure_send_token = insecure_send_token
        """Send the token over plain http to a non-loopback host (the user's explicit opt-in)."""
        self.token_opt_in = token_opt_in
        """How the user gives that opt-in, for the error that refuses it."""
        self._check_token_transport()
        self.timeout = timeout
        self.deadline = deadline
        self.max_bytes = max_bytes
        self.fetched_bytes = 0
        """Body bytes the last fetch received on the wire (0 for a 304 Not Modified)."""
        self.stale: str | None = None
        """Why the server says the content it served at the last fetch is stale (its
        ``X-Pivoter-Stale`` header, :mod:`.stale`); None when it did not say so."""
        self.max_line_bytes = max_line_bytes
        self._digest: str | None = None
        self._last_modified: str | None = None
        self._catalog: Catalog | None = None
        self._body_digest: str | None = None

    @property
    def digest(self) -> str | None:
        """sha256 of the uncompressed body of the last fetch."""
        return self._digest

    def _budget(self) -> Budget:
        """The limits of one fetch: deadline, stall timeout and bytes on the wire."""
        return Budget(
            self.deadline,
            stall=self.timeout,
            max_bytes=self.max_bytes + (1 << 20),
            peer=self._parts.netloc,
        )

    def _check_token_transport(self) -> None:
        """Refuse a token bound for plain http on another machine without the opt-in."""
        if not self.token:
            return
        try:
            check_credential_transport(
                self.base_url,
                allowed=self.insecure_send_token,
                flag=self.token_opt_in,
                what="the bearer token",
            )
        except InsecureCredentials as err:
            raise CatalogSourceError(self.spec, str(err)) from None

    def _request(
        self, path: str, headers: dict[str, str], budget: Budget
    ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        headers = {"Accept-Encoding": "gzip", "Accept": "application/jsonl", **headers}
        if self.token:
            self._check_token_transport()
            headers["Authorization"] = f"Bearer {self.token}"
        context = None
        if self._parts.scheme == "https":
            try:
                context = ssl.create_default_context(cafile=self.ca_file)
            except (OSError, ssl.SSLError) as err:
                raise CatalogSourceError(self.spec, f"cannot load the CA file: {err}") from None
        conn = open_connection(
            self._parts.scheme,
            self._parts.hostname or "",
            self._parts.port,
            budget,
            context=context,
        )
        try:
            conn.request("GET", path, headers=headers)
            return conn, conn.getresponse()
        except (NetError, UnsendableText) as err:
            conn.close()
            raise CatalogSourceError(self.spec, str(err)) from None
        except ssl.SSLError as err:
            conn.close()
            raise CatalogSourceError(self.spec, f"TLS error: {err}") from None
        except (OSError, http.client.HTTPException) as err:
            conn.close()
            raise CatalogSourceError(self.spec, f"cannot connect: {err}") from None

    def _lines(self, response: http.client.HTTPResponse, url: str) -> Iterator[bytes]:
        """Yield the body's lines (without newline), enforcing size and line limits.

        Time (deadline, stalls) is bounded by the connection's budget under every read.
        Splitting is linear: only the unfinished last line is kept, and refused past
        ``max_line_bytes``.
        """
        encoding = (response.getheader("Content-Encoding") or "identity").lower()
        if encoding not in ("gzip", "identity"):
            raise CatalogSourceError(url, f"unsupported Content-Encoding {encoding!r}")
        body = _Body(self, response, url)
        reader = BoundedDecompressor(body, "gzip") if encoding == "gzip" else body
        total = 0
        splitter = LineSplitter(self.max_line_bytes)
        hasher = hashlib.sha256()
        while True:
            try:
                data = reader.read(_CHUNK)
            except TruncatedStreamError:
                raise CatalogSourceError(
                    url, "connection dropped mid-stream (gzip stream is incomplete)"
                ) from None
            except DecompressError as err:
                raise CatalogSourceError(url, f"bad gzip stream: {err}") from None
            if not data:
                break
            total += len(data)
            if total > self.max_bytes:
                raise CatalogSourceError(url, f"catalog is larger than {self.max_bytes} bytes")
            hasher.update(data)
            try:
                complete = splitter.feed(data)
            except LineTooLong:
                raise CatalogSourceError(
                    url, f"an object is larger than {self.max_line_bytes} bytes"
                ) from None
            yield from complete
        if splitter.finish().strip():
            raise CatalogSourceError(url, "connection dropped mid-stream (last line is incomplete)")
        self._body_digest = hasher.hexdigest()

    def _objects(
        self, response: http.client.HTTPResponse, url: str, budget: safedata.MemoryBudget
    ) -> list[tuple[JSON, Origin]]:
        objects: list[tuple[JSON, Origin]] = []
        for number, line in enumerate(self._lines(response, url), start=1):
            if not line.strip():
                continue
            try:
                # What a catalog may cost grows with what arrived, as a file's with its size: a
                # body of tiny objects is refused within its first kilobytes, not at 2 GiB.
                charge_received(budget, line)
            except safedata.SafeDataError as err:
                raise CatalogSourceError(url, f"line {number}: {err.reason}") from None
            try:
                # The same limits as an object of a catalog file (its size is capped by the
                # line splitter at max_line_bytes, as a file's by the walk).
                blob = safedata.load_json(line, limits=CATALOG_LIMITS)
            except safedata.SafeDataError as err:
                raise CatalogSourceError(url, f"line {number} is not JSON: {err.reason}") from None
            if not isinstance(blob, dict):
                raise CatalogSourceError(url, f"line {number} is not a JSON object")
            objects.append((blob, Origin(url, number)))
        return objects

    def _check_status(self, response: http.client.HTTPResponse, url: str) -> None:
        if response.status != 200:
            try:
                detail = " ".join(response.read1(512).decode("utf-8", "replace").split())
            except (NetError, OSError, http.client.HTTPException):
                detail = ""
            raise CatalogSourceError(url, f"HTTP {response.status} {response.reason}: {detail}")
        content_type = (response.getheader("Content-Type") or "").split(";")[0].strip()
        if content_type and content_type not in ("application/jsonl", "application/json"):
            raise CatalogSourceError(url, f"unexpected Content-Type {content_type!r}")

    def fetch(self) -> Catalog:
        """Fetch ``<base>/api/v1/all``; an unchanged catalog (304) returns the cached one."""
        url = f"{self.base_url}/api/v1/all"
        headers = {}
        if self._last_modified and self._catalog is not None:
            headers["If-Modified-Since"] = self._last_modified
        self.fetched_bytes = 0
        conn, response = self._request(
            self._parts.path.rstrip("/") + "/api/v1/all", headers, self._budget()
        )
        try:
            # Read on 304s too: a server can turn stale (or recover) without new content.
            self.stale = response.getheader(STALE_HEADER) or None
            if response.status == 304 and self._catalog is not None:
                return self._catalog
            self._check_status(response, url)
            budget = received_budget()
            objects = self._objects(response, url, budget)
            last_modified = response.getheader("Last-Modified")
        finally:
            response.close()
            conn.close()
        try:
            catalog = load_objects(objects, name=self.name, budget=budget)
        except CatalogLoadError as err:
            raise CatalogSourceError(url, str(err)) from None
        self._catalog = catalog
        self._last_modified = last_modified
        self._digest = self._body_digest
        return catalog

    def metas(self, *, schema: str = "", package: str = "", name: str = "") -> list[Any]:
        """Query ``<base>/api/v1/metas`` (catalogd's optional endpoint) and return the objects.

        Raises CatalogSourceError when the server does not offer the endpoint (404).
        """
        query = urllib.parse.urlencode(
            {k: v for k, v in (("schema", schema), ("package", package), ("name", name)) if v}
        )
        path = self._parts.path.rstrip("/") + "/api/v1/metas" + (f"?{query}" if query else "")
        url = f"{self.base_url}/api/v1/metas"
        conn, response = self._request(path, {}, self._budget())
        try:
            if response.status == 404:
                raise CatalogSourceError(url, "the server does not offer /api/v1/metas (HTTP 404)")
            self._check_status(response, url)
            return [blob for blob, _ in self._objects(response, url, received_budget())]
        finally:
            response.close()
            conn.close()
