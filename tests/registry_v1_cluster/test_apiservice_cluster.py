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
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature

from pivoter.kube import Kube, KubeError, NotFound, Resource
from tests.cluster import session_labels, unique_name, wait_for
from tests.drift.running import Pivoter, condition
from tests.netns import endpoint_slice, network_namespace
from tests.registry_v1_cluster.aggregated import (
    APISERVICES,
    PORT,
    SECRETS,
    SLICES,
    decoded,
    stand_in,
    wait_available,
    write_bundle,
)

pytestmark = pytest.mark.cluster

REGISTRY = "core-rukpak-io-registry"
SERVICES = Resource("v1", "Service", "services", namespaced=True)
CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)
ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", namespaced=True
)
REVIEWS = Resource(
    "authorization.k8s.io/v1", "SubjectAccessReview", "subjectaccessreviews", namespaced=False
)


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


def test_an_owned_apiservice_is_installed_and_served_through_pivoters_service(
    pivoter: Pivoter, make_namespace: Callable[[], str], tmp_path: Path
) -> None:
    install = make_namespace()
    deployment = unique_name("wardle")
    group = f"{unique_name('wardle')}.pivoter.test"
    apiservice_name = f"v1alpha1.{group}"
    root = write_bundle(tmp_path / "bundle", deployment=deployment, group=group)
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
    assert _signed_by_bundle(decoded(secret, "tls.crt"), base64.b64decode(spec["caBundle"]))

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
            with stand_in(netns, secret, group, tmp_path / "stand-in") as server:
                # The aggregator calls the stand-in through pivoter's Service, verifying its
                # certificate with the caBundle pivoter injected.
                available = wait_available(kube, apiservice_name, detail=lambda: server.requested)
                assert available["reason"] == "Passed"
                assert f"/apis/{group}/v1alpha1" in server.requested
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
