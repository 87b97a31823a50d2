"""BundleDeployments of plain bundles on the real control plane: install, pivot, failure, deletion.

The scenarios follow rukpak's plain-bundle e2e suite (see the reference notes): template pivots
keep the old bundle on failure and delete it on success, missing CRDs give ``InstallFailed``, a
dependent bundle fails until its provider exists, deletion with and without live custom
resources; plus pruning on pivot, the ownership conflict, impersonation and re-unpack after the
store is wiped.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from pivoter.apis.resources import BUNDLES
from pivoter.kube import NotFound
from provisioners.store import StoreError
from tests.bundles.conftest import Harness, condition, is_
from tests.cluster import unique_name, wait_for
from tests.manifests import cm_manifest, cr_manifest, crd_manifest

pytestmark = pytest.mark.cluster


def _get_cm(h: Harness, name: str, namespace: str) -> dict[str, Any] | None:
    try:
        return h.kube.get(h.kube.resource("v1", "ConfigMap"), name, namespace)
    except NotFound:
        return None


def _installed(bd: dict[str, Any]) -> bool:
    return is_(bd, "Installed", "True", "InstallationSucceeded")


def test_install_pivot_and_prune(harness: Harness, namespace: str) -> None:
    h = harness
    v1 = h.config_map_bundle(
        {"a.yaml": cm_manifest("first", namespace), "b.yaml": cm_manifest("shared", namespace)}
    )
    name = unique_name("bd")
    h.bundle_deployment(name, [v1])
    bd = h.converge(name, _installed, what="Installed")
    first_bundle = bd["status"]["activeBundle"]
    assert first_bundle.startswith(f"{name}-")
    assert is_(bd, "HasValidBundle", "True", "UnpackSuccessful")
    assert is_(bd, "Healthy", "True", "Healthy")
    assert bd["status"]["observedGeneration"] == bd["metadata"]["generation"]
    cm = _get_cm(h, "first", namespace)
    assert cm is not None
    assert cm["metadata"]["labels"]["core.rukpak.io/owner-name"] == name
    bundle = h.kube.get(BUNDLES, first_bundle)
    assert bundle["status"]["phase"] == "Unpacked"
    assert bundle["status"]["digest"].startswith("sha256:")
    assert bundle["status"]["resolvedSource"]["type"] == "configMaps"

    # Pivot: "first" goes away, "second" arrives, "shared" stays; the old Bundle is deleted.
    v2 = h.config_map_bundle(
        {
            "a.yaml": cm_manifest("second", namespace),
            "b.yaml": cm_manifest("shared", namespace, {"k": "v2"}),
        }
    )
    h.retarget(name, [v2])
    bd = h.converge(
        name,
        lambda bd: _installed(bd) and bd["status"]["activeBundle"] != first_bundle,
        what="pivot to the second bundle",
    )
    assert _get_cm(h, "first", namespace) is None, "the pivot did not prune 'first'"
    assert _get_cm(h, "second", namespace) is not None
    shared = _get_cm(h, "shared", namespace)
    assert shared is not None
    assert shared["data"] == {"k": "v2"}
    with pytest.raises(NotFound):
        h.kube.get(BUNDLES, first_bundle)
    inventory = {(i["kind"], i["name"]) for i in bd["status"]["inventory"]}
    assert inventory == {("ConfigMap", "second"), ("ConfigMap", "shared")}


def test_failed_unpack_keeps_old_content(harness: Harness, namespace: str) -> None:
    h = harness
    good = h.config_map_bundle({"a.yaml": cm_manifest("keepme", namespace)})
    name = unique_name("bd")
    h.bundle_deployment(name, [good])
    bd = h.converge(name, _installed, what="Installed")
    active = bd["status"]["activeBundle"]

    # A bundle without manifests/ (files at the root) fails to unpack.
    bad = h.config_map_bundle({"a.yaml": cm_manifest("never", namespace)})
    h.retarget(name, [bad], path="")
    bd = h.converge(
        name, lambda bd: is_(bd, "HasValidBundle", "False", "UnpackFailed"), what="UnpackFailed"
    )
    message = condition(bd, "HasValidBundle")["message"]
    assert "manifests" in message, message
    assert bd["status"]["activeBundle"] == active
    assert _installed(bd), "Installed must stay True from the old bundle"
    assert _get_cm(h, "keepme", namespace) is not None
    assert _get_cm(h, "never", namespace) is None
    h.kube.get(BUNDLES, active)  # the old Bundle is kept while the new one fails


def test_mutable_config_map_is_refused(harness: Harness, namespace: str) -> None:
    h = harness
    mutable = h.config_map_bundle({"a.yaml": cm_manifest("x", namespace)}, immutable=False)
    name = unique_name("bd")
    h.bundle_deployment(name, [mutable])
    bd = h.converge(
        name, lambda bd: is_(bd, "HasValidBundle", "False", "UnpackFailed"), what="UnpackFailed"
    )
    assert "immutable" in condition(bd, "HasValidBundle")["message"]
    assert is_(bd, "Installed", "Unknown")


def test_missing_crd_then_provider(harness: Harness, namespace: str) -> None:
    """A dependent bundle fails until the bundle providing its CRD is installed."""
    h = harness
    group = f"{unique_name('g')}.example.com"
    dependent = h.config_map_bundle({"cr.yaml": cr_manifest(group, "w1", namespace)})
    dep_name = unique_name("bd")
    h.bundle_deployment(dep_name, [dependent])
    bd = h.converge(
        dep_name, lambda bd: is_(bd, "Installed", "False", "InstallFailed"), what="InstallFailed"
    )
    assert "Widget" in condition(bd, "Installed")["message"]
    assert is_(bd, "Healthy", "False", "InstallationStatusFalse")

    provider = h.config_map_bundle({"crd.yaml": crd_manifest(group)})
    prov_name = unique_name("bd")
    h.bundle_deployment(prov_name, [provider])
    h.converge(prov_name, _installed, what="provider Installed")
    bd = h.converge(dep_name, _installed, what="dependent Installed")
    assert {i["kind"] for i in bd["status"]["inventory"]} == {"Widget"}

    # Deleting the provider while a custom resource lives keeps the CRD (crdDeletionPolicy Keep).
    h.delete_and_finalize(prov_name)
    crd = h.kube.get(
        h.kube.resource("apiextensions.k8s.io/v1", "CustomResourceDefinition"), f"widgets.{group}"
    )
    assert "core.rukpak.io/owner-name" not in (crd["metadata"].get("labels") or {})

    # Deleting the dependent removes its custom resource.
    h.delete_and_finalize(dep_name)
    widgets = h.kube.resource(f"{group}/v1", "Widget")
    with pytest.raises(NotFound):
        h.kube.get(widgets, "w1", namespace)


def test_deletion_removes_everything(harness: Harness, namespace: str) -> None:
    h = harness
    group = f"{unique_name('g')}.example.com"
    content = h.config_map_bundle(
        {"crd.yaml": crd_manifest(group), "cm.yaml": cm_manifest("gone", namespace)}
    )
    name = unique_name("bd")
    h.bundle_deployment(name, [content], crdDeletionPolicy="Delete")
    bd = h.converge(name, _installed, what="Installed")
    bundle = bd["status"]["activeBundle"]
    h.delete_and_finalize(name)
    assert _get_cm(h, "gone", namespace) is None
    crds = h.kube.resource("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    try:
        crd = h.kube.get(crds, f"widgets.{group}")
    except NotFound:
        crd = None
    assert crd is None or crd["metadata"].get("deletionTimestamp")

    # The generated Bundle is garbage-collected through its ownerReference (the real GC runs).
    def bundle_gone() -> bool:
        try:
            h.kube.get(BUNDLES, bundle)
        except NotFound:
            return True
        return False

    wait_for(bundle_gone, timeout=60, what="the generated Bundle to be garbage-collected")


def test_ownership_conflict_and_adoption(harness: Harness, namespace: str) -> None:
    h = harness
    cms = h.kube.resource("v1", "ConfigMap")
    h.kube.create(
        cms,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "taken"}, "data": {}},
        namespace=namespace,
    )
    content = h.config_map_bundle({"a.yaml": cm_manifest("taken", namespace)})
    name = unique_name("bd")
    h.bundle_deployment(name, [content])
    bd = h.converge(
        name, lambda bd: is_(bd, "Installed", "False", "InstallFailed"), what="InstallFailed"
    )
    assert "adoptExisting" in condition(bd, "Installed")["message"]
    h.kube.merge_patch(
        h.kube.resource("core.rukpak.io/v1alpha1", "BundleDeployment"),
        name,
        {"spec": {"adoptExisting": True}},
    )
    h.converge(name, _installed, what="Installed after adoptExisting")
    cm = _get_cm(h, "taken", namespace)
    assert cm is not None
    assert cm["data"] == {"k": "v"}


def test_store_wiped_unpacks_again(harness: Harness, namespace: str) -> None:
    h = harness
    content = h.config_map_bundle({"a.yaml": cm_manifest("again", namespace)})
    name = unique_name("bd")
    h.bundle_deployment(name, [content])
    bd = h.converge(name, _installed, what="Installed")
    digest = h.kube.get(BUNDLES, bd["status"]["activeBundle"])["status"]["digest"]
    # An empty store, as on a new leader on another node.
    shutil.rmtree(h.store.root / "objects")
    (h.store.root / "objects").mkdir()
    with pytest.raises(StoreError):
        h.store.get(digest)
    h.deployments.reconcile(name)
    assert h.store.get(digest).path.is_dir()
    assert _installed(
        h.kube.get(h.kube.resource("core.rukpak.io/v1alpha1", "BundleDeployment"), name)
    )


def test_impersonated_service_account_without_rights(harness: Harness, namespace: str) -> None:
    h = harness
    sa = unique_name("sa")
    h.kube.create(
        h.kube.resource("v1", "ServiceAccount"),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}},
        namespace=namespace,
    )
    content = h.config_map_bundle({"a.yaml": cm_manifest("forbidden", namespace)})
    name = unique_name("bd")
    h.bundle_deployment(name, [content], serviceAccount={"name": sa, "namespace": namespace})
    bd = h.converge(
        name, lambda bd: is_(bd, "Installed", "False", "InstallFailed"), what="InstallFailed"
    )
    message = condition(bd, "Installed")["message"]
    assert "forbidden" in message.lower(), message
    assert sa in message, message
    assert _get_cm(h, "forbidden", namespace) is None
