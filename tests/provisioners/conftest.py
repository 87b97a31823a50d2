"""Fixtures for the provisioner tests: real servers on loopback, started once per module or
session, and a fresh content store per test."""

from __future__ import annotations

import http.server
import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.provisioners.oci import Pusher
from tests.provisioners.servers import Registry, Tls, make_tls, run_registry, serve_http, sign_token

USER, PASSWORD = "puller", "s3cret-pass"


@pytest.fixture(scope="session")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    """A test CA with a server certificate for 127.0.0.1."""
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """An anonymous plain-http registry."""
    with run_registry(tmp_path_factory.mktemp("registry")) as running:
        yield running


@pytest.fixture(scope="session")
def private_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A plain-http registry with htpasswd (Basic) authentication."""
    with run_registry(
        tmp_path_factory.mktemp("private-registry"), htpasswd=(USER, PASSWORD)
    ) as running:
        yield running


@pytest.fixture(scope="session")
def tls_registry(tmp_path_factory: pytest.TempPathFactory, tls: Tls) -> Iterator[Registry]:
    """An anonymous registry serving https with a certificate from the test CA."""
    with run_registry(tmp_path_factory.mktemp("tls-registry"), tls=tls) as running:
        yield running


@pytest.fixture(scope="session")
def token_registry(tmp_path_factory: pytest.TempPathFactory, tls: Tls) -> Iterator[Registry]:
    """A registry with Bearer token auth; the token service checks basic credentials."""

    class TokenService(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            import base64

            query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
            header = self.headers.get("Authorization", "")
            expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
            if header != expected:
                # Anonymous or wrong credentials: no token (the repositories are private).
                self.send_response(401)
                self.end_headers()
                return
            body = json.dumps({"token": sign_token(tls, query.get("scope"), USER)}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    directory = tmp_path_factory.mktemp("token-registry")
    bundle = directory / "root.pem"
    bundle.write_bytes(tls.ca_pem)
    with (
        serve_http(TokenService) as token_url,
        run_registry(directory / "registry", token=(f"{token_url}/token", bundle)) as running,
    ):
        running.username, running.password = USER, PASSWORD
        yield running


def pusher_for(registry: Registry, tls: Tls | None = None) -> Pusher:
    """A pusher with the registry's credentials (and CA for https)."""
    return Pusher(registry.base, registry.username, registry.password, tls.ca_pem if tls else None)


@pytest.fixture
def dest(tmp_path: Path) -> Path:
    """An empty bundle root to fetch into."""
    path = tmp_path / "bundle"
    path.mkdir()
    return path
