"""A small HTTP(S) client over :mod:`http.client` for the image and http sources.

Why not :mod:`urllib.request`: its redirect handler forwards ``Authorization`` to whatever host a
server redirects to (registries redirect blob downloads to object storage), and it has no overall
deadline. This client drops credentials when a redirect changes origin (scheme, host or port),
never sends them over plain http to a host other than loopback unless the caller opted in, bounds
every socket wait of every request by one :class:`resolver.net.Budget` per client (a stalled
server fails after the stall timeout, a server that drips bytes fails at the overall deadline,
whether it drips the status line, the headers or the body), trusts a custom CA when given, and
maps network failures to typed source errors. One client serves one fetch, so the deadline covers
the whole fetch however many requests it makes. Every URL it requests, the first and each redirect
target, must be visible ASCII (:func:`resolver.net.credentials.url_problem`): a server's
``Location`` holding a line break or a non-ASCII character is refused in one line, not a
``UnicodeEncodeError`` traceback.
"""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from urllib.parse import urljoin, urlsplit

from provisioners.errors import (
    AuthenticationError,
    ContentTooLargeError,
    InvalidSourceError,
    SourceError,
    SourceUnavailableError,
    TlsVerificationError,
)
from resolver.net import (
    Budget,
    InsecureCredentials,
    NetError,
    TooLarge,
    UnsendableText,
    check_credential_transport,
    open_connection,
    read_body,
)
from resolver.net.credentials import same_origin, url_problem

_REDIRECTS = {301, 302, 303, 307, 308}
_CREDENTIAL_HEADERS = ("Authorization", "Cookie", "Proxy-Authorization")
_UNSIZED_READ_LIMIT = 1 << 30
"""``read()`` without a size still stops here rather than hold an endless body."""


def _net_error(exc: NetError, url: str) -> SourceError:
    """Map a transfer limit to the source error the callers expect."""
    if isinstance(exc, TooLarge):
        return ContentTooLargeError(f"{url}: {exc}")
    return SourceUnavailableError(str(exc))


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
    ) -> None:
        self._connection = connection
        self._response = response
        self.url = url
        self.status = response.status
        self.headers: Message = response.headers

    def read(self, size: int = -1, /) -> bytes:
        """Read up to ``size`` body bytes, failing on a stall or past the overall deadline."""
        host = urlsplit(self.url).netloc
        try:
            if size < 0:
                return read_body(self._response, _UNSIZED_READ_LIMIT, what=self.url)
            return self._response.read(size)
        except NetError as exc:
            raise _net_error(exc, self.url) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise SourceUnavailableError(f"reading {self.url} from {host} failed: {exc}") from exc

    def read_all(self, limit: int) -> bytes:
        """Read the whole body, refusing one longer than ``limit`` bytes."""
        try:
            return read_body(self._response, limit, what=self.url)
        except TooLarge as exc:
            raise ContentTooLargeError(f"{self.url} returned more than {limit} bytes") from exc
        except NetError as exc:
            raise _net_error(exc, self.url) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise SourceUnavailableError(f"reading {self.url} failed: {exc}") from exc

    def close(self) -> None:
        """Release the connection."""
        self._response.close()
        self._connection.close()

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class HttpClient:
    """Issues requests within one budget, with TLS options and origin-aware redirects.

    ``allow_plain_http_credentials`` is the user's explicit opt-in to send credentials over plain
    http to a host other than loopback; ``credentials_opt_in`` names it in the error that refuses
    them otherwise (None: the caller offers no opt-in, the error asks for https).
    """

    def __init__(
        self,
        tls: TlsOptions | None = None,
        *,
        timeout: float = 30.0,
        deadline: float = 600.0,
        allow_plain_http_credentials: bool = False,
        credentials_opt_in: str | None = None,
        budget: Budget | None = None,
    ) -> None:
        self._tls = tls or TlsOptions()
        self._context: ssl.SSLContext | None = None
        self.timeout = timeout
        self.deadline = deadline
        self.allow_plain_http_credentials = allow_plain_http_credentials
        self.credentials_opt_in = credentials_opt_in
        self._budget = budget
        """Shared with other clients of the same pull when given (one deadline across the places
        a pull tries, each with its own TLS options)."""

    @property
    def budget(self) -> Budget:
        """The limits shared by every request of this client, started by the first request."""
        if self._budget is None:
            self._budget = Budget(self.deadline, stall=self.timeout)
        return self._budget

    def _connect(self, scheme: str, netloc: str) -> http.client.HTTPConnection:
        parts = urlsplit(f"//{netloc}")
        try:
            host, port = parts.hostname or "", parts.port
        except ValueError as exc:
            raise InvalidSourceError(f"invalid host {netloc!r}: {exc}") from exc
        if scheme not in ("http", "https"):
            raise InvalidSourceError(f"unsupported URL scheme {scheme!r}: use http or https")
        context = None
        if scheme == "https":
            if self._context is None:
                self._context = self._tls.context()
            context = self._context
        try:
            return open_connection(scheme, host, port, self.budget, context=context)
        except NetError as exc:
            raise _net_error(exc, netloc) from exc

    def _check_credentials(self, url: str, headers: Mapping[str, str]) -> None:
        if not any(name in headers for name in _CREDENTIAL_HEADERS):
            return
        try:
            check_credential_transport(
                url,
                allowed=self.allow_plain_http_credentials,
                flag=self.credentials_opt_in,
                what="credentials",
            )
        except InsecureCredentials as exc:
            raise AuthenticationError(str(exc)) from exc

    def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        max_redirects: int = 5,
    ) -> Response:
        """Send a request and follow redirects; credentials never cross origins and never go
        over plain http to another machine without the opt-in."""
        current = dict(headers or {})
        first = url
        for hop in range(max_redirects + 1):
            problem = url_problem(url)
            if problem is not None:
                if hop == 0:
                    raise InvalidSourceError(f"the URL to fetch cannot be requested: it {problem}")
                raise SourceError(
                    f"{urlsplit(first).netloc} redirected to a URL that cannot be requested: it "
                    f"{problem}"
                )
            parts = urlsplit(url)
            if not same_origin(first, url):
                for name in _CREDENTIAL_HEADERS:
                    current.pop(name, None)
            self._check_credentials(url, current)
            target = parts.path or "/"
            if parts.query:
                target += f"?{parts.query}"
            connection = self._connect(parts.scheme, parts.netloc)
            try:
                connection.request(method, target, headers=current)
                response = connection.getresponse()
            except NetError as exc:
                connection.close()
                raise _net_error(exc, url) from exc
            except UnsendableText as exc:  # names the header, never its value
                connection.close()
                raise InvalidSourceError(str(exc)) from None
            except ssl.SSLCertVerificationError as exc:
                connection.close()
                raise TlsVerificationError(
                    f"the TLS certificate of {parts.netloc} is not trusted ({exc.verify_message});"
                    " give the CA that signed it"
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
            return Response(connection, response, url)
        raise SourceUnavailableError(f"too many redirects starting from {first}")
