"""Pure parts of drift detection: field paths of differences, fingerprints, owner mapping."""

from __future__ import annotations

from typing import Any

from pivoter.controllers.drift import Drift, DriftReport, differences, fingerprint
from pivoter.controllers.managedobjects import owning_bundle_deployment
from provisioners.apply.objects import ObjectRef


def test_differences_name_the_changed_fields() -> None:
    live = {"spec": {"replicas": 5, "template": {"containers": [{"image": "a"}]}}, "data": {}}
    desired = {"spec": {"replicas": 2, "template": {"containers": [{"image": "b"}]}}, "data": {}}
    assert differences(live, desired) == ["spec.replicas", "spec.template.containers[0].image"]
    assert differences({"data": {"k": "v"}}, {"data": {}}) == ["data.k"]
    assert differences({"ports": [1]}, {"ports": [1, 2]}) == ["ports"]
    assert differences({"a": 1}, {"a": 1}) == []


def test_fingerprint_ignores_status_and_server_fields_only() -> None:
    obj: dict[str, Any] = {
        "kind": "Deployment",
        "metadata": {"name": "d", "resourceVersion": "1", "generation": 1, "managedFields": []},
        "spec": {"replicas": 1},
        "status": {"readyReplicas": 0},
    }
    status_only = {
        **obj,
        "metadata": {**obj["metadata"], "resourceVersion": "2"},
        "status": {"readyReplicas": 1},
    }
    edited = {**obj, "spec": {"replicas": 3}}
    assert fingerprint(obj) == fingerprint(status_only)
    assert fingerprint(obj) != fingerprint(edited)


def test_report_summary_names_objects_and_counts_the_rest() -> None:
    drifts = [Drift(ObjectRef("v1", "ConfigMap", "ns", f"cm{i}"), "deleted") for i in range(12)]
    summary = DriftReport(drifts=drifts).summary()
    assert summary.startswith("ConfigMap ns/cm0 deleted; ConfigMap ns/cm1 deleted")
    assert summary.endswith("(and 2 more)")
    crd = Drift(
        ObjectRef("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "x.y"), "deleted"
    )
    assert str(crd) == "CustomResourceDefinition x.y deleted"


def test_owner_labels_map_to_the_bundle_deployment() -> None:
    labels = {"core.rukpak.io/owner-kind": "BundleDeployment", "core.rukpak.io/owner-name": "bd"}
    assert owning_bundle_deployment({"metadata": {"labels": labels}}) == ["bd"]
    other = {**labels, "core.rukpak.io/owner-kind": "Test"}
    assert owning_bundle_deployment({"metadata": {"labels": other}}) == []
    assert owning_bundle_deployment({"metadata": {}}) == []


def test_an_object_still_finalizing_holds_the_correction_back() -> None:
    ref = ObjectRef("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "x.y")
    assert not DriftReport(drifts=[Drift(ref, "deleted")]).finalizing
    assert DriftReport(
        drifts=[Drift(ref, "deleted (still finalizing)", finalizing=True)]
    ).finalizing
