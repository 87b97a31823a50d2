"""Drift correction through a running Manager on the real control plane (pods on a kwok node).

A managed ConfigMap deleted, a managed Deployment's replicas edited and a managed CRD deleted are
each restored by the daemon within seconds, without any reconcile called by hand: the shared
informers see the change and queue the owning BundleDeployment. Each correction is named in a
``DriftCorrected`` Event and the ``Drifted`` condition. With ``driftPolicy: Report`` the same
changes are reported (``Drifted=True``, a ``DriftDetected`` Event) and left alone; a field pivoter
does not manage (another manager's annotation) is not drift at all. A BundleDeployment being
deleted is seen so (``status.observedGeneration``) and corrects nothing from then on.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS
from pivoter.kube import Conflict, NotFound, Resource
from tests import manifests
from tests.cluster import session_labels, unique_name, wait_for
from tests.drift.running import Pivoter, condition

pytestmark = [pytest.mark.cluster, pytest.mark.kwok]

CONFIG_MAPS = Resource("v1", "ConfigMap", "configmaps", namespaced=True)
DEPLOYMENTS = Resource("apps/v1", "Deployment", "deployments", namespaced=True)
CRDS = Resource(
    "apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
RESTORED_WITHIN = 15.0  # seconds: generous for a shared 2-core machine; the benchmark measures


def _objects(namespace: str, group: str) -> list[dict[str, Any]]:
    labels = {"app": "drifty"}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": namespace},
            "data": {"mode": "fast"},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "drifty", "namespace": namespace},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "app", "image": "example.com/app:1"}]},
                },
            },
        },
        manifests.crd(group, "Gadget", labels=session_labels()),
    ]


def _install(pivoter: Pivoter, namespace: str, **spec: Any) -> tuple[str, str]:
    group = f"{unique_name('g')}.example.com"
    name = unique_name("drift")
    sources = pivoter.plain_bundle(unique_name("content"), _objects(namespace, group))
    pivoter.bundle_deployment(name, sources, crdDeletionPolicy="Delete", **spec)
    pivoter.wait(name, "Installed", "True", reason="InstallationSucceeded")
    return name, group


def _get(pivoter: Pivoter, resource: Resource, name: str, namespace: str | None) -> Any:
    try:
        return pivoter.kube.get(resource, name, namespace)
    except NotFound:
        return None


def _corrected(pivoter: Pivoter, name: str, text: str) -> list[dict[str, Any]]:
    return [e for e in pivoter.events(name, "DriftCorrected") if text in e.get("note", "")]


def _wait_corrected(pivoter: Pivoter, name: str, text: str) -> None:
    wait_for(
        lambda: _corrected(pivoter, name, text),
        timeout=RESTORED_WITHIN,
        what=f"a DriftCorrected Event naming {text!r}",
        detail=lambda: f"got {[e.get('note') for e in pivoter.events(name, 'DriftCorrected')]}",
    )


def test_deleted_and_edited_objects_are_restored(pivoter: Pivoter, namespace: str) -> None:
    name, group = _install(pivoter, namespace)
    bd = pivoter.wait(name, "Healthy", "True")  # two pods Running on the simulated node
    assert condition(bd, "Drifted")["reason"] == "NoDrift"

    # 1. A managed ConfigMap deleted by hand comes back.
    pivoter.kube.delete(CONFIG_MAPS, "settings", namespace)
    restored = wait_for(
        lambda: _get(pivoter, CONFIG_MAPS, "settings", namespace),
        timeout=RESTORED_WITHIN,
        what="the deleted ConfigMap to be restored",
    )
    assert restored["data"] == {"mode": "fast"}
    _wait_corrected(pivoter, name, f"ConfigMap {namespace}/settings deleted")
    drifted = condition(pivoter.get(name), "Drifted")
    assert drifted["status"] == "False"
    assert drifted["reason"] == "DriftCorrected"
    assert f"ConfigMap {namespace}/settings deleted" in drifted["message"]

    # 2. A managed field edited by hand (replicas) is set back; the Event names the field.
    pivoter.kube.merge_patch(DEPLOYMENTS, "drifty", {"spec": {"replicas": 5}}, namespace)
    wait_for(
        lambda: pivoter.kube.get(DEPLOYMENTS, "drifty", namespace)["spec"]["replicas"] == 2,
        timeout=RESTORED_WITHIN,
        what="replicas to be set back to 2",
    )
    _wait_corrected(pivoter, name, "spec.replicas")

    # 3. A managed CRD deleted by hand is created again and Established.
    crd_name = f"gadgets.{group}"
    old_uid = pivoter.kube.get(CRDS, crd_name)["metadata"]["uid"]
    pivoter.kube.delete(CRDS, crd_name)

    def recreated() -> bool:
        crd = _get(pivoter, CRDS, crd_name, None)
        return bool(
            crd
            and crd["metadata"]["uid"] != old_uid
            and not crd["metadata"].get("deletionTimestamp")
            and condition(crd, "Established").get("status") == "True"
        )

    wait_for(recreated, timeout=RESTORED_WITHIN + 15, what="the CRD to be created again")
    _wait_corrected(pivoter, name, f"CustomResourceDefinition {crd_name} deleted")
    pivoter.wait(name, "Healthy", "True")


def test_report_policy_reports_and_leaves_alone(pivoter: Pivoter, namespace: str) -> None:
    name, _ = _install(pivoter, namespace, driftPolicy="Report")
    pivoter.kube.delete(CONFIG_MAPS, "settings", namespace)
    pivoter.kube.merge_patch(DEPLOYMENTS, "drifty", {"spec": {"replicas": 3}}, namespace)

    def reported() -> dict[str, Any] | None:
        drifted = condition(pivoter.get(name), "Drifted")
        message = drifted.get("message", "")
        ok = (
            drifted.get("status") == "True"
            and drifted.get("reason") == "DriftDetected"
            and f"ConfigMap {namespace}/settings deleted" in message
            and "spec.replicas" in message
        )
        return drifted if ok else None

    wait_for(reported, timeout=RESTORED_WITHIN, what="Drifted=True naming both objects")
    wait_for(
        lambda: pivoter.events(name, "DriftDetected"),
        timeout=RESTORED_WITHIN,
        what="a DriftDetected Event",
    )
    assert condition(pivoter.get(name), "Installed")["status"] == "True"
    # Left alone: after more reconciles (health is re-checked every second), nothing came back.
    time.sleep(3)
    assert _get(pivoter, CONFIG_MAPS, "settings", namespace) is None
    assert pivoter.kube.get(DEPLOYMENTS, "drifty", namespace)["spec"]["replicas"] == 3
    assert not pivoter.events(name, "DriftCorrected")

    # Switching to Correct restores both and clears the condition.
    pivoter.kube.merge_patch(BUNDLE_DEPLOYMENTS, name, {"spec": {"driftPolicy": "Correct"}})
    wait_for(
        lambda: _get(pivoter, CONFIG_MAPS, "settings", namespace),
        timeout=RESTORED_WITHIN,
        what="the ConfigMap to be restored once the policy is Correct",
    )
    wait_for(
        lambda: pivoter.kube.get(DEPLOYMENTS, "drifty", namespace)["spec"]["replicas"] == 2,
        timeout=RESTORED_WITHIN,
        what="replicas to be set back",
    )
    pivoter.wait(name, "Drifted", "False")


def test_fields_pivoter_does_not_manage_are_not_drift(pivoter: Pivoter, namespace: str) -> None:
    name, _ = _install(pivoter, namespace)
    pivoter.wait(name, "Healthy", "True")
    pivoter.kube.merge_patch(
        CONFIG_MAPS,
        "settings",
        {"metadata": {"annotations": {"example.com/note": "added by a person"}}},
        namespace,
    )
    pivoter.kube.merge_patch(DEPLOYMENTS, "drifty", {"spec": {"replicas": 4}}, namespace)
    # The replicas edit is corrected; by then the annotation edit has been looked at too.
    _wait_corrected(pivoter, name, "spec.replicas")
    settings = pivoter.kube.get(CONFIG_MAPS, "settings", namespace)
    assert settings["metadata"]["annotations"]["example.com/note"] == "added by a person"
    assert not _corrected(pivoter, name, "ConfigMap")


def test_a_stopped_deployment_is_seen_deleted_and_never_corrects_again(
    pivoter: Pivoter, namespace: str
) -> None:
    # As `pivoter adopt --undo` stops a child: another finalizer instead of the uninstall one,
    # then deleted. Deleting raises the generation; the daemon says it saw that in
    # status.observedGeneration, and from then on corrects nothing (OLM v0 owns the objects).
    name, group = _install(pivoter, namespace)
    hold = "example.com/hold"
    before = int(pivoter.get(name)["metadata"]["generation"])
    # Deleted only as traded (the undo does the same): the daemon may put its uninstall finalizer
    # back between the two writes, and a deletion then would uninstall.
    deleted = False
    while not deleted:
        # Either write loses to one of the daemon's (a status write between the read and the
        # trade, or its finalizer put back before the delete): read and trade again.
        with contextlib.suppress(Conflict):
            traded = pivoter.kube.set_finalizers(BUNDLE_DEPLOYMENTS, pivoter.get(name), [hold])
            version = traded["metadata"]["resourceVersion"]
            pivoter.kube.delete(BUNDLE_DEPLOYMENTS, name, resource_version=version)
            deleted = True
    try:
        deleting = pivoter.get(name)
        assert deleting["metadata"]["deletionTimestamp"]
        generation = int(deleting["metadata"]["generation"])
        assert generation == before + 1
        wait_for(
            lambda: pivoter.get(name)["status"].get("observedGeneration") == generation,
            timeout=RESTORED_WITHIN,
            what="the daemon to see the deletion",
        )
        pivoter.kube.delete(CONFIG_MAPS, "settings", namespace)
        time.sleep(RESTORED_WITHIN)  # a correction would have come by now (the test above)
        assert _get(pivoter, CONFIG_MAPS, "settings", namespace) is None
        assert _get(pivoter, DEPLOYMENTS, "drifty", namespace) is not None  # nothing uninstalled
        assert not _corrected(pivoter, name, "settings")
    finally:
        with contextlib.suppress(NotFound):
            pivoter.kube.set_finalizers(BUNDLE_DEPLOYMENTS, pivoter.get(name), [])
        # Nothing uninstalled them: what it installed goes here, so that no event of theirs
        # reaches the controllers of the next test.
        with contextlib.suppress(NotFound):
            pivoter.kube.delete(DEPLOYMENTS, "drifty", namespace)
        with contextlib.suppress(NotFound):
            pivoter.kube.delete(CRDS, f"gadgets.{group}")
