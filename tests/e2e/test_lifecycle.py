"""BundleDeployment lifecycle on ``pivoter run`` (rukpak's plain-provisioner e2e scenarios):
template pivots keep the old Bundle on failure and delete it on success, missing CRDs give
``InstallFailed``, a dependent bundle installs once its provider exists, deletion with and without
live custom resources, and (kwok) a Deployment whose pods run makes the BundleDeployment Healthy.
"""

from __future__ import annotations

import time

import pytest
import yaml

from pivoter.kube import NotFound
from tests.cluster import unique_name, wait_for
from tests.e2e.helpers import BUNDLES, CRDS, E2E, condition, is_
from tests.manifests import cm_manifest, cr_manifest, crd_manifest

pytestmark = pytest.mark.cluster


def _source(*config_maps: str, path: str = "manifests") -> dict[str, object]:
    return {
        "type": "configMaps",
        "configMaps": [{"configMap": {"name": cm}, "path": path} for cm in config_maps],
    }


def test_pivot_keeps_old_bundle_on_failure_and_deletes_it_on_success(e2e: E2E) -> None:
    ns = e2e.namespace
    v1 = e2e.config_map({"a.yaml": cm_manifest("v1-only", ns), "b.yaml": cm_manifest("shared", ns)})
    name = e2e.deploy(_source(v1))
    bd = e2e.wait_installed(name)
    first = bd["status"]["activeBundle"]
    assert e2e.bundles_of(name) == [first]
    bundle = e2e.kube.get(BUNDLES, first)
    assert bundle["metadata"]["ownerReferences"][0]["name"] == name
    assert bundle["metadata"]["labels"]["app"] == name
    assert "core.rukpak.io/bundle-template-hash" in bundle["metadata"]["labels"]

    # A template whose bundle fails to unpack (no manifests/ directory): the old one stays.
    broken = e2e.config_map({"a.yaml": cm_manifest("never", ns)})
    e2e.retarget(name, _source(broken, path=""))
    bd = e2e.wait_unpack_failed(name)
    assert "manifests" in condition(bd, "HasValidBundle")["message"]
    deadline = time.monotonic() + 5  # rukpak checks "Consistently"; the state must not drift
    while time.monotonic() < deadline:
        bd = e2e.get(name)
        assert bd["status"]["activeBundle"] == first
        assert is_(bd, "Installed", "True", "InstallationSucceeded")
        e2e.kube.get(BUNDLES, first)
        assert e2e.config_map_in("v1-only") is not None
        time.sleep(0.5)
    assert len(e2e.bundles_of(name)) == 2
    assert e2e.config_map_in("never") is None

    # A good template: installs, prunes what v2 lacks, and deletes every other Bundle.
    v2 = e2e.config_map(
        {"a.yaml": cm_manifest("v2-only", ns), "b.yaml": cm_manifest("shared", ns, {"k": "v2"})}
    )
    e2e.retarget(name, _source(v2))
    bd = e2e.wait(
        name,
        lambda bd: (
            is_(bd, "Installed", "True", "InstallationSucceeded")
            and bd["status"].get("activeBundle") != first
            and is_(bd, "HasValidBundle", "True", "UnpackSuccessful")
        ),
        what="the pivot to v2",
    )
    second = bd["status"]["activeBundle"]
    wait_for(lambda: e2e.bundles_of(name) == [second], timeout=30, what="old Bundles deleted")
    assert e2e.config_map_in("v1-only") is None, "the pivot did not prune v1-only"
    shared = e2e.config_map_in("shared")
    assert shared is not None
    assert shared["data"] == {"k": "v2"}


def test_missing_crd_fails_until_the_provider_installs(e2e: E2E) -> None:
    ns = e2e.namespace
    group = f"{unique_name('g')}.example.com"
    dependent = e2e.deploy(_source(e2e.config_map({"cr.yaml": cr_manifest(group, "w1", ns)})))
    bd = e2e.wait(
        dependent,
        lambda bd: is_(bd, "Installed", "False", "InstallFailed"),
        what="Installed=False/InstallFailed",
    )
    message = condition(bd, "Installed")["message"]
    assert "Widget" in message, message
    assert is_(bd, "Healthy", "False", "InstallationStatusFalse")

    provider = e2e.deploy(_source(e2e.config_map({"crd.yaml": crd_manifest(group)})))
    e2e.wait_installed(provider)
    bd = e2e.wait_installed(dependent, timeout=120)
    assert {i["kind"] for i in bd["status"]["inventory"]} == {"Widget"}


def _crd_present(e2e: E2E, name: str) -> bool:
    try:
        crd = e2e.kube.get(CRDS, name)
    except NotFound:
        return False
    return not crd["metadata"].get("deletionTimestamp")


def test_deletion_with_and_without_live_custom_resources(e2e: E2E) -> None:
    ns = e2e.namespace
    # With a live custom resource (made by a user, not by the bundle): the CRD is kept.
    kept_group = f"{unique_name('g')}.example.com"
    provider = e2e.deploy(_source(e2e.config_map({"crd.yaml": crd_manifest(kept_group)})))
    e2e.wait_installed(provider)
    widgets = e2e.kube.resource(f"{kept_group}/v1", "Widget")
    e2e.kube.create(widgets, yaml.safe_load(cr_manifest(kept_group, "user-data", ns)), ns)
    e2e.delete(provider)
    crd_name = f"widgets.{kept_group}"
    assert _crd_present(e2e, crd_name), "a CRD with live custom resources must be kept"
    crd = e2e.kube.get(CRDS, crd_name)
    assert "core.rukpak.io/owner-name" not in (crd["metadata"].get("labels") or {})
    assert e2e.kube.get(widgets, "user-data", ns)["spec"] == {"size": 1}
    e2e.kube.delete(CRDS, crd_name)  # the user decides

    # Without custom resources: the bundle's objects and its CRD go, and so do its Bundles.
    gone_group = f"{unique_name('g')}.example.com"
    content = e2e.config_map(
        {"crd.yaml": crd_manifest(gone_group), "cm.yaml": cm_manifest("bundle-cm", ns)}
    )
    name = e2e.deploy(_source(content))
    bd = e2e.wait_installed(name)
    bundle = bd["status"]["activeBundle"]
    e2e.delete(name)
    assert e2e.config_map_in("bundle-cm") is None
    assert not _crd_present(e2e, f"widgets.{gone_group}")

    def bundle_gone() -> bool:
        try:
            e2e.kube.get(BUNDLES, bundle)
        except NotFound:
            return True
        return False

    wait_for(bundle_gone, timeout=60, what="the generated Bundle to be garbage-collected")


def test_delete_policy_removes_crd_with_live_custom_resources(e2e: E2E) -> None:
    ns = e2e.namespace
    group = f"{unique_name('g')}.example.com"
    content = e2e.config_map(
        {"crd.yaml": crd_manifest(group), "cr.yaml": cr_manifest(group, "w1", ns)}
    )
    name = e2e.deploy(_source(content), crdDeletionPolicy="Delete")
    e2e.wait_installed(name)
    e2e.delete(name)
    wait_for(lambda: not _crd_present(e2e, f"widgets.{group}"), timeout=60, what="the CRD deleted")


@pytest.mark.kwok
def test_deployment_runs_and_is_healthy(e2e: E2E) -> None:
    ns = e2e.namespace
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{"name": "web", "image": "registry.invalid/web:1"}],
                },
            },
        },
    }
    name = e2e.deploy(_source(e2e.config_map({"web.yaml": yaml.safe_dump(deployment)})))
    e2e.wait_installed(name)
    bd = e2e.wait(
        name, lambda bd: is_(bd, "Healthy", "True", "Healthy"), what="Healthy", timeout=120
    )
    assert "healthy" in condition(bd, "Healthy")["message"]
