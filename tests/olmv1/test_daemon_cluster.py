"""``pivoter run`` and OLM v1: when it serves the APIs (``--olmv1``, and how ``auto`` decides), the
catalogd API it serves read with curl at ``status.urls.base``, a ClusterExtension installed by the
daemon, and the admission webhook that keeps a ClusterExtension writer within their own RBAC
(a named ``serviceAccount`` needs ``impersonate`` on it; none needs every right).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pivoter import olmv1
from pivoter.apis.olmv1 import ANNOTATION_CRD_SOURCE, UPSTREAM
from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, CLUSTER_CATALOGS, CLUSTER_EXTENSIONS
from pivoter.kube import Forbidden, Invalid, Kube, KubeError, NotFound, load_client
from tests.cluster import TestCluster, session_labels, unique_name, wait_for
from tests.e2e.daemon import Daemon, free_port
from tests.olmv1.conftest import CRDS, reports
from tests.olmv1.content import Bundle, Package, push_catalog
from tests.provisioners.servers import Registry

pytestmark = pytest.mark.cluster

LEASES = olmv1.mode.LEASES


@pytest.fixture
def admin(cluster: TestCluster, olmv1_crds: list[dict[str, Any]]) -> Iterator[Kube]:
    client = load_client(kubeconfig=str(cluster.kubeconfig))
    yield Kube(client)
    client.close()


def test_auto_serves_only_pivoters_crds_with_no_olm_controller(admin: Kube, namespace: str) -> None:
    assert olmv1.decide(admin, olmv1.Mode.AUTO).serve
    assert not olmv1.decide(admin, olmv1.Mode.READ).serve
    assert olmv1.decide(admin, olmv1.Mode.SERVE).serve
    # OLM's own CRDs (as its manifests install them): no pivoter annotation
    crd = "clustercatalogs.olm.operatorframework.io"
    admin.merge_patch(CRDS, crd, {"metadata": {"annotations": {ANNOTATION_CRD_SOURCE: None}}})
    try:
        decision = olmv1.decide(admin, olmv1.Mode.AUTO)
        assert not decision.serve
        assert "OLM v1 serves these APIs" in decision.reason
        assert crd in decision.reason
    finally:
        admin.merge_patch(
            CRDS, crd, {"metadata": {"annotations": {ANNOTATION_CRD_SOURCE: UPSTREAM}}}
        )
    # catalogd's leader Lease, held and fresh
    now = dt.datetime.now(dt.UTC)
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "catalogd-operator-lock"},
        "spec": {
            "holderIdentity": "catalogd-controller-manager-0",
            "leaseDurationSeconds": 137,
            "renewTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        },
    }
    admin.create(LEASES, lease, namespace)
    decision = olmv1.decide(admin, olmv1.Mode.AUTO)
    assert not decision.serve
    assert f"Lease {namespace}/catalogd-operator-lock is held by catalogd" in decision.reason
    stale = (now - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    admin.merge_patch(LEASES, "catalogd-operator-lock", {"spec": {"renewTime": stale}}, namespace)
    assert olmv1.decide(admin, olmv1.Mode.AUTO).serve


@pytest.fixture
def daemon(
    cluster: TestCluster, admin: Kube, namespace: str, tmp_path: Path
) -> Iterator[tuple[Daemon, int]]:
    port = free_port()
    running = Daemon(
        cluster.kubeconfig,
        namespace=namespace,
        store_dir=tmp_path / "store",
        log=tmp_path / "pivoter.log",
        extra_args=["--catalogd-bind-address", f"127.0.0.1:{port}"],
    )
    running.start()
    try:
        yield running, port
    finally:
        for resource in (CLUSTER_EXTENSIONS, CLUSTER_CATALOGS):
            for obj in admin.list(resource, label_selector="test.pivoter.io/session")[0]:
                with contextlib.suppress(NotFound):
                    admin.delete(resource, obj["metadata"]["name"])

        def extensions_gone() -> bool:
            return not admin.list(CLUSTER_EXTENSIONS, label_selector="test.pivoter.io/session")[0]

        with contextlib.suppress(AssertionError):
            wait_for(extensions_gone, timeout=90, what="ClusterExtensions to be deleted")
        running.stop(admin)


def _eventually_denied(action: Any, fragment: str) -> KubeError:
    def denial() -> KubeError | None:
        try:
            action()
        except (Forbidden, Invalid, KubeError) as exc:
            if fragment in str(exc):
                return exc
            raise
        return None

    result: KubeError = wait_for(
        denial, timeout=30, interval=0.5, what=f"a denial with {fragment!r}"
    )
    return result


def _until(
    kube: Kube, resource: Any, name: str, check: Any, what: str, *, timeout: float = 120.0
) -> dict[str, Any]:
    def holds() -> dict[str, Any] | None:
        obj = kube.get(resource, name)
        return obj if check(obj) else None

    found: dict[str, Any] = wait_for(holds, timeout=timeout, what=what)
    return found


def _extension(name: str, namespace: str, package: str, account: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespace": namespace,
        "source": {"sourceType": "Catalog", "catalog": {"packageName": package}},
    }
    if account:
        spec["serviceAccount"] = {"name": account}
    return {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": name, "labels": session_labels()},
        "spec": spec,
    }


def test_pivoter_run_serves_olm_v1(
    cluster: TestCluster,
    admin: Kube,
    daemon: tuple[Daemon, int],
    olm_registry: Registry,
    namespace: str,
) -> None:
    running, port = daemon
    assert "OLM v1 APIs: served" in running.tail(20000)
    scenario = unique_name("d").replace("-", "")
    ref = push_catalog(olm_registry, scenario, "test", "v1", [Package("test", [Bundle("1.2.0")])])
    catalog = f"test-{scenario}"
    admin.create(
        CLUSTER_CATALOGS,
        {
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": catalog, "labels": session_labels()},
            "spec": {"source": {"type": "Image", "image": {"ref": ref}}},
        },
    )
    served = _until(
        admin,
        CLUSTER_CATALOGS,
        catalog,
        lambda o: reports(o, "Serving", "True"),
        "the ClusterCatalog served by the daemon",
    )
    base = served["status"]["urls"]["base"]
    assert base == f"http://127.0.0.1:{port}/catalogs/{catalog}"
    body = subprocess.run(
        ["curl", "-sSf", f"{base}/api/v1/metas?schema=olm.bundle"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert [json.loads(line)["name"] for line in body.splitlines()] == ["test.1.2.0"]

    # The admin (allowed everything) installs without a serviceAccount: pivoter's identity.
    target = unique_name("ns")
    namespaces = admin.resource("v1", "Namespace")
    admin.create(
        namespaces,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": target, "labels": session_labels()},
        },
    )
    try:
        name = unique_name("ce")
        admin.create(CLUSTER_EXTENSIONS, _extension(name, target, "test"))
        installed = _until(
            admin,
            CLUSTER_EXTENSIONS,
            name,
            lambda o: (
                reports(o, "Installed", "True") and reports(o, "Progressing", "True", "Succeeded")
            ),
            "the ClusterExtension installed by the daemon",
        )
        assert installed["status"]["install"]["bundle"] == {
            "name": "test.1.2.0",
            "version": "1.2.0",
        }
        _least_privilege(cluster, admin, target)
    finally:
        admin.delete(namespaces, target)


def _least_privilege(cluster: TestCluster, admin: Kube, namespace: str) -> None:
    user = unique_name("user")
    allowed_sa, other_sa = unique_name("sa"), unique_name("sa")
    role = unique_name("ce-writer")
    rbac = "rbac.authorization.k8s.io/v1"
    admin.create(
        admin.resource(rbac, "ClusterRole"),
        {
            "apiVersion": rbac,
            "kind": "ClusterRole",
            "metadata": {"name": role, "labels": session_labels()},
            "rules": [
                {
                    "apiGroups": ["olm.operatorframework.io"],
                    "resources": ["clusterextensions"],
                    "verbs": ["create", "get", "delete"],
                },
                {
                    "apiGroups": [""],
                    "resources": ["serviceaccounts"],
                    "verbs": ["impersonate"],
                    "resourceNames": [allowed_sa],
                },
            ],
        },
    )
    admin.create(
        admin.resource(rbac, "ClusterRoleBinding"),
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role, "labels": session_labels()},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role,
            },
            "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
        },
    )
    client = load_client(kubeconfig=str(cluster.user_kubeconfig(user)))
    as_user = Kube(client)
    try:
        denied = _eventually_denied(
            lambda: as_user.create(
                CLUSTER_EXTENSIONS, _extension(unique_name("ce"), namespace, "nope")
            ),
            "without spec.serviceAccount",
        )
        assert "vclusterextensions.olm.operatorframework.io" in str(denied)
        _eventually_denied(
            lambda: as_user.create(
                CLUSTER_EXTENSIONS, _extension(unique_name("ce"), namespace, "nope", other_sa)
            ),
            f"may not impersonate service account {namespace}/{other_sa}",
        )
        name = unique_name("ce")
        as_user.create(CLUSTER_EXTENSIONS, _extension(name, namespace, "nope", allowed_sa))
        # admitted; it installs nothing (no such package), and says so in OLM v1's words
        wait_for(
            lambda: reports(admin.get(CLUSTER_EXTENSIONS, name), "Progressing", "True", "Retrying"),
            timeout=60,
            what="Retrying",
        )
        children = [
            bd
            for bd in admin.list(BUNDLE_DEPLOYMENTS)[0]
            if (bd["metadata"].get("annotations") or {}).get("pivoter.io/input")
            == f"ClusterExtension/{name}"
        ]
        assert children == []
    finally:
        client.close()
