"""Install order, references and ownership labels (pure logic)."""

from __future__ import annotations

import pytest

from provisioners.apply.kubeapi import Resource, parse_warnings
from provisioners.apply.objects import (
    LABEL_OWNER_KIND,
    LABEL_OWNER_NAME,
    ObjectRef,
    install_order,
    install_phases,
    owner_of,
    ref_of,
    with_owner_labels,
)


def _obj(api_version: str, kind: str, name: str, namespace: str = "") -> dict[str, object]:
    metadata: dict[str, str] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


def test_providers_come_before_consumers() -> None:
    crd = _obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com")
    crd["spec"] = {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"}}
    objects = [
        _obj("example.com/v1", "Widget", "w", "ns"),
        _obj("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "hook"),
        _obj("apps/v1", "Deployment", "op", "ns"),
        crd,
        _obj("v1", "ServiceAccount", "op", "ns"),
        _obj("v1", "Namespace", "ns"),
        _obj("rbac.authorization.k8s.io/v1", "RoleBinding", "rb", "ns"),
        _obj("other.io/v1", "Gadget", "g", "ns"),  # a kind defined elsewhere: default rank
    ]
    kinds = [o["kind"] for o in install_order(objects)]
    assert kinds.index("Namespace") < kinds.index("CustomResourceDefinition")
    assert kinds.index("CustomResourceDefinition") < kinds.index("ServiceAccount")
    assert kinds.index("ServiceAccount") < kinds.index("RoleBinding")
    assert kinds.index("RoleBinding") < kinds.index("Deployment")
    assert kinds.index("Deployment") < kinds.index("ValidatingWebhookConfiguration")
    assert kinds[-1] == "Widget", "custom resources of CRDs in the set go last"


def test_order_is_stable_within_a_rank() -> None:
    objects = [_obj("v1", "ConfigMap", f"cm{i}", "ns") for i in range(5)]
    assert install_order(objects) == objects


def test_phases_group_one_rank_each_in_install_order() -> None:
    objects = [
        _obj("v1", "ConfigMap", "a", "ns"),
        _obj("v1", "Secret", "s", "ns"),
        _obj("v1", "Namespace", "ns"),
        _obj("v1", "ConfigMap", "b", "ns"),
        _obj("v1", "Service", "svc", "ns"),
    ]
    phases = install_phases(objects)
    assert [[o["metadata"]["name"] for o in phase] for phase in phases] == [  # type: ignore[index]
        ["ns"],
        ["a", "s", "b"],
        ["svc"],
    ]
    assert [o for phase in phases for o in phase] == install_order(objects)


def test_ref_of_names_what_is_missing() -> None:
    with pytest.raises(ValueError, match=r"apiVersion, metadata\.name"):
        ref_of({"kind": "ConfigMap", "metadata": {}})
    ref = ref_of(_obj("apps/v1", "Deployment", "op", "ns"))
    assert ref == ObjectRef("apps/v1", "Deployment", "ns", "op")
    assert ref.group == "apps"
    assert ObjectRef.from_dict(ref.as_dict()) == ref


def test_owner_labels_round_trip_without_mutating_input() -> None:
    original = _obj("v1", "ConfigMap", "cm", "ns")
    labelled = with_owner_labels(original, "BundleDeployment", "bd")
    assert "labels" not in original["metadata"]
    assert labelled["metadata"]["labels"] == {  # type: ignore[index]
        LABEL_OWNER_KIND: "BundleDeployment",
        LABEL_OWNER_NAME: "bd",
    }
    assert owner_of(labelled) == ("BundleDeployment", "bd")
    assert owner_of(original) is None


def test_resource_paths() -> None:
    core = Resource("v1", "ConfigMap", "configmaps", namespaced=True)
    assert core.path("ns", "a") == "/api/v1/namespaces/ns/configmaps/a"
    crd = Resource("apiextensions.k8s.io/v1", "CustomResourceDefinition", "crds", False)
    assert crd.path("ignored", "x") == "/apis/apiextensions.k8s.io/v1/crds/x"


def test_warning_headers_are_decoded() -> None:
    values = [
        '299 - "policy/v1beta1 PodSecurityPolicy is deprecated in v1.21+"',
        '299 - "a \\"quoted\\" word"',
        "not in the standard format",
    ]
    assert parse_warnings(values) == [
        "policy/v1beta1 PodSecurityPolicy is deprecated in v1.21+",
        'a "quoted" word',
        "not in the standard format",
    ]
