"""A minimal OCI Distribution (Registry HTTP API v2) pull client for the image source.

Handles the two auth schemes registries use: a ``Bearer`` challenge (token from the realm, with
basic credentials if a pull secret has them, anonymous otherwise) and a ``Basic`` challenge.
Manifests and blobs are verified against their digests; error responses are mapped to typed
source errors (missing tag, missing repository, denied, server failure).

What the registry sends back and pivoter then sends out is checked where it arrives
(:mod:`resolver.net.credentials`): the token the token service answers must be a bearer token
(visible ASCII), and the challenge's ``realm`` an http(s) URL of visible ASCII, its ``service`` and
``scope`` free of control characters, so a hostile registry gets a one-line refusal, not a
traceback or a header of its own making; the token is never shown.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from typing import IO, Any
from urllib.parse import urlencode, urlsplit

from provisioners.errors import (
    AuthenticationError,
    IntegrityError,
    SourceError,
    SourceNotFoundError,
    SourceUnavailableError,
)
from provisioners.httpclient import HttpClient, Response
from provisioners.registries.auth import BasicCredentials
from provisioners.registries.reference import ImageReference
from resolver import safedata
from resolver.net import Budget, InvalidCredential, bearer_token
from resolver.net.credentials import header_problem, url_problem

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEX_TYPES = (OCI_INDEX, DOCKER_LIST)
MANIFEST_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
_ACCEPT = ", ".join((*INDEX_TYPES, *MANIFEST_TYPES))
MAX_MANIFEST_BYTES = 4 << 20
_CHALLENGE_PARAM = re.compile(r'(?<!\w)(\w+)="([^"]*)"')
"""``key="value"`` of a ``WWW-Authenticate`` challenge. A key starts where a word does (the
look-behind): the header is the registry's, and unanchored the search tried every letter of a
long word as a start, quadratic in its length (64 KiB, what a header line may hold: seconds of
CPU with the GIL held)."""


def challenge_params(challenge: str) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate`` challenge (``realm``, ``service``, ...)."""
    return dict(_CHALLENGE_PARAM.findall(challenge))


def digest_of(data: bytes, algorithm: str = "sha256") -> str:
    """The ``algorithm:hex`` digest of ``data``."""
    return f"{algorithm}:{hashlib.new(algorithm, data).hexdigest()}"


def _algorithm(digest: str) -> str:
    algorithm = digest.split(":", 1)[0]
    if algorithm not in ("sha256", "sha512"):
        raise IntegrityError(f"unsupported digest algorithm in {digest!r}")
    return algorithm


@dataclass(frozen=True)
class ImageManifest:
    """A fetched, verified manifest or index."""

    media_type: str
    digest: str
    document: dict[str, Any]


class RegistryClient:
    """Pulls manifests and blobs of one repository, authenticating on demand."""

    def __init__(
        self,
        reference: ImageReference,
        http: HttpClient,
        *,
        scheme: str,
        credentials: BasicCredentials | None,
    ) -> None:
        self._reference = reference
        self._http = http
        self._base = f"{scheme}://{reference.api_host}/v2/{reference.repository}"
        self._credentials = credentials
        self._authorization: str | None = None

    def deadline_left(self) -> float:
        """Seconds left of the deadline shared by this client's requests."""
        return self._http.budget.remaining()

    @property
    def budget(self) -> Budget:
        """The deadline this client's requests share (unpacking the layers shares it too)."""
        return self._http.budget

    # -- auth --------------------------------------------------------------------------------

    def _basic(self) -> str:
        assert self._credentials is not None
        raw = f"{self._credentials.username}:{self._credentials.password}".encode()
        return "Basic " + base64.b64encode(raw).decode()

    def _no_credentials(self) -> AuthenticationError:
        return AuthenticationError(
            f"registry {self._reference.registry} requires authentication to pull "
            f"{self._reference.repository} and no pull secret has credentials for it"
        )

    def _rejected(self) -> AuthenticationError:
        return AuthenticationError(
            f"registry {self._reference.registry} rejected the pull secret's credentials for "
            f"{self._reference.repository} (wrong username/password, or no pull access)"
        )

    def _authenticate(self, challenge: str) -> None:
        """Answer a ``WWW-Authenticate`` challenge by setting ``self._authorization``."""
        scheme = challenge.split(" ", 1)[0].lower()
        params = challenge_params(challenge)
        if scheme == "basic":
            if self._credentials is None:
                raise self._no_credentials()
            self._authorization = self._basic()
            return
        if scheme != "bearer" or "realm" not in params:
            raise AuthenticationError(
                f"registry {self._reference.registry} asks for unsupported authentication "
                f"{challenge!r}"
            )
        self._check_challenge(params)
        query = {"scope": params.get("scope") or f"repository:{self._reference.repository}:pull"}
        if "service" in params:
            query["service"] = params["service"]
        headers = {"Authorization": self._basic()} if self._credentials else {}
        separator = "&" if "?" in params["realm"] else "?"
        with self._http.request(
            "GET", f"{params['realm']}{separator}{urlencode(query)}", headers
        ) as response:
            if response.status in (401, 403):
                raise self._rejected() if self._credentials else self._no_credentials()
            if response.status != 200:
                raise SourceUnavailableError(
                    f"the token service of {self._reference.registry} answered HTTP "
                    f"{response.status}"
                )
            try:
                body = safedata.load_json(response.read_all(1 << 20))
            except ValueError as exc:
                raise SourceError(
                    f"the token service of {self._reference.registry} sent invalid JSON"
                ) from exc
        token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise SourceError(f"the token service of {self._reference.registry} sent no token")
        try:
            token = bearer_token(token, where=f"the token service of {self._reference.registry}")
        except InvalidCredential as exc:
            raise SourceError(str(exc)) from None
        self._authorization = f"Bearer {token}"

    def _check_challenge(self, params: dict[str, str]) -> None:
        """Refuse a ``realm`` that is not an http(s) URL one can request as it stands, and a
        ``service`` or ``scope`` holding control characters (they are sent back)."""
        what = f"registry {self._reference.registry} sent a WWW-Authenticate challenge whose"
        realm = params["realm"]
        problem = url_problem(realm)
        if problem is not None:
            raise SourceError(f"{what} realm cannot be requested: it {problem}")
        if urlsplit(realm).scheme.lower() not in ("http", "https") or not urlsplit(realm).netloc:
            raise SourceError(f"{what} realm is not an http(s) URL")
        for name in ("service", "scope"):
            problem = header_problem(params.get(name, ""))
            if problem is not None:
                raise SourceError(f"{what} {name} {problem}")

    def get(self, path: str, accept: str | None, what: str) -> Response:
        """GET ``path`` below the repository (a manifest, a referrers list), as the manifest
        and blob reads do: one auth challenge answered, error codes mapped to typed errors
        naming ``what``. The caller reads the body within its own limits and closes it."""
        return self._get(path, accept, what)

    def _get(self, path: str, accept: str | None, what: str) -> Response:
        """GET ``path`` below the repository, answering one auth challenge; map error codes."""
        for attempt in range(2):
            headers = {"Accept": accept} if accept else {}
            if self._authorization:
                headers["Authorization"] = self._authorization
            response = self._http.request("GET", f"{self._base}/{path}", headers)
            if response.status == 200:
                return response
            try:
                body = response.read_all(64 << 10)
            except SourceError:  # the status code is what matters; the body only adds detail
                body = b""
            finally:
                response.close()
            if response.status == 401:
                if attempt == 0:
                    self._authenticate(response.headers.get("WWW-Authenticate", ""))
                    continue
                raise self._rejected() if self._credentials else self._no_credentials()
            raise self._error(response.status, body, what)
        raise AssertionError("unreachable")  # pragma: no cover

    def _error(self, status: int, body: bytes, what: str) -> SourceError:
        codes: list[str] = []
        try:
            document = safedata.load_json(body)
            codes = [str(e.get("code")) for e in document.get("errors", []) if isinstance(e, dict)]
        except (ValueError, AttributeError):
            pass
        reference = self._reference
        if status == 404:
            if "NAME_UNKNOWN" in codes:
                return SourceNotFoundError(
                    f"repository {reference.repository} does not exist on {reference.registry}"
                )
            return SourceNotFoundError(
                f"{what} not found in {reference.registry}/{reference.repository}"
            )
        if status == 403:
            return AuthenticationError(
                f"registry {reference.registry} denied access to {reference.repository} ({what})"
            )
        if status == 429 or status >= 500:
            return SourceUnavailableError(
                f"registry {reference.registry} failed with HTTP {status} while serving {what}; "
                "it will be retried"
            )
        return SourceError(
            f"registry {reference.registry} answered HTTP {status} for {what} "
            f"({', '.join(codes) or 'no error code'})"
        )

    # -- content -----------------------------------------------------------------------------

    def manifest(self, ref: str) -> ImageManifest:
        """Fetch the manifest or index named by a tag or digest and verify its digest."""
        what = f"manifest {ref}" if ref.startswith("sha") else f"tag {ref!r}"
        with self._get(f"manifests/{ref}", _ACCEPT, what) as response:
            body = response.read_all(MAX_MANIFEST_BYTES)
            media_type = (response.headers.get("Content-Type") or "").split(";")[0].strip()
            announced = response.headers.get("Docker-Content-Digest")
        if ref.startswith(("sha256:", "sha512:")):
            actual = digest_of(body, _algorithm(ref))
            if actual != ref:
                raise IntegrityError(
                    f"registry {self._reference.registry} served a manifest with digest {actual} "
                    f"for {ref}; refusing tampered or corrupted content"
                )
        digest = digest_of(body)
        if announced and announced.startswith("sha256:") and announced != digest:
            raise IntegrityError(
                f"registry {self._reference.registry} announced digest {announced} for {what} "
                f"but the manifest's digest is {digest}"
            )
        try:
            document = safedata.load_json(body)
        except ValueError as exc:
            raise SourceError(f"{what} is not valid JSON: {exc}") from exc
        if not isinstance(document, dict):
            raise SourceError(f"{what} is not a JSON object")
        media_type = str(document.get("mediaType") or media_type)
        if not media_type and "manifests" in document:
            media_type = OCI_INDEX
        elif not media_type and "layers" in document:
            media_type = OCI_MANIFEST
        return ImageManifest(media_type, digest, document)

    def blob(self, digest: str, size: int, sink: IO[bytes]) -> None:
        """Download a blob into ``sink``, verifying its size and digest before returning."""
        hasher = hashlib.new(_algorithm(digest))
        received = 0
        with self._get(f"blobs/{digest}", None, f"blob {digest}") as response:
            while chunk := response.read(1 << 20):
                received += len(chunk)
                if received > size:
                    raise IntegrityError(
                        f"blob {digest} is larger than the {size} bytes its manifest declares"
                    )
                hasher.update(chunk)
                sink.write(chunk)
        actual = f"{hasher.name}:{hasher.hexdigest()}"
        if received != size or actual != digest:
            raise IntegrityError(
                f"blob {digest} failed verification: got {received} bytes with digest {actual}; "
                "the registry served corrupted or tampered content"
            )
