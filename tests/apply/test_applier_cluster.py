"""The applier against the real control plane: order, ownership, pruning, CRD policy, warnings."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from provisioners.apply.applier import (
    CRD_POLICY_DELETE,
    Applier,
    ApplyError,
    Owner,
    OwnershipConflict,
)
from provisioners.apply.kubeapi import KubeAPI, NotFound
from provisioners.apply.objects import LABEL_OWNER_NAME, ObjectRef, ref_of
from provisioners.apply.ownership import LIST_FROM
from tests.cluster import TestCluster, session_labels, unique_name
from tests.manifests import configmap, crd, crd_version, custom_resource

pytestmark = pytest.mark.cluster


@pytest.fixture
def api(cluster: TestCluster) -> Iterator[KubeAPI]:
    api_client = cluster.api_client()
    yield KubeAPI(api_client)
    api_client.close()


def _crd(group: str, *, deprecated: bool = False) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
    }
    warning: dict[str, Any] = {
        "deprecated": True,
        "deprecationWarning": f"{group}/v1 Widget is going away, use v2",
    }
    version = crd_version(schema=schema, **(warning if deprecated else {}))
    return crd(group, versions=[version], labels=session_labels())


def _exists(api: KubeAPI, ref: ObjectRef) -> bool:
    resource = api.resource(ref.api_version, ref.kind)
    try:
        api.request("GET", resource.path(ref.namespace, ref.name))
    except NotFound:
        return False
    return True


def _delete_crd(api: KubeAPI, name: str) -> None:
    with contextlib.suppress(NotFound):
        api.request("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")


def test_crd_and_its_custom_resource_in_one_set(api: KubeAPI, namespace: str) -> None:
    group = f"{unique_name('g')}.example.com"
    applier = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    # Deliberately listed consumer-first: the applier orders them.
    objects = [
        custom_resource(group, "w1", namespace, spec={"size": 3}),
        configmap("cm", namespace),
        _crd(group),
    ]
    try:
        result = applier.apply(objects)
        assert [r.kind for r in result.applied] == [
            "CustomResourceDefinition",
            "ConfigMap",
            "Widget",
        ]
        widget = api.request("GET", api.resource(f"{group}/v1", "Widget").path(namespace, "w1"))
        assert widget["spec"] == {"size": 3}
        assert widget["metadata"]["labels"][LABEL_OWNER_NAME] == applier.owner.name
        # Applying the same set again changes nothing and does not fail (idempotent).
        again = applier.apply(objects)
        assert again.applied == result.applied
    finally:
        _delete_crd(api, f"widgets.{group}")


def test_unknown_kind_fails_with_the_api_servers_words(api: KubeAPI, namespace: str) -> None:
    applier = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    with pytest.raises(ApplyError, match=r'no matches for kind "Widget" in version "nope.io/v1"'):
        applier.apply([custom_resource("nope.io", "w", namespace, spec={"size": 3})])


def test_dry_run_stores_nothing(api: KubeAPI, namespace: str) -> None:
    group = f"{unique_name('g')}.example.com"
    applier = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    result = applier.apply(
        [
            configmap("dry", namespace),
            _crd(group),
            custom_resource(group, "w", namespace, spec={"size": 3}),
        ],
        dry_run=True,
    )
    assert {r.kind for r in result.applied} == {"ConfigMap", "CustomResourceDefinition"}
    assert [r.kind for r, _ in result.skipped] == ["Widget"]
    assert not _exists(api, ObjectRef("v1", "ConfigMap", namespace, "dry"))
    with pytest.raises(NotFound):
        api.request(
            "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}"
        )


def test_dry_run_skips_objects_in_a_namespace_the_set_creates(api: KubeAPI, namespace: str) -> None:
    new = unique_name("ns")
    applier = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    existing = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    created = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": new}}
    result = applier.apply(
        [existing, created, configmap("inside", new), configmap("here", namespace)],
        adopt=True,
        dry_run=True,
    )
    assert [(r.kind, r.name) for r, _ in result.skipped] == [("ConfigMap", "inside")]
    assert "Namespace is part of this set" in result.skipped[0][1]
    assert {(r.kind, r.name) for r in result.applied} == {
        ("Namespace", namespace),
        ("Namespace", new),
        ("ConfigMap", "here"),
    }
    with pytest.raises(NotFound):
        api.request("GET", f"/api/v1/namespaces/{new}")


def test_dry_run_reports_invalid_objects(api: KubeAPI, namespace: str) -> None:
    applier = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    bad = configmap("bad", namespace)
    bad["data"] = {"k": 5}  # ConfigMap data values must be strings
    with pytest.raises(ApplyError, match=r"ConfigMap.v1 .*/bad"):
        applier.apply([bad], dry_run=True)


def test_refuses_to_take_over_someone_elses_object(api: KubeAPI, namespace: str) -> None:
    api.request(
        "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap("theirs", namespace)
    )
    mine = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    with pytest.raises(OwnershipConflict, match="adoptExisting"):
        mine.apply([configmap("theirs", namespace, {"k": "mine"})])
    unchanged = api.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/theirs")
    assert unchanged["data"] == {"k": "v"}

    mine.apply([configmap("theirs", namespace, {"k": "mine"})], adopt=True)
    adopted = api.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/theirs")
    assert adopted["data"] == {"k": "mine"}
    assert adopted["metadata"]["labels"][LABEL_OWNER_NAME] == mine.owner.name

    other = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    with pytest.raises(OwnershipConflict, match=f"BundleDeployment {mine.owner.name}"):
        other.apply([configmap("theirs", namespace)])


def test_prune_removes_what_the_new_revision_dropped(api: KubeAPI, namespace: str) -> None:
    applier = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    old = applier.apply([configmap("stay", namespace), configmap("go", namespace)]).applied
    new = applier.apply([configmap("stay", namespace)]).applied
    pruned = applier.prune(old, new)
    assert pruned.deleted == [ObjectRef("v1", "ConfigMap", namespace, "go")]
    assert _exists(api, ObjectRef("v1", "ConfigMap", namespace, "stay"))
    assert not _exists(api, ObjectRef("v1", "ConfigMap", namespace, "go"))


def test_prune_never_deletes_what_another_owner_holds(api: KubeAPI, namespace: str) -> None:
    first = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    second = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    old = first.apply([configmap("shared", namespace)]).applied
    second.apply([configmap("shared", namespace)], adopt=True)
    pruned = first.prune(old, [])
    assert pruned.deleted == []
    assert pruned.kept[0][0] == old[0]
    assert _exists(api, old[0])


def test_crd_with_live_custom_resources_is_kept_unless_asked(api: KubeAPI, namespace: str) -> None:
    group = f"{unique_name('g')}.example.com"
    applier = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    try:
        applied = applier.apply([_crd(group)]).applied
        # A user creates a custom resource of the bundle's CRD: their data.
        api.request(
            "POST",
            api.resource(f"{group}/v1", "Widget").path(namespace),
            body=custom_resource(group, "users-data", namespace, spec={"size": 3}),
        )
        kept = applier.prune(applied, [])
        assert kept.deleted == []
        assert "custom resources still exist" in kept.kept[0][1]
        assert _exists(api, applied[0])

        deleted = applier.prune(applied, [], crd_policy=CRD_POLICY_DELETE)
        assert deleted.deleted == applied
    finally:
        _delete_crd(api, f"widgets.{group}")


def test_api_server_warnings_reach_the_caller(api: KubeAPI, namespace: str) -> None:
    group = f"{unique_name('g')}.example.com"
    applier = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    try:
        result = applier.apply(
            [_crd(group, deprecated=True), custom_resource(group, "w", namespace, spec={"size": 3})]
        )
        widget_ref = ref_of(custom_resource(group, "w", namespace, spec={"size": 3}))
        assert any(
            w.startswith(str(widget_ref)) and "is going away, use v2" in w for w in result.warnings
        ), result.warnings
    finally:
        _delete_crd(api, f"widgets.{group}")


def test_ownership_is_read_with_one_list_per_collection_and_not_for_the_inventory(
    api: KubeAPI, namespace: str
) -> None:
    objects = [configmap(f"cm-{i}", namespace, {"i": str(i)}) for i in range(LIST_FROM)]
    mine = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    first = mine.apply(objects)
    assert len(first.applied) == LIST_FROM
    assert first.ownership_reads == 1  # one metadata list instead of a GET each
    # The objects as stored come back with the result (the health check reads them first).
    stored = first.objects[first.applied[0]]
    assert stored["metadata"]["uid"]
    assert stored["data"] == {"i": "0"}
    assert mine.apply(objects, dry_run=True, owned=first.applied).objects == {}
    # Applied again with the inventory: nothing to read.
    again = mine.apply(objects, owned=first.applied)
    assert again.ownership_reads == 0
    # A few objects are read one by one.
    few = mine.apply(objects[:2])
    assert few.ownership_reads == 2
    # The list still sees other owners and unowned objects.
    other = Applier(api, Owner("BundleDeployment", unique_name("bd")))
    with pytest.raises(OwnershipConflict, match=f"BundleDeployment {mine.owner.name}"):
        other.apply(objects)
    api.request(
        "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap("loose", namespace)
    )
    with pytest.raises(OwnershipConflict, match="no pivoter or rukpak owner") as err:
        mine.apply([*objects, configmap("loose", namespace)], owned=first.applied)
    assert err.value.ref == ObjectRef("v1", "ConfigMap", namespace, "loose")
    assert api.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/loose")["data"] == {
        "k": "v"
    }


def test_a_failure_in_a_phase_records_everything_that_was_applied(
    api: KubeAPI, namespace: str
) -> None:
    """The ConfigMaps of one phase are applied several at a time: one of them invalid fails the
    apply, and every object applied before it and beside it is recorded (so it can be pruned),
    while later phases are not started."""
    good = [configmap(f"ok-{i}", namespace) for i in range(6)]
    bad = configmap("Not_A_Valid_Name", namespace)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "after", "namespace": namespace},
        "spec": {"ports": [{"port": 80}]},
    }
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}}
    applier = Applier(
        api, Owner("BundleDeployment", unique_name("bd")), default_namespace=namespace
    )
    assert applier.concurrency > 1
    with pytest.raises(ApplyError, match="Not_A_Valid_Name") as err:
        applier.apply([service, *good[:3], bad, *good[3:], sa])
    applied = err.value.applied
    assert applied[0] == ObjectRef("v1", "ServiceAccount", namespace, "sa")
    assert sorted(r.name for r in applied[1:]) == sorted(o["metadata"]["name"] for o in good)
    for ref in applied:
        assert _exists(api, ref)
    assert not _exists(api, ObjectRef("v1", "Service", namespace, "after"))
