"""The daemon's API client: the verbs and watches of :class:`Kube` on top of the one REST boundary.

Everything in :mod:`pivoter.runtime` (informers, leader election) and the reconcilers talks to
the cluster through :class:`Kube`. Requests, discovery, warnings and the typed errors come from
:class:`provisioners.apply.kubeapi.KubeAPI`, which the appliers use too, so one client and one
error hierarchy serve the whole daemon.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from urllib3.exceptions import HTTPError as URLLib3Error

from provisioners.apply.kubeapi import (
    APPLY_PATCH,
    MERGE_PATCH,
    KubeAPI,
    KubeError,
    Resource,
    Unavailable,
    decode,
    error_for,
)

__all__ = ["APPLY_PATCH", "MERGE_PATCH", "Kube", "Object", "WatchEvent", "WatchStream"]

Object = dict[str, Any]
WatchEvent = tuple[str, Object]


log = logging.getLogger(__name__)


class Kube(KubeAPI):
    """:class:`KubeAPI` plus the verbs and watches of the daemon's controllers."""

    # ------------------------------------------------------------------ verbs

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        """Read one object; raises :class:`NotFound` if it does not exist."""
        return self.request("GET", resource.path(namespace, name))

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        page_size: int = 500,
    ) -> tuple[list[Object], str]:
        """List every object (following ``continue`` pages); return the items and the list's
        resourceVersion, from which a watch continues without missing a change."""
        items: list[Object] = []
        token = ""
        while True:
            query = [("limit", str(page_size))]
            query += [("labelSelector", label_selector)] if label_selector else []
            query += [("fieldSelector", field_selector)] if field_selector else []
            query += [("continue", token)] if token else []
            page = self.request("GET", resource.path(namespace), query=query)
            for item in page.get("items") or []:
                # List items carry no apiVersion/kind; add them so cached objects are complete.
                item.setdefault("apiVersion", resource.api_version)
                item.setdefault("kind", resource.kind)
                items.append(item)
            metadata = page.get("metadata") or {}
            token = str(metadata.get("continue") or "")
            if not token:
                return items, str(metadata.get("resourceVersion") or "")

    def create(self, resource: Resource, body: Object, namespace: str | None = None) -> Object:
        """Create an object; raises :class:`Conflict` if it already exists."""
        return self.request("POST", resource.path(namespace), body=body)

    def replace(self, resource: Resource, body: Object, namespace: str | None = None) -> Object:
        """Replace an object (PUT); with ``metadata.resourceVersion`` set this is a
        compare-and-swap that raises :class:`Conflict` if someone wrote in between."""
        name = body["metadata"]["name"]
        return self.request("PUT", resource.path(namespace, name), body=body)

    def merge_patch(
        self, resource: Resource, name: str, patch: Object, namespace: str | None = None
    ) -> Object:
        """Apply a JSON merge patch (RFC 7386) to one object."""
        return self.request(
            "PATCH", resource.path(namespace, name), body=patch, content_type=MERGE_PATCH
        )

    def patch_status(
        self, resource: Resource, name: str, status: Object, namespace: str | None = None
    ) -> Object:
        """Merge-patch the status subresource of one object: the one status write of every
        reconciler."""
        return self.request(
            "PATCH",
            resource.path(namespace, name) + "/status",
            body={"status": status},
            content_type=MERGE_PATCH,
        )

    def set_finalizers(
        self, resource: Resource, obj: Mapping[str, Any], finalizers: Sequence[str]
    ) -> Object:
        """Replace the finalizers of ``obj`` (cluster-scoped or in its namespace), guarded by its
        resourceVersion so that a stale copy fails with Conflict instead of dropping another's
        finalizer."""
        metadata = obj["metadata"]
        patch = {
            "metadata": {
                "finalizers": [*finalizers],
                "resourceVersion": metadata["resourceVersion"],
            }
        }
        return self.merge_patch(resource, metadata["name"], patch, metadata.get("namespace"))

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str = "Background",
        resource_version: str | None = None,
    ) -> Object:
        """Delete one object (dependents per ``propagation``); raises :class:`NotFound`.

        With ``resource_version`` the deletion is guarded: it fails with :class:`Conflict` when
        the object changed since that version (a finalizer another writer put back in between is
        never deleted with)."""
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": propagation,
        }
        if resource_version is not None:
            body["preconditions"] = {"resourceVersion": resource_version}
        return self.request("DELETE", resource.path(namespace, name), body=body)

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        timeout_seconds: int = 300,
        label_selector: str = "",
        field_selector: str = "",
    ) -> WatchStream:
        """Open a watch from ``resource_version``; iterate the returned stream for events."""
        query = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        query += [("labelSelector", label_selector)] if label_selector else []
        query += [("fieldSelector", field_selector)] if field_selector else []
        # The read timeout outlasts the server's own timeout: a silent connection is dead.
        raw = self._send(
            "GET",
            resource.path(namespace),
            query=query,
            body=None,
            content_type="",
            timeout=(10.0, timeout_seconds + 30.0),
        )
        if not 200 <= raw.status < 300:
            data = raw.read()
            raise error_for(raw.status, decode(data), data[:300].decode(errors="replace"))
        return WatchStream(raw.response, resource)


class WatchStream:
    """The events of one watch request, as ``(type, object)`` pairs; :meth:`close` from any thread.

    An ``ERROR`` event carrying a ``Status`` (410 when the resourceVersion was compacted) is
    raised as the matching :class:`KubeError`, not yielded.
    """

    def __init__(self, response: Any, resource: Resource) -> None:
        self._response = response
        self._resource = resource
        self._closed = False

    def __iter__(self) -> Iterator[WatchEvent]:
        buffer = bytearray()
        try:
            for chunk in self._response.stream(amt=None, decode_content=False):
                buffer.extend(chunk)
                while (newline := buffer.find(b"\n")) != -1:
                    line = bytes(buffer[:newline])
                    del buffer[: newline + 1]
                    if line.strip():
                        yield self._event(line)
        except (URLLib3Error, OSError) as exc:
            if not self._closed:
                raise Unavailable(0, "", f"watch on {self._resource} broke: {exc}") from exc
        finally:
            self._release()

    def _event(self, line: bytes) -> WatchEvent:
        try:
            event = json.loads(line)
            kind, obj = str(event["type"]), event["object"]
        except (ValueError, KeyError, TypeError) as exc:
            raise KubeError(0, "", f"undecodable watch event on {self._resource}: {exc}") from exc
        if kind == "ERROR":
            code = int(obj.get("code") or 0) if isinstance(obj, dict) else 0
            raise error_for(code, obj if isinstance(obj, dict) else None, "watch error")
        obj.setdefault("apiVersion", self._resource.api_version)
        obj.setdefault("kind", self._resource.kind)
        return kind, obj

    def close(self) -> None:
        """End the stream now, also while another thread is blocked reading it."""
        self._closed = True
        connection = getattr(self._response, "connection", None)
        sock = getattr(connection, "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _release(self) -> None:
        try:
            self._response.close()
            self._response.release_conn()
        except (URLLib3Error, OSError) as exc:  # already torn down
            log.debug("releasing a watch connection: %s", exc)
