"""A bundle owning an APIService, installed by pivoter on the real control plane: the Service,
certificate Secret, APIService and delegated-authentication bindings exist as OLM v0 names them,
the APIService's caBundle verifies the Secret's certificate, and the API server's aggregation
layer reaches the operator through pivoter's Service, trusts the certificate and reports the
APIService Available, which the BundleDeployment's health follows.

No operator image runs here, so the aggregated API server is a stand-in served from this
process (a thread), with the certificate and key pivoter put in the Secret, on a socket inside
a network namespace (:mod:`tests.netns`; EndpointSlices may not name loopback). As in
test_webhook_service_cluster.py, the operator's pods are kept unschedulable
(``deploymentConfig.nodeSelector``) so that the only endpoint of pivoter's Service is the
EndpointSlice the test adds for the stand-in's address.
"""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature

from pivoter.kube import Kube, KubeError, NotFound, Resource
from tests.cluster import session_labels, unique_name, wait_for
from tests.drift.running import Pivoter, condition
from tests.netns import NetNamespace, endpoint_slice, network_namespace

pytestmark = pytest.mark.cluster

REGISTRY = "core-rukpak-io-registry"
PORT = 8443
SERVICES = Resource("v1", "Service", "services", namespaced=True)
SECRETS = Resource("v1", "Secret", "secrets", namespaced=True)
SLICES = Resource("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", namespaced=True)
APISERVICES = Resource("apiregistration.k8s.io/v1", "APIService", "apiservices", namespaced=False)
CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)
ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", namespaced=True
)
REVIEWS = Resource(
    "authorization.k8s.io/v1", "SubjectAccessReview", "subjectaccessreviews", namespaced=False
)


def _write_bundle(root: Path, *, deployment: str, group: str) -> Path:
    """A registry+v1 bundle whose one Deployment serves ``v1alpha1.<group>``."""
    csv = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": "wardle.v0.1.0"},
        "spec": {
            "version": "0.1.0",
            "displayName": "Wardle",
            "installModes": [
                {"type": "OwnNamespace", "supported": True},
                {"type": "SingleNamespace", "supported": False},
                {"type": "MultiNamespace", "supported": False},
                {"type": "AllNamespaces", "supported": True},
            ],
            "apiservicedefinitions": {
                "owned": [
                    {
                        "group": group,
                        "version": "v1alpha1",
                        "name": "flunders",
                        "kind": "Flunder",
                        "displayName": "Flunder",
                        "deploymentName": deployment,
                        "containerPort": PORT,
                    }
                ]
            },
            "install": {
                "strategy": "deployment",
                "spec": {
                    "deployments": [
                        {
                            "name": deployment,
                            "spec": {
                                "replicas": 1,
                                "selector": {"matchLabels": {"app": deployment}},
                                "template": {
                                    "metadata": {"labels": {"app": deployment}},
                                    "spec": {
                                        "serviceAccountName": deployment,
                                        "containers": [
                                            {"name": "server", "image": "example.com/wardle:0.1"}
                                        ],
                                    },
                                },
                            },
                        }
                    ]
                },
            },
        },
    }
    annotations = {
        "annotations": {
            "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
            "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
            "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
            "operators.operatorframework.io.bundle.package.v1": "wardle",
            "operators.operatorframework.io.bundle.channels.v1": "alpha",
        }
    }
    (root / "manifests").mkdir(parents=True)
    (root / "metadata").mkdir()
    (root / "manifests" / "wardle.clusterserviceversion.yaml").write_text(yaml.safe_dump(csv))
    (root / "metadata" / "annotations.yaml").write_text(yaml.safe_dump(annotations))
    return root


@contextlib.contextmanager
def _stand_in(
    netns: NetNamespace, secret: dict[str, Any], group: str, workdir: Path
) -> Iterator[list[str]]:
    """Serve ``/apis/<group>/v1alpha1`` over TLS with the Secret's certificate, inside
    ``netns`` on :data:`PORT`, until the block ends; yields the paths requested so far."""
    cert, key = workdir / "tls.crt", workdir / "tls.key"
    cert.write_bytes(_decoded(secret, "tls.crt"))
    key.write_bytes(_decoded(secret, "tls.key"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    requested: list[str] = []
    discovery = json.dumps(
        {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/v1alpha1",
            "resources": [
                {
                    "name": "flunders",
                    "singularName": "flunder",
                    "namespaced": True,
                    "kind": "Flunder",
                    "verbs": ["get", "list"],
                }
            ],
        }
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            requested.append(self.path)
            found = self.path.split("?")[0] == f"/apis/{group}/v1alpha1"
            body = discovery if found else b'{"kind":"Status","code":404}'
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    listener = netns.bound_socket(netns.ip, PORT)
    server = ThreadingHTTPServer(listener.getsockname(), Handler, bind_and_activate=False)
    server.socket.close()
    server.socket = context.wrap_socket(listener, server_side=True)
    thread = threading.Thread(target=server.serve_forever, name="apiservice-stand-in", daemon=True)
    thread.start()
    try:
        yield requested
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _decoded(secret: dict[str, Any], key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


def _signed_by_bundle(certificate: bytes, ca_bundle: bytes) -> bool:
    cert = x509.load_pem_x509_certificate(certificate)
    for ca in x509.load_pem_x509_certificates(ca_bundle):
        with contextlib.suppress(ValueError, TypeError, InvalidSignature):
            cert.verify_directly_issued_by(ca)
            return True
    return False


def _can(
    kube: Kube,
    account: str,
    verb: str,
    what: tuple[str, str],
    *,
    namespace: str = "",
    name: str = "",
) -> bool:
    group, resource = what
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{account}",
            "groups": ["system:serviceaccounts"],
            "resourceAttributes": {
                "verb": verb,
                "group": group,
                "resource": resource,
                "namespace": namespace,
                "name": name,
            },
        },
    }
    return bool(kube.create(REVIEWS, review)["status"].get("allowed"))


def _available(apiservice: dict[str, Any]) -> dict[str, Any]:
    return condition(apiservice, "Available")


def test_an_owned_apiservice_is_installed_and_served_through_pivoters_service(
    pivoter: Pivoter, make_namespace: Callable[[], str], tmp_path: Path
) -> None:
    install = make_namespace()
    deployment = unique_name("wardle")
    group = f"{unique_name('wardle')}.pivoter.test"
    apiservice_name = f"v1alpha1.{group}"
    root = _write_bundle(tmp_path / "bundle", deployment=deployment, group=group)
    name = unique_name("wardle")
    pivoter.bundle_deployment(
        name,
        pivoter.registry_bundle(unique_name("wardle"), root),
        provisioner=REGISTRY,
        config={
            "installNamespace": install,
            "deploymentConfig": {"nodeSelector": {"pivoter.test/no-such-node": "true"}},
        },
    )
    pivoter.wait(name, "Installed", "True", timeout=120)
    kube = pivoter.kube

    service_name = f"{deployment}-service"
    service = kube.get(SERVICES, service_name, install)
    assert service["spec"]["selector"] == {"app": deployment}
    assert [(p["name"], p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [
        (str(PORT), PORT, PORT)
    ]
    secret = kube.get(SECRETS, f"{deployment}-service-cert", install)
    assert secret["type"] == "kubernetes.io/tls"
    apiservice = kube.get(APISERVICES, apiservice_name)
    spec = apiservice["spec"]
    assert spec["service"] == {"namespace": install, "name": service_name, "port": PORT}
    assert (spec["group"], spec["version"]) == (group, "v1alpha1")
    assert (spec["groupPriorityMinimum"], spec["versionPriority"]) == (2000, 15)
    assert _signed_by_bundle(_decoded(secret, "tls.crt"), base64.b64decode(spec["caBundle"]))

    subject = {"kind": "ServiceAccount", "name": deployment, "namespace": install}
    delegator = kube.get(CLUSTER_ROLE_BINDINGS, f"{service_name}-system:auth-delegator")
    assert delegator["roleRef"]["name"] == "system:auth-delegator"
    assert delegator["subjects"] == [subject]
    reader = kube.get(ROLE_BINDINGS, f"{service_name}-auth-reader", "kube-system")
    assert reader["roleRef"]["name"] == "extension-apiserver-authentication-reader"
    assert reader["subjects"] == [subject]
    account = f"{install}:{deployment}"
    assert _can(kube, account, "create", ("authentication.k8s.io", "tokenreviews"))
    assert _can(kube, account, "create", ("authorization.k8s.io", "subjectaccessreviews"))
    reads = ("", "configmaps")
    auth_config = "extension-apiserver-authentication"
    assert _can(kube, account, "get", reads, namespace="kube-system", name=auth_config)

    # Nothing serves the API yet: the APIService is not Available, and health says so.
    wait_for(
        lambda: (
            f"APIService {apiservice_name}"
            in condition(pivoter.get(name), "Healthy").get("message", "")
        ),
        timeout=60,
        what="the Healthy condition to name the unavailable APIService",
    )

    with network_namespace() as netns:
        kube.create(
            SLICES,
            endpoint_slice(
                service=service_name,
                namespace=install,
                ip=netns.ip,
                port=PORT,
                port_name=str(PORT),
                labels=session_labels(),
            ),
            install,
        )
        try:
            with _stand_in(netns, secret, group, tmp_path) as requested:
                # The aggregator calls the stand-in through pivoter's Service, verifying its
                # certificate with the caBundle pivoter injected.
                available = wait_for(
                    lambda: (
                        (found := _available(kube.get(APISERVICES, apiservice_name))).get("status")
                        == "True"
                        and found
                    ),
                    timeout=90,
                    what=f"APIService {apiservice_name} to become Available",
                    detail=lambda: (_available(kube.get(APISERVICES, apiservice_name)), requested),
                )
                assert available["reason"] == "Passed"
                assert f"/apis/{group}/v1alpha1" in requested
                wait_for(
                    lambda: (
                        "APIService"
                        not in condition(pivoter.get(name), "Healthy").get("message", "")
                    ),
                    timeout=60,
                    what="the Healthy condition to stop naming the APIService",
                )
        finally:
            with contextlib.suppress(KubeError):
                kube.delete(SLICES, f"{service_name}-netns", install)

    # Uninstalling removes the APIService (one left behind would break discovery of the whole
    # cluster) and the bindings outside the install namespace.
    pivoter.delete_all()
    for resource, object_name, namespace in (
        (APISERVICES, apiservice_name, None),
        (CLUSTER_ROLE_BINDINGS, f"{service_name}-system:auth-delegator", None),
        (ROLE_BINDINGS, f"{service_name}-auth-reader", "kube-system"),
    ):
        with pytest.raises(NotFound):
            kube.get(resource, object_name, namespace)
