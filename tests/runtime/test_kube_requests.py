"""``pivoter_kube_requests_total``: every request that leaves pivoter is counted once, with the
verb and resource the API server's own metrics would give it and the answer's code (no cluster:
the official client's ``call_api`` is replaced by a fake server)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration
from urllib3.exceptions import NewConnectionError

from pivoter.kube import Kube, NotFound, Resource, Unavailable
from pivoter.kube.identities import Identities
from pivoter.kube.requests import request_kind
from pivoter.runtime import Manager

CONFIGMAPS = Resource("v1", "ConfigMap", "configmaps", namespaced=True)
BDS = Resource("core.rukpak.io/v1alpha1", "BundleDeployment", "bundledeployments", False)
LEASES = Resource("coordination.k8s.io/v1", "Lease", "leases", namespaced=True)


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns/configmaps/a", [], ("get", "configmaps")),
        ("GET", "/api/v1/namespaces/ns/configmaps", [("limit", "500")], ("list", "configmaps")),
        ("GET", "/api/v1/configmaps", [("watch", "true")], ("watch", "configmaps")),
        ("GET", "/api/v1/namespaces/ns", [], ("get", "namespaces")),
        ("GET", "/api/v1/namespaces", [], ("list", "namespaces")),
        ("DELETE", "/api/v1/namespaces/ns", [], ("delete", "namespaces")),
        ("POST", "/api/v1/namespaces", [], ("create", "namespaces")),
        (
            "PATCH",
            "/apis/core.rukpak.io/v1alpha1/bundledeployments/x/status",
            [],
            ("patch", "bundledeployments.core.rukpak.io/status"),
        ),
        (
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/s/leases/l",
            [],
            ("update", "leases.coordination.k8s.io"),
        ),
        (
            "DELETE",
            "/apis/apps/v1/namespaces/ns/deployments",
            [],
            ("deletecollection", "deployments.apps"),
        ),
        ("GET", "/version", [], ("get", "/version")),
        ("GET", "/apis/apps/v1", [], ("get", "/apis/apps/v1")),
        ("GET", "/api/v1", [], ("get", "/api/v1")),
    ],
)
def test_a_request_is_named_like_the_api_server_names_it(
    method: str, path: str, query: list[tuple[str, str]], expected: tuple[str, str]
) -> None:
    assert request_kind(method, path, query) == expected


class FakeAnswer:
    """What ``ApiClient.call_api`` returns: a status, a body and headers."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self._data = json.dumps(body).encode()
        self.headers = self

    def read(self) -> bytes:
        return self._data

    def getlist(self, _: str) -> list[str]:
        return []


def _serve(api_client: ApiClient, answers: dict[str, int | Exception]) -> list[str]:
    """Replace the client's ``call_api`` with answers by URL path; return the paths asked."""
    asked: list[str] = []

    def call_api(method: str, url: str, **_: Any) -> FakeAnswer:
        path = url.split("://", 1)[1].split("/", 1)[1].split("?", 1)[0]
        asked.append(f"{method} /{path}")
        answer = answers[f"/{path}"]
        if isinstance(answer, Exception):
            raise answer
        return FakeAnswer(answer, {"kind": "Status", "reason": "NotFound"} if answer >= 400 else {})

    api_client.call_api = call_api  # type: ignore[method-assign]
    return asked


def _count(manager: Manager, verb: str, resource: str, code: str) -> float:
    value = manager.metrics.registry.get_sample_value(
        "pivoter_kube_requests_total", {"verb": verb, "resource": resource, "code": code}
    )
    return value or 0.0


def test_every_request_of_the_manager_and_its_identities_is_counted_with_its_code() -> None:
    api_client = ApiClient(Configuration(host="https://127.0.0.1:1"))
    asked = _serve(
        api_client,
        {
            "/api/v1/namespaces/ns/configmaps/a": 200,
            "/api/v1/namespaces/ns/configmaps/gone": 404,
            "/apis/coordination.k8s.io/v1/namespaces/s/leases/l": NewConnectionError(
                None, "refused"
            ),
        },
    )
    manager = Manager(Kube(api_client))
    kube = manager.kube
    kube.get(CONFIGMAPS, "a", "ns")
    kube.get(CONFIGMAPS, "a", "ns")
    with pytest.raises(NotFound):
        kube.get(CONFIGMAPS, "gone", "ns")
    with pytest.raises(Unavailable):
        kube.get(LEASES, "l", "s")
    # A client impersonating a service account (built from the daemon's) counts into the same
    # metric.
    impersonating = Identities(kube).api_for({"namespace": "ns", "name": "installer"})
    _serve(impersonating.api_client, {"/api/v1/namespaces/ns/configmaps/a": 200})
    impersonating.get(CONFIGMAPS, "a", "ns")
    assert len(asked) == 4
    assert _count(manager, "get", "configmaps", "200") == 3
    assert _count(manager, "get", "configmaps", "404") == 1
    assert _count(manager, "get", "leases.coordination.k8s.io", "0") == 1
    exported = manager.metrics.registry.get_sample_value(
        "pivoter_kube_requests_total", {"verb": "list", "resource": "configmaps", "code": "200"}
    )
    assert exported is None  # nothing listed, no series


def test_a_client_nobody_observes_sends_as_before() -> None:
    api_client = ApiClient(Configuration(host="https://127.0.0.1:1"))
    asked = _serve(api_client, {"/apis/core.rukpak.io/v1alpha1/bundledeployments/x": 200})
    kube = Kube(api_client)
    assert kube.observer is None
    assert kube.get(BDS, "x") == {}
    assert asked == ["GET /apis/core.rukpak.io/v1alpha1/bundledeployments/x"]
