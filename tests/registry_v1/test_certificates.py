"""Webhook serving certificates: issued for the Service, kept while valid (no churn), rotated
before expiry with the previous CA still trusted, and re-issued when unusable."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography import x509

from provisioners.formats.registry_v1 import CertificatePolicy, RegistryV1, plan_certificate
from provisioners.formats.registry_v1.certificates import dns_names, secret_object
from provisioners.formats.registry_v1.webhooks import CERT_HASH_ANNOTATION
from tests.registry_v1.helpers import bundle

NOW = datetime(2026, 1, 1, tzinfo=UTC)
POLICY = CertificatePolicy(validity=timedelta(days=10), renew_before=timedelta(days=2))
SERVICE, NAMESPACE = "op-service", "ops"


def _secret(now: datetime = NOW, policy: CertificatePolicy = POLICY) -> dict[str, Any]:
    plan = plan_certificate(None, service=SERVICE, namespace=NAMESPACE, now=now, policy=policy)
    return secret_object("op-service-cert", NAMESPACE, plan.certificate)


def test_issued_certificate_is_signed_by_the_bundle_ca_and_names_the_service() -> None:
    plan = plan_certificate(None, service=SERVICE, namespace=NAMESPACE, now=NOW, policy=POLICY)
    assert plan.rotated
    assert plan.reason == "no certificate yet"
    cert = x509.load_pem_x509_certificate(plan.certificate.certificate)
    (ca,) = x509.load_pem_x509_certificates(plan.certificate.ca_bundle)
    cert.verify_directly_issued_by(ca)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == dns_names(SERVICE, NAMESPACE)
    assert "ops.svc" in dns_names(SERVICE, NAMESPACE)[2]
    assert cert.not_valid_after_utc == NOW + POLICY.validity


def test_a_valid_certificate_is_kept() -> None:
    secret = _secret()
    later = NOW + timedelta(days=5)
    plan = plan_certificate(secret, service=SERVICE, namespace=NAMESPACE, now=later, policy=POLICY)
    assert not plan.rotated
    assert plan.reason.startswith("kept: valid until")
    assert secret_object("op-service-cert", NAMESPACE, plan.certificate)["data"] == secret["data"]


def test_a_shorter_configured_validity_replaces_a_longer_lived_certificate() -> None:
    secret = _secret()  # 10 days
    shorter = CertificatePolicy(validity=timedelta(days=1), renew_before=timedelta(hours=2))
    plan = plan_certificate(secret, service=SERVICE, namespace=NAMESPACE, now=NOW, policy=shorter)
    assert plan.rotated
    assert "longer than the configured validity" in plan.reason
    cert = x509.load_pem_x509_certificate(plan.certificate.certificate)
    assert cert.not_valid_after_utc == NOW + timedelta(days=1)


def test_rotated_within_renew_before_and_the_old_ca_stays_trusted() -> None:
    secret = _secret()
    old_ca = base64.b64decode(secret["data"]["ca.crt"])
    near_expiry = NOW + timedelta(days=8, hours=1)
    plan = plan_certificate(
        secret, service=SERVICE, namespace=NAMESPACE, now=near_expiry, policy=POLICY
    )
    assert plan.rotated
    assert "within renewBefore" in plan.reason
    bundle_cas = x509.load_pem_x509_certificates(plan.certificate.ca_bundle)
    assert len(bundle_cas) == 2
    assert plan.certificate.ca_bundle.endswith(old_ca)
    new = x509.load_pem_x509_certificate(plan.certificate.certificate)
    new.verify_directly_issued_by(bundle_cas[0])
    assert new.not_valid_after_utc == near_expiry + POLICY.validity


def test_expired_previous_ca_is_dropped() -> None:
    secret = _secret()
    after_expiry = NOW + timedelta(days=11)
    plan = plan_certificate(
        secret, service=SERVICE, namespace=NAMESPACE, now=after_expiry, policy=POLICY
    )
    assert plan.rotated
    assert len(x509.load_pem_x509_certificates(plan.certificate.ca_bundle)) == 1


def test_a_certificate_for_another_service_is_replaced() -> None:
    plan = plan_certificate(
        _secret(), service="renamed", namespace=NAMESPACE, now=NOW, policy=POLICY
    )
    assert plan.rotated
    assert "does not cover renamed" in plan.reason


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda d: d.pop("tls.key"), "has no tls.key"),
        (lambda d: d.update({"tls.crt": "!!!"}), "tls.crt is not valid base64"),
        (lambda d: d.update({"ca.crt": _secret()["data"]["ca.crt"]}), "not signed by any CA"),
        (lambda d: d.update({"tls.key": _secret()["data"]["tls.key"]}), "does not belong"),
    ],
)
def test_unusable_secrets_are_replaced(change: Any, reason: str) -> None:
    secret = _secret()
    change(secret["data"])
    plan = plan_certificate(secret, service=SERVICE, namespace=NAMESPACE, now=NOW, policy=POLICY)
    assert plan.rotated
    assert reason in plan.reason


def test_conversion_keeps_the_cluster_secret_so_output_does_not_churn() -> None:
    root = bundle("kube-green")
    first = RegistryV1().convert_bundle(root, now=NOW)
    secrets = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in first.objects
        if o["kind"] == "Secret"
    }
    assert first.certificates["kube-green-controller-manager"].rotated

    def lookup(namespace: str, name: str) -> dict[str, Any] | None:
        return secrets.get((namespace, name))

    second = RegistryV1(secret_lookup=lookup).convert_bundle(root, now=NOW + timedelta(days=1))
    assert second.objects == first.objects
    assert not second.certificates["kube-green-controller-manager"].rotated


def test_rotation_restarts_pods_and_updates_every_ca_bundle() -> None:
    root = bundle("kube-green")
    config = {"webhookCertificates": {"validity": "2h", "renewBefore": "30m"}}
    first = RegistryV1().convert_bundle(root, config, now=NOW)
    secret = next(o for o in first.objects if o["kind"] == "Secret")
    second = RegistryV1().convert_bundle(
        root, config, lookup=lambda ns, name: secret, now=NOW + timedelta(minutes=100)
    )
    plan = second.certificates["kube-green-controller-manager"]
    assert plan.rotated
    assert "within renewBefore (0:30:00)" in plan.reason

    def pieces(objects: list[dict[str, Any]]) -> tuple[str, str]:
        deployment = next(o for o in objects if o["kind"] == "Deployment")
        webhook = next(o for o in objects if o["kind"] == "ValidatingWebhookConfiguration")
        return (
            deployment["spec"]["template"]["metadata"]["annotations"][CERT_HASH_ANNOTATION],
            webhook["webhooks"][0]["clientConfig"]["caBundle"],
        )

    old_hash, old_bundle = pieces(first.objects)
    new_hash, new_bundle = pieces(second.objects)
    assert new_hash != old_hash
    new_secret = next(o for o in second.objects if o["kind"] == "Secret")
    assert new_bundle == new_secret["data"]["ca.crt"] != old_bundle
    assert base64.b64decode(new_bundle).endswith(base64.b64decode(old_bundle))
