"""Fixtures for the OLM v1 tests: pivoter's copies of the OLM v1 CRDs, a registry for catalog and
bundle images, and pivoter's controllers (OLM v1 ones included) in this process.

The CRDs are installed per test module and removed after it (waiting until they are gone): while
they exist, every ``pivoter run`` of the session would serve OLM v1 (``--olmv1=auto``), which the
other test modules do not expect. Before they are removed, what a failed test left behind is
released (finalizers dropped), so the removal never hangs.
"""

from __future__ import annotations

import contextlib
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from pivoter import olmv1
from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, CLUSTER_CATALOGS, CLUSTER_EXTENSIONS
from pivoter.catalogs import SourceSettings
from pivoter.daemon.product import build
from pivoter.daemon.settings import Settings
from pivoter.kube import Conflict, Kube, NotFound, Resource, load_client
from pivoter.resolvesets import RevisionStore
from pivoter.runtime import Manager
from provisioners.apply.applier import Applier, Owner
from provisioners.apply.kubeapi import KubeAPI
from tests.cluster import TestCluster, session_labels, unique_name, wait_for
from tests.olmv1.content import Package, push_catalog
from tests.provisioners.servers import Registry, run_registry

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "crds" / "olmv1"
CRDS = Resource(
    "apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False
)


def _established(kube: Kube, name: str) -> bool:
    try:
        crd = kube.get(CRDS, name)
    except NotFound:
        return False
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def release_leftovers(kube: Kube) -> None:
    """Drop the finalizers of ClusterExtensions, ClusterCatalogs and their BundleDeployments a
    failed test left behind, and delete them."""
    for resource in (CLUSTER_EXTENSIONS, CLUSTER_CATALOGS):
        with contextlib.suppress(NotFound):
            for obj in kube.list(resource)[0]:
                name = obj["metadata"]["name"]
                with contextlib.suppress(NotFound):
                    kube.merge_patch(resource, name, {"metadata": {"finalizers": None}})
                    kube.delete(resource, name)
    for bd in kube.list(BUNDLE_DEPLOYMENTS)[0]:
        owner = (bd["metadata"].get("annotations") or {}).get("pivoter.io/input", "")
        if owner.startswith("ClusterExtension/"):
            with contextlib.suppress(NotFound):
                kube.merge_patch(
                    BUNDLE_DEPLOYMENTS, bd["metadata"]["name"], {"metadata": {"finalizers": None}}
                )
                kube.delete(BUNDLE_DEPLOYMENTS, bd["metadata"]["name"])


@pytest.fixture(scope="module")
def olmv1_crds(cluster: TestCluster, crds: None) -> Iterator[list[dict[str, Any]]]:
    """crds/olmv1/ applied and Established for this module, removed afterwards."""
    api_client = load_client(kubeconfig=str(cluster.kubeconfig))
    kube = Kube(api_client)
    objects = [yaml.safe_load(p.read_text()) for p in sorted(CRD_DIR.glob("*.yaml"))]
    for obj in objects:
        obj["metadata"].setdefault("labels", {}).update(session_labels())
    Applier(KubeAPI(api_client), Owner("Test", "olmv1-crds")).apply(objects)
    names = [o["metadata"]["name"] for o in objects]
    wait_for(lambda: all(_established(kube, n) for n in names), timeout=60, what="OLM v1 CRDs")
    try:
        yield objects
    finally:
        with contextlib.suppress(NotFound):
            release_leftovers(kube)
        for name in names:
            with contextlib.suppress(NotFound):
                kube.delete(CRDS, name)

        def gone() -> bool:
            for name in names:
                try:
                    kube.get(CRDS, name)
                except NotFound:
                    continue
                return False
            return True

        wait_for(gone, timeout=120, what="the OLM v1 CRDs to be removed")
        api_client.close()


@pytest.fixture(scope="session")
def olm_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A plain-http registry on loopback for catalog and bundle images."""
    with run_registry(tmp_path_factory.mktemp("olm-registry")) as running:
        yield running


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    """The condition ``type_`` of ``obj`` (empty when absent)."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == type_:
            return dict(c)
    return {}


def reports(obj: dict[str, Any], type_: str, status: str, reason: str | None = None) -> bool:
    """Whether ``obj`` reports ``type_`` as ``status`` (with ``reason``) for its generation."""
    c = condition(obj, type_)
    return (
        c.get("status") == status
        and (reason is None or c.get("reason") == reason)
        and c.get("observedGeneration") == obj["metadata"].get("generation")
    )


@dataclass
class Olm:
    """pivoter serving OLM v1's APIs (in this process or as ``pivoter run``), with helpers that
    work like upstream's e2e steps."""

    kube: Kube
    registry: Registry
    namespace: str
    """pivoter's namespace (ResolveSets)."""
    scenario: str
    test_namespace: str
    catalogd_url: str = ""
    manager: Manager | None = None
    olm: olmv1.OlmV1 | None = None
    store: RevisionStore | None = None
    catalogs: dict[str, str] = field(default_factory=dict)
    """Scenario catalog name (``test``) -> ClusterCatalog name."""
    extensions: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The scenario's ClusterExtension name (upstream's ``${NAME}``)."""
        return f"ce-{self.scenario}"

    def substitute(self, text: str) -> str:
        """Upstream's scenario variables: ``${NAME}``, ``${TEST_NAMESPACE}``, ``${PACKAGE:x}``
        (the package name: catalogs are per scenario) and ``${CATALOG:x}``."""
        text = text.replace("${NAME}", self.name).replace("${TEST_NAMESPACE}", self.test_namespace)
        text = text.replace("${SCENARIO_ID}", self.scenario)
        for short, real in self.catalogs.items():
            text = text.replace(f"${{CATALOG:{short}}}", real)
        while "${PACKAGE:" in text:
            start = text.index("${PACKAGE:")
            end = text.index("}", start)
            text = text[:start] + text[start + len("${PACKAGE:") : end] + text[end + 1 :]
        return string.Template(text).safe_substitute()

    def catalog(self, short: str, packages: list[Package], *, tag: str = "v1", **spec: Any) -> str:
        """Push the scenario's catalog image and create its ClusterCatalog (upstream's "a catalog
        X with packages"); return the ClusterCatalog name."""
        ref = push_catalog(self.registry, self.scenario, short, tag, packages)
        name = self.catalogs.get(short) or f"{short}-catalog-{self.scenario}"
        self.catalogs[short] = name
        body = {
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": name, "labels": session_labels()},
            "spec": {"source": {"type": "Image", "image": {"ref": ref}}, **spec},
        }
        self.kube.create(CLUSTER_CATALOGS, body)
        return name

    def apply(self, manifest: str, *, label: bool = True) -> dict[str, Any]:
        """Create or replace an object from upstream-style YAML (variables substituted; with
        ``label``, the session label that sweeps leftovers)."""
        body = yaml.safe_load(self.substitute(manifest))
        if label:
            body["metadata"].setdefault("labels", {}).update(session_labels())
        resource = self.kube.resource(body["apiVersion"], body["kind"])
        name = body["metadata"]["name"]
        if body["kind"] == "ClusterExtension" and name not in self.extensions:
            self.extensions.append(name)
        namespace = body["metadata"].get("namespace")
        for attempt in range(5):  # a controller may write the object in between: read again
            try:
                current = self.kube.get(resource, name, namespace)
            except NotFound:
                return self.kube.create(resource, body, namespace)
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            body["metadata"]["annotations"] = {
                **(current["metadata"].get("annotations") or {}),
                **(body["metadata"].get("annotations") or {}),
            }
            body["metadata"]["finalizers"] = current["metadata"].get("finalizers")
            try:
                return self.kube.replace(resource, body, namespace)
            except Conflict:
                if attempt == 4:
                    raise
        raise AssertionError("unreachable")

    def get(self, name: str = "", resource: Resource = CLUSTER_EXTENSIONS) -> dict[str, Any]:
        """The object as stored (default: the scenario's ClusterExtension)."""
        return self.kube.get(resource, name or self.name)

    def wait(
        self,
        check: Callable[[dict[str, Any]], Any],
        *,
        what: str,
        name: str = "",
        resource: Resource = CLUSTER_EXTENSIONS,
        timeout: float = 120.0,
    ) -> dict[str, Any]:
        """Wait until ``check(object)`` holds; fail showing its status."""
        seen: dict[str, Any] = {}

        def holds() -> dict[str, Any] | None:
            obj = seen["obj"] = self.get(name, resource)
            return obj if check(obj) else None

        return wait_for(
            holds,
            timeout=timeout,
            interval=0.3,
            what=what,
            detail=lambda: "status: " + yaml.safe_dump((seen.get("obj") or {}).get("status")),
        )

    def rolled_out(self, name: str = "") -> dict[str, Any]:
        """Upstream's "ClusterExtension is rolled out": Progressing True/Succeeded."""
        return self.wait(
            lambda o: reports(o, "Progressing", "True", "Succeeded"), what="rolled out", name=name
        )

    def available(self, name: str = "") -> dict[str, Any]:
        """Upstream's "ClusterExtension is available": Installed True."""
        return self.wait(lambda o: reports(o, "Installed", "True"), what="available", name=name)

    def bundle_installed(self, bundle: str, version: str, name: str = "") -> dict[str, Any]:
        """Upstream's "bundle X is installed in version V"."""
        return self.wait(
            lambda o: (
                ((o.get("status") or {}).get("install") or {}).get("bundle")
                == {"name": bundle, "version": version}
            ),
            what=f"bundle {bundle} {version} installed",
            name=name,
        )

    def reports(
        self, type_: str, status: str, reason: str, message: str = "", *, exact: bool = False,
        name: str = "", timeout: float = 120.0,
    ) -> dict[str, Any]:  # fmt: skip
        """Upstream's "ClusterExtension reports T as S with Reason R and Message (includes)"."""
        text = self.substitute(message).strip()

        def check(o: dict[str, Any]) -> bool:
            c = condition(o, type_)
            got = str(c.get("message") or "")
            return reports(o, type_, status, reason) and (got == text if exact else text in got)

        return self.wait(
            check, what=f"{type_}={status}/{reason} {text!r}", name=name, timeout=timeout
        )

    def delete_extensions(self) -> None:
        """Delete every ClusterExtension of the test and wait until they are gone (the
        controllers uninstall what they installed)."""
        for name in self.extensions:
            with contextlib.suppress(NotFound):
                self.kube.delete(CLUSTER_EXTENSIONS, name)
        for name in self.extensions:

            def gone(name: str = name) -> bool:
                try:
                    self.kube.get(CLUSTER_EXTENSIONS, name)
                except NotFound:
                    return True
                return False

            wait_for(gone, timeout=120, what=f"ClusterExtension {name} to be deleted")
        self.extensions.clear()

    def delete_catalogs(self) -> None:
        """Delete the scenario's ClusterCatalogs."""
        for name in self.catalogs.values():
            with contextlib.suppress(NotFound):
                self.kube.delete(CLUSTER_CATALOGS, name)


@pytest.fixture
def olm(
    cluster: TestCluster,
    olmv1_crds: list[dict[str, Any]],
    olm_registry: Registry,
    namespace: str,
    tmp_path: Path,
) -> Iterator[Olm]:
    """pivoter's controllers in this process, OLM v1's served (as ``pivoter run --olmv1=serve``);
    ``namespace`` is pivoter's namespace, a second one is the scenario's ``${TEST_NAMESPACE}``."""
    api_client = load_client(kubeconfig=str(cluster.kubeconfig))
    kube = Kube(api_client)
    test_namespace = unique_name("ce")
    core = kube.resource("v1", "Namespace")
    kube.create(
        core,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": test_namespace, "labels": session_labels()},
        },
    )
    manager = Manager(kube)
    product = build(
        manager,
        Settings(
            namespace=namespace,
            store_dir=tmp_path / "store",
            olmv1="serve",
            catalogd_address=("127.0.0.1", 0),
            read_olm_catalogs=False,
            catalog_sources=SourceSettings(workdir=tmp_path / "work", timeout=3.0, deadline=20.0),
            cluster_catalog_sources=SourceSettings(
                workdir=tmp_path / "clustercatalogs", timeout=5.0, deadline=30.0
            ),
        ),
    )
    manager.start()
    env = Olm(
        kube,
        olm_registry,
        namespace,
        unique_name("s").replace("-", ""),
        test_namespace,
        catalogd_url=product.catalogd_url,
        manager=manager,
        olm=product.olmv1,
        store=product.revisions,
    )
    try:
        assert manager.wait_controllers_started(30)
        yield env
    finally:
        try:
            env.delete_extensions()
            env.delete_catalogs()
        finally:
            manager.shutdown()
            product.stop()
            with contextlib.suppress(NotFound):
                kube.delete(core, test_namespace)
            api_client.close()
