"""The http source: download a tar.gz over http(s) and unpack it (rukpak ``source.http``).

Basic auth and a custom CA are supported; credentials never go over plain http to a host other
than loopback unless ``allow_plain_http_credentials`` is set, nor to another origin a redirect
leads to. The username and password must be text a basic-auth header can carry
(:func:`resolver.net.basic_credential`: the cluster side checks them where it reads the Secret,
naming it; checked again here for any other caller). Every read obeys one deadline for the
whole download (see :mod:`provisioners.httpclient`). The body must come with HTTP 200
and is streamed straight into :class:`provisioners.unpack.Unpacker` (gzip, zstd or plain tar,
detected from the first bytes). The resolved source is the URL and the revision is the sha256 of
the bytes received, so a changed tarball shows as a new revision. Called via
:func:`provisioners.sources.fetch`.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from provisioners.errors import (
    AuthenticationError,
    ContentTooLargeError,
    InvalidSourceError,
    SourceError,
    SourceNotFoundError,
    SourceUnavailableError,
)
from provisioners.httpclient import HttpClient, Response, TlsOptions
from provisioners.sources.base import FetchOptions, FetchResult
from provisioners.unpack import Unpacker
from resolver.net import InvalidCredential, basic_credential, is_loopback

HTTP_CREDENTIALS_OPT_IN = "spec.source.http.auth.insecureSendCredentials"
"""The field that allows basic credentials over plain http to another machine."""


@dataclass(frozen=True)
class HttpSpec:
    """A tarball URL and how to authenticate (rukpak ``source.http`` plus a CA)."""

    url: str
    username: str | None = None
    password: str | None = None
    ca_pem: bytes | None = None
    insecure_skip_tls_verify: bool = False
    allow_plain_http_credentials: bool = False
    """Send the credentials over plain http to a host other than loopback (explicit opt-in)."""

    def __repr__(self) -> str:
        return f"HttpSpec(url={self.url!r}, username={self.username!r}, password=<redacted>)"


class _HashingReader:
    """Hashes and counts the body as the unpacker reads it."""

    def __init__(self, response: Response, limit: int) -> None:
        self._response = response
        self._limit = limit
        self.sha256 = hashlib.sha256()
        self.count = 0

    def read(self, size: int = -1, /) -> bytes:
        data = self._response.read(size)
        self.count += len(data)
        if self.count > self._limit:
            raise ContentTooLargeError(
                f"{self._response.url} sent more than {self._limit} bytes (max_total_bytes)"
            )
        self.sha256.update(data)
        return data


class HttpSource:
    """Fetches a bundle tarball over http(s)."""

    def fetch(self, spec: HttpSpec, dest: Path, options: FetchOptions) -> FetchResult:
        """Download ``spec.url`` and unpack it into ``dest``."""
        parts = urlsplit(spec.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidSourceError(f"{spec.url!r} is not an http(s) URL")
        warnings = []
        headers = {"Accept": "application/gzip, application/x-gzip, application/octet-stream"}
        if spec.username is not None:
            if parts.scheme == "http" and not is_loopback(parts.hostname):
                warnings.append(
                    f"credentials for {parts.hostname} are sent over plain http; use https"
                )
            try:
                username = basic_credential(
                    spec.username, where="the http source's username", part="username"
                )
                password = basic_credential(
                    spec.password or "", where="the http source's password", part="password"
                )
            except InvalidCredential as exc:
                raise InvalidSourceError(str(exc)) from None
            raw = f"{username}:{password}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(raw).decode()
        client = HttpClient(
            TlsOptions(spec.ca_pem, spec.insecure_skip_tls_verify),
            timeout=options.timeout_seconds,
            deadline=options.deadline_seconds,
            allow_plain_http_credentials=spec.allow_plain_http_credentials,
            credentials_opt_in=HTTP_CREDENTIALS_OPT_IN,
        )
        with client.request("GET", spec.url, headers) as response:
            status = response.status
            if status == 401:
                raise AuthenticationError(
                    f"{parts.netloc} requires authentication for {spec.url}"
                    + (" and rejected the credentials" if spec.username else "; none were given")
                )
            if status == 403:
                raise AuthenticationError(f"{parts.netloc} denied access to {spec.url}")
            if status == 404:
                raise SourceNotFoundError(f"{spec.url} does not exist (HTTP 404)")
            if status == 429 or status >= 500:
                raise SourceUnavailableError(f"{parts.netloc} failed with HTTP {status}")
            if status != 200:
                raise SourceError(f"{spec.url} answered HTTP {status}; expected 200 with a tar.gz")
            body = _HashingReader(response, options.limits.max_total_bytes)
            unpacker = Unpacker(dest, options.limits, deadline=client.budget)
            unpacker.apply(body)
            # Drain the tar's trailing padding so the digest covers every byte sent.
            while body.read(1 << 16):
                pass
            unpacker.finish()
        digest = f"sha256:{body.sha256.hexdigest()}"
        return FetchResult(
            resolved_source={"type": "http", "http": {"url": spec.url}},
            revision=digest,
            warnings=warnings,
        )
