"""The real cosign signs images in a local registry; the pull path verifies them.

Each test pushes an image, signs it with ``cosign`` (hack/tools/cosign.sh) offline -- a key
pair from ``cosign generate-key-pair``, ``--tlog-upload=false --use-signing-config=false``, no
Fulcio, no Rekor, no TUF -- then opens the image as a pull does
(:func:`provisioners.registries.open_image`) and verifies it with
:func:`provisioners.verification.verify_opened`: both storage formats (the ``.sig`` tag with
``--new-bundle-format=false``, and cosign v3's default, a Sigstore bundle as an OCI 1.1 referrer),
key-based and certificate-based (a certificate made here by a test CA for cosign's key, given
with ``--certificate`` and ``--certificate-chain``), and the refusals: unsigned, another key, the
signature of another digest, a tag moved after signing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

from provisioners.httpclient import TlsOptions
from provisioners.registries import RegistryAccess, open_image
from provisioners.registries.reference import parse_reference
from provisioners.sources import FetchOptions, ImageSpec
from provisioners.sources.image import ImageSource
from provisioners.verification import (
    IdentityMatch,
    ImageNotVerifiedError,
    SignatureRefused,
    SignatureVerified,
    TrustedIdentity,
    TrustedKey,
    VerificationMode,
    VerificationPolicy,
    verify_all,
    verify_opened,
)
from tests.provisioners.oci import OCI_MANIFEST, Pusher, plain_bundle
from tests.provisioners.servers import Registry
from tests.verification.cosigntool import Cosign

pytestmark = pytest.mark.tools

ISSUER = "https://oidc.example.com"


@pytest.fixture(scope="module")
def cosign(tmp_path_factory: pytest.TempPathFactory) -> Cosign:
    return Cosign(tmp_path_factory.mktemp("cosign-home"))


@pytest.fixture(scope="module")
def keys(cosign: Cosign) -> dict[str, tuple[Path, Path]]:
    return {name: cosign.key_pair(name) for name in ("release", "other")}


def push(registry: Registry, repo: str, tag: str, name: str) -> str:
    """A small image (a plain bundle naming ``name``); its digest."""
    return Pusher(registry.base).image(repo, tag, [plain_bundle(name)])


def verify(
    registry: Registry, reference: str, policy: VerificationPolicy
) -> SignatureVerified | SignatureRefused:
    image = parse_reference(f"{registry.host}/{reference}")
    opened = open_image(image, RegistryAccess(), tls=TlsOptions(), timeout=10, deadline=60)
    result = verify_opened(image, opened, policy)
    assert result is not None
    return result


def key_policy(public: Path) -> VerificationPolicy:
    key = TrustedKey.from_pem(public.read_bytes(), name=public.name)
    return VerificationPolicy.keyed(VerificationMode.ENFORCE, keys=[key], name="interop policy")


@pytest.mark.parametrize("bundle", [False, True], ids=["sig-tag", "bundle-referrer"])
def test_an_image_cosign_signed_with_a_key_verifies(
    registry: Registry, cosign: Cosign, keys: dict[str, tuple[Path, Path]], bundle: bool
) -> None:
    repo = f"keyed/{'bundle' if bundle else 'sig'}"
    pushed = push(registry, repo, "v1", "keyed")
    private, public = keys["release"]
    cosign.sign(f"{registry.host}/{repo}@{pushed}", private, bundle=bundle)
    result = verify(registry, f"{repo}:v1", key_policy(public))
    assert isinstance(result, SignatureVerified), result.message
    assert result.digest == pushed
    assert result.signers[0].key == TrustedKey.from_pem(public.read_bytes(), name="").fingerprint
    expected = "referrer sha256:" if bundle else f"tag {pushed.replace(':', '-')}.sig"
    assert result.signers[0].where.startswith(expected), result.signers[0].where


def test_an_unsigned_image_is_refused(
    registry: Registry, keys: dict[str, tuple[Path, Path]]
) -> None:
    pushed = push(registry, "unsigned/app", "v1", "unsigned")
    result = verify(registry, "unsigned/app:v1", key_policy(keys["release"][1]))
    assert isinstance(result, SignatureRefused)
    assert result.message.startswith(
        f"{registry.host}/unsigned/app:v1@{pushed} is not verified by interop policy "
        "(every image): no signature found"
    )


@pytest.mark.parametrize("bundle", [False, True], ids=["sig-tag", "bundle-referrer"])
def test_an_image_signed_by_another_key_is_refused(
    registry: Registry, cosign: Cosign, keys: dict[str, tuple[Path, Path]], bundle: bool
) -> None:
    repo = f"otherkey/{'bundle' if bundle else 'sig'}"
    pushed = push(registry, repo, "v1", "other")
    cosign.sign(f"{registry.host}/{repo}@{pushed}", keys["other"][0], bundle=bundle)
    result = verify(registry, f"{repo}:v1", key_policy(keys["release"][1]))
    assert isinstance(result, SignatureRefused)
    assert "the signature does not verify with key sha256:" in result.message


def test_a_tag_moved_after_signing_is_refused(
    registry: Registry, cosign: Cosign, keys: dict[str, tuple[Path, Path]]
) -> None:
    signed = push(registry, "moved/app", "v1", "signed")
    private, public = keys["release"]
    cosign.sign(f"{registry.host}/moved/app@{signed}", private)
    assert isinstance(verify(registry, "moved/app:v1", key_policy(public)), SignatureVerified)
    moved = push(registry, "moved/app", "v1", "substituted")
    result = verify(registry, "moved/app:v1", key_policy(public))
    assert isinstance(result, SignatureRefused)
    assert result.digest == moved
    assert "no signature found" in result.message


def test_the_signature_of_another_digest_is_refused(
    registry: Registry, cosign: Cosign, keys: dict[str, tuple[Path, Path]]
) -> None:
    """The attacker copies a real signature manifest to the tag of the image it substitutes."""
    signed = push(registry, "copied/app", "signed", "signed")
    private, public = keys["release"]
    cosign.sign(f"{registry.host}/copied/app@{signed}", private)
    substitute = push(registry, "copied/app", "v1", "substitute")
    pusher = Pusher(registry.base)
    _, _, body = pusher._request(
        "GET",
        f"{registry.base}/v2/copied/app/manifests/{signed.replace(':', '-')}.sig",
        headers={"Accept": OCI_MANIFEST},
    )
    pusher.manifest("copied/app", f"{substitute.replace(':', '-')}.sig", body, OCI_MANIFEST)
    result = verify(registry, "copied/app:v1", key_policy(public))
    assert isinstance(result, SignatureRefused)
    assert f"signs {signed}, not the pulled {substitute}" in result.message


# -- certificates ----------------------------------------------------------------------------------


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


@pytest.fixture(scope="module")
def company_ca(
    cosign: Cosign, keys: dict[str, tuple[Path, Path]]
) -> tuple[x509.Certificate, Path, Path]:
    """A CA, and a code-signing certificate it issued for the ``release`` key (files)."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP384R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("company signing CA"))
        .issuer_name(_name("company signing CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA384())
    )
    public = serialization.load_pem_public_key(keys["release"][1].read_bytes())
    issuer = ISSUER.encode()
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([]))
        .issuer_name(ca.subject)
        .public_key(public)  # type: ignore[arg-type]
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=7))
        .add_extension(
            x509.SubjectAlternativeName([x509.RFC822Name("release@example.com")]), critical=True
        )
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, False, False, False, False),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .add_extension(
            x509.UnrecognizedExtension(
                ObjectIdentifier("1.3.6.1.4.1.57264.1.8"), bytes([0x0C, len(issuer)]) + issuer
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA384())
    )
    leaf_file, chain_file = cosign.home / "release.crt", cosign.home / "chain.crt"
    leaf_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    chain_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return ca, leaf_file, chain_file


def identity_policy(ca: x509.Certificate, subject: str) -> VerificationPolicy:
    identity = TrustedIdentity(
        (ca,), IdentityMatch(exact=subject), IdentityMatch(exact=ISSUER), name="company CA"
    )
    return VerificationPolicy.keyed(
        VerificationMode.ENFORCE, identities=[identity], name="interop identity policy"
    )


@pytest.mark.parametrize("bundle", [False, True], ids=["sig-tag", "bundle-referrer"])
def test_a_certificate_signature_verifies_by_identity_and_issuer(
    registry: Registry,
    cosign: Cosign,
    keys: dict[str, tuple[Path, Path]],
    company_ca: tuple[x509.Certificate, Path, Path],
    bundle: bool,
) -> None:
    ca, leaf_file, chain_file = company_ca
    repo = f"certified/{'bundle' if bundle else 'sig'}"
    pushed = push(registry, repo, "v1", "certified")
    cosign.sign(
        f"{registry.host}/{repo}@{pushed}",
        keys["release"][0],
        "--certificate",
        str(leaf_file),
        "--certificate-chain",
        str(chain_file),
        bundle=bundle,
    )
    result = verify(registry, f"{repo}:v1", identity_policy(ca, "release@example.com"))
    assert isinstance(result, SignatureVerified), result.message
    assert (result.signers[0].subject, result.signers[0].issuer) == ("release@example.com", ISSUER)
    wrong = verify(registry, f"{repo}:v1", identity_policy(ca, "someone@example.com"))
    assert isinstance(wrong, SignatureRefused)
    assert "certificate subject 'release@example.com' does not match the expected" in wrong.message


def test_what_cosign_wrote_is_what_the_formats_say(
    registry: Registry, cosign: Cosign, keys: dict[str, tuple[Path, Path]]
) -> None:
    """A record of cosign v3's storage, so a change of format shows here first."""
    pushed = push(registry, "formats/app", "v1", "formats")
    cosign.sign(f"{registry.host}/formats/app@{pushed}", keys["release"][0])
    pusher = Pusher(registry.base)
    _, _, body = pusher._request(
        "GET",
        f"{registry.base}/v2/formats/app/manifests/{pushed.replace(':', '-')}.sig",
        headers={"Accept": OCI_MANIFEST},
    )
    layer = json.loads(body)["layers"][0]
    assert layer["mediaType"] == "application/vnd.dev.cosign.simplesigning.v1+json"
    assert "dev.cosignproject.cosign/signature" in layer["annotations"]


# -- the pull ----------------------------------------------------------------------------------


def test_the_pull_refuses_before_any_layer_under_enforce_and_reports_under_warn(
    registry: Registry, cosign: Cosign, keys: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    pushed = push(registry, "pull/app", "v1", "pulled")
    image = f"{registry.host}/pull/app:v1"
    enforcing = key_policy(keys["release"][1])
    dest = tmp_path / "enforce"
    dest.mkdir()
    with pytest.raises(ImageNotVerifiedError) as refused:
        ImageSource().fetch(ImageSpec(image, verification=(enforcing,)), dest, FetchOptions())
    assert refused.value.refusal.digest == pushed
    assert "no signature found" in str(refused.value)
    assert list(dest.iterdir()) == []  # nothing unpacked

    warning = dataclasses.replace(enforcing, mode=VerificationMode.WARN)
    dest = tmp_path / "warn"
    dest.mkdir()
    fetched = ImageSource().fetch(ImageSpec(image, verification=(warning,)), dest, FetchOptions())
    (verdict,) = fetched.verification
    assert isinstance(verdict, SignatureRefused)
    assert any(w.startswith("not verified (mode warn): ") for w in fetched.warnings)
    assert list(dest.iterdir())  # unpacked anyway

    cosign.sign(f"{registry.host}/pull/app@{pushed}", keys["release"][0])
    dest = tmp_path / "signed"
    dest.mkdir()
    fetched = ImageSource().fetch(ImageSpec(image, verification=(enforcing,)), dest, FetchOptions())
    (verdict,) = fetched.verification
    assert isinstance(verdict, SignatureVerified)
    assert verdict.digest == pushed == fetched.revision


def test_levels_combine_every_policy_must_accept(
    registry: Registry, cosign: Cosign, keys: dict[str, tuple[Path, Path]]
) -> None:
    """A catalog's or an input's policy adds to the cluster's, never replaces it."""
    pushed = push(registry, "levels/app", "v1", "levels")
    cosign.sign(f"{registry.host}/levels/app@{pushed}", keys["release"][0])
    image = parse_reference(f"{registry.host}/levels/app:v1")
    opened = open_image(image, RegistryAccess(), tls=TlsOptions(), timeout=10, deadline=60)
    cluster = key_policy(keys["release"][1])
    stricter = VerificationPolicy.keyed(
        VerificationMode.ENFORCE,
        keys=[TrustedKey.from_pem(keys["other"][1].read_bytes(), name="other.pub")],
        name="the input's policy",
    )
    with pytest.raises(ImageNotVerifiedError) as refused:
        verify_all(image, opened, (cluster, stricter))
    assert "the input's policy" in str(refused.value)
    warned = dataclasses.replace(stricter, mode=VerificationMode.WARN)
    accepted, not_verified = verify_all(image, opened, (cluster, warned))
    assert isinstance(accepted, SignatureVerified)
    assert isinstance(not_verified, SignatureRefused)
    off = dataclasses.replace(stricter, mode=VerificationMode.OFF)
    assert len(verify_all(image, opened, (cluster, off))) == 1
