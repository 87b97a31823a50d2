"""What an apply changes in an existing object (pure logic): readable paths, keyed list items,
server-managed fields left out, labels and annotations apart, a cap, and pod-replacing workloads."""

from __future__ import annotations

import copy
from typing import Any

from provisioners.apply.fieldchanges import (
    MAX_PATHS,
    FieldChanges,
    KeyChange,
    KeyChangeKind,
    field_changes,
)


def _deployment(**env: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "op",
            "namespace": "ns",
            "uid": "u-1",
            "resourceVersion": "10",
            "generation": 3,
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "managedFields": [{"manager": "a"}],
            "labels": {"app": "op", "tier": "backend"},
            "annotations": {"deployment.kubernetes.io/revision": "3"},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "op"}},
            "template": {
                "metadata": {"labels": {"app": "op"}},
                "spec": {
                    "containers": [
                        {
                            "name": "manager",
                            "image": "op:1",
                            "env": [{"name": k, "value": v} for k, v in env.items()],
                        },
                        {"name": "proxy", "image": "proxy:1"},
                    ]
                },
            },
        },
        "status": {"replicas": 1, "observedGeneration": 3},
    }


def test_nothing_but_server_managed_fields_is_no_change() -> None:
    live = _deployment(LOG="info")
    answer = copy.deepcopy(live)
    answer["metadata"].update(
        resourceVersion="11", generation=4, managedFields=[{"manager": "b"}], selfLink="/x"
    )
    answer["status"] = {"replicas": 0}
    del answer["apiVersion"], answer["kind"]  # the items of a list read come without them
    changes = field_changes(live, answer)
    assert not changes
    assert changes == FieldChanges()


def test_a_container_env_value_is_named_by_the_names_of_its_list_items() -> None:
    live = _deployment(LOG="info", MODE="a")
    answer = _deployment(LOG="debug", MODE="a", EXTRA="1")
    changes = field_changes(live, answer)
    assert changes.fields == (
        "spec.template.spec.containers[name=manager].env[name=LOG].value",
        "spec.template.spec.containers[name=manager].env[name=EXTRA]",
    )
    assert changes.field_count == 2
    assert changes.metadata == ()
    assert changes.replaces_pods
    assert changes.as_dict() == {"fields": list(changes.fields), "metadata": []}


def test_reordered_named_items_are_a_change_of_the_list() -> None:
    live = _deployment(A="1", B="2")
    answer = _deployment(B="2", A="1")
    changes = field_changes(live, answer)
    assert changes.fields == ("spec.template.spec.containers[name=manager].env",)
    assert changes.replaces_pods


def test_labels_and_annotations_are_reported_apart_as_keys() -> None:
    live = _deployment()
    answer = _deployment()
    answer["metadata"]["labels"] = {"app": "op2", "core.rukpak.io/owner-kind": "BundleDeployment"}
    answer["metadata"]["annotations"]["note"] = "x"
    changes = field_changes(live, answer)
    assert changes.fields == ()
    assert changes.metadata == (
        KeyChange("labels", "app", KeyChangeKind.CHANGED),
        KeyChange("labels", "core.rukpak.io/owner-kind", KeyChangeKind.ADDED),
        KeyChange("labels", "tier", KeyChangeKind.REMOVED),
        KeyChange("annotations", "note", KeyChangeKind.ADDED),
    )
    assert [str(c) for c in changes.metadata] == [
        "label app changed",
        "label core.rukpak.io/owner-kind added",
        "label tier removed",
        "annotation note added",
    ]
    assert changes
    assert not changes.replaces_pods  # the Deployment's own labels: no new pods


def test_config_map_keys_that_are_not_words_are_quoted_and_values_never_shown() -> None:
    live: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "ns", "ownerReferences": [{"name": "a"}]},
        "data": {"config.yaml": "c2VjcmV0", "plain_key": "b2xk", "gone": "eA=="},
    }
    answer = copy.deepcopy(live)
    answer["data"] = {"config.yaml": "bmV3c2VjcmV0", "plain_key": "bmV3", "it's": "eQ=="}
    answer["metadata"]["ownerReferences"] = []
    changes = field_changes(live, answer)
    assert changes.fields == (
        "metadata.ownerReferences[name=a]",
        "data['config.yaml']",
        "data.plain_key",
        "data['it\\'s']",
        "data.gone",
    )
    text = repr(changes)
    assert "c2VjcmV0" not in text  # paths only, no values
    assert "bmV3" not in text


def test_lists_without_distinct_names_are_compared_by_index() -> None:
    live = {"kind": "Service", "apiVersion": "v1", "spec": {"ports": [{"port": 80}, {"port": 81}]}}
    answer = {"kind": "Service", "apiVersion": "v1", "spec": {"ports": [{"port": 8080}]}}
    changes = field_changes(live, answer)
    assert changes.fields == ("spec.ports[0].port", "spec.ports[1]")
    assert not changes.replaces_pods  # not a workload


def test_a_type_change_and_a_null_are_changes_of_the_field() -> None:
    live = {"kind": "X", "spec": {"a": 1, "b": None, "c": {"d": 1}}}
    answer = {"kind": "X", "spec": {"a": True, "c": "flat"}}
    assert field_changes(live, answer).fields == ("spec.a", "spec.c", "spec.b")


def test_paths_are_capped_with_a_count() -> None:
    live = {"kind": "ConfigMap", "apiVersion": "v1", "data": {}}
    answer = {"kind": "ConfigMap", "apiVersion": "v1", "data": {f"k{i}": "v" for i in range(80)}}
    answer["metadata"] = {"labels": {f"l{i}": "v" for i in range(60)}}
    changes = field_changes(live, answer)
    assert len(changes.fields) == MAX_PATHS
    assert changes.field_count == 80
    assert len(changes.metadata) == MAX_PATHS
    assert changes.metadata_count == 60
    shown = changes.as_dict()
    assert shown["moreFields"] == 30
    assert shown["moreMetadata"] == 10
    assert field_changes(live, answer, limit=2).fields == ("data.k0", "data.k1")


def test_only_workload_templates_replace_pods() -> None:
    for kind in ("Deployment", "StatefulSet", "DaemonSet"):
        live = _deployment()
        live["kind"] = kind
        answer = copy.deepcopy(live)
        answer["spec"]["template"]["metadata"]["annotations"] = {"restartedAt": "now"}
        changes = field_changes(live, answer)
        assert changes.replaces_pods, kind
        assert changes.fields == ("spec.template.metadata.annotations",)
    scaled = _deployment()
    scaled["spec"]["replicas"] = 3
    assert not field_changes(_deployment(), scaled).replaces_pods
    # A kind of the same name from another group is not a workload.
    foreign = _deployment()
    foreign["apiVersion"] = "example.com/v1"
    changed = copy.deepcopy(foreign)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "op:2"
    assert not field_changes(foreign, changed).replaces_pods
