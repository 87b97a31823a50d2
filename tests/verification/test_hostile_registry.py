"""A hostile registry against the pull's signature check, over real HTTP: signature manifests that
are huge, deeply nested, trickled byte by byte, point at other repositories or hosts, or loop
through the referrers API. Each pull is refused within its deadline (a :class:`SourceError`,
never a crash or a hang), and nothing of the image is unpacked.

The registry is a small ``http.server`` that serves one real image and, per scenario, what a
hostile registry would answer for its signatures (the pure tests of the same limits are in
``test_cosign.py``; these go through :class:`provisioners.registries.client.RegistryClient`).
"""

from __future__ import annotations

import hashlib
import http.server
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from provisioners.errors import SourceError
from provisioners.sources import FetchOptions, ImageSpec
from provisioners.sources.image import ImageSource
from provisioners.verification import (
    ImageNotVerifiedError,
    TrustedKey,
    VerificationMode,
    VerificationPolicy,
)
from tests.provisioners.oci import (
    LAYER_GZIP,
    OCI_CONFIG,
    OCI_INDEX,
    OCI_MANIFEST,
    compress,
    file,
    tar_bytes,
)
from tests.provisioners.servers import serve_http
from tests.verification.fakes import public_pem

DEADLINE = 6.0
SIG_TYPE = "application/vnd.dev.cosign.simplesigning.v1+json"


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


LAYER = compress(
    tar_bytes([file("manifests/cm.yaml", "apiVersion: v1\nkind: ConfigMap\n")]), LAYER_GZIP
)
CONFIG = b'{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}'
MANIFEST = json.dumps(
    {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": _digest(CONFIG), "size": len(CONFIG)},
        "layers": [{"mediaType": LAYER_GZIP, "digest": _digest(LAYER), "size": len(LAYER)}],
    }
).encode()
PULLED = _digest(MANIFEST)
SIG_TAG = PULLED.replace(":", "-") + ".sig"


def _sig_manifest(layers: int = 1, size: int = 100) -> bytes:
    return json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": _digest(b"{}"), "size": 2},
            "layers": [
                {
                    "mediaType": SIG_TYPE,
                    "digest": _digest(b"x" * size) if i else _digest(b"payload"),
                    "size": size,
                    "annotations": {"dev.cosignproject.cosign/signature": "AAAA"},
                }
                for i in range(layers)
            ],
        }
    ).encode()


def _index(manifests: list[dict[str, Any]]) -> bytes:
    return json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests}).encode()


Answer = Callable[["_Handler"], None]


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves the image; ``signatures`` says what the signature places answer."""

    signatures: ClassVar[dict[str, Answer]] = {}
    requests: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send(self, status: int, body: bytes, media_type: str = "", **headers: str) -> None:
        self.send_response(status)
        if media_type:
            self.send_header("Content-Type", media_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        path = self.path.split("?", 1)[0]
        if path == "/v2/":
            self.send(200, b"{}")
        elif path in ("/v2/app/manifests/v1", f"/v2/app/manifests/{PULLED}"):
            self.send(200, MANIFEST, OCI_MANIFEST, **{"Docker-Content-Digest": PULLED})
        elif path.startswith("/v2/app/blobs/"):
            blob = {_digest(LAYER): LAYER, _digest(CONFIG): CONFIG}.get(path.rsplit("/", 1)[1])
            self.send(200, blob) if blob is not None else self.send(404, b"")
        elif path in type(self).signatures:
            type(self).signatures[path](self)
        else:
            self.send(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}', "application/json")


def _huge(handler: _Handler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", OCI_MANIFEST)
    handler.send_header("Content-Length", str(1 << 30))
    handler.end_headers()
    chunk = b" " * 65536
    try:
        for _ in range(1 << 14):
            handler.wfile.write(chunk)
    except OSError:
        pass  # the client hung up: what it should do


def _trickle(handler: _Handler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", OCI_MANIFEST)
    handler.send_header("Content-Length", "100000")
    handler.end_headers()
    try:
        for _ in range(100000):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.05)
    except OSError:
        pass


def _deep(handler: _Handler) -> None:
    handler.send(200, b'{"layers": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", OCI_MANIFEST)


def _many_layers(handler: _Handler) -> None:
    handler.send(200, _sig_manifest(layers=500), OCI_MANIFEST)


def _referrers(link: str, entries: int = 1) -> Answer:
    def answer(handler: _Handler) -> None:
        manifests = [
            {
                "mediaType": OCI_MANIFEST,
                "digest": _digest(str(i).encode()),
                "size": 10,
                "artifactType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            }
            for i in range(entries)
        ]
        handler.send(200, _index(manifests), OCI_INDEX, **({"Link": link} if link else {}))

    return answer


REFERRERS = f"/v2/app/referrers/{PULLED}"
SCENARIOS: dict[str, tuple[dict[str, Answer], str]] = {
    "huge signature manifest": (
        {f"/v2/app/manifests/{SIG_TAG}": _huge},
        "is larger than 262144 bytes",
    ),
    "trickled signature manifest": (
        {f"/v2/app/manifests/{SIG_TAG}": _trickle},
        "passed its 6s deadline",
    ),
    "deeply nested signature manifest": (
        {f"/v2/app/manifests/{SIG_TAG}": _deep},
        "nested too deeply",
    ),
    "500 signature layers": (
        {f"/v2/app/manifests/{SIG_TAG}": _many_layers},
        "has 500 layers, more than 32",
    ),
    "referrers looping to themselves": (
        {REFERRERS: _referrers(f'<{REFERRERS}?last=a>; rel="next"')},
        "link back to a page already read (a loop)",
    ),
    "referrers paging to another repository": (
        {REFERRERS: _referrers(f'</v2/other/referrers/{PULLED}?n=1>; rel="next"')},
        "the next page of the referrers points at another repository",
    ),
    "referrers paging to another host": (
        {REFERRERS: _referrers(f'<http://203.0.113.9/v2/app/referrers/{PULLED}>; rel="next"')},
        "the next page of the referrers is on another host (203.0.113.9)",
    ),
    "ten thousand referrers": (
        {REFERRERS: _referrers("", entries=10_000)},
        "is larger than 262144 bytes",
    ),
}


@pytest.fixture(scope="module")
def registry() -> Iterator[str]:
    with serve_http(_Handler) as base:
        yield base.removeprefix("http://")


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_hostile_registry_is_refused_within_the_deadline(
    registry: str, scenario: str, tmp_path: Path
) -> None:
    answers, words = SCENARIOS[scenario]
    _Handler.signatures = answers
    _Handler.requests = []
    key = TrustedKey.from_pem(public_pem(ec.generate_private_key(ec.SECP256R1())), name="k.pub")
    policy = VerificationPolicy.keyed(VerificationMode.ENFORCE, keys=[key], name="the policy")
    began = time.monotonic()
    with pytest.raises(SourceError) as refused:
        ImageSource().fetch(
            ImageSpec(f"{registry}/app:v1", verification=(policy,)),
            tmp_path,
            FetchOptions(timeout_seconds=3.0, deadline_seconds=DEADLINE),
        )
    elapsed = time.monotonic() - began
    assert elapsed < DEADLINE + 2, f"{scenario}: {elapsed:.1f} s"
    assert isinstance(refused.value, ImageNotVerifiedError), refused.value
    message = str(refused.value)
    assert f"{registry}/app:v1@{PULLED} is not verified by the policy" in message
    assert words in message, message
    assert "\n" not in message
    assert list(tmp_path.iterdir()) == []  # nothing unpacked
    assert not any("/blobs/" in r for r in _Handler.requests), "a layer was fetched"
    assert not any("/v2/other/" in r for r in _Handler.requests)
