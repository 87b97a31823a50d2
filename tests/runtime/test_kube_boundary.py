"""Pure parts of the API boundary: error mapping, REST paths, and splitting a watch stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException

from pivoter.kube import (
    Conflict,
    Gone,
    Kube,
    KubeError,
    NotFound,
    Resource,
    Unavailable,
    WatchStream,
    error_for,
    from_api_exception,
    object_reference,
)
from pivoter.runtime import Manager

CONFIGMAPS = Resource("v1", "ConfigMap", "configmaps", namespaced=True)


def test_status_codes_map_to_typed_errors_with_the_servers_words() -> None:
    body = {"kind": "Status", "reason": "Expired", "message": "too old resource version: 5 (9)"}
    gone = error_for(410, body)
    assert isinstance(gone, Gone)
    assert str(gone) == "410 Expired: too old resource version: 5 (9)"
    assert isinstance(error_for(409, None), Conflict)
    assert isinstance(error_for(503, None), Unavailable)
    assert type(error_for(418, None)) is KubeError
    raised = ApiException(status=404, reason="Not Found")
    raised.body = json.dumps({"reason": "NotFound", "message": 'configmaps "x" not found'})
    converted = from_api_exception(raised)
    assert isinstance(converted, NotFound)
    assert converted.message == 'configmaps "x" not found'


def test_paths() -> None:
    assert CONFIGMAPS.path() == "/api/v1/configmaps"
    assert CONFIGMAPS.path("ns", "a b") == "/api/v1/namespaces/ns/configmaps/a%20b"
    nodes = Resource("v1", "Node", "nodes", namespaced=False)
    assert nodes.path("ignored", "n1") == "/api/v1/nodes/n1"
    deployments = Resource("apps/v1", "Deployment", "deployments", namespaced=True)
    assert deployments.path("ns") == "/apis/apps/v1/namespaces/ns/deployments"
    assert str(deployments) == "deployments.v1.apps"


class FakeResponse:
    """Chunks as urllib3 yields them, cut at arbitrary places."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.released = False

    def stream(self, amt: Any = None, decode_content: bool = False) -> Iterator[bytes]:
        yield from self.chunks

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        self.released = True


def _line(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def test_a_watch_stream_is_split_into_events_whatever_the_chunking() -> None:
    data = _line("ADDED", {"metadata": {"name": "a", "resourceVersion": "1"}}) + _line(
        "BOOKMARK", {"metadata": {"resourceVersion": "7"}}
    )
    response = FakeResponse([data[:5], data[5:40], data[40:]])
    events = list(WatchStream(response, CONFIGMAPS))
    assert [kind for kind, _ in events] == ["ADDED", "BOOKMARK"]
    assert events[0][1]["kind"] == "ConfigMap"  # filled in like list items
    assert response.released


def test_an_error_event_is_raised_as_its_status() -> None:
    status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    response = FakeResponse([_line("ERROR", status)])
    with pytest.raises(Gone, match="too old"):
        list(WatchStream(response, CONFIGMAPS))


def test_object_reference_for_events() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "n", "uid": "u", "resourceVersion": "3"},
    }
    assert object_reference(obj) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "c",
        "namespace": "n",
        "uid": "u",
        "resourceVersion": "3",
    }
    with pytest.raises(ValueError, match="kind and a metadata"):
        object_reference({"metadata": {"name": "x"}})


def test_the_manager_shares_one_informer_per_kind() -> None:
    manager = Manager(Kube(ApiClient(Configuration(host="https://127.0.0.1:1"))))
    first = manager.informer_for(CONFIGMAPS)
    assert manager.informer_for(CONFIGMAPS) is first
    assert manager.informer_for(CONFIGMAPS, namespace="ns") is not first
    assert len(manager.informers) == 2
    manager.controller("a", lambda key: None).watch(first)
    manager.controller("b", lambda key: None).watch(first)
    assert len(manager.informers) == 2
    assert manager.event_recorder("a").reporting_controller == "pivoter.io/a"
    with pytest.raises(ValueError, match="already registered"):
        manager.controller("a", lambda key: None)
