"""Fixtures for the Resolution and PlatformOperator controllers on the real control plane.

Everything runs as ``pivoter run`` wires it (:func:`pivoter.daemon.product.build`), in this
process: a :class:`Manager` with the Catalog, Bundle, BundleDeployment, Resolution and
PlatformOperator controllers and their watches; a catalog served over HTTP by
``pivoter.catalogserver`` (as ``pivoter catalog serve``) from a directory the test publishes into;
plain+v0 bundle images in a real registry on loopback. A test module steps into the pivots by
overriding the :func:`hooks` fixture.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, CATALOGS, PLATFORM_OPERATORS, RESOLUTIONS
from pivoter.catalogs import SourceSettings
from pivoter.daemon.hooks import Hooks
from pivoter.daemon.product import build
from pivoter.daemon.settings import Settings
from pivoter.inputs import InputReconciler
from pivoter.kube import Kube, NotFound, load_client
from pivoter.resolvesets import RevisionStore
from pivoter.runtime import Manager
from tests.catalogs.conftest import CatalogServer
from tests.cluster import TestCluster, session_labels, unique_name, wait_for
from tests.inputs.helpers import Publisher
from tests.provisioners.conftest import pusher_for
from tests.provisioners.servers import Registry, run_registry

REPO = Path(__file__).resolve().parents[2]
CRDS = (
    "pivoter.io_catalogs.yaml",
    "pivoter.io_resolutions.yaml",
    "platform.openshift.io_platformoperators.yaml",
    "core.rukpak.io_bundles.yaml",
    "core.rukpak.io_bundledeployments.yaml",
)


@pytest.fixture(scope="session")
def input_crds(crds: None) -> None:
    """Every CRD the input controllers need: part of the root ``crds`` fixture."""


@pytest.fixture(scope="session")
def bundle_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A plain-http registry on loopback for bundle images."""
    with run_registry(tmp_path_factory.mktemp("bundle-registry")) as running:
        yield running


@dataclass
class Env:
    """A running daemon (in this process) plus helpers to publish content and create inputs."""

    kube: Kube
    namespace: str
    publisher: Publisher
    store: RevisionStore
    manager: Manager | None = None
    """The in-process controllers (None when a ``pivoter run`` subprocess runs them)."""
    reconciler: InputReconciler | None = None
    """The Resolution controller's reconciler."""
    server: CatalogServer | None = None
    created: list[tuple[Any, str]] = field(default_factory=list)

    def catalog(self, *, priority: int = 0, protocol: str = "http", address: str = "") -> str:
        """A Catalog reading the test's catalog server over HTTP (or gRPC), polled every second
        (publish first: the server starts with the first publication)."""
        assert self.server is not None, "publish() before creating the Catalog"
        name = unique_name("cat")
        body = {
            "apiVersion": "pivoter.io/v1alpha1",
            "kind": "Catalog",
            "metadata": {"name": name, "labels": session_labels()},
            "spec": {
                "source": (
                    {"type": "http", "http": {"url": self.server.url}}
                    if protocol == "http"
                    else {"type": "grpc", "grpc": {"address": address or self.server.address}}
                ),
                "pollInterval": "1s",
                "priority": priority,
            },
        }
        self.kube.create(CATALOGS, body)
        self.created.append((CATALOGS, name))
        return name

    def publish(self) -> None:
        """Publish the catalog and wait until the server serves it (HTTP change detection
        works at one-second resolution, so never publish twice within a second)."""
        if self.server is None:
            self.publisher.publish()
            self.server = CatalogServer(self.publisher.directory)
            return
        time.sleep(1.1)
        self.publisher.publish()
        server = self.server
        expected = len(self.publisher.packages)
        wait_for(lambda: server.packages() == expected, timeout=15, what="the catalog reload")

    def resolution(
        self,
        packages: list[dict[str, Any]],
        *,
        annotations: dict[str, str] | None = None,
        **spec: Any,
    ) -> str:
        """Create a Resolution (with ``annotations``); return its name."""
        name = unique_name("res")
        body = {
            "apiVersion": "pivoter.io/v1alpha1",
            "kind": "Resolution",
            "metadata": {
                "name": name,
                "labels": session_labels(),
                **({"annotations": annotations} if annotations else {}),
            },
            "spec": {"packages": packages, "progressDeadlineSeconds": 60, **spec},
        }
        self.kube.create(RESOLUTIONS, body)
        self.created.append((RESOLUTIONS, name))
        return name

    def platform_operator(self, package: str) -> str:
        """Create a PlatformOperator; return its name."""
        name = unique_name("po")
        body = {
            "apiVersion": "platform.openshift.io/v1alpha1",
            "kind": "PlatformOperator",
            "metadata": {"name": name, "labels": session_labels()},
            "spec": {"package": {"name": package}},
        }
        self.kube.create(PLATFORM_OPERATORS, body)
        self.created.append((PLATFORM_OPERATORS, name))
        return name

    def get(self, name: str, resource: Any = RESOLUTIONS) -> dict[str, Any]:
        """The input as stored."""
        return self.kube.get(resource, name)

    def wait(
        self,
        name: str,
        check: Callable[[dict[str, Any]], Any],
        *,
        what: str,
        timeout: float = 90.0,
        resource: Any = RESOLUTIONS,
    ) -> dict[str, Any]:
        """Wait until ``check(input)`` holds; fail with the input's status."""
        seen: dict[str, Any] = {}

        def holds() -> dict[str, Any] | None:
            obj = seen["obj"] = self.get(name, resource)
            obj.setdefault("status", {})
            return obj if check(obj) else None

        return wait_for(
            holds,
            timeout=timeout,
            interval=0.3,
            what=what,
            detail=lambda: f"status: {yaml.safe_dump(seen['obj'].get('status'))}",
        )

    def config_map_data(self, name: str) -> dict[str, str] | None:
        """The data of a ConfigMap a bundle installed in the test namespace (None if absent)."""
        try:
            cm = self.kube.get(self.kube.resource("v1", "ConfigMap"), name, self.namespace)
        except NotFound:
            return None
        return dict(cm.get("data") or {})

    def children(self, name: str, kind: str = "Resolution") -> dict[str, dict[str, Any]]:
        """The input's child BundleDeployments by name."""
        items, _ = self.kube.list(BUNDLE_DEPLOYMENTS)
        return {
            bd["metadata"]["name"]: bd
            for bd in items
            if (bd["metadata"].get("annotations") or {}).get("pivoter.io/input") == f"{kind}/{name}"
        }

    def cleanup(self, *, force: bool = False) -> None:
        """Delete the inputs (while the controllers run, so finalizers complete), then the rest.
        ``force``: no controller runs; drop the finalizers of the inputs and their children."""
        if force:
            self._drop_finalizers()
        for resource, name in reversed(self.created):
            with contextlib.suppress(NotFound):
                self.kube.delete(resource, name)
        for resource, name in self.created:

            def gone(resource: Any = resource, name: str = name) -> bool:
                try:
                    self.kube.get(resource, name)
                except NotFound:
                    return True
                return False

            with contextlib.suppress(AssertionError):
                wait_for(gone, timeout=60, what=f"{resource.kind} {name} to be deleted")
        self.created.clear()

    def _drop_finalizers(self) -> None:
        names = {name for _, name in self.created}
        for bd in self.kube.list(BUNDLE_DEPLOYMENTS)[0]:
            owner = (bd["metadata"].get("annotations") or {}).get("pivoter.io/input", "")
            if owner.partition("/")[2] in names:
                with contextlib.suppress(NotFound):
                    self.kube.merge_patch(
                        BUNDLE_DEPLOYMENTS,
                        bd["metadata"]["name"],
                        {"metadata": {"finalizers": None}},
                    )
        for resource, name in self.created:
            with contextlib.suppress(NotFound):
                self.kube.merge_patch(resource, name, {"metadata": {"finalizers": None}})


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    """The condition ``type_`` of ``obj`` (empty dict if absent)."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == type_:
            return dict(c)
    return {}


def is_(obj: dict[str, Any], type_: str, status: str, reason: str | None = None) -> bool:
    """Whether ``obj`` has condition ``type_`` with ``status`` (and ``reason``), computed for
    its current generation."""
    c = condition(obj, type_)
    generation = obj["metadata"].get("generation")
    return (
        c.get("status") == status
        and (reason is None or c.get("reason") == reason)
        and c.get("observedGeneration") == generation
    )


@pytest.fixture
def hooks() -> Hooks:
    """The fault hooks of the ``env`` fixture's controllers: none (a module overrides this)."""
    return Hooks()


@pytest.fixture
def env(
    cluster: TestCluster,
    input_crds: None,
    bundle_registry: Registry,
    namespace: str,
    tmp_path: Path,
    *,
    hooks: Hooks,
) -> Iterator[Env]:
    """The daemon's product in this process, with ``namespace`` as pivoter's namespace, neither
    OLM's catalogs nor OLM v1's APIs, and no server."""
    api_client = load_client(kubeconfig=str(cluster.kubeconfig))
    kube = Kube(api_client)
    manager = Manager(kube)
    settings = Settings(
        namespace=namespace,
        store_dir=tmp_path / "store",
        olmv1="read",
        read_olm_catalogs=False,
        catalog_sources=SourceSettings(workdir=tmp_path / "work", timeout=3.0, deadline=20.0),
    )
    product = build(manager, settings, hooks)
    assert product.revisions is not None
    manager.start()
    env = Env(
        kube,
        namespace,
        _publisher(bundle_registry, tmp_path),
        product.revisions,
        manager,
        product.resolutions,
    )
    try:
        assert manager.wait_controllers_started(30)
        yield env
    finally:
        try:
            env.cleanup()
        finally:
            manager.shutdown()
            product.stop()
            if env.server is not None:
                env.server.close()
            api_client.close()


@pytest.fixture
def content(
    cluster: TestCluster,
    input_crds: None,
    bundle_registry: Registry,
    namespace: str,
    tmp_path: Path,
) -> Iterator[Env]:
    """Content and helpers without controllers: the test runs ``pivoter run`` itself and calls
    ``cleanup()`` while its daemon still runs; what is left then is force-deleted."""
    api_client = load_client(kubeconfig=str(cluster.kubeconfig))
    kube = Kube(api_client)
    env = Env(
        kube, namespace, _publisher(bundle_registry, tmp_path), RevisionStore(kube, namespace)
    )
    try:
        yield env
    finally:
        try:
            env.cleanup(force=True)
        finally:
            if env.server is not None:
                env.server.close()
            api_client.close()


def _publisher(registry: Registry, tmp_path: Path) -> Publisher:
    served = tmp_path / "served"
    served.mkdir()
    return Publisher(pusher_for(registry), registry.host, served)
