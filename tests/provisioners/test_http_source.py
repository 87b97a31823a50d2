"""The http source against a real HTTP(S) server on loopback serving tarballs."""

from __future__ import annotations

import base64
import gzip
import hashlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from provisioners.errors import (
    AuthenticationError,
    InvalidSourceError,
    SourceNotFoundError,
    SourceUnavailableError,
    TlsVerificationError,
)
from provisioners.sources import FetchOptions, HttpSpec, fetch
from provisioners.unpack import CorruptArchiveError, UnsafeLinkError, UnsafePathError
from tests.provisioners.oci import Entry, file, plain_bundle, tar_bytes
from tests.provisioners.servers import Tls, serve_http

USER, PASSWORD = "fetcher", "tarball-pass"
OPTIONS = FetchOptions(timeout_seconds=2, deadline_seconds=30)
GOOD = gzip.compress(tar_bytes(plain_bundle("from-http")))
FILES: dict[str, bytes] = {
    "/good.tgz": GOOD,
    "/traversal.tgz": gzip.compress(tar_bytes([*plain_bundle(), file("../../etc/cron.d/x", "x")])),
    "/abs-link.tgz": gzip.compress(
        tar_bytes([*plain_bundle(), Entry("manifests/l", kind=b"2", link="/etc/shadow")])
    ),
    "/not-a-tarball": b"<html>hello</html>" * 50,
}
STALL = threading.Event()


def _handler(require_auth: bool) -> type[http.server.BaseHTTPRequestHandler]:
    expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()

    class Tarballs(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if require_auth and self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="bundles"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", "/good.tgz")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if self.path == "/error":
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if self.path == "/stall":
                # Headers, half the body, then nothing.
                self.send_response(200)
                self.send_header("Content-Length", str(len(GOOD)))
                self.end_headers()
                self.wfile.write(GOOD[: len(GOOD) // 2])
                self.wfile.flush()
                STALL.wait(30)
                return
            body = FILES.get(self.path)
            if body is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    return Tarballs


@pytest.fixture(scope="module")
def tarballs() -> Iterator[str]:
    """Anonymous plain-http tarball server."""
    STALL.clear()
    with serve_http(_handler(require_auth=False)) as url:
        try:
            yield url
        finally:
            STALL.set()


@pytest.fixture(scope="module")
def private_tarballs(tls: Tls) -> Iterator[str]:
    """https tarball server with basic auth and a certificate from the test CA."""
    with serve_http(_handler(require_auth=True), tls) as url:
        yield url


def test_tarball_unpacks_with_content_digest(tarballs: str, dest: Path) -> None:
    result = fetch(HttpSpec(f"{tarballs}/good.tgz"), dest, OPTIONS)
    assert result.revision == "sha256:" + hashlib.sha256(GOOD).hexdigest()
    assert result.resolved_source == {"type": "http", "http": {"url": f"{tarballs}/good.tgz"}}
    assert "name: from-http" in (dest / "manifests" / "objects.yaml").read_text()


def test_redirect_is_followed(tarballs: str, dest: Path) -> None:
    fetch(HttpSpec(f"{tarballs}/redirect"), dest, OPTIONS)
    assert (dest / "manifests" / "objects.yaml").is_file()


def test_private_https_tarball(private_tarballs: str, tls: Tls, dest: Path) -> None:
    url = f"{private_tarballs}/good.tgz"
    with pytest.raises(AuthenticationError, match="none were given"):
        fetch(HttpSpec(url, ca_pem=tls.ca_pem), dest, OPTIONS)
    with pytest.raises(AuthenticationError, match="rejected"):
        fetch(HttpSpec(url, USER, "wrong", ca_pem=tls.ca_pem), dest, OPTIONS)
    with pytest.raises(TlsVerificationError, match="not trusted"):
        fetch(HttpSpec(url, USER, PASSWORD), dest, OPTIONS)
    fetch(HttpSpec(url, USER, PASSWORD, ca_pem=tls.ca_pem), dest, OPTIONS)
    assert "name: from-http" in (dest / "manifests" / "objects.yaml").read_text()


@pytest.mark.parametrize(
    ("path", "error", "match"),
    [
        ("/missing.tgz", SourceNotFoundError, "404"),
        ("/error", SourceUnavailableError, "HTTP 503"),
        ("/stall", SourceUnavailableError, "stalled"),
        ("/not-a-tarball", CorruptArchiveError, "not a tar archive"),
        ("/traversal.tgz", UnsafePathError, "'..'"),
        ("/abs-link.tgz", UnsafeLinkError, "absolute"),
    ],
)
def test_failures(tarballs: str, dest: Path, path: str, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        fetch(HttpSpec(f"{tarballs}{path}"), dest, OPTIONS)
    assert not (dest.parent / "etc").exists()


def test_unreachable_server_and_bad_urls(dest: Path) -> None:
    from tests.provisioners.servers import free_port

    with pytest.raises(SourceUnavailableError, match="cannot reach"):
        fetch(HttpSpec(f"http://127.0.0.1:{free_port()}/x.tgz"), dest, OPTIONS)
    with pytest.raises(InvalidSourceError, match="not an http"):
        fetch(HttpSpec("ftp://example.com/x.tgz"), dest, OPTIONS)


def test_password_is_not_in_repr() -> None:
    assert PASSWORD not in repr(HttpSpec("https://h/x.tgz", USER, PASSWORD))


def test_credentials_are_not_forwarded_to_another_origin(dest: Path) -> None:
    seen: list[str | None] = []

    class Mirror(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.send_header("Content-Length", str(len(GOOD)))
            self.end_headers()
            self.wfile.write(GOOD)

        def log_message(self, *_: object) -> None:
            pass

    with serve_http(Mirror) as mirror:

        class Origin(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(302)
                self.send_header("Location", f"{mirror}/good.tgz")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: object) -> None:
                pass

        with serve_http(Origin) as origin:
            fetch(HttpSpec(f"{origin}/bundle.tgz", USER, PASSWORD), dest, OPTIONS)
    assert seen == [None]
    assert (dest / "manifests" / "objects.yaml").is_file()
