"""The one Kubernetes REST boundary: JSON requests, discovery, typed errors and warnings.

The official client's typed APIs do not return the ``Warning`` headers the API server sends
(deprecated APIs, large objects), and pivoter must surface those in status and Events. So
pivoter speaks JSON over the official client's authenticated connection pool and reads the
headers itself. The appliers use :class:`KubeAPI` directly; the daemon's
:class:`pivoter.kube.Kube` extends it with verbs and watches. Errors are the typed exceptions of
:mod:`provisioners.apply.kubeerrors`.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as URLLib3Error

from provisioners.apply.kubeerrors import (
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    KubeError,
    NotFound,
    Unavailable,
    error_for,
    from_api_exception,
)
from provisioners.apply.resources import Resource, split_api_version

__all__ = [
    "APPLY_PATCH",
    "MERGE_PATCH",
    "METADATA_LIST",
    "ApiResponse",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "JSONObject",
    "KubeAPI",
    "KubeError",
    "NotFound",
    "RequestObserver",
    "Resource",
    "Unavailable",
    "decode",
    "error_for",
    "from_api_exception",
    "parse_warnings",
]

JSONObject = dict[str, Any]

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"

_WARNING = re.compile(r'^\d{3} \S+ "(?P<text>(?:[^"\\]|\\.)*)"')


@dataclass(slots=True)
class ApiResponse:
    """A decoded API response and the warnings the server attached to it."""

    status: int
    body: JSONObject
    warnings: list[str]


def parse_warnings(values: list[str]) -> list[str]:
    """Extract the texts of ``Warning`` headers (RFC 7234 format: ``299 - "text"``)."""
    texts = []
    for value in values:
        match = _WARNING.match(value.strip())
        texts.append(match.group("text").replace('\\"', '"') if match else value.strip())
    return texts


def decode(data: bytes) -> JSONObject:
    """The JSON object in ``data``; empty for an empty, non-JSON (``404 page not found``) or
    non-object body."""
    if not data:
        return {}
    try:
        decoded = json.loads(data)
    except ValueError:
        return {}
    return decoded if isinstance(decoded, dict) else {}


METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
"""The ``Accept`` value of a list of the objects' metadata only (any kind, built-in or custom)."""

RequestObserver = Callable[[str, str, list[tuple[str, str]], int], None]
"""Told of every request that left: method, path, query and the answer's status code (0 when
no answer came: the server was unreachable or the connection broke). The daemon counts them
(``pivoter_kube_requests_total``)."""


class KubeAPI:
    """JSON requests against one API server with one identity, plus a discovery cache."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        timeout: float = 30.0,
        observer: RequestObserver | None = None,
    ) -> None:
        self.api_client = api_client
        self.timeout = timeout
        self.observer = observer
        """Called once per request sent (see :data:`RequestObserver`); None: nobody counts."""
        self._discovery: dict[str, dict[str, Resource]] = {}
        self._lock = threading.Lock()

    # -- requests ----------------------------------------------------------------------------

    def send(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: JSONObject | None = None,
        content_type: str = "application/json",
        timeout: float | None = None,
        accept: str = "application/json",
    ) -> ApiResponse:
        """Send one request; return the decoded body and the server's warnings, or raise the
        :class:`KubeError` subclass of a non-2xx answer (:class:`Unavailable` when unreachable).
        ``accept`` may ask for another representation (e.g. :data:`METADATA_LIST`)."""
        raw = self._send(
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            timeout=(10.0, timeout or self.timeout),
            accept=accept,
        )
        try:
            data: bytes = raw.read()
        except (URLLib3Error, OSError) as exc:
            raise Unavailable(
                0, "", f"reading the answer to {method} {path} failed: {exc}"
            ) from exc
        decoded = decode(data)
        if not 200 <= raw.status < 300:
            raise error_for(raw.status, decoded, data[:300].decode(errors="replace"))
        return ApiResponse(raw.status, decoded, parse_warnings(raw.headers.getlist("Warning")))

    def request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: JSONObject | None = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> JSONObject:
        """Like :meth:`send`, returning only the decoded body."""
        return self.send(
            method, path, query=query, body=body, content_type=content_type, timeout=timeout
        ).body

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None,
        body: JSONObject | None,
        content_type: str,
        timeout: tuple[float, float],
        accept: str = "application/json",
    ) -> Any:
        """Send and return the open response (the caller reads or streams it)."""
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        method, url, headers, _, _ = self.api_client.param_serialize(
            method=method,
            resource_path=path,
            query_params=query or None,
            header_params=headers,
            auth_settings=["BearerToken"],
        )
        # The REST layer JSON-encodes bodies itself for JSON content types; others (server-side
        # apply's YAML, of which JSON is a subset) must be given as bytes.
        payload: Any = body
        if body is not None and "json" not in content_type:
            payload = json.dumps(body).encode()
        try:
            raw = self.api_client.call_api(
                method, url, header_params=headers, body=payload, _request_timeout=timeout
            )
        except ApiException as exc:  # the REST layer raises for some answers (429 Retry-After)
            self._observe(method, path, query, int(exc.status or 0))
            raise from_api_exception(exc) from exc
        except (URLLib3Error, OSError) as exc:
            self._observe(method, path, query, 0)
            host = self.api_client.configuration.host
            raise Unavailable(0, "", f"{method} {path} on {host} failed: {exc}") from exc
        self._observe(method, path, query, int(raw.status))
        return raw

    def _observe(
        self, method: str, path: str, query: list[tuple[str, str]] | None, code: int
    ) -> None:
        if self.observer is not None:
            self.observer(method, path, query or [], code)

    # -- discovery ---------------------------------------------------------------------------

    def resource(self, api_version: str, kind: str) -> Resource:
        """The collection serving ``kind`` in ``api_version``; rereads discovery once on a miss
        (a CRD may just have been created). Raises :class:`NotFound` with the API server's
        wording ("no matches for kind ...") if it is not served."""
        for refresh in (False, True):
            found = self._resources(api_version, refresh=refresh).get(kind)
            if found is not None:
                return found
        raise NotFound(404, "NotFound", f'no matches for kind "{kind}" in version "{api_version}"')

    def forget(self, api_version: str | None = None) -> None:
        """Drop cached discovery (all of it, or one group/version)."""
        with self._lock:
            if api_version is None:
                self._discovery.clear()
            else:
                self._discovery.pop(api_version, None)

    def _resources(self, api_version: str, *, refresh: bool) -> dict[str, Resource]:
        with self._lock:
            cached = self._discovery.get(api_version)
        if cached is not None and not refresh:
            return cached
        group, _ = split_api_version(api_version)
        path = "/api/v1" if not group else f"/apis/{api_version}"
        try:
            listing = self.request("GET", path)
        except NotFound:
            listing = {}
        table = {
            entry["kind"]: Resource(
                api_version, entry["kind"], entry["name"], bool(entry.get("namespaced"))
            )
            for entry in listing.get("resources", [])
            if "/" not in entry.get("name", "/")  # subresources (status, scale) are not kinds
        }
        with self._lock:
            self._discovery[api_version] = table
        return table
