"""The two ways cosign stores an image signature, read into one shape: what was signed, the
signature, the certificate that came with it, and the digest it claims.

- **Simple signing** (cosign's ``sha256-<hex>.sig`` tag, or a referrer of artifact type
  ``application/vnd.dev.cosign.artifact.sig.v1+json``): each layer of media type
  ``application/vnd.dev.cosign.simplesigning.v1+json`` is a JSON payload whose
  ``critical.image.docker-manifest-digest`` names the signed manifest and
  ``critical.identity.docker-reference`` the repository it was signed in; the layer's
  annotation ``dev.cosignproject.cosign/signature`` is the base64 signature over the payload's
  bytes, ``dev.sigstore.cosign/certificate`` and ``dev.sigstore.cosign/chain`` the PEM
  certificate and chain of a certificate-based signature.
- **Sigstore bundle** (cosign v3's default, an OCI 1.1 referrer whose layer is
  ``application/vnd.dev.sigstore.bundle.v0.3+json``): a DSSE envelope over an in-toto
  statement whose ``subject`` digests name the signed manifest and whose ``predicateType`` is
  ``https://sigstore.dev/cosign/sign/v1``; the signature covers the envelope's PAE
  (``DSSEv1 <len> <type> <len> <payload>``); ``verificationMaterial`` holds a certificate, a
  chain (older bundles) or only a public key hint (then the policy's keys decide).
  Attestations (other predicate types) are not signatures of the image and are skipped.

Everything here is the registry's, so hostile: JSON goes through :mod:`resolver.safedata` with a
small size and depth, base64 is decoded strictly, a certificate that does not parse is a
refusal of that signature, never a crash. A malformed one raises :class:`SignatureMalformed`.
"""

from __future__ import annotations

import base64
import binascii
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509

from resolver import safedata

__all__ = [
    "BUNDLE_MEDIA_TYPES",
    "COSIGN_SIGN_PREDICATE",
    "SIMPLE_SIGNING_MEDIA_TYPE",
    "SignatureCandidate",
    "SignatureFormat",
    "SignatureMalformed",
    "dsse_pae",
    "read_bundle",
    "read_simple_signing",
]

SIMPLE_SIGNING_MEDIA_TYPE = "application/vnd.dev.cosign.simplesigning.v1+json"
SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
CERTIFICATE_ANNOTATION = "dev.sigstore.cosign/certificate"
CHAIN_ANNOTATION = "dev.sigstore.cosign/chain"
SIMPLE_SIGNING_TYPE = "cosign container image signature"
BUNDLE_MEDIA_TYPES = (
    "application/vnd.dev.sigstore.bundle.v0.3+json",
    "application/vnd.dev.sigstore.bundle+json;version=0.3",
    "application/vnd.dev.sigstore.bundle+json;version=0.2",
    "application/vnd.dev.sigstore.bundle+json;version=0.1",
)
INTOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
INTOTO_STATEMENT_TYPES = ("https://in-toto.io/Statement/v1", "https://in-toto.io/Statement/v0.1")
COSIGN_SIGN_PREDICATE = "https://sigstore.dev/cosign/sign/v1"
MAX_SIGNATURE_BYTES = 16 << 10
MAX_CHAIN_CERTIFICATES = 8
MAX_DSSE_SIGNATURES = 4
MAX_SUBJECTS = 16


class SignatureMalformed(Exception):
    """A signature that cannot be read; the message says what is wrong, in one line."""


class SignatureFormat(enum.StrEnum):
    """How the signature was stored."""

    SIMPLE_SIGNING = "cosign simple signing"
    SIGSTORE_BUNDLE = "Sigstore bundle"


@dataclass(frozen=True)
class SignatureCandidate:
    """One signature as found, not yet verified."""

    where: str
    """Where it was found (``tag sha256-....sig, layer 0``, ``referrer sha256:...``)."""
    format: SignatureFormat
    signed: bytes
    """The bytes the signature covers (the payload; a bundle's DSSE PAE)."""
    signatures: tuple[bytes, ...]
    digests: tuple[str, ...]
    """The manifest digests the signed payload names (``sha256:<hex>``)."""
    claimed_reference: str | None
    """``critical.identity.docker-reference`` (None: the format states none)."""
    certificate: x509.Certificate | None
    chain: tuple[x509.Certificate, ...]


def _json(data: bytes, *, max_depth: int, what: str) -> dict[str, Any]:
    limits = safedata.Limits(max_bytes=max(len(data), 1), max_depth=max_depth)
    try:
        document = safedata.load_json(data, limits=limits)
    except safedata.SafeDataError as exc:
        raise SignatureMalformed(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise SignatureMalformed(f"{what} is not a JSON object")
    return document


def _object(document: Mapping[str, Any], key: str, what: str) -> dict[str, Any]:
    value = document.get(key)
    if not isinstance(value, dict):
        raise SignatureMalformed(f"{what} has no object {key!r}")
    return value


def _b64(text: Any, what: str, *, limit: int) -> bytes:
    if not isinstance(text, str) or not text:
        raise SignatureMalformed(f"{what} is missing or not a string")
    if len(text) > limit * 4 // 3 + 4:
        raise SignatureMalformed(f"{what} is longer than {limit} bytes")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SignatureMalformed(f"{what} is not base64") from None


def _pem_certificates(text: str, what: str) -> tuple[x509.Certificate, ...]:
    try:
        found = tuple(x509.load_pem_x509_certificates(text.encode()))
    except ValueError:
        raise SignatureMalformed(f"{what} is not a PEM certificate") from None
    return found


def _der_certificate(text: Any, what: str) -> x509.Certificate:
    raw = _b64(text, what, limit=MAX_SIGNATURE_BYTES)
    try:
        return x509.load_der_x509_certificate(raw)
    except ValueError:
        raise SignatureMalformed(f"{what} is not a DER certificate") from None


def read_simple_signing(
    payload: bytes, annotations: Mapping[str, Any], *, where: str, max_depth: int
) -> SignatureCandidate:
    """The signature of one simple-signing layer (its payload blob and its annotations)."""
    document = _json(payload, max_depth=max_depth, what="the simple-signing payload")
    critical = _object(document, "critical", "the simple-signing payload")
    if critical.get("type") != SIMPLE_SIGNING_TYPE:
        raise SignatureMalformed(
            f"the payload's critical.type is {critical.get('type')!r}, not {SIMPLE_SIGNING_TYPE!r}"
        )
    image = _object(critical, "image", "the payload's critical")
    digest = image.get("docker-manifest-digest")
    if not isinstance(digest, str) or not digest:
        raise SignatureMalformed("the payload has no critical.image.docker-manifest-digest")
    identity = critical.get("identity")
    claimed = identity.get("docker-reference") if isinstance(identity, dict) else None
    signature = _b64(
        annotations.get(SIGNATURE_ANNOTATION),
        f"annotation {SIGNATURE_ANNOTATION}",
        limit=MAX_SIGNATURE_BYTES,
    )
    certificate: x509.Certificate | None = None
    chain: tuple[x509.Certificate, ...] = ()
    pem = annotations.get(CERTIFICATE_ANNOTATION)
    if isinstance(pem, str) and pem:
        certificates = _pem_certificates(pem, f"annotation {CERTIFICATE_ANNOTATION}")
        if len(certificates) != 1:
            raise SignatureMalformed(
                f"annotation {CERTIFICATE_ANNOTATION} holds no single certificate"
            )
        certificate = certificates[0]
        chain_pem = annotations.get(CHAIN_ANNOTATION)
        if isinstance(chain_pem, str) and chain_pem:
            chain = _pem_certificates(chain_pem, f"annotation {CHAIN_ANNOTATION}")
            if len(chain) > MAX_CHAIN_CERTIFICATES:
                raise SignatureMalformed(
                    f"annotation {CHAIN_ANNOTATION} holds more than {MAX_CHAIN_CERTIFICATES} "
                    "certificates"
                )
    return SignatureCandidate(
        where,
        SignatureFormat.SIMPLE_SIGNING,
        payload,
        (signature,),
        (digest,),
        claimed if isinstance(claimed, str) else None,
        certificate,
        chain,
    )


def dsse_pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what a DSSE signature covers."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def read_bundle(data: bytes, *, where: str, max_depth: int) -> SignatureCandidate | None:
    """The image signature a Sigstore bundle holds; None when it holds an attestation of
    another predicate (not a signature of the image)."""
    bundle = _json(data, max_depth=max_depth, what="the Sigstore bundle")
    media_type = bundle.get("mediaType")
    if media_type not in BUNDLE_MEDIA_TYPES:
        raise SignatureMalformed(f"the bundle's mediaType {media_type!r} is not a Sigstore bundle")
    if "messageSignature" in bundle:
        raise SignatureMalformed(
            "the bundle holds a messageSignature (a blob signature), not a DSSE image signature"
        )
    envelope = _object(bundle, "dsseEnvelope", "the Sigstore bundle")
    if envelope.get("payloadType") != INTOTO_PAYLOAD_TYPE:
        raise SignatureMalformed(
            f"the DSSE payloadType is {envelope.get('payloadType')!r}, not {INTOTO_PAYLOAD_TYPE!r}"
        )
    payload = _b64(envelope.get("payload"), "the DSSE payload", limit=len(data))
    entries = envelope.get("signatures")
    if not isinstance(entries, list) or not entries:
        raise SignatureMalformed("the DSSE envelope has no signatures")
    if len(entries) > MAX_DSSE_SIGNATURES:
        raise SignatureMalformed(
            f"the DSSE envelope has {len(entries)} signatures, more than {MAX_DSSE_SIGNATURES}"
        )
    signatures = tuple(
        _b64(
            entry.get("sig") if isinstance(entry, dict) else None,
            "a DSSE signature",
            limit=MAX_SIGNATURE_BYTES,
        )
        for entry in entries
    )
    statement = _json(payload, max_depth=max_depth, what="the in-toto statement")
    if statement.get("_type") not in INTOTO_STATEMENT_TYPES:
        raise SignatureMalformed(f"the statement's _type {statement.get('_type')!r} is not in-toto")
    if statement.get("predicateType") != COSIGN_SIGN_PREDICATE:
        return None
    subjects = statement.get("subject")
    if not isinstance(subjects, list) or not subjects or len(subjects) > MAX_SUBJECTS:
        raise SignatureMalformed(f"the statement must name 1 to {MAX_SUBJECTS} subjects")
    digests: list[str] = []
    for subject in subjects:
        found = subject.get("digest") if isinstance(subject, dict) else None
        if isinstance(found, dict):
            digests += [
                f"{algorithm}:{value}"
                for algorithm, value in found.items()
                if algorithm in ("sha256", "sha512") and isinstance(value, str)
            ]
    certificate, chain = _bundle_certificates(_object(bundle, "verificationMaterial", "bundle"))
    return SignatureCandidate(
        where,
        SignatureFormat.SIGSTORE_BUNDLE,
        dsse_pae(INTOTO_PAYLOAD_TYPE, payload),
        signatures,
        tuple(digests),
        None,
        certificate,
        chain,
    )


def _bundle_certificates(
    material: Mapping[str, Any],
) -> tuple[x509.Certificate | None, tuple[x509.Certificate, ...]]:
    single = material.get("certificate")
    if isinstance(single, dict):
        return _der_certificate(single.get("rawBytes"), "the bundle's certificate"), ()
    listed = material.get("x509CertificateChain")
    if isinstance(listed, dict):
        certificates = listed.get("certificates")
        if not isinstance(certificates, list) or not certificates:
            raise SignatureMalformed("the bundle's x509CertificateChain is empty")
        if len(certificates) > MAX_CHAIN_CERTIFICATES + 1:
            raise SignatureMalformed("the bundle's x509CertificateChain is too long")
        parsed = [
            _der_certificate(c.get("rawBytes") if isinstance(c, dict) else None, "a chain entry")
            for c in certificates
        ]
        return parsed[0], tuple(parsed[1:])
    return None, ()
