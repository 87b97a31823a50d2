"""The thin Kubernetes REST boundary the appliers use: raw JSON requests, discovery, warnings.

The official client's typed APIs do not return the ``Warning`` headers the API server sends
(deprecated APIs, large objects), and pivoter must surface those in status and Events. So the
appliers speak JSON over the official client's authenticated connection pool and read the headers
themselves. Everything that talks to the API server on behalf of a bundle goes through
:class:`KubeAPI`.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

JSONObject = dict[str, Any]

_WARNING = re.compile(r'^\d{3} \S+ "(?P<text>(?:[^"\\]|\\.)*)"')


class KubeError(Exception):
    """The API server refused a request; ``status``, ``reason`` and its message say why."""

    def __init__(self, status: int, reason: str, message: str, body: JSONObject | None = None):
        super().__init__(f"{status} {reason}: {message}" if reason else message)
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}


class NotFound(KubeError):
    """The object (or its kind) does not exist."""


class Conflict(KubeError):
    """A write lost a race (resourceVersion) or a server-side apply field conflict."""


class Forbidden(KubeError):
    """The identity used may not do this (RBAC)."""


class Invalid(KubeError):
    """The object failed validation (422) or the request was malformed (400)."""


_ERRORS: dict[int, type[KubeError]] = {
    400: Invalid,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: Invalid,
}


@dataclass(frozen=True, slots=True)
class APIResource:
    """One resource of a group/version as discovery reports it."""

    group_version: str
    kind: str
    plural: str
    namespaced: bool

    def path(self, namespace: str = "", name: str = "") -> str:
        """The REST path of the collection, or of one object when ``name`` is given."""
        root = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        if self.namespaced and namespace:
            root += f"/namespaces/{quote(namespace, safe='')}"
        root += f"/{self.plural}"
        return f"{root}/{quote(name, safe='')}" if name else root


@dataclass(slots=True)
class Response:
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


class KubeAPI:
    """JSON requests against one API server with one identity, plus a discovery cache."""

    def __init__(self, api_client: ApiClient, *, timeout: float = 30.0) -> None:
        self.api_client = api_client
        self.timeout = timeout
        self._discovery: dict[str, dict[str, APIResource]] = {}
        self._lock = threading.Lock()

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: JSONObject | None = None,
        content_type: str = "application/json",
    ) -> Response:
        """Send one request; raise a :class:`KubeError` subclass for any non-2xx answer."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        method, url, headers, _, _ = self.api_client.param_serialize(
            method=method,
            resource_path=path,
            header_params=headers,
            auth_settings=["BearerToken"],
        )
        if query:
            url += "?" + urlencode(query)
        payload = json.dumps(body).encode() if body is not None else None
        try:
            raw = self.api_client.call_api(
                method, url, header_params=headers, body=payload, _request_timeout=self.timeout
            )
            data: bytes = raw.read()  # type: ignore[no-untyped-call]
            status = raw.status
            warnings = parse_warnings(raw.headers.getlist("Warning"))
        except ApiException as exc:  # transport-level failures surface as status 0
            raise KubeError(exc.status or 0, str(exc.reason or ""), str(exc)) from exc
        decoded: JSONObject = json.loads(data) if data else {}
        if not 200 <= status < 300:
            message = str(decoded.get("message", data[:500].decode(errors="replace")))
            reason = str(decoded.get("reason", ""))
            raise _ERRORS.get(status, KubeError)(status, reason, message, decoded)
        return Response(status, decoded, warnings)

    def resource(self, api_version: str, kind: str) -> APIResource:
        """Return the resource serving ``kind`` in ``api_version``.

        Raises :class:`NotFound` with the API server's wording ("no matches for kind ...") when the
        kind is not served, re-reading discovery once in case it was just added (a new CRD).
        """
        for refresh in (False, True):
            resources = self._group_version(api_version, refresh=refresh)
            if kind in resources:
                return resources[kind]
        raise NotFound(404, "NotFound", f'no matches for kind "{kind}" in version "{api_version}"')

    def forget(self, api_version: str | None = None) -> None:
        """Drop cached discovery (all of it, or one group/version)."""
        with self._lock:
            if api_version is None:
                self._discovery.clear()
            else:
                self._discovery.pop(api_version, None)

    def _group_version(self, api_version: str, *, refresh: bool) -> dict[str, APIResource]:
        with self._lock:
            cached = self._discovery.get(api_version)
        if cached is not None and not refresh:
            return cached
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        try:
            listing = self.request("GET", path).body
        except NotFound:
            resources: dict[str, APIResource] = {}
        else:
            resources = {
                item["kind"]: APIResource(
                    group_version=api_version,
                    kind=item["kind"],
                    plural=item["name"],
                    namespaced=bool(item.get("namespaced")),
                )
                for item in listing.get("resources", [])
                if "/" not in item["name"]  # skip subresources such as deployments/status
            }
        with self._lock:
            self._discovery[api_version] = resources
        return resources
