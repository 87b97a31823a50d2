"""Catalog images from a real registry, OLM ``CatalogSource`` and catalogd ``ClusterCatalog``
objects read into the cache, and the whole controller running in a Manager with its watches."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pivoter.apis.resources import CATALOG_SOURCES, CATALOGS, CLUSTER_CATALOGS
from pivoter.catalogs import (
    CONFIGS_LABEL,
    REASON_INVALID,
    CatalogCache,
    ForeignCatalogReconciler,
    SourceSettings,
    catalog_source_spec,
    cluster_catalog_spec,
    setup,
)
from pivoter.kube import Kube, NotFound, Resource
from pivoter.runtime import Manager
from tests.catalogs.conftest import CatalogServer, Harness, condition, eventually
from tests.catalogs.helpers import BASE, BASE_PACKAGES, extra_package
from tests.cluster import session_labels, unique_name
from tests.manifests import crd, crd_version
from tests.provisioners.oci import (
    LAYER_GZIP,
    OCI_CONFIG,
    OCI_MANIFEST,
    Pusher,
    compress,
    file,
    tar_bytes,
)
from tests.provisioners.servers import Registry, run_registry

pytestmark = pytest.mark.cluster

CRDS = Resource(
    "apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False
)


# ---------------------------------------------------------------- catalog images


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A plain-http registry on loopback (``hack/tools.sh registry``)."""
    with run_registry(tmp_path_factory.mktemp("registry")) as running:
        yield running


def push_catalog_image(
    registry: Registry, repo: str, tag: str, files: dict[str, str], label: str | None
) -> str:
    """Push an image holding ``files`` whose config carries the configs label; return the
    manifest digest."""
    pusher = Pusher(registry.base, None, None, None)
    layer = compress(tar_bytes([file(path, text) for path, text in files.items()]), LAYER_GZIP)
    labels = {CONFIGS_LABEL: label} if label else {}
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Labels": labels},
            "rootfs": {"type": "layers", "diff_ids": []},
        }
    ).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {
            "mediaType": OCI_CONFIG,
            "digest": pusher.blob(repo, config),
            "size": len(config),
        },
        "layers": [
            {"mediaType": LAYER_GZIP, "digest": pusher.blob(repo, layer), "size": len(layer)}
        ],
    }
    return pusher.manifest(repo, tag, json.dumps(manifest).encode(), OCI_MANIFEST)


def test_catalog_image(harness: Harness, registry: Registry) -> None:
    index = (BASE / "index.yaml").read_text()
    files = {"configs/index.yaml": index, "bin/opm": "not really opm"}
    push_catalog_image(registry, "catalogs/main", "latest", files, "/configs")
    name = harness.catalog(
        {"type": "image", "image": {"ref": f"{registry.host}/catalogs/main:latest"}}
    )
    harness.reconciler.reconcile(name)
    catalog = harness.get(name)
    assert condition(catalog)["status"] == "True", condition(catalog)
    assert catalog["status"]["packages"] == BASE_PACKAGES
    assert f"image {registry.host}/catalogs/main:latest" in condition(catalog)["message"]

    # same digest: the cheap poll (one manifest request), no change
    harness.poll(name)
    assert len(harness.changes_of(name)) == 1

    # a new image under the same tag: the change is found
    files["configs/extra.yaml"] = extra_package()
    push_catalog_image(registry, "catalogs/main", "latest", files, "/configs")
    assert harness.poll(name)["status"]["packages"] == BASE_PACKAGES + 1
    assert len(harness.changes_of(name)) == 2


def test_image_without_the_configs_label_is_invalid(harness: Harness, registry: Registry) -> None:
    push_catalog_image(registry, "catalogs/plain", "v1", {"configs/index.yaml": "x: 1"}, None)
    name = harness.catalog(
        {"type": "image", "image": {"ref": f"{registry.host}/catalogs/plain:v1"}}
    )
    harness.reconciler.reconcile(name)
    serving = condition(harness.get(name))
    assert (serving["status"], serving["reason"]) == ("False", REASON_INVALID)
    assert CONFIGS_LABEL in serving["message"]


def test_image_label_naming_a_missing_directory(harness: Harness, registry: Registry) -> None:
    push_catalog_image(registry, "catalogs/odd", "v1", {"other/index.yaml": "x: 1"}, "/../configs")
    name = harness.catalog({"type": "image", "image": {"ref": f"{registry.host}/catalogs/odd:v1"}})
    harness.reconciler.reconcile(name)
    serving = condition(harness.get(name))
    assert serving["reason"] == REASON_INVALID
    assert "/configs, which is not a directory" in serving["message"]


# ---------------------------------------------------------------- OLM and catalogd objects


@pytest.fixture
def foreign_crds(kube: Kube) -> Iterator[None]:
    """Stand-ins for OLM's and catalogd's CRDs (schema-less), removed afterwards."""
    crds = [
        crd(
            "operators.coreos.com",
            "CatalogSource",
            versions=[crd_version("v1alpha1")],
            labels=session_labels(),
        ),
        crd(
            "olm.operatorframework.io",
            "ClusterCatalog",
            namespaced=False,
            labels=session_labels(),
        ),
    ]
    for definition in crds:
        kube.create(CRDS, definition)
    for resource in (CATALOG_SOURCES, CLUSTER_CATALOGS):
        eventually(lambda r=resource: _served(kube, r), f"{resource} to be served")
    yield
    for definition in crds:
        with contextlib.suppress(NotFound):
            kube.delete(CRDS, definition["metadata"]["name"])


def _served(kube: Kube, resource: Resource) -> bool:
    try:
        kube.resource(resource.api_version, resource.kind)
    except NotFound:
        return False
    return True


def test_olm_catalog_source_and_catalogd_cluster_catalog_are_read(
    foreign_crds: None,
    kube: Kube,
    namespace: str,
    catalog_server: CatalogServer,
    tmp_path: Path,
) -> None:
    cache = CatalogCache()
    settings = SourceSettings(workdir=tmp_path, timeout=3.0, deadline=20.0)
    kube.create(
        CATALOG_SOURCES,
        {
            "apiVersion": CATALOG_SOURCES.api_version,
            "kind": "CatalogSource",
            "metadata": {"name": "operators"},
            "spec": {"sourceType": "grpc", "address": catalog_server.address, "priority": -5},
        },
        namespace,
    )
    olm = ForeignCatalogReconciler(kube, cache, CATALOG_SOURCES, catalog_source_spec, settings)
    result = olm.reconcile(f"{namespace}/operators")
    assert result is not None
    assert result.requeue_after == 600.0
    entry = cache.get(f"CatalogSource/{namespace}/operators")
    assert entry is not None
    assert (len(entry.catalog.packages), entry.priority) == (BASE_PACKAGES, -5)
    stored = kube.get(CATALOG_SOURCES, "operators", namespace)
    assert "status" not in stored  # read-only: pivoter never writes OLM's objects

    cluster_catalog = unique_name("cc")
    kube.create(
        CLUSTER_CATALOGS,
        {
            "apiVersion": CLUSTER_CATALOGS.api_version,
            "kind": "ClusterCatalog",
            "metadata": {"name": cluster_catalog, "labels": session_labels()},
            "spec": {"priority": 3, "source": {"type": "Image"}},
            "status": {
                "urls": {"base": catalog_server.url},
                "resolvedSource": {"type": "Image", "image": {"ref": "example/cat@sha256:1"}},
            },
        },
    )
    catalogd = ForeignCatalogReconciler(
        kube, cache, CLUSTER_CATALOGS, cluster_catalog_spec, settings
    )
    try:
        catalogd.reconcile(cluster_catalog)
        entry = cache.get(f"ClusterCatalog/{cluster_catalog}")
        assert entry is not None
        assert entry.priority == 3
        kube.delete(CLUSTER_CATALOGS, cluster_catalog)
        assert catalogd.reconcile(cluster_catalog) is None
        assert cache.get(f"ClusterCatalog/{cluster_catalog}") is None
    finally:
        with contextlib.suppress(NotFound):
            kube.delete(CLUSTER_CATALOGS, cluster_catalog)


# ---------------------------------------------------------------- through a Manager


def test_catalogs_through_a_manager(
    pivoter_crds: None, kube: Kube, namespace: str, catalog_server: CatalogServer, tmp_path: Path
) -> None:
    manager = Manager(kube)
    cache = setup(manager, namespace=namespace, settings=SourceSettings(workdir=tmp_path))
    names = {c.name for c in manager.controllers}
    assert "catalogs" in names
    assert ("olm-catalogsources" in names) == _served(kube, CATALOG_SOURCES)
    changes: list[str] = []
    cache.on_change(lambda change: changes.append(change.name))
    harness_cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fbc"}}
    config_maps = kube.resource("v1", "ConfigMap")
    kube.create(config_maps, {**harness_cm, "data": {"a.yaml": extra_package("first")}}, namespace)
    grpc_name, cm_name = unique_name("cat"), unique_name("cat")
    for name, source in (
        (grpc_name, {"type": "grpc", "grpc": {"address": catalog_server.address}}),
        (cm_name, {"type": "configMaps", "configMaps": [{"name": "fbc"}]}),
    ):
        kube.create(
            CATALOGS,
            {
                "apiVersion": "pivoter.io/v1alpha1",
                "kind": "Catalog",
                "metadata": {"name": name, "labels": session_labels()},
                "spec": {"source": source},
            },
        )
    manager.start()
    try:
        assert manager.wait_controllers_started(30)
        for name in (grpc_name, cm_name):
            eventually(
                lambda n=name: condition(kube.get(CATALOGS, n)).get("status") == "True",
                f"Catalog {name} to serve",
            )
        assert cache.get(grpc_name) is not None
        # a ConfigMap edit reaches the cache through the ConfigMap watch, without waiting for
        # the (default 10 minute) poll interval
        current = kube.get(config_maps, "fbc", namespace)
        current["data"]["b.yaml"] = extra_package("second")
        kube.replace(config_maps, current, namespace)
        eventually(
            lambda: (kube.get(CATALOGS, cm_name).get("status") or {}).get("packages") == 2,
            "the ConfigMap change to be served",
        )
        assert changes.count(cm_name) == 2
        assert changes.count(grpc_name) == 1
    finally:
        manager.shutdown()
        for name in (grpc_name, cm_name):
            with contextlib.suppress(NotFound):
                kube.delete(CATALOGS, name)
