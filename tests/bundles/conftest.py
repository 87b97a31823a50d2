"""Fixtures for the Bundle and BundleDeployment controllers on the real control plane.

The reconcilers are driven directly (``converge`` calls ``reconcile`` until a condition holds):
they are level-triggered, so this is exactly what the manager's workers do, minus the watches.
The end-to-end tests through ``pivoter run`` live elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, BUNDLES
from pivoter.controllers.bundle import BundleReconciler
from pivoter.controllers.bundledeployment import BundleDeploymentReconciler
from pivoter.kube import Kube, NotFound
from pivoter.pivot import keep_on_delete
from provisioners.store import BundleStore
from tests.cluster import TestCluster, session_labels, unique_name, wait_for

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Harness:
    """A Bundle and a BundleDeployment reconciler on one store, plus helpers to drive them."""

    kube: Kube
    store: BundleStore
    system_namespace: str
    bundles: BundleReconciler
    deployments: BundleDeploymentReconciler

    def step(self, bd_name: str) -> None:
        """One round: every Bundle of the BundleDeployment, then the BundleDeployment."""
        for bundle in self.kube.list(BUNDLES)[0]:
            labels = bundle["metadata"].get("labels") or {}
            if labels.get("core.rukpak.io/owner-name") == bd_name:
                self.bundles.reconcile(bundle["metadata"]["name"])
        self.deployments.reconcile(bd_name)

    def converge(
        self,
        bd_name: str,
        until: Callable[[dict[str, Any]], bool],
        *,
        timeout: float = 60.0,
        what: str = "",
    ) -> dict[str, Any]:
        """Reconcile until ``until(bundle_deployment)`` holds; return the BundleDeployment."""
        seen: dict[str, Any] = {}

        def reconciled() -> dict[str, Any] | None:
            self.step(bd_name)
            seen.update(bd=self.kube.get(BUNDLE_DEPLOYMENTS, bd_name))
            return seen["bd"] if until(seen["bd"]) else None

        return wait_for(
            reconciled,
            timeout=timeout,
            interval=0.2,
            what=what or str(until),
            detail=lambda: f"status: {seen['bd'].get('status')}",
        )

    def config_map_bundle(self, files: dict[str, str], *, immutable: bool = True) -> str:
        """Create an (immutable) ConfigMap of bundle files in the system namespace."""
        name = unique_name("content")
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": session_labels()},
            "data": files,
            "immutable": immutable,
        }
        self.kube.create(
            self.kube.resource("v1", "ConfigMap"), body, namespace=self.system_namespace
        )
        return name

    def bundle_deployment(
        self,
        name: str,
        config_maps: list[str],
        *,
        path: str = "manifests",
        **extra: Any,
    ) -> dict[str, Any]:
        """Create a plain BundleDeployment whose template reads ``config_maps`` at ``path``."""
        body = {
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {"name": name, "labels": session_labels()},
            "spec": {
                "provisionerClassName": "core-rukpak-io-plain",
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "provisionerClassName": "core-rukpak-io-plain",
                        "source": {
                            "type": "configMaps",
                            "configMaps": [
                                {"configMap": {"name": cm}, "path": path} for cm in config_maps
                            ],
                        },
                    },
                },
                **extra,
            },
        }
        return self.kube.create(BUNDLE_DEPLOYMENTS, body)

    def retarget(self, name: str, config_maps: list[str], path: str = "manifests") -> None:
        """Point the template at other ConfigMaps: a pivot."""
        patch = {
            "spec": {
                "template": {
                    "spec": {
                        "source": {
                            "configMaps": [
                                {"configMap": {"name": cm}, "path": path} for cm in config_maps
                            ]
                        }
                    }
                }
            }
        }
        self.kube.merge_patch(BUNDLE_DEPLOYMENTS, name, patch)

    def delete_and_finalize(self, name: str, timeout: float = 60.0) -> None:
        """Delete a BundleDeployment and reconcile until it is gone."""
        self.kube.delete(BUNDLE_DEPLOYMENTS, name)

        def finalized() -> bool:
            self.deployments.reconcile(name)
            try:
                self.kube.get(BUNDLE_DEPLOYMENTS, name)
            except NotFound:
                return True
            return False

        wait_for(
            finalized, timeout=timeout, interval=0.2, what=f"BundleDeployment {name} to finalize"
        )


@pytest.fixture
def harness(
    cluster: TestCluster, rukpak_crds: None, namespace: str, tmp_path: Path
) -> Iterator[Harness]:
    """Reconcilers with a fresh store; ``namespace`` doubles as the system namespace."""
    from pivoter.kube import load_client

    api_client = load_client(kubeconfig=str(cluster.kubeconfig))
    kube = Kube(api_client)
    store = BundleStore(tmp_path / "store")
    bundles = BundleReconciler(kube, store, system_namespace=namespace, gc_grace_seconds=0)
    deployments = BundleDeploymentReconciler(
        kube, store, bundles, health_interval_seconds=1, keep_on_delete=keep_on_delete
    )
    yield Harness(kube, store, namespace, bundles, deployments)
    for bd in kube.list(BUNDLE_DEPLOYMENTS)[0]:
        if (bd["metadata"].get("labels") or {}).get("test.pivoter.io/session"):
            try:
                kube.merge_patch(
                    BUNDLE_DEPLOYMENTS, bd["metadata"]["name"], {"metadata": {"finalizers": None}}
                )
                kube.delete(BUNDLE_DEPLOYMENTS, bd["metadata"]["name"])
            except NotFound:
                pass
    api_client.close()


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    """The condition ``type_`` of ``obj`` (empty dict if absent)."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == type_:
            return dict(c)
    return {}


def is_(obj: dict[str, Any], type_: str, status: str, reason: str | None = None) -> bool:
    """Whether ``obj`` has condition ``type_`` with ``status`` (and ``reason``)."""
    c = condition(obj, type_)
    return c.get("status") == status and (reason is None or c.get("reason") == reason)
