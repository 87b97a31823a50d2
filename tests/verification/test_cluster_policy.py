"""The cluster's verification policy as the ``pivoter-verification`` ConfigMap states it
(pivoter.registries.verification): the short form with keys and certificate roots from Secrets,
containers' policy.json inline, and one-line errors naming the field for everything that cannot
be used (a cluster that asked for verification never falls back to accepting anything)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from pivoter.registries.verification import policy_from_config_map
from provisioners.registries.reference import parse_reference
from provisioners.verification import (
    TrustedKey,
    VerificationMode,
    VerificationPolicyError,
)
from provisioners.verification.policy import RequirementKind
from tests.verification.fakes import Authority, pem, public_pem

KEY = public_pem(ec.generate_private_key(ec.SECP256R1()))
OTHER = public_pem(ec.generate_private_key(ec.SECP256R1()))
ROOT = Authority.root()
SECRETS: dict[str, dict[str, bytes]] = {
    "keys": {"cosign.pub": KEY, "next.pub": OTHER, "README": b"not a key"},
    "empty": {"README": b"nothing here"},
    "ca": {"root.crt": pem(ROOT.certificate).encode()},
}


def read_secret(name: str, where: str) -> Mapping[str, bytes]:
    if name not in SECRETS:
        raise VerificationPolicyError(f"{where}: Secret ns/{name} not found")
    return SECRETS[name]


def config_map(**data: str) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": "pivoter-verification"}, "data": data}


def test_the_short_form_trusts_every_public_key_of_the_secret() -> None:
    policy = policy_from_config_map(config_map(mode="enforce", keys="keys"), read_secret)
    assert policy is not None
    assert policy.mode is VerificationMode.ENFORCE
    assert policy.name == "ConfigMap ns/pivoter-verification"
    scope, (requirement,) = policy.requirements_for(parse_reference("quay.io/org/app:v1"))
    assert scope == ""  # every image
    assert requirement.kind is RequirementKind.SIGNED
    fingerprints = {k.fingerprint for k in requirement.keys}
    assert fingerprints == {
        TrustedKey.from_pem(KEY, name="").fingerprint,
        TrustedKey.from_pem(OTHER, name="").fingerprint,
    }
    names = [k.name for k in requirement.keys]
    assert names == ["Secret keys, cosign.pub", "Secret keys, next.pub"]


def test_roots_and_subject_make_a_certificate_identity() -> None:
    policy = policy_from_config_map(
        config_map(mode="warn", roots="ca", subject=r".*@example\.com", issuer="https://oidc.*"),
        read_secret,
    )
    assert policy is not None
    assert policy.mode is VerificationMode.WARN
    _, (requirement,) = policy.requirements_for(parse_reference("quay.io/org/app:v1"))
    (identity,) = requirement.identities
    assert identity.roots == (ROOT.certificate,)
    assert identity.subject.matches("release@example.com")
    assert identity.issuer is not None
    assert identity.issuer.matches("https://oidc.example.com")


def test_mode_off_verifies_nothing() -> None:
    assert policy_from_config_map(config_map(mode="off", keys="absent"), read_secret) is None


def test_policy_json_is_read_inline() -> None:
    document = {
        "default": [{"type": "reject"}],
        "transports": {"docker": {"quay.io/trusted": [{"type": "insecureAcceptAnything"}]}},
    }
    policy = policy_from_config_map(
        config_map(mode="enforce", **{"policy.json": json.dumps(document)}), read_secret
    )
    assert policy is not None
    scope, (requirement,) = policy.requirements_for(parse_reference("quay.io/trusted/app:v1"))
    assert scope == "quay.io/trusted"
    assert requirement.kind is RequirementKind.ACCEPT_ANYTHING
    assert policy.requirements_for(parse_reference("docker.io/x:1"))[1][0].kind is (
        RequirementKind.REJECT
    )


def test_a_policy_json_file_is_read_at_every_pull(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"default": [{"type": "insecureAcceptAnything"}]}))
    data = config_map(mode="warn", policyPath=str(path))
    policy = policy_from_config_map(data, read_secret)
    assert policy is not None
    assert policy.requirements_for(parse_reference("quay.io/a:1"))[1][0].kind is (
        RequirementKind.ACCEPT_ANYTHING
    )
    path.write_text(json.dumps({"default": [{"type": "reject"}]}))  # changed on the node
    policy = policy_from_config_map(data, read_secret)
    assert policy is not None
    assert policy.requirements_for(parse_reference("quay.io/a:1"))[1][0].kind is (
        RequirementKind.REJECT
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"keys": "keys"}, "mode: missing"),
        ({"mode": "strict", "keys": "keys"}, "'strict' is not a verification mode"),
        ({"mode": "enforce", "key": "keys"}, "unknown key 'key'"),
        ({"mode": "enforce"}, "names no key and no certificate identity"),
        ({"mode": "enforce", "keys": "absent"}, "keys: Secret ns/absent not found"),
        ({"mode": "enforce", "keys": "empty"}, "keys: the Secret has no entry ending in .pub"),
        ({"mode": "enforce", "roots": "ca"}, "a certificate identity needs roots and subject"),
        ({"mode": "enforce", "roots": "ca", "subject": "("}, "does not compile"),
        (
            {"mode": "enforce", "keys": "keys", "policy.json": "{}"},
            "policy.json and keys are exclusive",
        ),
        ({"mode": "warn", "policy.json": "{"}, "policy.json"),
        ({"mode": "enforce", "policyPath": "etc/policy.json"}, "is not an absolute path"),
        ({"mode": "enforce", "policyPath": "/nonexistent/policy.json"}, "cannot read"),
        (
            {"mode": "enforce", "policyPath": "/x", "policy.json": "{}"},
            "policy.json and policyPath are exclusive",
        ),
    ],
)
def test_what_cannot_be_used_is_refused_naming_the_field(
    data: dict[str, str], message: str
) -> None:
    with pytest.raises(VerificationPolicyError) as refused:
        policy_from_config_map(config_map(**data), read_secret)
    text = str(refused.value)
    assert text.startswith("ConfigMap ns/pivoter-verification") or "policy.json" in text, text
    assert message in text
    assert "\n" not in text
