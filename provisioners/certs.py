"""Self-signed serving certificates: a fresh CA and one server certificate signed by it.

Used where pivoter must serve TLS to the API server and no certificate is given: the daemon's own
admission webhook (:mod:`pivoter.webhook`) and the webhooks of registry+v1 operators. Keys are
ECDSA P-256; the CA key is discarded (a rotation issues a new CA), so nothing else can be signed.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["IssuedCertificate", "issue_serving_certificate"]

CLOCK_SKEW = timedelta(minutes=5)


@dataclass(frozen=True)
class IssuedCertificate:
    """PEM material: the CA certificate to trust, the serving certificate and its key."""

    ca: bytes
    certificate: bytes
    private_key: bytes
    not_after: datetime


def _san(names: list[str]) -> x509.SubjectAlternativeName:
    entries: list[x509.GeneralName] = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(entries)


def issue_serving_certificate(
    names: list[str],
    *,
    ca_name: str,
    validity: timedelta,
    now: datetime | None = None,
) -> IssuedCertificate:
    """A new CA called ``ca_name`` and a certificate for ``names`` (DNS names or IP addresses)."""
    if not names:
        raise ValueError("a serving certificate needs at least one name")
    now = now or datetime.now(UTC)
    not_before, not_after = now - CLOCK_SKEW, now + validity
    ca_key = ec.generate_private_key(ec.SECP256R1())
    issuer = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_name[:64])])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(issuer)
        .issuer_name(issuer)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0][:64])]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_san(names), False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return IssuedCertificate(
        ca=ca_cert.public_bytes(serialization.Encoding.PEM),
        certificate=cert.public_bytes(serialization.Encoding.PEM),
        private_key=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        not_after=cert.not_valid_after_utc,
    )
