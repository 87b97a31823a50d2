"""A credential (bearer token, password) never goes over plain http to another machine without
an explicit opt-in, nor to another origin a redirect leads to.

No traffic may leave loopback here: an autouse guard makes any connection to another address fail
the test, so a broken check shows as a failure, not as a packet to 10.0.0.1.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pivoter.catalogs.errors import InvalidCatalog
from pivoter.catalogs.sources import SourceSettings, build_source
from pivoter.controllers.sourcespec import source_spec
from provisioners.errors import AuthenticationError
from provisioners.httpclient import HttpClient
from provisioners.registries import AuthFile, Keyring, RegistryAccess
from provisioners.sources import FetchOptions, GitAuth, GitRef, GitSpec, HttpSpec, ImageSpec, fetch
from provisioners.sources.git import GitSource
from resolver.catalog.sources import CatalogdSource, CatalogSourceError
from resolver.net import InsecureCredentials, check_credential_transport, is_loopback
from resolver.net.credentials import same_origin
from tests.net.hostile import Step, hostile_server

FAR = "10.0.0.1"
OPTIONS = FetchOptions(timeout_seconds=2, deadline_seconds=5)


def with_pull_secret(config: bytes) -> RegistryAccess:
    """A pull with one pull secret."""
    return RegistryAccess(keyring=Keyring((AuthFile.parse(config, "the pull secret"),)))


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection to a non-loopback address fails the test instead of leaving the machine."""
    real_connect, real_lookup = socket.create_connection, socket.getaddrinfo

    def connect(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
        if not is_loopback(address[0]):
            raise AssertionError(f"the test tried to connect to {address[0]}")
        return real_connect(address, *args, **kwargs)

    def lookup(host: str, *args: Any, **kwargs: Any) -> Any:
        if not is_loopback(host):
            raise AssertionError(f"the test tried to reach {host}")
        return real_lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", connect)
    monkeypatch.setattr(socket, "getaddrinfo", lookup)


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LocalHost.", "a.localhost"]
)
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)
    netloc = f"[{host}]" if host.count(":") > 1 and not host.startswith("[") else host
    check_credential_transport(f"http://{netloc}/x", allowed=False, flag="--f", what="a token")


@pytest.mark.parametrize(
    "host",
    [FAR, "example.com", "0.0.0.0", "127.0.0.1.nip.io", "2130706433", "[::2]", "localhost.com"],
)
def test_other_hosts_need_the_opt_in(host: str) -> None:
    assert not is_loopback(host.strip("[]"))
    with pytest.raises(InsecureCredentials) as err:
        check_credential_transport(f"http://{host}/x", allowed=False, flag="--f", what="a token")
    assert "--f" in str(err.value)
    assert "plain http" in str(err.value)
    check_credential_transport(f"http://{host}/x", allowed=True, flag="--f", what="a token")
    check_credential_transport(f"https://{host}/x", allowed=False, flag="--f", what="a token")


def test_ipv4_mapped_loopback_is_loopback() -> None:
    assert is_loopback("::ffff:127.0.0.1")
    assert not is_loopback("::ffff:10.0.0.1")


def test_origins() -> None:
    assert same_origin("https://a.example/x", "https://a.example:443/y")
    assert not same_origin("https://a.example/x", "http://a.example/x")
    assert not same_origin("http://127.0.0.1:1/x", "http://localhost:1/x")
    assert not same_origin("http://a:1/x", "http://a:2/x")


# -- the clients ----------------------------------------------------------------------------


def test_catalogd_refuses_a_token_for_plain_http_elsewhere() -> None:
    with pytest.raises(CatalogSourceError) as err:
        CatalogdSource(f"http://{FAR}/catalogs/x", token="secret")
    assert "--insecure-send-token" in str(err.value)
    assert FAR in str(err.value)
    with pytest.raises(CatalogSourceError, match=r"spec\.source\.http\.insecureSendToken"):
        CatalogdSource(
            f"http://{FAR}/catalogs/x",
            token="secret",
            token_opt_in="spec.source.http.insecureSendToken",
        )
    # The opt-in, https, or no token at all: accepted (nothing is fetched here).
    CatalogdSource(f"http://{FAR}/catalogs/x", token="secret", insecure_send_token=True)
    CatalogdSource(f"https://{FAR}/catalogs/x", token="secret")
    CatalogdSource(f"http://{FAR}/catalogs/x")


EMPTY_JSONL: list[Step] = [
    ("send", b"HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\nContent-Length: 0\r\n\r\n")
]


def test_catalogd_sends_the_token_over_loopback() -> None:
    with hostile_server(EMPTY_JSONL) as server:
        CatalogdSource(f"{server.url}/catalogs/x", token="s3cret").fetch()
    assert b"authorization: bearer s3cret" in server.heads[0].lower()


def test_a_redirect_to_another_host_drops_the_token() -> None:
    with hostile_server(EMPTY_JSONL) as other:
        # 127.0.0.1 and localhost are different origins (both loopback, so both allowed).
        def first(head: bytes) -> list[Step]:
            if b"GET /same" in head:
                location = "/final"
            elif b"GET /final" in head:
                return EMPTY_JSONL
            else:
                location = f"http://localhost:{other.port}/elsewhere"
            redirect = f"HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n"
            return [("send", redirect.encode())]

        with hostile_server(first) as server:
            client = HttpClient(timeout=2, deadline=5)
            token = {"Authorization": "Bearer s3cret"}
            with client.request("GET", f"{server.url}/same", token) as response:
                assert response.status == 200
            with client.request("GET", f"{server.url}/away", token) as response:
                assert response.status == 200
    same, final, away = server.heads
    assert b"bearer s3cret" in same.lower()
    assert b"bearer s3cret" in final.lower()  # same origin keeps it
    assert b"bearer s3cret" in away.lower()
    (elsewhere,) = other.heads
    assert b"authorization" not in elsewhere.lower()
    assert b"s3cret" not in elsewhere


def test_http_source_refuses_basic_credentials_for_plain_http_elsewhere(tmp_path: Path) -> None:
    spec = HttpSpec(f"http://{FAR}/bundle.tgz", username="u", password="p")
    with pytest.raises(AuthenticationError) as err:
        fetch(spec, tmp_path, OPTIONS)
    assert "spec.source.http.auth.insecureSendCredentials" in str(err.value)


def test_git_refuses_credentials_for_plain_http_elsewhere(tmp_path: Path) -> None:
    source = GitSource(git="/nonexistent/git")  # nothing may run at all
    for spec in (
        GitSpec(f"http://{FAR}/r.git", GitRef(branch="main"), auth=GitAuth("u", "p")),
        GitSpec(f"http://u:p@{FAR}/r.git", GitRef(branch="main")),
    ):
        with pytest.raises(AuthenticationError) as err:
            source.fetch(spec, tmp_path, OPTIONS)
        assert "spec.source.git.auth.insecureSendCredentials" in str(err.value)


def test_registry_token_realm_on_plain_http_elsewhere_gets_no_password(tmp_path: Path) -> None:
    challenge = (
        "HTTP/1.1 401 Unauthorized\r\n"
        f'WWW-Authenticate: Bearer realm="http://{FAR}/token",service="r"\r\n'
        "Content-Length: 0\r\n\r\n"
    )
    with hostile_server([("send", challenge.encode())]) as server:
        registry = f"127.0.0.1:{server.port}"
        auth = base64.b64encode(b"user:pass").decode()
        secret = json.dumps({"auths": {registry: {"auth": auth}}}).encode()
        spec = ImageSpec(f"{registry}/team/b:v1", access=with_pull_secret(secret))
        with pytest.raises(AuthenticationError) as err:
            fetch(spec, tmp_path, OPTIONS)
    assert f"refusing to send credentials to {FAR} over plain http" in str(err.value)
    assert "the server must use https" in str(err.value)  # an image source has no opt-in
    assert len(server.heads) == 1  # and nothing more was asked of anyone


def test_cli_names_the_flag_that_allows_a_token_over_plain_http(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pivoter.cli.main",
            "catalog",
            "render",
            f"http://{FAR}/catalogs/x",
            "--token-file",
            str(token),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PIVOTER_CACHE": str(tmp_path / "cache")},
    )
    assert result.returncode != 0
    assert "--insecure-send-token" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


# -- the API fields that carry the opt-in ---------------------------------------------------


def _read(kind: str, name: str) -> dict[str, Any] | None:
    secret = {"token": "s3cret", "username": "u", "password": "p"}
    data = {k: base64.b64encode(v.encode()).decode() for k, v in secret.items()}
    return (
        {"kind": "Secret", "metadata": {"name": name}, "data": data} if kind == "Secret" else None
    )


def test_catalog_http_source_needs_insecure_send_token_for_plain_http(tmp_path: Path) -> None:
    http = {"url": f"http://{FAR}/catalogs/c", "tokenSecret": {"name": "t"}}
    settings = SourceSettings(workdir=tmp_path)
    with pytest.raises(InvalidCatalog) as err:
        build_source("c", {"type": "http", "http": http}, _read, settings)
    assert "spec.source.http.insecureSendToken" in str(err.value)
    built = build_source(
        "c", {"type": "http", "http": {**http, "insecureSendToken": True}}, _read, settings
    )
    assert isinstance(built.source, CatalogdSource)
    assert built.source.insecure_send_token


def _opted_in(spec: object) -> bool:
    if isinstance(spec, HttpSpec):
        return spec.allow_plain_http_credentials
    assert isinstance(spec, GitSpec)
    return spec.auth is not None and spec.auth.allow_plain_http_credentials


@pytest.mark.parametrize("kind", ["http", "git"])
def test_bundle_auth_insecure_send_credentials_reaches_the_spec(kind: str) -> None:
    def source(auth: dict[str, Any]) -> dict[str, Any]:
        if kind == "http":
            return {"type": "http", "http": {"url": f"http://{FAR}/b.tgz", "auth": auth}}
        git = {"repository": f"http://{FAR}/r.git", "ref": {"branch": "m"}, "auth": auth}
        return {"type": "git", "git": git}

    secret = {"secret": {"name": "s"}}
    assert _opted_in(source_spec(source({**secret, "insecureSendCredentials": True}), _read))
    assert not _opted_in(source_spec(source(secret), _read))
