"""Serving certificates for operator webhooks and aggregated API servers (owned APIServices):
issue, read back, and decide when to rotate.

Each Deployment serving webhooks or APIServices gets its own self-signed CA and a serving
certificate for its Service, kept in a ``kubernetes.io/tls`` Secret (``tls.crt``, ``tls.key``,
``ca.crt``, the CA bundle the API server must trust, and ``olmCAKey``, the issuing CA, as OLM v0
keeps it). Conversion must not churn: given the Secret already in the cluster,
:func:`plan_certificate` keeps it while it is valid for the Service and further than
``renewBefore`` from expiry, and otherwise issues a new CA and certificate. On rotation the
previous CA stays in the bundle while it is still valid, so the API server trusts both the old
certificate (still served until the kubelet refreshes the mounted Secret) and the new one. Keys
are ECDSA P-256. The CA key is not kept: a rotation issues a new CA. Called by
:mod:`~provisioners.formats.registry_v1.webhooks`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

from provisioners.certs import issue_serving_certificate
from provisioners.formats.registry_v1.config import CertificatePolicy

TLS_CERT = "tls.crt"
TLS_KEY = "tls.key"
CA_BUNDLE = "ca.crt"
OLM_CA = "olmCAKey"
"""The key OLM v0 keeps the CA certificate under (despite its name, no key). Written too, so that
OLM v0 keeps the certificate if it takes the operator back; read when ``ca.crt`` is absent, so
that pivoter keeps the certificate of an operator it adopts from OLM v0."""
_PEM_END = b"-----END CERTIFICATE-----"
NOT_AFTER_ANNOTATION = "pivoter.io/certificate-not-after"
_CLOCK_SKEW = timedelta(minutes=5)
_MAX_CAS_IN_BUNDLE = 3


@dataclass(frozen=True)
class ServingCertificate:
    """PEM material for one Service: the CA bundle to trust, the certificate and its key."""

    ca_bundle: bytes
    certificate: bytes
    private_key: bytes
    not_after: datetime


@dataclass(frozen=True)
class CertificatePlan:
    """What conversion does with one serving certificate, and why."""

    certificate: ServingCertificate
    rotated: bool
    """True when newly issued by this conversion (first install or rotation)."""
    reason: str


def dns_names(service: str, namespace: str) -> list[str]:
    """The names the API server (and in-cluster clients) use to reach ``service``."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def _pem_certificates(data: bytes) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(data) if data.strip() else []


def issue(
    *,
    service: str,
    namespace: str,
    now: datetime,
    validity: timedelta,
    previous_ca_bundle: bytes = b"",
) -> ServingCertificate:
    """A new CA and serving certificate for ``service``; still-valid previous CAs are kept."""
    issued = issue_serving_certificate(
        dns_names(service, namespace),
        ca_name=f"pivoter webhook CA {service}.{namespace}",
        validity=validity,
        now=now,
    )
    bundle = [issued.ca]
    try:
        previous = _pem_certificates(previous_ca_bundle)
    except ValueError:
        previous = []
    for old in previous:
        if old.not_valid_after_utc > now and len(bundle) < _MAX_CAS_IN_BUNDLE:
            bundle.append(old.public_bytes(serialization.Encoding.PEM))
    return ServingCertificate(
        ca_bundle=b"".join(bundle),
        certificate=issued.certificate,
        private_key=issued.private_key,
        not_after=issued.not_after,
    )


def from_secret(secret: Mapping[str, Any]) -> ServingCertificate:
    """Read the serving certificate back from a Secret; ValueError says what is wrong."""
    data = secret.get("data") or {}
    if not isinstance(data, Mapping):
        raise ValueError("the Secret's data is not a mapping")
    decoded: dict[str, bytes] = {}
    ca_key = CA_BUNDLE if data.get(CA_BUNDLE) or not data.get(OLM_CA) else OLM_CA
    for key in (TLS_CERT, TLS_KEY, ca_key):
        value = data.get(key)
        if not isinstance(value, str) or not value:
            raise ValueError(f"the Secret has no {key}")
        try:
            decoded[key] = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"{key} is not valid base64") from exc
    try:
        cert = x509.load_pem_x509_certificate(decoded[TLS_CERT])
    except ValueError as exc:
        raise ValueError(f"{TLS_CERT} is not a PEM certificate") from exc
    return ServingCertificate(
        ca_bundle=decoded[ca_key],
        certificate=decoded[TLS_CERT],
        private_key=decoded[TLS_KEY],
        not_after=cert.not_valid_after_utc,
    )


def renewal_reason(
    current: ServingCertificate,
    *,
    names: list[str],
    now: datetime,
    renew_before: timedelta,
    validity: timedelta | None = None,
) -> str | None:
    """Why ``current`` must be replaced, or None when it can be kept (a ``validity`` shorter than
    the certificate's own lifetime replaces it too: the configuration was tightened)."""
    try:
        cert = x509.load_pem_x509_certificate(current.certificate)
        cas = _pem_certificates(current.ca_bundle)
        key = serialization.load_pem_private_key(current.private_key, password=None)
    except (ValueError, TypeError) as exc:
        return f"the stored certificate cannot be read ({exc})"
    if cert.public_key() != key.public_key():
        return "tls.key does not belong to tls.crt"
    issuers = []
    for ca in cas:
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature):
            continue
        issuers.append(ca)
    if not issuers:
        return "tls.crt is not signed by any CA in ca.crt"
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        covered = set(san.get_values_for_type(x509.DNSName))
    except x509.ExtensionNotFound:
        covered = set()
    # The API server reaches webhooks at <service>.<namespace>.svc: a certificate that covers it
    # is kept even without the other names (OLM v0 issues none for the bare service name).
    missing = [name for name in names if name.endswith(".svc") and name not in covered]
    if missing:
        return f"the certificate does not cover {', '.join(missing)}"
    if cert.not_valid_before_utc > now + _CLOCK_SKEW:
        return f"the certificate is not valid before {cert.not_valid_before_utc.isoformat()}"
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc - _CLOCK_SKEW
    if validity is not None and lifetime > validity + timedelta(minutes=1):
        return f"the certificate lives {lifetime}, longer than the configured validity ({validity})"
    expiry = min(cert.not_valid_after_utc, *(ca.not_valid_after_utc for ca in issuers))
    if expiry - now <= renew_before:
        return (
            f"the certificate expires at {expiry.isoformat()}, within renewBefore "
            f"({renew_before}) of now"
        )
    return None


def plan_certificate(
    existing_secret: Mapping[str, Any] | None,
    *,
    service: str,
    namespace: str,
    now: datetime | None,
    policy: CertificatePolicy,
) -> CertificatePlan:
    """Keep the certificate in ``existing_secret`` if it is still good, else issue a new one."""
    now = now or datetime.now(UTC)
    names = dns_names(service, namespace)
    previous_bundle = b""
    if existing_secret is None:
        reason = "no certificate yet"
    else:
        try:
            current = from_secret(existing_secret)
        except ValueError as exc:
            reason = f"the existing Secret is unusable: {exc}"
        else:
            previous_bundle = current.ca_bundle
            found = renewal_reason(
                current,
                names=names,
                now=now,
                renew_before=policy.renew_before,
                validity=policy.validity,
            )
            if found is None:
                return CertificatePlan(
                    certificate=current,
                    rotated=False,
                    reason=f"kept: valid until {current.not_after.isoformat()}",
                )
            reason = found
    certificate = issue(
        service=service,
        namespace=namespace,
        now=now,
        validity=policy.validity,
        previous_ca_bundle=previous_bundle,
    )
    return CertificatePlan(certificate=certificate, rotated=True, reason=reason)


def issuing_ca(certificate: ServingCertificate) -> bytes:
    """The PEM of the first CA of the bundle: the one that signed the certificate (a new CA is
    put first; an adopted OLM v0 Secret holds only its CA)."""
    bundle = certificate.ca_bundle
    end = bundle.find(_PEM_END)
    if end < 0:
        return bundle
    end += len(_PEM_END)
    if bundle[end : end + 1] == b"\n":
        end += 1
    return bundle[:end]


def secret_object(name: str, namespace: str, certificate: ServingCertificate) -> dict[str, Any]:
    """The ``kubernetes.io/tls`` Secret holding ``certificate``."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {NOT_AFTER_ANNOTATION: certificate.not_after.isoformat()},
        },
        "data": {
            TLS_CERT: base64.b64encode(certificate.certificate).decode(),
            TLS_KEY: base64.b64encode(certificate.private_key).decode(),
            CA_BUNDLE: base64.b64encode(certificate.ca_bundle).decode(),
            OLM_CA: base64.b64encode(issuing_ca(certificate)).decode(),
        },
    }
