"""Fixtures for the catalog controller on the real control plane.

* ``pivoter_crds``: the ``pivoter.io`` CRDs from crds/, applied once per session.
* ``catalog_server``: ``pivoter.catalogserver`` in this process on loopback (gRPC and HTTP) over a
  writable copy of a small catalog from tests/data; it reloads the directory every 0.1 s.
* ``harness``: a :class:`CatalogReconciler` with a cache and a clock the test advances, driven
  directly (``reconcile`` is level-triggered, so this is what the manager's workers do), plus
  helpers to create Catalogs and read them back.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pivoter.apis.resources import CATALOGS
from pivoter.catalogs import CatalogCache, CatalogChange, CatalogReconciler, SourceSettings
from pivoter.catalogs.metrics import CatalogMetrics
from pivoter.catalogserver.grpcserver import build_server
from pivoter.catalogserver.httpserver import CatalogHTTPServer
from pivoter.catalogserver.reload import Reloader
from pivoter.kube import Kube, NotFound, Resource, load_client
from tests.catalogs.helpers import copy_base
from tests.cluster import TestCluster, session_labels, unique_name, wait_for

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def pivoter_crds(crds: None) -> None:
    """The pivoter.io CRDs (Catalog, Resolution): part of the root ``crds`` fixture."""


@pytest.fixture
def kube(cluster: TestCluster) -> Iterator[Kube]:
    """pivoter's client boundary, as the cluster admin."""
    api_client = load_client(kubeconfig=str(cluster.kubeconfig))
    yield Kube(api_client)
    api_client.close()


class CatalogServer:
    """``pivoter catalog serve`` in this process: gRPC and HTTP on loopback over ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.reloader = Reloader(str(directory), name="test", poll_interval=0.1)
        self.reloader.start()
        self.grpc, port = build_server(
            self.reloader.view, address="127.0.0.1:0", stale=self.reloader.stale_reason
        )
        self.grpc.start()
        self.address = f"127.0.0.1:{port}"
        self.http = CatalogHTTPServer(
            ("127.0.0.1", 0),
            name="test",
            snapshot=lambda: self.reloader.current,
            metrics=self.reloader.metrics_registry,
            stale=self.reloader.stale_reason,
        )
        self.http.serve_in_thread()
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/catalogs/test"
        self.closed = False

    def packages(self) -> int:
        """Packages in the catalog being served now."""
        return len(self.reloader.current.catalog.packages)

    def edit(self, filename: str, text: str, *, packages: int | None = None) -> None:
        """Write a file into the served directory and wait until the server serves it."""
        (self.directory / filename).write_text(text)
        if packages is not None:
            wait_for(lambda: self.packages() == packages, timeout=10, what="the server to reload")

    def close(self) -> None:
        """Stop serving (both protocols)."""
        if self.closed:
            return
        self.closed = True
        self.reloader.stop()
        self.http.shutdown()
        self.http.server_close()
        self.grpc.stop(grace=None).wait()


@pytest.fixture
def catalog_server(tmp_path: Path) -> Iterator[CatalogServer]:
    """Our catalog server over a writable copy of tests/data/wire/registry-latest."""
    server = CatalogServer(copy_base(tmp_path / "served"))
    yield server
    server.close()


@dataclass
class FakeClock:
    """A monotonic clock the test moves forward."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        self.now += seconds


@dataclass
class Harness:
    """A Catalog reconciler, its cache, the changes it reported, and helpers."""

    kube: Kube
    namespace: str
    cache: CatalogCache
    reconciler: CatalogReconciler
    clock: FakeClock
    registry: CollectorRegistry
    """The reconciler's metrics."""
    changes: list[CatalogChange] = field(default_factory=list)
    created: list[str] = field(default_factory=list)

    def catalog(self, source: dict[str, Any], *, poll: str = "10s", priority: int = 0) -> str:
        """Create a Catalog; return its name."""
        name = unique_name("cat")
        body = {
            "apiVersion": "pivoter.io/v1alpha1",
            "kind": "Catalog",
            "metadata": {"name": name, "labels": session_labels()},
            "spec": {"source": source, "pollInterval": poll, "priority": priority},
        }
        self.kube.create(CATALOGS, body)
        self.created.append(name)
        return name

    def get(self, name: str) -> dict[str, Any]:
        """The Catalog as stored."""
        return self.kube.get(CATALOGS, name)

    def changes_of(self, name: str) -> list[CatalogChange]:
        """The cache changes reported for ``name``."""
        return [c for c in self.changes if c.name == name]

    def config_map(self, name: str, data: dict[str, str]) -> None:
        """Create or replace a ConfigMap in pivoter's namespace."""
        resource = self.kube.resource("v1", "ConfigMap")
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
        try:
            current = self.kube.get(resource, name, self.namespace)
        except NotFound:
            self.kube.create(resource, body, self.namespace)
            return
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        self.kube.replace(resource, body, self.namespace)

    def reconciler_resource(self) -> Resource:
        """The Catalog collection."""
        return CATALOGS

    def poll(self, name: str) -> dict[str, Any]:
        """Make a poll due, reconcile, and return the Catalog."""
        self.clock.advance(3600)
        self.reconciler.reconcile(name)
        return self.get(name)


@pytest.fixture
def harness(
    cluster: TestCluster, pivoter_crds: None, kube: Kube, namespace: str, tmp_path: Path
) -> Iterator[Harness]:
    """A reconciler whose "pivoter namespace" is the test's namespace."""
    clock = FakeClock()
    cache = CatalogCache()
    settings = SourceSettings(workdir=tmp_path / "work", timeout=3.0, deadline=20.0)
    registry = CollectorRegistry()
    reconciler = CatalogReconciler(
        kube, cache, namespace, settings, clock=clock, metrics=CatalogMetrics(registry)
    )
    harness = Harness(kube, namespace, cache, reconciler, clock, registry)
    cache.on_change(harness.changes.append)
    yield harness
    for name in harness.created:
        with contextlib.suppress(NotFound):
            kube.delete(CATALOGS, name)


def condition(obj: dict[str, Any], type_: str = "Serving") -> dict[str, Any]:
    """The condition ``type_`` of ``obj`` (empty if absent)."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == type_:
            return dict(c)
    return {}


def eventually(check: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    """Poll ``check`` until truthy (for tests that go through a Manager's watches)."""
    return wait_for(check, timeout=timeout, interval=0.2, what=what)


def rv(obj: dict[str, Any]) -> str:
    """The resourceVersion of ``obj``."""
    return str(obj["metadata"]["resourceVersion"])


def sleep_briefly() -> None:
    """Let a watch event arrive."""
    time.sleep(0.5)
