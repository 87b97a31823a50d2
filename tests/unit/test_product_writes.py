"""The one status-patch helper, the one finalizer helper and the one inventory parser of the
product send and read what the reconcilers relied on before they were merged."""

from __future__ import annotations

from typing import Any

from kubernetes.client import ApiClient, Configuration

from pivoter.apis.inventory import inventory_of
from pivoter.kube import MERGE_PATCH, Kube, Resource
from provisioners.apply.objects import ObjectRef

CLUSTER_KIND = Resource("example.io/v1", "Thing", "things", namespaced=False)
NAMESPACED_KIND = Resource("example.io/v1", "Widget", "widgets", namespaced=True)


class RecordingKube(Kube):
    """A Kube whose requests are recorded instead of sent."""

    def __init__(self) -> None:
        super().__init__(ApiClient(Configuration(host="https://127.0.0.1:1")))
        self.sent: list[dict[str, Any]] = []

    def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        self.sent.append({"method": method, "path": path, **kwargs})
        return {"sent": len(self.sent)}


def test_patch_status_merge_patches_the_status_subresource() -> None:
    kube = RecordingKube()
    assert kube.patch_status(NAMESPACED_KIND, "w", {"phase": "Ready"}, "ns") == {"sent": 1}
    assert kube.sent == [
        {
            "method": "PATCH",
            "path": "/apis/example.io/v1/namespaces/ns/widgets/w/status",
            "body": {"status": {"phase": "Ready"}},
            "content_type": MERGE_PATCH,
        }
    ]


def test_set_finalizers_is_guarded_by_the_resource_version() -> None:
    kube = RecordingKube()
    obj = {"metadata": {"name": "t", "resourceVersion": "42", "finalizers": ["a", "b"]}}
    kube.set_finalizers(CLUSTER_KIND, obj, (f for f in ["a"]))
    namespaced = {"metadata": {"name": "w", "namespace": "ns", "resourceVersion": "7"}}
    kube.set_finalizers(NAMESPACED_KIND, namespaced, [])
    assert [(s["path"], s["body"], s["content_type"]) for s in kube.sent] == [
        (
            "/apis/example.io/v1/things/t",
            {"metadata": {"finalizers": ["a"], "resourceVersion": "42"}},
            MERGE_PATCH,
        ),
        (
            "/apis/example.io/v1/namespaces/ns/widgets/w",
            {"metadata": {"finalizers": [], "resourceVersion": "7"}},
            MERGE_PATCH,
        ),
    ]


def test_inventory_of_reads_status_inventory() -> None:
    status = {
        "inventory": [
            {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "c"},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "r"},
        ]
    }
    assert inventory_of(status) == [
        ObjectRef("v1", "ConfigMap", "ns", "c"),
        ObjectRef("rbac.authorization.k8s.io/v1", "ClusterRole", "", "r"),
    ]
    assert inventory_of(None) == []
    assert inventory_of({"inventory": None}) == []
