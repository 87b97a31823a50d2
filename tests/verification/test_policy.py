"""The verification policy: keys, identities, scopes, signedIdentity, and containers' policy.json
read strictly with one-line errors naming the field."""

from __future__ import annotations

import base64
import json

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa

from provisioners.registries.reference import parse_reference
from provisioners.verification import (
    IdentityMatch,
    ReferenceRule,
    TrustedKey,
    VerificationMode,
    VerificationPolicyError,
    read_policy_json,
)
from provisioners.verification.policy import (
    REJECT,
    PolicyScope,
    ReferenceRuleKind,
    RequirementKind,
    scope_candidates,
)
from tests.verification.fakes import Authority, pem, public_pem


def test_keys_of_each_accepted_kind_load_with_a_stable_fingerprint() -> None:
    for key in (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP384R1()),
        ed25519.Ed25519PrivateKey.generate(),
        rsa.generate_private_key(public_exponent=65537, key_size=2048),
    ):
        loaded = TrustedKey.from_pem(public_pem(key), name="k")
        again = TrustedKey.from_pem(b"\n" + public_pem(key) + b"\n", name="k")
        assert loaded.fingerprint == again.fingerprint
        assert loaded.fingerprint.startswith("sha256:")
        assert len(loaded.fingerprint) == 71


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"hello", "Secret ns/keys, key cosign.pub: not a PEM public key"),
        (
            public_pem(ec.generate_private_key(ec.SECP521R1())),
            r"ECDSA curve secp521r1 is not accepted \(P-256 or P-384\)",
        ),
        (
            public_pem(rsa.generate_private_key(public_exponent=65537, key_size=1024)),
            "RSA key of 1024 bits is too weak",
        ),
        (
            dsa.generate_private_key(2048)
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
            "DSAPublicKey keys are not accepted",
        ),
    ],
    ids=["not-pem", "p521", "rsa1024", "dsa"],
)
def test_a_key_that_is_not_accepted_says_why(data: bytes, message: str) -> None:
    with pytest.raises(VerificationPolicyError, match=message) as raised:
        TrustedKey.from_pem(data, name="Secret ns/keys, key cosign.pub")
    assert "\n" not in str(raised.value)


def test_identity_match_needs_one_of_exact_or_regex() -> None:
    with pytest.raises(VerificationPolicyError, match="exactly one of exact or regex"):
        IdentityMatch()
    with pytest.raises(VerificationPolicyError, match="does not compile"):
        IdentityMatch(pattern="(")
    assert IdentityMatch(pattern=r".*@example\.com").matches("a@example.com")
    assert not IdentityMatch(pattern=r".*@example\.com").matches("a@example.com.evil")


def test_mode_parse_names_the_field() -> None:
    assert VerificationMode.parse("warn") is VerificationMode.WARN
    with pytest.raises(VerificationPolicyError, match=r"spec\.verify\.mode: 'strict' is not"):
        VerificationMode.parse("strict", where="spec.verify.mode")


def test_scopes_are_looked_up_most_specific_first() -> None:
    assert scope_candidates(parse_reference("registry.example.com:5000/a/b/c:v1")) == [
        "registry.example.com:5000/a/b/c:v1",
        "registry.example.com:5000/a/b/c",
        "registry.example.com:5000/a/b",
        "registry.example.com:5000/a",
        "registry.example.com:5000",
        "*.example.com",
        "*.com",
        "",
    ]
    digest = "sha256:" + "a" * 64
    assert scope_candidates(parse_reference(f"quay.io/x@{digest}"))[0] == f"quay.io/x@{digest}"
    with pytest.raises(VerificationPolicyError, match="a wildcard scope names a host"):
        PolicyScope("*.example.com/x", (REJECT,))


@pytest.mark.parametrize(
    ("rule", "image", "claimed", "accepted"),
    [
        (ReferenceRule(ReferenceRuleKind.MATCH_REPOSITORY), "q.io/a/b:v1", "q.io/a/b", True),
        (ReferenceRule(ReferenceRuleKind.MATCH_REPOSITORY), "q.io/a/b:v1", "q.io/a/c", False),
        (
            ReferenceRule(ReferenceRuleKind.MATCH_REPO_DIGEST_OR_EXACT),
            "q.io/a/b:v1",
            "q.io/a/b",
            False,
        ),
        (
            ReferenceRule(ReferenceRuleKind.MATCH_REPO_DIGEST_OR_EXACT),
            "q.io/a/b:v1",
            "q.io/a/b:v1",
            True,
        ),
        (
            ReferenceRule(ReferenceRuleKind.MATCH_REPO_DIGEST_OR_EXACT),
            "q.io/a/b@sha256:" + "1" * 64,
            "q.io/a/b",
            True,
        ),
        (ReferenceRule(ReferenceRuleKind.MATCH_EXACT), "q.io/a/b:v1", "q.io/a/b:v2", False),
        (
            ReferenceRule(ReferenceRuleKind.EXACT_REPOSITORY, "up.io/p/b"),
            "mirror.io/b:v1",
            "up.io/p/b",
            True,
        ),
        (
            ReferenceRule(ReferenceRuleKind.EXACT_REFERENCE, "up.io/p/b:v1"),
            "m.io/b:v1",
            "up.io/p/b:v1",
            True,
        ),
        (
            ReferenceRule(
                ReferenceRuleKind.REMAP_IDENTITY,
                prefix="mirror.io/vendor",
                signed_prefix="vendor.io",
            ),
            "mirror.io/vendor/app@sha256:" + "2" * 64,
            "vendor.io/app",
            True,
        ),
        (
            ReferenceRule(ReferenceRuleKind.MATCH_REPOSITORY),
            "q.io/a/b:v1",
            "not a reference",
            False,
        ),
    ],
)
def test_signed_identity_rules(
    rule: ReferenceRule, image: str, claimed: str, accepted: bool
) -> None:
    assert rule.accepts(parse_reference(image), claimed) is accepted


# -- policy.json ---------------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_a_full_policy_json_maps_onto_the_policy() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    other = ed25519.Ed25519PrivateKey.generate()
    root = Authority.root()
    files = {"/etc/pki/cosign.pub": public_pem(other)}
    ca = _b64(pem(root.certificate).encode())
    document = json.dumps(
        {
            "default": [{"type": "reject"}],
            "transports": {
                "docker": {
                    "quay.io/operators": [
                        {
                            "type": "sigstoreSigned",
                            "keyData": _b64(public_pem(key)),
                            "signedIdentity": {"type": "matchRepository"},
                        }
                    ],
                    "quay.io/operators/special": [
                        {"type": "sigstoreSigned", "keyPaths": ["/etc/pki/cosign.pub"]}
                    ],
                    "*.example.com": [
                        {
                            "type": "sigstoreSigned",
                            "fulcio": {
                                "caData": ca,
                                "oidcIssuer": "https://oidc.example.com",
                                "subjectEmail": "ci@example.com",
                            },
                        }
                    ],
                    "registry.internal:5000": [
                        {
                            "type": "sigstoreSigned",
                            "pki": {"caRootsData": ca, "subjectHostname": "build.internal"},
                        }
                    ],
                    "docker.io": [{"type": "insecureAcceptAnything"}],
                },
                "atomic": {"": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "/x"}]},
            },
        }
    )
    policy = read_policy_json(
        document, name="/etc/containers/policy.json", read_file=files.__getitem__
    )
    assert policy.name == "policy.json /etc/containers/policy.json"
    assert policy.mode is VerificationMode.ENFORCE

    def lookup(text: str) -> tuple[str | None, list[str]]:
        scope, requirements = policy.requirements_for(parse_reference(text))
        return scope, [str(r) for r in requirements]

    scope, (requirement,) = policy.requirements_for(parse_reference("quay.io/operators/etcd:v1"))
    assert scope == "quay.io/operators"
    assert (
        requirement.keys[0].fingerprint == TrustedKey.from_pem(public_pem(key), name="").fingerprint
    )
    assert requirement.reference == ReferenceRule(ReferenceRuleKind.MATCH_REPOSITORY)
    scope, (special,) = policy.requirements_for(parse_reference("quay.io/operators/special/x:v1"))
    assert scope == "quay.io/operators/special"
    assert special.reference == ReferenceRule(ReferenceRuleKind.MATCH_REPO_DIGEST_OR_EXACT)
    assert "/etc/pki/cosign.pub" in special.keys[0].name
    scope, (fulcio,) = policy.requirements_for(parse_reference("reg.example.com/a:v1"))
    assert scope == "*.example.com"
    assert fulcio.identities[0].issuer == IdentityMatch(exact="https://oidc.example.com")
    assert lookup("registry.internal:5000/a:v1")[0] == "registry.internal:5000"
    assert lookup("docker.io/library/busybox:1")[1] == ["insecureAcceptAnything"]
    scope, requirements = policy.requirements_for(parse_reference("ghcr.io/x:v1"))
    assert scope is None
    assert requirements[0].kind is RequirementKind.REJECT


def _signed(**fields: object) -> str:
    """A policy.json whose default is one sigstoreSigned requirement with ``fields``."""
    return json.dumps({"default": [{"type": "sigstoreSigned", **fields}]})


def _docker(scopes: object) -> str:
    return json.dumps({"default": [{"type": "reject"}], "transports": {"docker": scopes}})


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{", "policy.json p.json: line 1: invalid JSON"),
        ("[]", "p.json: the document: must be an object, not a list"),
        ('{"transports": {}}', r"p.json: default: missing \(it is mandatory\)"),
        ('{"default": []}', "p.json: default: must be a non-empty list of requirements"),
        ('{"default": [{"type": "reject"}], "extra": 1}', "p.json: extra: unknown field"),
        ('{"default": [{"type": "reject", "x": 1}]}', r"p.json: default\[0\].x: unknown field"),
        (
            '{"default": [{"type": "maybe"}]}',
            r"default\[0\].type: unknown requirement type 'maybe'",
        ),
        (
            '{"default": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "/k"}]}',
            r"default\[0\].type: signedBy \(GPG simple signing\) is not supported",
        ),
        (
            _signed(keyData="QQ==", rekorPublicKeyPath="/r"),
            r"default\[0\].rekorPublicKeyPath: Rekor inclusion is not verified",
        ),
        (_signed(), r"default\[0\]: needs exactly one of keyPath, .* \(given: none\)"),
        (_signed(keyData="QQ==", keyPath="/k"), r"\(given: keyPath, keyData\)"),
        (_signed(keyData="%%"), r"default\[0\].keyData: is not base64"),
        (_signed(keyData="QQ=="), r"default\[0\].keyData: not a PEM public key"),
        (
            _signed(keyPath="/nonexistent/cosign.pub"),
            r"default\[0\].keyPath: cannot read /nonexistent/cosign.pub",
        ),
        (
            _signed(keyData="QQ==", signedIdentity={"type": "x"}),
            r"default\[0\].signedIdentity.type: unknown signedIdentity type 'x'",
        ),
        (
            _signed(keyData="QQ==", signedIdentity={"type": "exactRepository"}),
            r"signedIdentity.dockerRepository: missing",
        ),
        (
            _signed(fulcio={"caData": "QQ=="}),
            r"default\[0\].fulcio: not a PEM bundle of certificates",
        ),
        (
            _docker({"*.a.com/x": [{"type": "reject"}]}),
            r"transports.docker\['\*.a.com/x'\]: a wildcard scope is \*.domain only",
        ),
        (_docker({"q.io": []}), r"transports.docker\['q.io'\]: must be a non-empty list"),
        (_docker(1), "transports.docker: must be an object"),
    ],
)
def test_a_malformed_policy_json_is_refused_in_one_line_naming_the_field(
    document: str, message: str
) -> None:
    with pytest.raises(VerificationPolicyError, match=message) as raised:
        read_policy_json(document, name="p.json")
    assert "\n" not in str(raised.value)


def test_fulcio_needs_issuer_and_email_and_pki_one_subject() -> None:
    ca = _b64(pem(Authority.root().certificate).encode())
    with pytest.raises(VerificationPolicyError, match=r"fulcio.subjectEmail: missing"):
        read_policy_json(_signed(fulcio={"caData": ca, "oidcIssuer": "i"}), name="p.json")
    with pytest.raises(VerificationPolicyError, match="needs one of subjectEmail and subject"):
        read_policy_json(_signed(pki={"caRootsData": ca}), name="p.json")
