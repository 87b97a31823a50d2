"""CRD upgrade safety through BundleDeployments (every provisioner class; plain bundles here).

An upgrade that changes a field's type is refused with ``UpgradeFailed`` naming the version and
the field, and the live CRD is left as it was; ``spec.preflight.crdUpgradeSafety.disabled``
lets it through. Dropping a version that is no longer served but still listed in
``status.storedVersions`` is made safe: the custom resources are rewritten in the storage version,
``storedVersions`` is updated, and the upgrade goes on (without that the API server itself would
refuse the new CRD).
"""

from __future__ import annotations

from typing import Any

import pytest

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS
from tests import manifests
from tests.cluster import session_labels, unique_name, wait_for
from tests.drift.running import Pivoter, condition

pytestmark = pytest.mark.cluster

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _schema(size_type: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"size": {"type": size_type}}}},
    }


def _crd(group: str, versions: list[dict[str, Any]]) -> dict[str, Any]:
    return manifests.crd(group, "Box", plural="boxes", versions=versions, labels=session_labels())


def _version(name: str, *, storage: bool, served: bool = True, size: str = "integer") -> Any:
    return manifests.crd_version(name, schema=_schema(size), served=served, storage=storage)


def _retarget(pivoter: Pivoter, name: str, crd: dict[str, Any], **spec: Any) -> None:
    sources = pivoter.plain_bundle(unique_name("crd"), [crd])
    patch = {"spec": {"template": {"spec": {"source": {"configMaps": sources}}}, **spec}}
    pivoter.kube.merge_patch(BUNDLE_DEPLOYMENTS, name, patch)


def _installed(pivoter: Pivoter, name: str, bundle_before: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        bd = pivoter.get(name)
        ok = (
            condition(bd, "Installed").get("reason") == "InstallationSucceeded"
            and bd["status"].get("activeBundle") != bundle_before
        )
        return bd if ok else None

    bd: dict[str, Any] = wait_for(done, timeout=90, what=f"{name} to install the new bundle")
    return bd


def test_unsafe_crd_upgrade_is_refused_with_the_field(pivoter: Pivoter) -> None:
    group = f"{unique_name('g')}.example.com"
    name = unique_name("crdup")
    sources = pivoter.plain_bundle(
        unique_name("crd"), [_crd(group, [_version("v1", storage=True)])]
    )
    pivoter.bundle_deployment(name, sources, crdDeletionPolicy="Delete")
    first = pivoter.wait(name, "Installed", "True")["status"]["activeBundle"]

    _retarget(pivoter, name, _crd(group, [_version("v1", storage=True, size="string")]))
    bd = pivoter.wait(name, "Installed", "False", reason="UpgradeFailed")
    message = condition(bd, "Installed")["message"]
    assert "version v1: .spec.size: type changed from integer to string" in message, message
    assert bd["status"]["activeBundle"] == first
    live = pivoter.kube.request("GET", f"{CRDS}/boxes.{group}")
    spec_schema = live["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec_schema["properties"]["size"]["type"] == "integer"

    # The opt-out lets the same upgrade through.
    pivoter.kube.merge_patch(
        BUNDLE_DEPLOYMENTS, name, {"spec": {"preflight": {"crdUpgradeSafety": {"disabled": True}}}}
    )
    _installed(pivoter, name, first)
    live = pivoter.kube.request("GET", f"{CRDS}/boxes.{group}")
    spec_schema = live["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec_schema["properties"]["size"]["type"] == "string"


def test_stored_versions_are_migrated_when_a_version_is_removed_safely(
    pivoter: Pivoter, namespace: str
) -> None:
    group = f"{unique_name('g')}.example.com"
    name = unique_name("crdmig")
    sources = pivoter.plain_bundle(
        unique_name("crd"), [_crd(group, [_version("v1alpha1", storage=True)])]
    )
    pivoter.bundle_deployment(name, sources, crdDeletionPolicy="Delete")
    bundle = pivoter.wait(name, "Installed", "True")["status"]["activeBundle"]
    boxes = f"/apis/{group}/v1alpha1/namespaces/{namespace}/boxes"
    pivoter.kube.request(
        "POST",
        boxes,
        body={
            "apiVersion": f"{group}/v1alpha1",
            "kind": "Box",
            "metadata": {"name": "b1"},
            "spec": {"size": 3},
        },
    )

    # v1 becomes the storage version and v1alpha1 stops being served (an operator's choice,
    # made with the check turned off): v1alpha1 stays in storedVersions, b1 is stored in it.
    _retarget(
        pivoter,
        name,
        _crd(
            group, [_version("v1alpha1", storage=False, served=False), _version("v1", storage=True)]
        ),
        preflight={"crdUpgradeSafety": {"disabled": True}},
    )
    bundle = _installed(pivoter, name, bundle)["status"]["activeBundle"]
    live = pivoter.kube.request("GET", f"{CRDS}/boxes.{group}")
    assert live["status"]["storedVersions"] == ["v1alpha1", "v1"]

    # Removing v1alpha1 with the check on: b1 is rewritten in v1, storedVersions becomes [v1].
    _retarget(
        pivoter,
        name,
        _crd(group, [_version("v1", storage=True)]),
        preflight={"crdUpgradeSafety": {"disabled": False}},
    )
    bd = _installed(pivoter, name, bundle)
    message = condition(bd, "Installed")["message"]
    assert f"migrated CustomResourceDefinition boxes.{group}" in message, message
    assert "rewrote 1 objects in v1" in message, message
    live = pivoter.kube.request("GET", f"{CRDS}/boxes.{group}")
    assert live["status"]["storedVersions"] == ["v1"]
    assert [v["name"] for v in live["spec"]["versions"]] == ["v1"]
    box = pivoter.kube.request("GET", f"/apis/{group}/v1/namespaces/{namespace}/boxes/b1")
    assert box["spec"]["size"] == 3
