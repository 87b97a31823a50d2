"""What one API request was, in the words of the API server's own metrics: its verb (``get``,
``list``, ``watch``, ``create``, ``update``, ``patch``, ``delete``, ``deletecollection``) and its
resource (``configmaps``, ``bundledeployments.core.rukpak.io``, with ``/status`` for a
subresource).

Used to label ``pivoter_kube_requests_total`` (:mod:`pivoter.observability.metrics`), which counts
every request at the one place requests leave pivoter
(:attr:`provisioners.apply.kubeapi.KubeAPI.observer`). A path outside the resource APIs
(``/version``, discovery such as ``/apis/apps/v1``) is its own resource label, so the label set
stays bounded by the kinds pivoter talks to.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["request_kind"]

_WRITES = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def request_kind(method: str, path: str, query: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """``(verb, resource)`` of a request (see the module docstring)."""
    method = method.upper()
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        rest = []
    if not rest:  # not a resource: /version, /healthz, discovery
        return _verb(method, named=True, query=query), "/" + "/".join(parts)
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]  # a namespaced resource: namespaces/NS/RESOURCE[/NAME[/SUB]]
    resource = rest[0] + (f".{group}" if group else "")
    if len(rest) >= 3:
        resource += "/" + rest[2]
    return _verb(method, named=len(rest) >= 2, query=query), resource


def _verb(method: str, *, named: bool, query: Iterable[tuple[str, str]]) -> str:
    if method == "GET":
        if any(key == "watch" and value in ("true", "1") for key, value in query):
            return "watch"
        return "get" if named else "list"
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return _WRITES.get(method, method.lower())
