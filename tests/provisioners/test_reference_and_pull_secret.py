"""Image reference parsing and pull-secret lookup (pure logic)."""

from __future__ import annotations

import base64
import json

import pytest

from provisioners.errors import InvalidSourceError
from provisioners.registries.auth import AuthFile, BasicCredentials
from provisioners.registries.reference import parse_reference

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("text", "registry", "repository", "tag", "digest"),
    [
        ("busybox", "docker.io", "library/busybox", "latest", None),
        ("org/app:v1", "docker.io", "org/app", "v1", None),
        ("quay.io/org/app:v1.2.3", "quay.io", "org/app", "v1.2.3", None),
        ("localhost:5000/app", "localhost:5000", "app", "latest", None),
        ("127.0.0.1:5000/a/b/c@" + DIGEST, "127.0.0.1:5000", "a/b/c", None, DIGEST),
        ("host.io/app:v1@" + DIGEST, "host.io", "app", "v1", DIGEST),
        ("[::1]:5000/app:x", "[::1]:5000", "app", "x", None),
    ],
)
def test_references(
    text: str, registry: str, repository: str, tag: str | None, digest: str | None
) -> None:
    reference = parse_reference(text)
    assert (reference.registry, reference.repository, reference.tag, reference.digest) == (
        registry,
        repository,
        tag,
        digest,
    )
    assert reference.manifest_ref == (digest or tag)


def test_loopback_and_docker_hub_api_host() -> None:
    assert parse_reference("127.0.0.1:5000/a").is_loopback
    assert parse_reference("localhost/a").is_loopback
    assert parse_reference("[::1]:5000/a").is_loopback
    assert not parse_reference("quay.io/a").is_loopback
    assert parse_reference("busybox").api_host == "registry-1.docker.io"


@pytest.mark.parametrize(
    "text", ["", " padded", "Upper/case", "a//b", "app@sha256:short", "app:-bad", "h.io/"]
)
def test_invalid_references(text: str) -> None:
    with pytest.raises(InvalidSourceError, match="invalid image reference"):
        parse_reference(text)


def credentials_for(secret: bytes, registry: str) -> BasicCredentials | None:
    login = AuthFile.parse(secret, "the pull secret").lookup(registry, "team/app")
    return login.credentials if login is not None else None


def _auth(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def test_pull_secret_key_forms() -> None:
    secret = json.dumps(
        {
            "auths": {
                "https://index.docker.io/v1/": {"auth": _auth("hub", "p1")},
                "quay.io": {"username": "q", "password": "p2"},
                "https://127.0.0.1:5000": {"auth": _auth("local", "p:3")},
            }
        }
    ).encode()
    assert credentials_for(secret, "docker.io") == BasicCredentials("hub", "p1")
    assert credentials_for(secret, "quay.io") == BasicCredentials("q", "p2")
    assert credentials_for(secret, "127.0.0.1:5000") == BasicCredentials("local", "p:3")
    assert credentials_for(secret, "ghcr.io") is None
    assert "p2" not in repr(credentials_for(secret, "quay.io"))


@pytest.mark.parametrize(
    ("secret", "match"),
    [
        (b"not json", "not valid JSON"),
        (b"[]", "JSON object"),
        (json.dumps({"auths": {"h.io": {"auth": "!!!"}}}).encode(), "not base64"),
        (
            json.dumps(
                {"auths": {"h.io": {"auth": base64.b64encode(b"nocolon").decode()}}}
            ).encode(),
            "no ':'",
        ),
    ],
)
def test_bad_pull_secrets(secret: bytes, match: str) -> None:
    with pytest.raises(InvalidSourceError, match=match):
        credentials_for(secret, "h.io")
