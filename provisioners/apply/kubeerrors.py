"""Errors the API server returns, as exception classes a reconciler can catch by meaning.

Every request made through :class:`provisioners.apply.kubeapi.KubeAPI` (and so
:class:`pivoter.kube.Kube`) raises one of these instead of the
official client's catch-all ``ApiException``, so callers write ``except NotFound`` rather than
comparing status codes. :func:`from_api_exception` converts errors raised by the official client's
typed APIs, for code that uses those directly.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes.client.exceptions import ApiException

__all__ = [
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeError",
    "NotFound",
    "Unavailable",
    "error_for",
    "from_api_exception",
]


class KubeError(Exception):
    """The API server refused a request (or could not be reached: ``status`` 0)."""

    def __init__(
        self, status: int, reason: str, message: str, body: dict[str, Any] | None = None
    ) -> None:
        text = f"{status} {reason}: {message}" if reason else f"{status}: {message}"
        super().__init__(text if status else message)
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}


class NotFound(KubeError):
    """The object, its namespace or its kind does not exist (404)."""


class Conflict(KubeError):
    """A write lost a race on resourceVersion, the object already exists, or a server-side apply
    field conflict (409): re-read and retry, or apply with ``force`` if the field is yours."""


class Gone(KubeError):
    """The resourceVersion asked for was compacted away (410): list again and watch from there."""


class Forbidden(KubeError):
    """The identity in use may not do this (403): grant it in RBAC (see deploy/02-rbac.yaml)."""


class Invalid(KubeError):
    """The object failed validation (422) or the request was malformed (400)."""


class Unavailable(KubeError):
    """The API server could not be reached or answered 5xx/429: retry later."""


_BY_STATUS: dict[int, type[KubeError]] = {
    400: Invalid,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: Unavailable,
}


def error_for(status: int, body: dict[str, Any] | None, fallback: str = "") -> KubeError:
    """The exception for an API status code and (optional) ``Status`` body."""
    body = body or {}
    message = str(body.get("message") or fallback or "no message from the API server")
    reason = str(body.get("reason") or "")
    cls = _BY_STATUS.get(status) or (Unavailable if status == 0 or status >= 500 else KubeError)
    return cls(status, reason, message, body)


def from_api_exception(exc: ApiException) -> KubeError:
    """Convert an ``ApiException`` from the official client into the matching :class:`KubeError`."""
    body: dict[str, Any] | None = None
    raw = exc.body
    if raw:
        try:
            decoded = json.loads(raw)
            body = decoded if isinstance(decoded, dict) else None
        except (TypeError, ValueError):
            body = None
    return error_for(int(exc.status or 0), body, str(exc.reason or raw or exc))
