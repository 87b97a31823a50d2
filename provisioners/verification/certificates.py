"""Is this signing certificate one the policy trusts? Chain, usage, time, subject, issuer.

A certificate-based signature (``cosign sign --certificate ... --certificate-chain ...`` with a
company CA, or a Fulcio certificate with the Fulcio roots as the trust root) is accepted by a
:class:`~.policy.TrustedIdentity` when:

- the certificate chains to one of its roots, through its intermediates or those the signature
  carries (``dev.sigstore.cosign/chain``, a bundle's ``x509CertificateChain``): untrusted
  helpers for building the path, never anchors; cryptography's verifier builds and checks the
  path (signatures, CA basic constraints and key usage on every CA, path length);
- the leaf may sign code (extended key usage ``codeSigning``, as cosign requires);
- every certificate of the path is valid **now**, at verification. A signature's own time
  (a Rekor ``integratedTime``, an RFC 3161 timestamp) is not used: without the log's key or the
  timestamp authority's certificates in the trust root, it is a number the signer wrote, and
  trusting it would let an expired or stolen key sign "in the past". So a short-lived Fulcio
  certificate (10 minutes) stops verifying once expired; a company CA's signing certificates,
  valid for months, are the offline case this serves;
- one of the leaf's subject alternative names (email, URI, DNS name) matches the identity's
  subject, and, when the identity names an issuer, the OIDC issuer Fulcio records matches it:
  extension 1.3.6.1.4.1.57264.1.8 (a DER UTF8String), else the deprecated .1.1 (the raw string).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509 import verification
from cryptography.x509.oid import ExtendedKeyUsageOID, ObjectIdentifier

from provisioners.verification.policy import TrustedIdentity

__all__ = [
    "FULCIO_ISSUER_V1",
    "FULCIO_ISSUER_V2",
    "CertificateRefusal",
    "CertifiedSigner",
    "certificate_issuer",
    "certificate_subjects",
    "check_certificate",
]

FULCIO_ISSUER_V1 = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
FULCIO_ISSUER_V2 = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
MAX_CHAIN = 8
"""Certificates a signature may carry to help build the path."""


class CertificateRefusal(Exception):
    """The certificate is not one the identity accepts; the message says why in one line."""


@dataclass(frozen=True)
class CertifiedSigner:
    """A certificate the identity accepted: who it names, and its key to check the signature."""

    subject: str
    issuer: str
    key: ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey | rsa.RSAPublicKey


def _code_signing(
    _policy: verification.Policy, _cert: x509.Certificate, usage: x509.ExtendedKeyUsage | None
) -> None:
    if usage is None or ExtendedKeyUsageOID.CODE_SIGNING not in usage:
        raise ValueError("the certificate's extended key usage does not allow code signing")


def certificate_subjects(certificate: x509.Certificate) -> list[str]:
    """The emails, URIs and DNS names of the certificate's subject alternative names."""
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [
        *names.get_values_for_type(x509.RFC822Name),
        *names.get_values_for_type(x509.UniformResourceIdentifier),
        *names.get_values_for_type(x509.DNSName),
    ]


def certificate_issuer(certificate: x509.Certificate) -> str:
    """The OIDC issuer a Fulcio certificate records ("" when it records none)."""
    for oid, der in ((FULCIO_ISSUER_V2, True), (FULCIO_ISSUER_V1, False)):
        try:
            value = certificate.extensions.get_extension_for_oid(oid).value
        except x509.ExtensionNotFound:
            continue
        raw = value.value if isinstance(value, x509.UnrecognizedExtension) else b""
        text = _der_utf8(raw) if der else raw.decode("utf-8", "replace")
        if text:
            return text
    return ""


def _der_utf8(raw: bytes) -> str:
    """The text of a DER UTF8String ("" when ``raw`` is not one)."""
    if len(raw) < 2 or raw[0] != 0x0C:
        return ""
    length, start = raw[1], 2
    if length & 0x80:
        octets = length & 0x7F
        if not 0 < octets <= 3 or len(raw) < 2 + octets:
            return ""
        length, start = int.from_bytes(raw[2 : 2 + octets], "big"), 2 + octets
    if start + length != len(raw):
        return ""
    return raw[start:].decode("utf-8", "replace")


def check_certificate(
    leaf: x509.Certificate,
    chain: Sequence[x509.Certificate],
    identity: TrustedIdentity,
    *,
    now: dt.datetime,
) -> CertifiedSigner:
    """The signer ``identity`` accepts in ``leaf``, or :class:`CertificateRefusal` saying why
    (see the module docstring)."""
    if len(chain) > MAX_CHAIN:
        raise CertificateRefusal(
            f"the signature carries {len(chain)} chain certificates, more than {MAX_CHAIN}"
        )
    key = leaf.public_key()
    if not isinstance(key, ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey | rsa.RSAPublicKey):
        raise CertificateRefusal(f"the certificate's {type(key).__name__} key cannot sign")
    subjects = certificate_subjects(leaf)
    if not any(identity.subject.matches(s) for s in subjects):
        names = ", ".join(repr(s) for s in subjects[:4]) or "none"
        raise CertificateRefusal(
            f"certificate subject {names} does not match the expected {identity.subject}"
        )
    issuer = certificate_issuer(leaf)
    if identity.issuer is not None and not identity.issuer.matches(issuer):
        found = repr(issuer) if issuer else "no OIDC issuer"
        raise CertificateRefusal(
            f"certificate issuer {found} does not match the expected {identity.issuer}"
        )
    ee_policy = verification.ExtensionPolicy.permit_all().require_present(
        x509.ExtendedKeyUsage, verification.Criticality.AGNOSTIC, _code_signing
    )
    verifier = (
        verification.PolicyBuilder()
        .store(verification.Store(list(identity.roots)))
        .time(now)
        .max_chain_depth(MAX_CHAIN)
        .extension_policies(
            ca_policy=verification.ExtensionPolicy.webpki_defaults_ca(), ee_policy=ee_policy
        )
        .build_client_verifier()
    )
    try:
        verifier.verify(leaf, [*identity.intermediates, *chain])
    except verification.VerificationError as exc:
        raise CertificateRefusal(
            f"certificate of {subjects[0] if subjects else 'no subject'} does not chain to a "
            f"trusted root at {now:%Y-%m-%dT%H:%M:%SZ}: {_first_line(str(exc))}"
        ) from None
    subject = next(s for s in subjects if identity.subject.matches(s))
    return CertifiedSigner(subject, issuer, key)


def _first_line(text: str) -> str:
    return " ".join(text.split())[:300]
