"""A small HTTP(S) client over :mod:`http.client` for the image and http sources.

Why not :mod:`urllib.request`: its redirect handler forwards ``Authorization`` to whatever host a
server redirects to (registries redirect blob downloads to object storage), and it has no overall
deadline. This client drops credentials when a redirect changes origin, applies a per-read
timeout (a stalled server fails fast) and an overall deadline (a server that drips bytes fails
too), trusts a custom CA when given, and maps network failures to typed source errors.
"""

from __future__ import annotations

import http.client
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from urllib.parse import urljoin, urlsplit

from provisioners.errors import (
    ContentTooLargeError,
    InvalidSourceError,
    SourceUnavailableError,
    TlsVerificationError,
)

_REDIRECTS = {301, 302, 303, 307, 308}


@dataclass(frozen=True)
class TlsOptions:
    """How to verify servers: an extra CA bundle (PEM) and the escape hatch to skip checks."""

    ca_pem: bytes | None = None
    insecure_skip_verify: bool = False

    def context(self) -> ssl.SSLContext:
        """Build the SSL context: system roots plus ``ca_pem``, or no verification at all."""
        context = ssl.create_default_context()
        if self.ca_pem:
            try:
                context.load_verify_locations(cadata=self.ca_pem.decode("ascii"))
            except (ssl.SSLError, UnicodeDecodeError, ValueError) as exc:
                raise InvalidSourceError(f"the CA bundle is not valid PEM: {exc}") from exc
        if self.insecure_skip_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context


class Response:
    """An open response; read the body with :meth:`read` or :meth:`read_all`, then close."""

    def __init__(
        self,
        connection: http.client.HTTPConnection,
        response: http.client.HTTPResponse,
        url: str,
        deadline: float,
    ) -> None:
        self._connection = connection
        self._response = response
        self.url = url
        self.status = response.status
        self.headers: Message = response.headers
        self._deadline = deadline

    def read(self, size: int = -1, /) -> bytes:
        """Read up to ``size`` body bytes, failing on a stall or past the overall deadline."""
        host = urlsplit(self.url).netloc
        if time.monotonic() > self._deadline:
            raise SourceUnavailableError(f"{host} is too slow: the download passed its deadline")
        try:
            return self._response.read(size if size >= 0 else None)
        except TimeoutError as exc:
            raise SourceUnavailableError(f"{host} stalled while sending {self.url}") from exc
        except (OSError, http.client.HTTPException) as exc:
            raise SourceUnavailableError(f"reading {self.url} from {host} failed: {exc}") from exc

    def read_all(self, limit: int) -> bytes:
        """Read the whole body, refusing one longer than ``limit`` bytes."""
        chunks: list[bytes] = []
        total = 0
        while chunk := self.read(min(1 << 20, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise ContentTooLargeError(f"{self.url} returned more than {limit} bytes")
        return b"".join(chunks)

    def close(self) -> None:
        """Release the connection."""
        self._response.close()
        self._connection.close()

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class HttpClient:
    """Issues requests with timeouts, TLS options and origin-aware redirect handling."""

    def __init__(
        self, tls: TlsOptions | None = None, *, timeout: float = 30.0, deadline: float = 600.0
    ) -> None:
        self._tls = tls or TlsOptions()
        self._context: ssl.SSLContext | None = None
        self.timeout = timeout
        self.deadline = deadline

    def _connect(self, scheme: str, netloc: str) -> http.client.HTTPConnection:
        parts = urlsplit(f"//{netloc}")
        host, port = parts.hostname or "", parts.port
        if scheme == "https":
            if self._context is None:
                self._context = self._tls.context()
            return http.client.HTTPSConnection(
                host, port, timeout=self.timeout, context=self._context
            )
        if scheme == "http":
            return http.client.HTTPConnection(host, port, timeout=self.timeout)
        raise InvalidSourceError(f"unsupported URL scheme {scheme!r}: use http or https")

    def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        max_redirects: int = 5,
    ) -> Response:
        """Send a request and follow redirects; ``Authorization`` never crosses origins."""
        current = dict(headers or {})
        origin = urlsplit(url)[:2]
        deadline = time.monotonic() + self.deadline
        for _ in range(max_redirects + 1):
            parts = urlsplit(url)
            if parts[:2] != origin:
                current.pop("Authorization", None)
            target = parts.path or "/"
            if parts.query:
                target += f"?{parts.query}"
            connection = self._connect(parts.scheme, parts.netloc)
            try:
                connection.request(method, target, headers=current)
                response = connection.getresponse()
            except ssl.SSLCertVerificationError as exc:
                connection.close()
                raise TlsVerificationError(
                    f"the TLS certificate of {parts.netloc} is not trusted ({exc.verify_message});"
                    " give the CA that signed it"
                ) from exc
            except TimeoutError as exc:
                connection.close()
                raise SourceUnavailableError(
                    f"{parts.netloc} did not answer within {self.timeout:g}s"
                ) from exc
            except (OSError, http.client.HTTPException) as exc:
                connection.close()
                raise SourceUnavailableError(f"cannot reach {parts.netloc}: {exc}") from exc
            location = response.headers.get("Location")
            if response.status in _REDIRECTS and location:
                response.close()
                connection.close()
                url = urljoin(url, location)
                if response.status == 303:
                    method = "GET"
                continue
            return Response(connection, response, url, deadline)
        raise SourceUnavailableError(f"too many redirects starting from {url}")
