"""Taking over from OLM v1 side by side: what is left of it, and the install identity.

* A ClusterExtension taken over (``pivoter.io/adopt-existing``) whose ``spec.serviceAccount``
  lacks the rights to install its bundle (upstream ignores that field; pivoter installs as it):
  the Preparing phase's server-side dry run, run as that account before any child is applied,
  fails; the ClusterExtension reports the missing permission and nothing it would install is
  created or changed.
* catalogd's MutatingWebhookConfiguration left behind once catalogd is scaled to 0 (its
  ``failurePolicy: Fail`` refuses every new ClusterCatalog):
  :func:`pivoter.olmv1.leftovers.findings` names it with the command that removes it, and once
  removed a ClusterCatalog is accepted.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import http.server
import json
import logging
import ssl
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, CLUSTER_CATALOGS, LEASES
from pivoter.catalogs import SourceSettings
from pivoter.cli.main import main
from pivoter.daemon.product import Product, build
from pivoter.daemon.settings import Scope, Settings
from pivoter.kube import Kube, KubeError, NotFound, load_client
from pivoter.olmv1 import leftovers
from pivoter.runtime import Manager
from provisioners.certs import issue_serving_certificate
from tests.cluster import TestCluster, session_labels, unique_name, wait_for
from tests.e2e.daemon import Daemon, free_port
from tests.olmv1.conftest import Olm, condition, reports
from tests.olmv1.content import Bundle, Package, fbc_naming, push_catalog
from tests.olmv1.test_install_update_cluster import CE
from tests.provisioners.servers import Registry

pytestmark = pytest.mark.cluster


def _with_account(manifest: str, account: str) -> str:
    """``CE`` marked for adoption, installing as ``account``."""
    manifest = manifest.replace(
        "  name: ${NAME}\n",
        '  name: ${NAME}\n  annotations:\n    pivoter.io/adopt-existing: "true"\n',
        1,
    )
    return manifest.replace(
        "  namespace: ${TEST_NAMESPACE}\n",
        f"  namespace: ${{TEST_NAMESPACE}}\n  serviceAccount:\n    name: {account}\n",
        1,
    )


def test_a_service_account_without_rights_fails_before_anything_changes(olm: Olm) -> None:
    olm.catalog("test", [Package("test", [Bundle("1.2.0")])])
    core = olm.kube.resource("v1", "ServiceAccount")
    account = unique_name("installer")
    olm.kube.create(
        core,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}},
        olm.test_namespace,
    )
    # What operator-controller installed before the takeover.
    configmaps = olm.kube.resource("v1", "ConfigMap")
    name = f"test-configmap-{olm.scenario}-test"
    existing = olm.kube.create(
        configmaps,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": olm.test_namespace,
                "labels": {"olm.operatorframework.io/owner-kind": "ClusterExtension"},
            },
            "data": {"version": "from operator-controller"},
        },
        olm.test_namespace,
    )
    olm.apply(_with_account(CE, account))
    identity = f"system:serviceaccount:{olm.test_namespace}:{account}"

    def refused(obj: dict[str, Any]) -> bool:
        message = str(condition(obj, "Progressing").get("message") or "")
        return identity in message and "cannot" in message

    refusal = olm.wait(refused, what=f"Progressing naming {identity}'s missing permission")
    progressing = condition(refusal, "Progressing")
    assert "the server-side dry run of bundle test.1.2.0 failed" in progressing["message"]
    assert "forbidden" in progressing["message"]
    assert condition(refusal, "Installed").get("status") != "True"
    assert not (refusal.get("status") or {}).get("install")
    # Nothing was applied: no child, the adopted ConfigMap untouched, no Deployment.
    children = [
        bd
        for bd in olm.kube.list(BUNDLE_DEPLOYMENTS)[0]
        if (bd["metadata"].get("annotations") or {}).get("pivoter.io/input")
        == f"ClusterExtension/{olm.name}"
    ]
    assert children == []
    now = olm.kube.get(configmaps, name, olm.test_namespace)
    assert now["metadata"]["resourceVersion"] == existing["metadata"]["resourceVersion"]
    assert now["data"] == {"version": "from operator-controller"}
    deployments = olm.kube.resource("apps/v1", "Deployment")
    assert olm.kube.list(deployments, olm.test_namespace)[0] == []


MUTATING = "admissionregistration.k8s.io/v1"


def _dead_webhook(
    kube: Kube,
    namespace: str,
    resources: list[str],
    *,
    policy: str = "Fail",
    kind: str = "ValidatingWebhookConfiguration",
) -> str:
    """A webhook configuration shaped like catalogd's (its manifests: webhook name, path, port,
    rule on ``resources``) whose Service ``catalogd-service`` in ``namespace`` does not exist (as
    after ``kubectl delete namespace olmv1-system``); returns its name."""
    name = unique_name("catalogd-mutating-webhook-configuration")
    kube.create(
        kube.resource(MUTATING, kind),
        {
            "apiVersion": MUTATING,
            "kind": kind,
            "metadata": {"name": name, "labels": session_labels()},
            "webhooks": [
                {
                    "name": "inject-metadata-name.olm.operatorframework.io",
                    "admissionReviewVersions": ["v1"],
                    "clientConfig": {
                        "service": {
                            "name": "catalogd-service",
                            "namespace": namespace,
                            "path": "/mutate-olm-operatorframework-io-v1-clustercatalog",
                            "port": 9443,
                        }
                    },
                    "failurePolicy": policy,
                    "sideEffects": "None",
                    "timeoutSeconds": 10,
                    "rules": [
                        {
                            "apiGroups": ["olm.operatorframework.io"],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE", "UPDATE"],
                            "resources": resources,
                        }
                    ],
                }
            ],
        },
    )
    return name


@pytest.fixture
def catalogd_webhook(olm: Olm) -> Iterator[str]:
    """catalogd's MutatingWebhookConfiguration (failurePolicy Fail) with no Service behind it."""
    name = _dead_webhook(
        olm.kube, olm.test_namespace, ["clustercatalogs"], kind="MutatingWebhookConfiguration"
    )
    try:
        yield name
    finally:
        with contextlib.suppress(NotFound):
            olm.kube.delete(olm.kube.resource(MUTATING, "MutatingWebhookConfiguration"), name)


def _catalog(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterCatalog",
        "metadata": {"name": name, "labels": session_labels()},
        "spec": {"source": {"type": "Image", "image": {"ref": "localhost:1/nothing:v1"}}},
    }


def test_catalogds_leftover_webhook_is_found_and_its_removal_unblocks(
    olm: Olm, catalogd_webhook: str, cluster: TestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = unique_name("left")
    with pytest.raises(KubeError) as refused:
        olm.kube.create(CLUSTER_CATALOGS, _catalog(catalog))
    assert "catalogd-service" in str(refused.value)

    # pivoter adopt --check --all says so, and fails (exit 3) while it blocks.
    code = main(
        ["adopt", "--check", "--all", "--kubeconfig", str(cluster.kubeconfig), "-o", "json"]
    )
    reported = json.loads(capsys.readouterr().out)["olmv1Leftovers"]
    assert code == 3
    webhook = next(f for f in reported if f["name"] == catalogd_webhook)
    assert webhook["blocks"] is True
    assert f"kubectl delete mutatingwebhookconfiguration {catalogd_webhook}" in webhook["message"]

    found = [f for f in leftovers.findings(olm.kube) if f.name == catalogd_webhook]
    assert len(found) == 1, found
    finding = found[0]
    assert finding.problem is leftovers.LeftoverProblem.WEBHOOK_SERVICE_MISSING
    assert finding.blocks
    assert finding.kind == "MutatingWebhookConfiguration"
    assert finding.resources == ("clustercatalogs",)
    assert f"Service {olm.test_namespace}/catalogd-service" in finding.message
    assert finding.remedy == f"kubectl delete mutatingwebhookconfiguration {catalogd_webhook}"
    assert finding.remedy in finding.message

    # The documented step, then a new ClusterCatalog is accepted.
    olm.kube.delete(olm.kube.resource(MUTATING, "MutatingWebhookConfiguration"), catalogd_webhook)

    def accepted() -> bool:
        try:
            olm.kube.create(CLUSTER_CATALOGS, _catalog(catalog))
        except KubeError as exc:
            if "catalogd-service" in str(exc):
                return False  # the API server has not seen the deletion yet
            raise
        return True

    wait_for(accepted, timeout=30, interval=0.5, what="the ClusterCatalog to be accepted")
    olm.catalogs["left"] = catalog
    assert not [f for f in leftovers.findings(olm.kube) if f.name == catalogd_webhook]


# ------------------------------------------------------------------ --olmv1=auto switching


@pytest.fixture
def admin(cluster: TestCluster, olmv1_crds: list[dict[str, Any]]) -> Iterator[Kube]:
    client = load_client(kubeconfig=str(cluster.kubeconfig))
    yield Kube(client)
    client.close()


def _stamp(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.mark.slow
def test_auto_starts_serving_in_the_running_daemon_once_olms_lease_expires(
    cluster: TestCluster,
    admin: Kube,
    namespace: str,
    tmp_path: Path,
    olm_registry: Registry,
) -> None:
    port = free_port()
    daemon = Daemon(
        cluster.kubeconfig,
        namespace=namespace,
        store_dir=tmp_path / "store",
        log=tmp_path / "pivoter.log",
        webhook=False,
        extra_args=["--catalogd-bind-address", f"127.0.0.1:{port}"],
    )
    scenario = unique_name("auto").replace("-", "")
    ref = push_catalog(olm_registry, scenario, "test", "v1", [Package("test", [Bundle("1.0.0")])])
    catalog = f"test-{scenario}"
    # operator-controller's leader Lease, held and fresh for a few more seconds: OLM v1 runs.
    duration = 15
    admin.create(
        LEASES,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "9c4404e7.operatorframework.io"},
            "spec": {
                "holderIdentity": "operator-controller-controller-manager-0",
                "leaseDurationSeconds": duration,
                "renewTime": _stamp(dt.datetime.now(dt.UTC)),
            },
        },
        namespace,
    )
    daemon.start()
    dead_webhook = _dead_webhook(admin, namespace, ["clusterextensions"], policy="Ignore")
    try:
        held = f"Lease {namespace}/9c4404e7.operatorframework.io is held by operator-controller"
        assert f"OLM v1 APIs: not served ({held}" in daemon.tail(20000)
        admin.create(
            CLUSTER_CATALOGS,
            {
                "apiVersion": "olm.operatorframework.io/v1",
                "kind": "ClusterCatalog",
                "metadata": {"name": catalog, "labels": session_labels()},
                "spec": {"source": {"type": "Image", "image": {"ref": ref}}},
            },
        )
        # Read mode: nobody serves the ClusterCatalog while the Lease is fresh.
        assert not (admin.get(CLUSTER_CATALOGS, catalog).get("status") or {}).get("conditions")
        wait_for(
            lambda: "OLM v1 APIs: now served" in daemon.tail(20000),
            timeout=duration + 40,
            interval=0.5,
            what="the daemon to switch to serving",
            detail=daemon.tail,
        )
        switched = next(
            line for line in daemon.tail(20000).splitlines() if "OLM v1 APIs: now served" in line
        )
        assert "pivoter's OLM v1 CRDs are installed and no OLM v1 controller runs" in switched
        served = wait_for(
            lambda: (
                obj
                if reports(obj := admin.get(CLUSTER_CATALOGS, catalog), "Serving", "True")
                else None
            ),
            timeout=90,
            what="the ClusterCatalog served by the switched daemon",
            detail=daemon.tail,
        )
        base = served["status"]["urls"]["base"]
        assert base == f"http://127.0.0.1:{port}/catalogs/{catalog}"
        with urllib.request.urlopen(f"{base}/api/v1/all", timeout=10) as response:
            names = [json.loads(line)["name"] for line in response.read().splitlines()]
        assert "test.1.0.0" in names
        # Serving, it checks what OLM v1 left behind: an ERROR line and a Warning Event.
        wait_for(
            lambda: (
                f"kubectl delete validatingwebhookconfiguration {dead_webhook}"
                in daemon.tail(50000)
            ),
            timeout=30,
            what="the leftover webhook reported",
            detail=daemon.tail,
        )
        events = admin.resource("events.k8s.io/v1", "Event")

        def event() -> dict[str, Any] | None:
            return next(
                (
                    e
                    for e in admin.list(events, "default")[0]
                    if (e.get("regarding") or {}).get("name") == dead_webhook
                ),
                None,
            )

        warning = wait_for(event, timeout=30, what="the Warning Event on the webhook")
        assert (warning["type"], warning["reason"]) == ("Warning", "OlmV1Leftover")
    finally:
        with contextlib.suppress(NotFound):
            admin.delete(CLUSTER_CATALOGS, catalog)
        with contextlib.suppress(NotFound):
            admin.delete(admin.resource(MUTATING, "ValidatingWebhookConfiguration"), dead_webhook)
        with contextlib.suppress(NotFound):
            admin.delete(LEASES, "9c4404e7.operatorframework.io", namespace)
        daemon.stop(admin)


# ------------------------------------------------------------------ reading catalogd over HTTPS


class _Catalogd(http.server.BaseHTTPRequestHandler):
    """catalogd's ``/catalogs/<name>/api/v1/all`` for one catalog (``server.body``)."""

    def do_GET(self) -> None:
        body: bytes = getattr(self.server, "body", b"")
        if not self.path.endswith("/api/v1/all"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/jsonl")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def catalogd_tls(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS server with a certificate of its own CA, serving a one-package catalog like
    catalogd; yields its base URL and the CA's PEM file."""
    issued = issue_serving_certificate(
        ["127.0.0.1", "localhost"], ca_name="test catalogd CA", validity=dt.timedelta(days=1)
    )
    (tmp_path / "tls.crt").write_bytes(issued.certificate)
    (tmp_path / "tls.key").write_bytes(issued.private_key)
    ca = tmp_path / "catalogd-ca.crt"
    ca.write_bytes(issued.ca)
    docs = yaml.safe_load_all(
        fbc_naming("tls", [Package("tlspkg", [Bundle("1.0.0", contents=())])], {
            "tlspkg.1.0.0": "localhost:1/tlspkg-bundle:1.0.0"
        })
    )  # fmt: skip
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Catalogd)
    server.body = b"".join(json.dumps(d).encode() + b"\n" for d in docs)  # type: ignore[attr-defined]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", ca
    finally:
        server.shutdown()
        server.server_close()


def _read_mode(kube: Kube, namespace: str, work: Path, ca: Path | None) -> tuple[Manager, Product]:
    manager = Manager(kube)
    product = build(
        manager,
        Settings(
            namespace=namespace,
            store_dir=work / "store",
            scope=Scope.CATALOGS,
            olmv1="read",
            catalogd_ca=ca,
            catalog_sources=SourceSettings(workdir=work / "sources", timeout=3.0, deadline=10.0),
        ),
    )
    manager.start()
    return manager, product


def test_a_clustercatalog_is_read_over_https_with_catalogd_ca(
    admin: Kube,
    namespace: str,
    tmp_path: Path,
    catalogd_tls: tuple[str, Path],
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, ca = catalogd_tls
    catalog = unique_name("tls")
    admin.create(CLUSTER_CATALOGS, _catalog(catalog))
    try:
        digest = "sha256:" + "a" * 64
        admin.patch_status(
            CLUSTER_CATALOGS,
            catalog,
            {
                "urls": {"base": f"{url}/catalogs/{catalog}"},
                "resolvedSource": {
                    "type": "Image",
                    "image": {"ref": f"localhost:1/nothing@{digest}"},
                },
            },
        )
        cached = f"ClusterCatalog/{catalog}"

        # Without the CA: refused, with the catalog and the URL named.
        manager, product = _read_mode(admin, namespace, tmp_path / "without", None)
        try:
            with caplog.at_level(logging.WARNING, logger="pivoter.catalogs.foreign"):

                def refused() -> str | None:
                    return next(
                        (
                            r.getMessage()
                            for r in caplog.records
                            if r.getMessage().startswith(f"{cached}: ")
                        ),
                        None,
                    )

                message = wait_for(refused, timeout=30, interval=0.3, what="the TLS refusal")
            assert f"{url}/catalogs/{catalog}" in message
            assert "TLS error" in message
            assert "CERTIFICATE_VERIFY_FAILED" in message
            assert product.cache is not None
            assert product.cache.get(cached) is None
        finally:
            manager.shutdown()
            product.stop()

        # With --catalogd-ca: read into the catalog cache.
        manager, product = _read_mode(admin, namespace, tmp_path / "with", ca)
        try:
            cache = product.cache
            assert cache is not None
            entry = wait_for(
                lambda: cache.get(cached), timeout=30, interval=0.3, what="the catalog read"
            )
            assert [p.name for p in entry.catalog.packages] == ["tlspkg"]
        finally:
            manager.shutdown()
            product.stop()
    finally:
        with contextlib.suppress(NotFound):
            admin.delete(CLUSTER_CATALOGS, catalog)
