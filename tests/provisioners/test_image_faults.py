"""The image source when the registry misbehaves: tampered bytes, server errors, stalls.

A small proxy (a real HTTP server on loopback) sits in front of the real registry and corrupts
or withholds responses, as a compromised mirror or a failing registry would.
"""

from __future__ import annotations

import http.server
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from provisioners.errors import IntegrityError, SourceUnavailableError
from provisioners.sources.base import FetchOptions
from provisioners.sources.image import ImageSource, ImageSpec
from tests.provisioners.conftest import pusher_for
from tests.provisioners.oci import plain_bundle
from tests.provisioners.servers import Registry, serve_http


class Fault:
    """What the proxy does: pass, tamper-manifest, tamper-blob, fail-500, stall."""

    mode = "pass"
    released = threading.Event()


@pytest.fixture
def proxy(registry: Registry) -> Iterator[str]:
    """A proxy to ``registry`` whose behaviour follows :class:`Fault`; yields its host:port."""

    class Proxy(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            if Fault.mode == "fail-500":
                self._send(500, b'{"errors":[{"code":"UNKNOWN"}]}', {})
                return
            if Fault.mode == "stall":
                Fault.released.wait(30)  # accept, then send nothing until the test ends
                return
            request = urllib.request.Request(f"{registry.base}{self.path}")
            for key in ("Accept", "Authorization"):
                if self.headers.get(key):
                    request.add_header(key, self.headers[key])
            try:
                with urllib.request.urlopen(request) as upstream:
                    status, headers, body = upstream.status, upstream.headers, upstream.read()
            except urllib.error.HTTPError as error:
                status, headers, body = error.code, error.headers, error.read()
            if Fault.mode == "tamper-manifest" and "/manifests/" in self.path:
                body = body.replace(b'"schemaVersion": 2', b'"schemaVersion":  2')
            if Fault.mode == "tamper-blob" and "/blobs/" in self.path and body:
                body = bytes([body[0] ^ 0xFF]) + body[1:]
            keep = {
                k: headers[k] for k in ("Content-Type", "Docker-Content-Digest") if k in headers
            }
            if Fault.mode == "tamper-manifest":
                keep.pop("Docker-Content-Digest", None)
            self._send(status, body, keep)

        def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    Fault.released.clear()
    with serve_http(Proxy) as url:
        try:
            yield url.removeprefix("http://")
        finally:
            Fault.released.set()  # let a stalled handler finish before the server stops
            Fault.mode = "pass"


def _fetch(ref: str, dest: Path, timeout: float = 5) -> None:
    ImageSource().fetch(
        ImageSpec(ref), dest, FetchOptions(timeout_seconds=timeout, deadline_seconds=60)
    )


def test_proxy_passes_clean_content(registry: Registry, proxy: str, dest: Path) -> None:
    digest = pusher_for(registry).image("faults/app", "v1", [plain_bundle("clean")])
    _fetch(f"{proxy}/faults/app@{digest}", dest)
    assert "name: clean" in (dest / "manifests" / "objects.yaml").read_text()


def test_tampered_manifest_is_refused(registry: Registry, proxy: str, dest: Path) -> None:
    digest = pusher_for(registry).image("faults/app", "v1", [plain_bundle()])
    Fault.mode = "tamper-manifest"
    with pytest.raises(IntegrityError, match="tampered or corrupted"):
        _fetch(f"{proxy}/faults/app@{digest}", dest)


def test_tampered_blob_is_refused_before_unpacking(
    registry: Registry, proxy: str, dest: Path
) -> None:
    pusher_for(registry).image("faults/app", "v1", [plain_bundle()])
    Fault.mode = "tamper-blob"
    with pytest.raises(IntegrityError, match="failed verification"):
        _fetch(f"{proxy}/faults/app:v1", dest)
    assert list(dest.iterdir()) == []


def test_registry_500_is_retryable_unavailable(registry: Registry, proxy: str, dest: Path) -> None:
    Fault.mode = "fail-500"
    with pytest.raises(SourceUnavailableError, match="HTTP 500") as caught:
        _fetch(f"{proxy}/faults/app:v1", dest)
    assert caught.value.retryable


def test_stalled_registry_times_out(proxy: str, dest: Path) -> None:
    Fault.mode = "stall"
    with pytest.raises(SourceUnavailableError, match="did not answer within 1s") as caught:
        _fetch(f"{proxy}/faults/app:v1", dest, timeout=1)
    assert caught.value.retryable
