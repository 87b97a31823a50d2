"""A running pivoter (a Manager with the daemon's Bundle and BundleDeployment controllers, built by
:func:`pivoter.daemon.product.build` with ``Scope.BUNDLES``) for tests on the real control plane.

Unlike ``tests/bundles`` (which calls ``reconcile`` by hand), everything here happens through the
Manager's informers, queues and workers, exactly as in ``pivoter run``: a test changes the
cluster and waits for the daemon to react. Used by ``tests/drift`` and
``tests/registry_v1_cluster`` (and ``bench/drift.py``).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS
from pivoter.daemon.product import build
from pivoter.daemon.settings import DEFAULT_FULL_CHECK_INTERVAL, Scope, Settings
from pivoter.kube import Kube, NotFound, Resource, load_client
from pivoter.runtime.manager import Manager
from tests.polling import wait_for

EVENTS = Resource("events.k8s.io/v1", "Event", "events", namespaced=True)
SESSION_LABEL = "test.pivoter.io/session"


@dataclass
class Pivoter:
    """The daemon's provisioning controllers running in this process, plus test helpers."""

    kube: Kube
    manager: Manager
    system_namespace: str
    labels: dict[str, str]
    reconciled: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    """Reconciles of each BundleDeployment so far (a test counts its own: a BundleDeployment
    of an earlier test is still queued by its objects while their namespace goes)."""

    def count_reconciles(self) -> None:
        """Count every reconcile of the BundleDeployment controller in :attr:`reconciled`."""
        for controller in self.manager.controllers:
            if controller.name != "bundledeployments":
                continue
            inner = controller.reconcile

            def counted(key: str, inner: Any = inner) -> Any:
                self.reconciled[key] += 1
                return inner(key)

            controller.reconcile = counted

    # -- content -----------------------------------------------------------------------------

    def config_map(self, name: str, files: dict[str, str]) -> str:
        """An immutable ConfigMap of bundle files in the system namespace."""
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": self.labels},
            "data": files,
            "immutable": True,
        }
        self.kube.create(self.kube.resource("v1", "ConfigMap"), body, self.system_namespace)
        return name

    def plain_bundle(self, name: str, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """ConfigMap sources for a plain+v0 bundle of ``objects`` (one file each)."""
        files = {f"o{i}.yaml": yaml.safe_dump(obj) for i, obj in enumerate(objects)}
        return [{"configMap": {"name": self.config_map(name, files)}, "path": "manifests"}]

    def registry_bundle(self, name: str, root: Path) -> list[dict[str, Any]]:
        """ConfigMap sources for the registry+v1 bundle directory ``root``."""
        sources = []
        for part in ("manifests", "metadata"):
            files = {p.name: p.read_text() for p in sorted((root / part).iterdir()) if p.is_file()}
            cm = self.config_map(f"{name}-{part[:4]}", files)
            sources.append({"configMap": {"name": cm}, "path": part})
        return sources

    # -- BundleDeployments -------------------------------------------------------------------

    def bundle_deployment(
        self,
        name: str,
        sources: list[dict[str, Any]],
        *,
        provisioner: str = "core-rukpak-io-plain",
        **spec: Any,
    ) -> dict[str, Any]:
        """Create a BundleDeployment whose template reads the ConfigMap ``sources``."""
        body = {
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {"name": name, "labels": self.labels},
            "spec": {
                "provisionerClassName": provisioner,
                "template": {
                    "spec": {
                        "provisionerClassName": provisioner,
                        "source": {"type": "configMaps", "configMaps": sources},
                    }
                },
                **spec,
            },
        }
        return self.kube.create(BUNDLE_DEPLOYMENTS, body)

    def get(self, name: str) -> dict[str, Any]:
        """The BundleDeployment ``name``."""
        return self.kube.get(BUNDLE_DEPLOYMENTS, name)

    def wait(
        self, name: str, type_: str, status: str, *, reason: str = "", timeout: float = 90.0
    ) -> dict[str, Any]:
        """Wait until condition ``type_`` has ``status`` (and ``reason``); return the BD."""
        seen: dict[str, Any] = {}

        def reached() -> dict[str, Any] | None:
            bd = seen["bd"] = self.get(name)
            found = condition(bd, type_)
            if found.get("status") == status and (not reason or found.get("reason") == reason):
                return bd
            return None

        return wait_for(
            reached,
            timeout=timeout,
            interval=0.1,
            what=f"{type_}={status} {reason} on {name}",
            detail=lambda: (seen["bd"].get("status") or {}).get("conditions"),
        )

    def events(self, name: str, reason: str) -> list[dict[str, Any]]:
        """Events about BundleDeployment ``name`` with ``reason`` (cluster-scoped: in default)."""
        items, _ = self.kube.list(EVENTS, "default")
        return [
            e
            for e in items
            if (e.get("regarding") or {}).get("name") == name and e.get("reason") == reason
        ]

    def delete_all(self, timeout: float = 120.0) -> None:
        """Delete this test's BundleDeployments and wait for the finalizer to uninstall them."""
        mine = [
            bd["metadata"]["name"]
            for bd in self.kube.list(BUNDLE_DEPLOYMENTS)[0]
            if (bd["metadata"].get("labels") or {}).get(SESSION_LABEL) == self.labels[SESSION_LABEL]
        ]
        for name in mine:
            with contextlib.suppress(NotFound):
                self.kube.delete(BUNDLE_DEPLOYMENTS, name)
        deadline = time.monotonic() + timeout
        for name in mine:
            while time.monotonic() < deadline:
                try:
                    self.get(name)
                except NotFound:
                    break
                time.sleep(0.2)
            else:  # the daemon did not finish: do not leave the test stuck on the finalizer
                with contextlib.suppress(NotFound):
                    self.kube.merge_patch(
                        BUNDLE_DEPLOYMENTS, name, {"metadata": {"finalizers": None}}
                    )


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    """The condition ``type_`` of ``obj`` (empty dict if absent)."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return {}


@contextlib.contextmanager
def running_pivoter(
    kubeconfig: Path,
    store_dir: Path,
    system_namespace: str,
    labels: dict[str, str],
    *,
    health_interval_seconds: float = 1.0,
    full_check_interval_seconds: float = DEFAULT_FULL_CHECK_INTERVAL,
) -> Iterator[Pivoter]:
    """Start a Manager with the daemon's Bundle and BundleDeployment controllers (their health
    and full checks every so many seconds); on exit uninstall what the test made and shut the
    Manager down."""
    api_client = load_client(kubeconfig=str(kubeconfig))
    kube = Kube(api_client)
    manager = Manager(kube, shutdown_timeout=10.0)
    settings = Settings(
        namespace=system_namespace,
        store_dir=store_dir,
        scope=Scope.BUNDLES,
        health_interval=health_interval_seconds,
        full_check_interval=full_check_interval_seconds,
    )
    product = build(manager, settings)
    manager.start()
    try:
        if not manager.wait_controllers_started(60):
            raise AssertionError("the manager's controllers did not start")
        pivoter = Pivoter(kube, manager, system_namespace, labels)
        pivoter.count_reconciles()
        try:
            yield pivoter
        finally:
            pivoter.delete_all()
    finally:
        manager.shutdown()
        product.stop()
        api_client.close()  # type: ignore[no-untyped-call]
