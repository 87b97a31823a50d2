"""Owned APIServices of real bundles given one in tmp_path: the objects pivoter renders for an
aggregated API server (Service, certificate, APIService, delegated authentication), shared
with the Deployment's webhooks as OLM v0 shares them, kept and rotated like the webhooks'
certificate, and the CSV mistakes refused with the field named."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature

from provisioners.formats.registry_v1 import InvalidBundleError, RegistryV1
from provisioners.formats.registry_v1.webhooks import CERT_HASH_ANNOTATION
from tests.registry_v1.helpers import copy_bundle, edit_csv

NOW = datetime(2026, 1, 1, tzinfo=UTC)
NAMESPACE = "apis"
BPFMAN = "bpfman-operator"  # one Deployment (bpfman-operator), no webhooks, AllNamespaces
GREEN = "kube-green-controller-manager"  # kube-green's Deployment, serving a webhook 443->9443


def _own(root: Path, *definitions: dict[str, Any]) -> None:
    def change(csv: dict[str, Any]) -> None:
        csv["spec"]["apiservicedefinitions"] = {"owned": list(definitions)}

    edit_csv(root, change)


def _definition(deployment: str, **extra: Any) -> dict[str, Any]:
    return {
        "group": "metrics.example.com",
        "version": "v1alpha1",
        "name": "gauges",
        "kind": "Gauge",
        "displayName": "Gauge",
        "deploymentName": deployment,
        **extra,
    }


def _objects(root: Path, **kwargs: Any) -> dict[tuple[str, str, str], dict[str, Any]]:
    conversion = RegistryV1().convert_bundle(
        root, {"installNamespace": NAMESPACE}, now=NOW, **kwargs
    )
    return {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
        for o in conversion.objects
    }


def _verifies(ca_bundle_b64: str, secret: dict[str, Any]) -> bool:
    """Whether a CA of ``ca_bundle_b64`` signed the Secret's serving certificate."""
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    for ca in x509.load_pem_x509_certificates(base64.b64decode(ca_bundle_b64)):
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature):  # another CA of the bundle
            continue
        return True
    return False


def test_an_owned_apiservice_is_served_as_olm_v0_serves_it(tmp_path: Path) -> None:
    root = copy_bundle("bpfman-operator", tmp_path)
    _own(root, _definition(BPFMAN, containerPort=8443))
    objects = _objects(root)

    apiservice = objects[("APIService", "", "v1alpha1.metrics.example.com")]
    secret = objects[("Secret", NAMESPACE, "bpfman-operator-service-cert")]
    assert apiservice["apiVersion"] == "apiregistration.k8s.io/v1"
    spec = apiservice["spec"]
    assert {k: v for k, v in spec.items() if k != "caBundle"} == {
        "group": "metrics.example.com",
        "version": "v1alpha1",
        "groupPriorityMinimum": 2000,
        "versionPriority": 15,
        "service": {"namespace": NAMESPACE, "name": "bpfman-operator-service", "port": 8443},
    }
    assert spec["caBundle"] == secret["data"]["ca.crt"]
    assert _verifies(spec["caBundle"], secret)
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert f"bpfman-operator-service.{NAMESPACE}.svc" in names.get_values_for_type(x509.DNSName)

    service = objects[("Service", NAMESPACE, "bpfman-operator-service")]
    assert service["spec"] == {
        "selector": {"control-plane": "controller-manager"},
        "ports": [{"name": "8443", "port": 8443, "protocol": "TCP", "targetPort": 8443}],
    }

    pod = objects[("Deployment", NAMESPACE, BPFMAN)]["spec"]["template"]
    assert {
        "name": "apiservice-cert",
        "secret": {
            "secretName": "bpfman-operator-service-cert",
            "items": [
                {"key": "tls.crt", "path": "apiserver.crt"},
                {"key": "tls.key", "path": "apiserver.key"},
            ],
        },
    } in pod["spec"]["volumes"]
    for container in pod["spec"]["containers"]:
        assert {
            "name": "apiservice-cert",
            "mountPath": "/apiserver.local.config/certificates",
        } in container["volumeMounts"]
    assert CERT_HASH_ANNOTATION in pod["metadata"]["annotations"]

    subject = {"kind": "ServiceAccount", "name": "bpfman-operator", "namespace": NAMESPACE}
    delegator = objects[("ClusterRoleBinding", "", "bpfman-operator-service-system:auth-delegator")]
    assert delegator["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "system:auth-delegator",
    }
    assert delegator["subjects"] == [subject]
    reader = objects[("RoleBinding", "kube-system", "bpfman-operator-service-auth-reader")]
    assert reader["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "extension-apiserver-authentication-reader",
    }
    assert reader["subjects"] == [subject]


def test_kinds_of_one_group_version_share_one_apiservice(tmp_path: Path) -> None:
    root = copy_bundle("bpfman-operator", tmp_path)
    _own(
        root,
        _definition(BPFMAN),
        _definition(BPFMAN, name="dials", kind="Dial"),
        _definition(BPFMAN, version="v1"),
    )
    objects = _objects(root)
    assert sorted(k[2] for k in objects if k[0] == "APIService") == [
        "v1.metrics.example.com",
        "v1alpha1.metrics.example.com",
    ]
    # One Service for the Deployment (the other is the bundle's own metrics Service).
    assert [k for k in objects if k[0] == "Service" and k[2].startswith(BPFMAN)] == [
        ("Service", NAMESPACE, "bpfman-operator-service")
    ]
    service = objects[("Service", NAMESPACE, "bpfman-operator-service")]
    assert service["spec"]["ports"] == [
        {"name": "443", "port": 443, "protocol": "TCP", "targetPort": 443}
    ]
    bindings = [k[2] for k in objects if k[0] in ("ClusterRoleBinding", "RoleBinding")]
    assert bindings.count("bpfman-operator-service-system:auth-delegator") == 1
    assert bindings.count("bpfman-operator-service-auth-reader") == 1


def test_webhooks_and_apiservices_of_one_deployment_share_service_and_certificate(
    tmp_path: Path,
) -> None:
    root = copy_bundle("kube-green", tmp_path)
    _own(root, _definition(GREEN, containerPort=8443))
    objects = _objects(root)
    # (the bundle ships two Services of its own, a metrics and a webhook one)
    served = [
        k for k in objects if k[0] in ("Service", "Secret") and k[2].startswith(f"{GREEN}-service")
    ]
    assert served == [
        ("Service", NAMESPACE, f"{GREEN}-service"),
        ("Secret", NAMESPACE, f"{GREEN}-service-cert"),
    ]
    service = objects[("Service", NAMESPACE, f"{GREEN}-service")]
    assert service["spec"]["ports"] == [
        {"name": "443", "port": 443, "protocol": "TCP", "targetPort": 9443},
        {"name": "8443", "port": 8443, "protocol": "TCP", "targetPort": 8443},
    ]
    secret = objects[("Secret", NAMESPACE, f"{GREEN}-service-cert")]
    webhook = next(o for o in objects.values() if o["kind"] == "ValidatingWebhookConfiguration")
    apiservice = objects[("APIService", "", "v1alpha1.metrics.example.com")]
    assert webhook["webhooks"][0]["clientConfig"]["caBundle"] == apiservice["spec"]["caBundle"]
    assert _verifies(apiservice["spec"]["caBundle"], secret)
    volumes = objects[("Deployment", NAMESPACE, GREEN)]["spec"]["template"]["spec"]["volumes"]
    cert_volumes = [v["name"] for v in volumes if v.get("secret", {}).get("secretName")]
    assert cert_volumes == ["apiservice-cert", "webhook-cert"]


def test_the_apiservice_certificate_is_kept_then_rotated_like_the_webhooks(
    tmp_path: Path,
) -> None:
    root = copy_bundle("bpfman-operator", tmp_path)
    _own(root, _definition(BPFMAN))
    config = {"installNamespace": NAMESPACE, "webhookCertificates": {"validity": "2h"}}
    first = RegistryV1().convert_bundle(root, config, now=NOW)
    secret = next(o for o in first.objects if o["kind"] == "Secret")

    kept = RegistryV1().convert_bundle(
        root, config, lookup=lambda ns, name: secret, now=NOW + timedelta(minutes=10)
    )
    assert kept.objects == first.objects
    assert not kept.certificates[BPFMAN].rotated

    rotated = RegistryV1().convert_bundle(
        root, config, lookup=lambda ns, name: secret, now=NOW + timedelta(minutes=100)
    )
    assert rotated.certificates[BPFMAN].rotated
    new_secret = next(o for o in rotated.objects if o["kind"] == "Secret")
    apiservice = next(o for o in rotated.objects if o["kind"] == "APIService")
    assert new_secret["data"]["tls.crt"] != secret["data"]["tls.crt"]
    assert _verifies(apiservice["spec"]["caBundle"], new_secret)
    # The old CA stays trusted while pods still serve the old certificate.
    assert _verifies(apiservice["spec"]["caBundle"], secret)
    hashes = [
        next(o for o in c.objects if o["kind"] == "Deployment")["spec"]["template"]["metadata"][
            "annotations"
        ][CERT_HASH_ANNOTATION]
        for c in (first, rotated)
    ]
    assert hashes[0] != hashes[1]


@pytest.mark.parametrize(
    ("bundle_name", "definitions", "field", "problem"),
    [
        (
            "bpfman-operator",
            [_definition("no-such-deployment")],
            "spec.apiservicedefinitions.owned[0].deploymentName",
            "names deployment 'no-such-deployment', which spec.install.spec.deployments does "
            "not define (defined: bpfman-operator)",
        ),
        (
            "bpfman-operator",
            [{k: v for k, v in _definition(BPFMAN).items() if k != "deploymentName"}],
            "spec.apiservicedefinitions.owned[0].deploymentName",
            "is required",
        ),
        (
            "bpfman-operator",
            [_definition(BPFMAN, group="metrics")],
            "spec.apiservicedefinitions.owned[0].group",
            "'metrics' is not a fully qualified API group",
        ),
        (
            "bpfman-operator",
            [_definition(BPFMAN, version="V1.0")],
            "spec.apiservicedefinitions.owned[0].version",
            "'V1.0' is not a valid API version",
        ),
        (
            "bpfman-operator",
            [_definition(BPFMAN, containerPort=70000)],
            "spec.apiservicedefinitions.owned[0].containerPort",
            "must be a port number between 1 and 65535, got 70000",
        ),
        (
            "bpfman-operator",
            [_definition(BPFMAN), _definition(BPFMAN, kind="Dial", containerPort=8443)],
            "spec.apiservicedefinitions.owned[1].deploymentName",
            "v1alpha1.metrics.example.com is also served by "
            "spec.apiservicedefinitions.owned[0] through deployment 'bpfman-operator' port 443",
        ),
        (
            # OLM v0 would write two Service ports numbered 443, which the API server refuses.
            "kube-green",
            [_definition(GREEN)],
            "spec.apiservicedefinitions.owned[0].containerPort",
            "containerPort 443 already maps to targetPort 9443 for deployment "
            f"'{GREEN}'; one Service port cannot reach two",
        ),
    ],
)
def test_bad_apiservice_definitions_are_refused_naming_the_field(
    tmp_path: Path,
    bundle_name: str,
    definitions: list[dict[str, Any]],
    field: str,
    problem: str,
) -> None:
    root = copy_bundle(bundle_name, tmp_path)
    _own(root, *definitions)
    with pytest.raises(InvalidBundleError) as err:
        RegistryV1().convert(root, {"installNamespace": NAMESPACE})
    assert err.value.field == field
    assert problem in str(err.value)
