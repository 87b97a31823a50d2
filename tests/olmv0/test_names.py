"""Which of OLM v0's generated objects an adoption's child takes over under which name
(pivoter.olmv0.names), from objects in memory; the real OLM v0 makes them in
test_adopt_cluster.py."""

from __future__ import annotations

from typing import Any, cast

from pivoter.kube import Kube, NotFound, Object, Resource
from pivoter.olmv0.names import object_names

CSV = "op.v1.0.0"
NAMESPACE = "ops"
OWNER = {
    "olm.owner": CSV,
    "olm.owner.namespace": NAMESPACE,
    "olm.owner.kind": "ClusterServiceVersion",
}


class Objects:
    """A Kube's ``list`` by kind, namespace and an equality/existence label selector."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str | None, Object]] = []

    def put(self, kind: str, name: str, namespace: str | None = None, **body: Any) -> None:
        labels = body.pop("labels", {})
        obj = {"metadata": {"name": name, "labels": labels}, **body}
        self.items.append((kind, namespace, obj))

    def list(
        self, resource: Resource, namespace: str | None = None, *, label_selector: str = ""
    ) -> tuple[list[Object], str]:
        if resource.kind == "MutatingWebhookConfiguration":
            raise NotFound(404, "NotFound", "not served")  # a cluster without one of the kinds
        wanted = [term.partition("=") for term in label_selector.split(",") if term]

        def matches(obj: Object) -> bool:
            labels = obj["metadata"]["labels"]
            return all(k in labels and (not sep or labels[k] == v) for k, sep, v in wanted)

        found = [
            o
            for kind, ns, o in self.items
            if kind == resource.kind and (namespace is None or ns == namespace) and matches(o)
        ]
        return found, "1"


def _role(objects: Objects, kind: str, name: str, account: str, *, binding: bool = True) -> None:
    labels = {**OWNER, "olm.permissions.hash": "h"}
    namespace = NAMESPACE if kind == "Role" else None
    objects.put(kind, name, namespace, labels=labels, rules=[])
    if binding:
        subjects = [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]
        objects.put(f"{kind}Binding", name, namespace, labels=labels, subjects=subjects)


def _names(objects: Objects) -> dict[str, str]:
    return object_names(cast(Kube, objects), CSV, NAMESPACE)


def test_a_role_maps_itself_and_the_cluster_copy_olm_v0_makes_of_it_even_before_it_exists() -> None:
    objects = Objects()
    _role(objects, "Role", "op.v1.0.0-manager-7f9c", "manager")
    names = _names(objects)
    for kind in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"):
        assert names[f"{kind}/op.v1.0.0-manager"] == "op.v1.0.0-manager-7f9c"
    assert "ClusterRole/op.v1.0.0-manager-cluster" not in names


def test_the_copy_once_made_is_not_taken_for_cluster_permissions() -> None:
    objects = Objects()
    _role(objects, "Role", "op.v1.0.0-manager-7f9c", "manager")
    _role(objects, "ClusterRole", "op.v1.0.0-manager-7f9c", "manager")  # the copy
    _role(objects, "ClusterRole", "op.v1.0.0-manager-0b1d", "manager")  # clusterPermissions
    names = _names(objects)
    assert names["ClusterRole/op.v1.0.0-manager"] == "op.v1.0.0-manager-7f9c"
    assert names["ClusterRole/op.v1.0.0-manager-cluster"] == "op.v1.0.0-manager-0b1d"
    assert names["ClusterRoleBinding/op.v1.0.0-manager-cluster"] == "op.v1.0.0-manager-0b1d"


def test_a_long_service_account_gets_the_bounded_name_pivoter_generates() -> None:
    objects = Objects()
    account = "awslabs-gpu-operator-kmm-device-plugin-with-a-long-name"
    _role(objects, "ClusterRole", "op-generated", account)
    (key,) = (k for k in _names(objects) if k.startswith("ClusterRole/"))
    assert len(key.partition("/")[2]) <= 63


def test_roles_without_a_binding_or_of_another_csv_are_left_alone() -> None:
    objects = Objects()
    _role(objects, "ClusterRole", "op.v1.0.0-unbound-1", "unbound", binding=False)
    objects.put(
        "ClusterRole",
        "other.v2-x-1",
        labels={**OWNER, "olm.owner": "other.v2", "olm.permissions.hash": "h"},
    )
    objects.put("Role", "hand-made", NAMESPACE, labels={})
    assert _names(objects) == {}


def test_webhook_configurations_map_by_their_generate_name() -> None:
    objects = Objects()
    labels = {**OWNER, "olm.webhook-description-generate-name": "vwidget.example.com"}
    objects.put("ValidatingWebhookConfiguration", "vwidget.example.com-x7k2p", labels=labels)
    objects.put("ValidatingWebhookConfiguration", "someone-elses", labels={})
    assert _names(objects) == {
        "ValidatingWebhookConfiguration/op.v1.0.0-vwidget.example.com": "vwidget.example.com-x7k2p"
    }
