"""verify_image over an in-memory store: each format, each kind of signer, each refusal, and
what a hostile registry serves (signatures made here with cryptography; tests/verification/
test_cosign_interop.py does the same with the real cosign and a real registry)."""

from __future__ import annotations

import base64
import datetime as dt
import json

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from provisioners.errors import SourceError, SourceUnavailableError
from provisioners.registries.reference import parse_reference
from provisioners.verification import (
    IdentityMatch,
    ImageNotVerifiedError,
    PolicyScope,
    RegistrySignatureStore,
    SignatureRefused,
    SignatureRequirement,
    SignatureVerified,
    TrustedIdentity,
    TrustedKey,
    VerificationLimits,
    VerificationMode,
    VerificationPolicy,
    enforce,
    verify_image,
)
from provisioners.verification.policy import ACCEPT_ANYTHING, REJECT
from tests.verification.fakes import (
    NOW,
    SIMPLE_SIGNING,
    Authority,
    FakeStore,
    PrivateKey,
    bundle,
    bundle_referrer,
    image_manifest,
    index,
    public_pem,
    sig_layer,
    sig_tag,
)

IMAGE = parse_reference("registry.example.com/team/bundle:v1")


@pytest.fixture(scope="module")
def key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture(scope="module")
def other_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def trusted(key: PrivateKey, name: str = "cosign.pub") -> TrustedKey:
    return TrustedKey.from_pem(public_pem(key), name=name)


def policy_of(
    *keys: PrivateKey, mode: VerificationMode = VerificationMode.ENFORCE
) -> VerificationPolicy:
    return VerificationPolicy.keyed(
        mode, keys=[trusted(k, f"key{i}") for i, k in enumerate(keys)], name="policy test"
    )


def refused(result: SignatureVerified | SignatureRefused) -> SignatureRefused:
    assert isinstance(result, SignatureRefused), result
    return result


def verified(result: SignatureVerified | SignatureRefused) -> SignatureVerified:
    assert isinstance(result, SignatureVerified), getattr(result, "message", result)
    return result


@pytest.mark.parametrize(
    "make",
    [
        lambda: ec.generate_private_key(ec.SECP256R1()),
        lambda: ec.generate_private_key(ec.SECP384R1()),
        ed25519.Ed25519PrivateKey.generate,
        lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
    ],
    ids=["p256", "p384", "ed25519", "rsa2048"],
)
def test_a_simple_signing_signature_verifies_with_each_kind_of_key(make: object) -> None:
    signer = make()  # type: ignore[operator]
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    sig_tag(store, pulled, [sig_layer(store, signer, pulled)])
    result = verified(verify_image(IMAGE, pulled, store, policy_of(signer)))
    assert result.digest == pulled
    assert result.signers[0].key == trusted(signer).fingerprint
    assert result.signers[0].where == f"tag {pulled.replace(':', '-')}.sig, layer 0"
    assert "verified by policy test" in result.message


def test_a_bundle_found_by_the_referrers_api_verifies(key: ec.EllipticCurvePrivateKey) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    store.referrer_pages = {
        None: (index([bundle_referrer(store, pulled, bundle(key, pulled))]), None)
    }
    result = verified(verify_image(IMAGE, pulled, store, policy_of(key)))
    assert result.signers[0].where.startswith("referrer sha256:")


def test_without_the_referrers_api_the_referrers_tag_is_read(
    key: ec.EllipticCurvePrivateKey,
) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    descriptor = bundle_referrer(store, pulled, bundle(key, pulled))
    store.put_manifest(index([descriptor]), pulled.replace(":", "-"))
    verified(verify_image(IMAGE, pulled, store, policy_of(key)))
    assert f"manifest {pulled.replace(':', '-')}" in store.requests


def test_an_attestation_is_not_a_signature(key: ec.EllipticCurvePrivateKey) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    data = bundle(key, pulled, predicate="https://slsa.dev/provenance/v1")
    store.referrer_pages = {None: (index([bundle_referrer(store, pulled, data)]), None)}
    assert (
        "no signature found" in refused(verify_image(IMAGE, pulled, store, policy_of(key))).message
    )


def test_an_unsigned_image_is_refused_naming_image_policy_and_where_it_looked(
    key: ec.EllipticCurvePrivateKey,
) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    result = refused(verify_image(IMAGE, pulled, store, policy_of(key)))
    hexed = pulled.replace(":", "-")
    assert result.message == (
        f"registry.example.com/team/bundle:v1@{pulled} is not verified by policy test "
        f"(every image): no signature found (looked at tag {hexed}.sig and the referrers of "
        f"{pulled} and tag {hexed} (the referrers tag schema))"
    )
    assert not result.retryable
    with pytest.raises(ImageNotVerifiedError, match="no signature found"):
        enforce(result, policy_of(key))
    enforce(result, policy_of(key, mode=VerificationMode.WARN))  # warn: the caller reports


def test_a_signature_by_another_key_is_refused(
    key: ec.EllipticCurvePrivateKey, other_key: ec.EllipticCurvePrivateKey
) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    sig_tag(store, pulled, [sig_layer(store, other_key, pulled)])
    result = refused(verify_image(IMAGE, pulled, store, policy_of(key)))
    assert f"the signature does not verify with key {trusted(key).fingerprint} (key0)" in (
        result.message
    )


def test_a_signature_of_another_digest_is_refused(key: ec.EllipticCurvePrivateKey) -> None:
    """The signature of image A copied to B's .sig tag (or a tag moved from A to B)."""
    store = FakeStore()
    signed = image_manifest(store, "old", b"the signed image")
    pulled = image_manifest(store, "v1", b"another image")
    sig_tag(store, pulled, [sig_layer(store, key, signed)])
    result = refused(verify_image(IMAGE, pulled, store, policy_of(key)))
    assert f"signs {signed}, not the pulled {pulled}" in result.message


def test_a_bundle_of_another_digest_is_refused(key: ec.EllipticCurvePrivateKey) -> None:
    store = FakeStore()
    signed = image_manifest(store, "old", b"the signed image")
    pulled = image_manifest(store, "v1", b"another image")
    store.referrer_pages = {
        None: (index([bundle_referrer(store, pulled, bundle(key, signed))]), None)
    }
    assert (
        f"signs {signed}, not the pulled {pulled}"
        in refused(verify_image(IMAGE, pulled, store, policy_of(key))).message
    )


def test_a_tampered_payload_is_refused(key: ec.EllipticCurvePrivateKey) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    layer = sig_layer(store, key, pulled)
    other = sig_layer(store, key, pulled, reference="evil.example.com/x")
    layer["annotations"] = other["annotations"]  # the signature of another payload
    sig_tag(store, pulled, [layer])
    assert "does not verify" in refused(verify_image(IMAGE, pulled, store, policy_of(key))).message


def test_rotation_either_key_verifies_and_a_removed_key_no_longer_does(
    key: ec.EllipticCurvePrivateKey, other_key: ec.EllipticCurvePrivateKey
) -> None:
    store = FakeStore()
    old_image = image_manifest(store, "old", b"signed with the old key")
    new_image = image_manifest(store, "new", b"signed with the new key")
    sig_tag(store, old_image, [sig_layer(store, key, old_image)])
    sig_tag(store, new_image, [sig_layer(store, other_key, new_image)])
    both = policy_of(key, other_key)
    verified(verify_image(IMAGE, old_image, store, both))
    verified(verify_image(IMAGE, new_image, store, both))
    only_new = policy_of(other_key)
    refused(verify_image(IMAGE, old_image, store, only_new))
    verified(verify_image(IMAGE, new_image, store, only_new))


def test_one_good_signature_among_bad_ones_is_enough(
    key: ec.EllipticCurvePrivateKey, other_key: ec.EllipticCurvePrivateKey
) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    sig_tag(store, pulled, [sig_layer(store, other_key, pulled), sig_layer(store, key, pulled)])
    assert (
        verified(verify_image(IMAGE, pulled, store, policy_of(key)))
        .signers[0]
        .where.endswith("layer 1")
    )


# -- certificates --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def authority() -> Authority:
    return Authority.root()


def identity_policy(
    authority: Authority,
    *,
    subject: IdentityMatch | None = None,
    issuer: IdentityMatch | None = None,
    intermediates: tuple[object, ...] = (),
) -> VerificationPolicy:
    identity = TrustedIdentity(
        (authority.certificate,),
        subject or IdentityMatch(exact="signer@example.com"),
        issuer if issuer is not None else IdentityMatch(exact="https://oidc.example.com"),
        intermediates,  # type: ignore[arg-type]
        name="company CA",
    )
    return VerificationPolicy.keyed(
        VerificationMode.ENFORCE, identities=[identity], name="policy ca"
    )


def cert_signed(store: FakeStore, authority: Authority, **issue: object) -> tuple[str, PrivateKey]:
    signer = ec.generate_private_key(ec.SECP256R1())
    chain = issue.pop("chain", None)
    certificate = authority.issue(signer, **issue)  # type: ignore[arg-type]
    pulled = image_manifest(store, "v1")
    sig_tag(store, pulled, [sig_layer(store, signer, pulled, certificate=certificate, chain=chain)])  # type: ignore[arg-type]
    return pulled, signer


def test_a_certificate_signature_verifies_with_subject_and_issuer(authority: Authority) -> None:
    store = FakeStore()
    pulled, _ = cert_signed(store, authority)
    result = verified(verify_image(IMAGE, pulled, store, identity_policy(authority)))
    assert (result.signers[0].subject, result.signers[0].issuer) == (
        "signer@example.com",
        "https://oidc.example.com",
    )
    assert "certificate of signer@example.com issued by https://oidc.example.com" in result.message


def test_a_subject_regex_and_the_old_issuer_extension_match(authority: Authority) -> None:
    store = FakeStore()
    pulled, _ = cert_signed(store, authority, issuer_v1=True)
    policy = identity_policy(
        authority,
        subject=IdentityMatch(pattern=r".*@example\.com"),
        issuer=IdentityMatch(pattern=r"https://oidc\..*"),
    )
    verified(verify_image(IMAGE, pulled, store, policy))


def test_a_certificate_through_an_intermediate_the_signature_carries(authority: Authority) -> None:
    store = FakeStore()
    intermediate = authority.intermediate()
    pulled, _ = cert_signed(
        store, intermediate, chain=[intermediate.certificate, authority.certificate]
    )
    verified(verify_image(IMAGE, pulled, store, identity_policy(authority)))


@pytest.mark.parametrize(
    ("issue", "policy_change", "reason"),
    [
        (
            {"email": "mallory@example.com"},
            {},
            "certificate subject 'mallory@example.com' does not match",
        ),
        (
            {"issuer": "https://evil.example.com"},
            {},
            "certificate issuer 'https://evil.example.com' does not match",
        ),
        ({"issuer": None}, {}, "certificate issuer no OIDC issuer does not match"),
        (
            {"not_before": NOW - dt.timedelta(days=10), "not_after": NOW - dt.timedelta(days=1)},
            {},
            "does not chain to a trusted root",
        ),
        ({"code_signing": False}, {}, "does not chain to a trusted root"),
        ({}, {"other_root": True}, "does not chain to a trusted root"),
    ],
    ids=["wrong-subject", "wrong-issuer", "no-issuer", "expired", "no-code-signing", "other-ca"],
)
def test_a_certificate_the_identity_does_not_accept_is_refused(
    authority: Authority, issue: dict[str, object], policy_change: dict[str, bool], reason: str
) -> None:
    store = FakeStore()
    pulled, _ = cert_signed(store, authority, **issue)
    anchor = Authority.root("another root") if policy_change.get("other_root") else authority
    result = refused(verify_image(IMAGE, pulled, store, identity_policy(anchor)))
    assert reason in result.message, result.message


def test_a_certificate_whose_key_did_not_make_the_signature_is_refused(
    authority: Authority, key: ec.EllipticCurvePrivateKey
) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    certificate = authority.issue(ec.generate_private_key(ec.SECP256R1()))
    sig_tag(store, pulled, [sig_layer(store, key, pulled, certificate=certificate)])
    assert (
        "does not verify with the key of signer@example.com's certificate"
        in refused(verify_image(IMAGE, pulled, store, identity_policy(authority))).message
    )


def test_a_bundle_with_a_certificate_verifies(authority: Authority) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    signer = ec.generate_private_key(ec.SECP256R1())
    data = bundle(signer, pulled, certificate=authority.issue(signer))
    store.referrer_pages = {None: (index([bundle_referrer(store, pulled, data)]), None)}
    verified(verify_image(IMAGE, pulled, store, identity_policy(authority)))


# -- scopes ----------------------------------------------------------------------------------------


def test_the_most_specific_scope_applies(key: ec.EllipticCurvePrivateKey) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    sig_tag(store, pulled, [sig_layer(store, key, pulled)])
    signed = SignatureRequirement.signed(keys=[trusted(key)])
    policy = VerificationPolicy(
        VerificationMode.ENFORCE,
        (
            PolicyScope("registry.example.com", (REJECT,)),
            PolicyScope("registry.example.com/team", (signed,)),
            PolicyScope("registry.example.com/team/bundle:v2", (REJECT,)),
        ),
        name="scoped",
    )
    assert verified(verify_image(IMAGE, pulled, store, policy)).scope == (
        "scope 'registry.example.com/team'"
    )
    other = parse_reference("registry.example.com/teamwork/bundle:v1")
    assert "rejects every image here" in refused(verify_image(other, pulled, store, policy)).message
    elsewhere = parse_reference("quay.io/x/y:v1")
    assert (
        "no scope of the policy covers the image"
        in refused(verify_image(elsewhere, pulled, store, policy)).message
    )


def test_accept_anything_fetches_nothing() -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    store.requests.clear()
    policy = VerificationPolicy(VerificationMode.ENFORCE, default=(ACCEPT_ANYTHING,))
    result = verified(verify_image(IMAGE, pulled, store, policy))
    assert result.signers == ()
    assert store.requests == []
    assert "accepted unsigned" in result.message


# -- hostile registries --------------------------------------------------------------------------


def test_a_huge_signature_manifest_is_refused(key: ec.EllipticCurvePrivateKey) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    layers = [sig_layer(store, key, pulled)]
    layers[0]["annotations"]["padding"] = "x" * (300 << 10)
    sig_tag(store, pulled, layers)
    assert (
        "is larger than 262144 bytes"
        in refused(verify_image(IMAGE, pulled, store, policy_of(key))).message
    )


def test_too_many_layers_and_an_oversized_payload_are_refused(
    key: ec.EllipticCurvePrivateKey,
) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    layer = sig_layer(store, key, pulled)
    sig_tag(store, pulled, [layer] * 33)
    assert (
        "has 33 layers, more than 32"
        in refused(verify_image(IMAGE, pulled, store, policy_of(key))).message
    )
    sig_tag(store, pulled, [{**layer, "size": 1 << 30}])
    assert (
        f"is {1 << 30} bytes, more than 131072"
        in refused(verify_image(IMAGE, pulled, store, policy_of(key))).message
    )
    assert not any(r.startswith("blob") and "1073741824" in r for r in store.requests)


def test_a_deeply_nested_or_truncated_payload_is_refused(key: ec.EllipticCurvePrivateKey) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    deep = b"[" * 5000 + b"]" * 5000
    truncated = json.dumps({"critical": {"image": {"docker-manifest-digest": pulled}}}).encode()[
        :-7
    ]
    sig_tag(
        store,
        pulled,
        [
            sig_layer(store, key, pulled, payload=deep),
            sig_layer(store, key, pulled, payload=truncated),
        ],
    )
    message = refused(verify_image(IMAGE, pulled, store, policy_of(key))).message
    assert "layer 0: the simple-signing payload is not valid JSON" in message
    assert "layer 1: the simple-signing payload is not valid JSON" in message


def test_bad_base64_and_a_foreign_layer_are_refused(key: ec.EllipticCurvePrivateKey) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    broken = sig_layer(store, key, pulled)
    broken["annotations"]["dev.cosignproject.cosign/signature"] = "not base64!"
    foreign = {**sig_layer(store, key, pulled), "urls": ["https://elsewhere.example.com/blob"]}
    sig_tag(store, pulled, [broken, foreign])
    message = refused(verify_image(IMAGE, pulled, store, policy_of(key))).message
    assert "annotation dev.cosignproject.cosign/signature is not base64" in message
    assert "layer 1 points outside the repository (urls)" in message


def test_a_referrer_of_another_image_is_not_used(key: ec.EllipticCurvePrivateKey) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    other = image_manifest(store, "other", b"another")
    descriptor = bundle_referrer(store, other, bundle(key, pulled))
    store.referrer_pages = {None: (index([descriptor]), None)}
    message = refused(verify_image(IMAGE, pulled, store, policy_of(key))).message
    assert f"is not about this image (its subject is {other})" in message


def test_referrer_pages_that_loop_or_go_on_are_cut(key: ec.EllipticCurvePrivateKey) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    store.referrer_pages = {
        None: (index([]), "/a"),
        "/a": (index([]), "/b"),
        "/b": (index([]), "/a"),
    }
    assert (
        "link back to a page already read (a loop)"
        in refused(verify_image(IMAGE, pulled, store, policy_of(key))).message
    )
    store.referrer_pages = {
        None: (index([]), "/0"),
        **{f"/{n}": (index([]), f"/{n + 1}") for n in range(10)},
    }
    assert "run past 4 pages" in refused(verify_image(IMAGE, pulled, store, policy_of(key))).message
    assert sum(r.startswith("referrers") for r in store.requests) == 4 + 3


def test_too_many_referrers_are_cut(key: ec.EllipticCurvePrivateKey) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    descriptors = [bundle_referrer(store, pulled, bundle(key, pulled)) for _ in range(3)]
    store.referrer_pages = {None: (index(descriptors * 20), None)}
    limits = VerificationLimits(max_referrers=2)
    result = verify_image(IMAGE, pulled, store, policy_of(key), limits=limits)
    assert verified(result)  # the first ones are read; the rest are ignored


def test_a_spent_deadline_refuses_retryably(key: ec.EllipticCurvePrivateKey) -> None:
    store = FakeStore(seconds_left=0)
    pulled = image_manifest(store, "v1")
    sig_tag(store, pulled, [sig_layer(store, key, pulled)])
    result = refused(verify_image(IMAGE, pulled, store, policy_of(key)))
    assert "the pull's deadline was spent" in result.message
    assert result.retryable
    with pytest.raises(ImageNotVerifiedError) as raised:
        enforce(result, policy_of(key))
    assert raised.value.retryable


def test_a_registry_failure_refuses_retryably(key: ec.EllipticCurvePrivateKey) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    store.fail_with[pulled.replace(":", "-") + ".sig"] = SourceUnavailableError("HTTP 503")
    result = refused(verify_image(IMAGE, pulled, store, policy_of(key)))
    assert "HTTP 503" in result.message
    assert result.retryable


def test_a_bundle_with_garbage_is_refused_not_crashed(key: ec.EllipticCurvePrivateKey) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    good = json.loads(bundle(key, pulled))
    cases = [
        b"\x00\xff not json",
        json.dumps({**good, "mediaType": "text/plain"}).encode(),
        json.dumps({**good, "dsseEnvelope": {**good["dsseEnvelope"], "signatures": []}}).encode(),
        json.dumps(
            {**good, "verificationMaterial": {"certificate": {"rawBytes": "AAAA"}}}
        ).encode(),
        json.dumps(
            {
                **good,
                "dsseEnvelope": {
                    **good["dsseEnvelope"],
                    "payload": base64.b64encode(b"[1]").decode(),
                },
            }
        ).encode(),
    ]
    store.referrer_pages = {None: (index([bundle_referrer(store, pulled, c) for c in cases]), None)}
    reasons = " | ".join(refused(verify_image(IMAGE, pulled, store, policy_of(key))).reasons)
    for expected in (
        "the Sigstore bundle is not valid JSON",
        "the bundle's mediaType 'text/plain' is not a Sigstore bundle",
        "the DSSE envelope has no signatures",
        "the bundle's certificate is not a DER certificate",
        "the in-toto statement is not a JSON object",
    ):
        assert expected in reasons


def test_simple_signing_layers_of_other_media_types_are_skipped(
    key: ec.EllipticCurvePrivateKey,
) -> None:
    store = FakeStore()
    pulled = image_manifest(store, "v1")
    layer = sig_layer(store, key, pulled)
    sig_tag(store, pulled, [{**layer, "mediaType": "application/octet-stream"}])
    assert SIMPLE_SIGNING != "application/octet-stream"
    assert (
        "no signature found" in refused(verify_image(IMAGE, pulled, store, policy_of(key))).message
    )


@pytest.mark.parametrize(
    ("link", "problem"),
    [
        ("https://evil.example.com/v2/team/bundle/referrers/{d}?n=1", "on another host"),
        ("/v2/other/repo/referrers/{d}?n=1", "points at another repository"),
        ("/v2/team/bundle/referrers/sha256:" + "0" * 64, "points at another repository"),
    ],
)
def test_a_next_page_elsewhere_is_refused_before_any_request(link: str, problem: str) -> None:
    """The registry adapter never follows a Link out of this image's referrers (no client is
    needed: the refusal comes before the request)."""
    pulled = "sha256:" + "1" * 64
    store = RegistrySignatureStore(None, parse_reference("registry.example.com/team/bundle:v1"))  # type: ignore[arg-type]
    with pytest.raises(SourceError, match=problem):
        store.referrers(pulled, page=link.format(d=pulled), limit=1 << 10, max_depth=8)
