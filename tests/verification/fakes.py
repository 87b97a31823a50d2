"""Signatures in cosign's two formats, made here with ``cryptography``, and an in-memory
signature store to serve them (the pure tests; the real cosign is in test_cosign_interop.py).

Independent of the code under test: payloads, manifests, bundles and certificates are written
from the formats' descriptions (cosign's simple signing and Sigstore bundle v0.3), not by
calling provisioners.verification.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

from provisioners.errors import ContentTooLargeError
from provisioners.verification.discovery import ReferrersPage, StoredManifest

PrivateKey = ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey
SIMPLE_SIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
BUNDLE = "application/vnd.dev.sigstore.bundle.v0.3+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
NOW = dt.datetime.now(dt.UTC)


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def public_pem(key: PrivateKey) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def sign(key: PrivateKey, data: bytes) -> bytes:
    """As cosign signs: ECDSA with the curve's hash, Ed25519 pure, RSA PKCS#1 v1.5 SHA-256."""
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key.sign(data)
    if isinstance(key, ec.EllipticCurvePrivateKey):
        hasher = hashes.SHA384() if isinstance(key.curve, ec.SECP384R1) else hashes.SHA256()
        return key.sign(data, ec.ECDSA(hasher))
    return key.sign(data, padding.PKCS1v15(), hashes.SHA256())


def simple_payload(manifest_digest: str, reference: str) -> bytes:
    return json.dumps(
        {
            "critical": {
                "identity": {"docker-reference": reference},
                "image": {"docker-manifest-digest": manifest_digest},
                "type": "cosign container image signature",
            },
            "optional": None,
        }
    ).encode()


def dsse_pae(payload_type: str, payload: bytes) -> bytes:
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def statement(
    manifest_digest: str, predicate: str = "https://sigstore.dev/cosign/sign/v1"
) -> bytes:
    algorithm, value = manifest_digest.split(":", 1)
    return json.dumps(
        {
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [{"digest": {algorithm: value}}],
            "predicateType": predicate,
            "predicate": {},
        }
    ).encode()


def bundle(
    key: PrivateKey,
    manifest_digest: str,
    *,
    certificate: x509.Certificate | None = None,
    predicate: str = "https://sigstore.dev/cosign/sign/v1",
) -> bytes:
    payload = statement(manifest_digest, predicate)
    signature = sign(key, dsse_pae("application/vnd.in-toto+json", payload))
    material: dict[str, Any] = {"publicKey": {"hint": "test"}}
    if certificate is not None:
        der = certificate.public_bytes(serialization.Encoding.DER)
        material = {"certificate": {"rawBytes": base64.b64encode(der).decode()}}
    return json.dumps(
        {
            "mediaType": BUNDLE,
            "verificationMaterial": material,
            "dsseEnvelope": {
                "payload": base64.b64encode(payload).decode(),
                "payloadType": "application/vnd.in-toto+json",
                "signatures": [{"sig": base64.b64encode(signature).decode(), "keyid": ""}],
            },
        }
    ).encode()


def pem(certificate: x509.Certificate) -> str:
    return certificate.public_bytes(serialization.Encoding.PEM).decode()


# -- certificates --------------------------------------------------------------------------------


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


@dataclass
class Authority:
    """A CA that issues code-signing certificates (optionally through an intermediate)."""

    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    @classmethod
    def root(cls, common: str = "test root") -> Authority:
        key = ec.generate_private_key(ec.SECP384R1())
        return cls(key, _ca(common, key, None, key))

    def intermediate(self, common: str = "test intermediate") -> Authority:
        key = ec.generate_private_key(ec.SECP384R1())
        return Authority(key, _ca(common, key, self, self.key))

    def issue(
        self,
        key: PrivateKey,
        *,
        email: str = "signer@example.com",
        issuer: str | None = "https://oidc.example.com",
        code_signing: bool = True,
        not_before: dt.datetime | None = None,
        not_after: dt.datetime | None = None,
        issuer_v1: bool = False,
    ) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([]))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before or NOW - dt.timedelta(hours=1))
            .not_valid_after(not_after or NOW + dt.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.RFC822Name(email)]), critical=True)
            .add_extension(
                x509.KeyUsage(True, False, False, False, False, False, False, False, False),
                critical=True,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                critical=False,
            )
        )
        usage = (
            ExtendedKeyUsageOID.CODE_SIGNING if code_signing else ExtendedKeyUsageOID.SERVER_AUTH
        )
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        if issuer is not None:
            if issuer_v1:
                oid, value = "1.3.6.1.4.1.57264.1.1", issuer.encode()
            else:
                raw = issuer.encode()
                oid, value = "1.3.6.1.4.1.57264.1.8", bytes([0x0C, len(raw)]) + raw
            builder = builder.add_extension(
                x509.UnrecognizedExtension(ObjectIdentifier(oid), value), critical=False
            )
        return builder.sign(self.key, hashes.SHA384())


def _ca(
    common: str,
    key: ec.EllipticCurvePrivateKey,
    parent: Authority | None,
    signer: ec.EllipticCurvePrivateKey,
) -> x509.Certificate:
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(parent.certificate.subject if parent else _name(common))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - dt.timedelta(days=1))
        .not_valid_after(NOW + dt.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    if parent is not None:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(parent.key.public_key()),
            critical=False,
        )
    return builder.sign(signer, hashes.SHA384())


# -- the store -----------------------------------------------------------------------------------


@dataclass
class FakeStore:
    """An image repository in memory: manifests by tag and digest, blobs, referrers pages."""

    manifests: dict[str, bytes] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    referrer_pages: dict[str | None, tuple[dict[str, Any], str | None]] | None = None
    """Pages of the referrers API by page link (None: the first); None: API not served."""
    seconds_left: float = 60.0
    requests: list[str] = field(default_factory=list)
    fail_with: dict[str, Exception] = field(default_factory=dict)

    def put_blob(self, data: bytes) -> dict[str, Any]:
        found = digest(data)
        self.blobs[found] = data
        return {"digest": found, "size": len(data)}

    def put_manifest(self, document: dict[str, Any], tag: str | None = None) -> str:
        body = json.dumps(document).encode()
        found = digest(body)
        self.manifests[found] = body
        if tag:
            self.manifests[tag] = body
        return found

    def deadline_left(self) -> float:
        return self.seconds_left

    def manifest(self, ref: str, *, limit: int, max_depth: int) -> StoredManifest | None:
        self.requests.append(f"manifest {ref}")
        if ref in self.fail_with:
            raise self.fail_with[ref]
        body = self.manifests.get(ref)
        if body is None:
            return None
        if len(body) > limit:
            raise ContentTooLargeError(f"manifest {ref} returned more than {limit} bytes")
        return StoredManifest(digest(body), json.loads(body))

    def blob(self, found: str, size: int) -> bytes:
        self.requests.append(f"blob {found}")
        data = self.blobs[found]
        assert len(data) == size
        return data

    def referrers(
        self, manifest_digest: str, *, page: str | None, limit: int, max_depth: int
    ) -> ReferrersPage | None:
        self.requests.append(f"referrers {manifest_digest} {page}")
        if "referrers" in self.fail_with:
            raise self.fail_with["referrers"]
        if self.referrer_pages is None:
            return None
        document, next_page = self.referrer_pages[page]
        return ReferrersPage(document, next_page)


def image_manifest(store: FakeStore, tag: str, content: bytes = b"bundle content") -> str:
    """Push a small image (one layer) and return its digest."""
    layer = store.put_blob(content)
    config = store.put_blob(b"{}")
    return store.put_manifest(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **layer}],
        },
        tag,
    )


def sig_layer(
    store: FakeStore,
    key: PrivateKey,
    manifest_digest: str,
    *,
    reference: str = "registry.example.com/team/bundle",
    certificate: x509.Certificate | None = None,
    chain: list[x509.Certificate] | None = None,
    payload: bytes | None = None,
) -> dict[str, Any]:
    """One simple-signing layer descriptor, its payload pushed as a blob."""
    body = payload if payload is not None else simple_payload(manifest_digest, reference)
    annotations = {"dev.cosignproject.cosign/signature": base64.b64encode(sign(key, body)).decode()}
    if certificate is not None:
        annotations["dev.sigstore.cosign/certificate"] = pem(certificate)
    if chain:
        annotations["dev.sigstore.cosign/chain"] = "".join(pem(c) for c in chain)
    return {"mediaType": SIMPLE_SIGNING, **store.put_blob(body), "annotations": annotations}


def sig_tag(store: FakeStore, signed_digest: str, layers: list[dict[str, Any]]) -> None:
    """The ``sha256-<hex>.sig`` manifest of ``signed_digest`` holding ``layers``."""
    config = store.put_blob(b"{}")
    store.put_manifest(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config},
            "layers": layers,
        },
        signed_digest.replace(":", "-") + ".sig",
    )


def bundle_referrer(store: FakeStore, subject: str, data: bytes) -> dict[str, Any]:
    """Push a referrer manifest holding the bundle ``data``; return its index descriptor."""
    empty = store.put_blob(b"{}")
    layer = store.put_blob(data)
    body = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": BUNDLE,
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", **empty},
        "layers": [{"mediaType": BUNDLE, **layer}],
        "subject": {"mediaType": OCI_MANIFEST, "digest": subject, "size": 100},
    }
    found = store.put_manifest(body)
    return {
        "mediaType": OCI_MANIFEST,
        "digest": found,
        "size": len(store.manifests[found]),
        "artifactType": BUNDLE,
    }


def index(descriptors: list[dict[str, Any]]) -> dict[str, Any]:
    return {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": descriptors}
