"""Builds bundle images in memory and pushes them to a real registry (test helper).

Independent of the code under test: layers are built with :mod:`tarfile`, pushed with the
monolithic blob upload of the distribution API over :mod:`urllib`, answering Basic and Bearer
challenges itself.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import re
import ssl
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import zstandard

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
LAYER_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"
LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"


@dataclass
class Entry:
    """One tar entry: a file (data), directory, symlink/hardlink (link) or other type."""

    name: str
    data: bytes = b""
    kind: bytes = tarfile.REGTYPE
    link: str = ""
    mode: int = 0o644
    size: int | None = None  # override the header size (lying headers)


def file(name: str, data: bytes | str, mode: int = 0o644) -> Entry:
    """A regular file entry."""
    return Entry(name, data.encode() if isinstance(data, str) else data, mode=mode)


def tar_bytes(entries: list[Entry], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    """An uncompressed tar archive of ``entries``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as archive:
        for entry in entries:
            info = tarfile.TarInfo(entry.name)
            info.type = entry.kind
            info.mode = entry.mode if entry.kind != tarfile.DIRTYPE else 0o755
            info.linkname = entry.link
            info.size = len(entry.data) if entry.kind == tarfile.REGTYPE else 0
            archive.addfile(info, io.BytesIO(entry.data) if entry.kind == tarfile.REGTYPE else None)
    return buffer.getvalue()


def compress(data: bytes, media_type: str) -> bytes:
    """Compress a tar for the given layer media type."""
    if media_type in (LAYER_GZIP, DOCKER_LAYER):
        return gzip.compress(data, mtime=0)
    if media_type == LAYER_ZSTD:
        return zstandard.ZstdCompressor().compress(data)
    return data


def digest(data: bytes) -> str:
    """sha256 digest string."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass
class Pusher:
    """Pushes blobs and manifests to one registry, authenticating as needed."""

    base: str  # e.g. http://127.0.0.1:5000
    username: str | None = None
    password: str | None = None
    ca_pem: bytes | None = None
    _auth: dict[str, str] = field(default_factory=dict)

    def _context(self) -> ssl.SSLContext | None:
        if not self.ca_pem:
            return None
        return ssl.create_default_context(cadata=self.ca_pem.decode())

    def _basic(self) -> str:
        raw = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(raw).decode()

    def _request(
        self,
        method: str,
        url: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any, bytes]:
        path = url.split("/v2/", 1)[1]
        repo = path.split("/blobs/", maxsplit=1)[0].split("/manifests/", maxsplit=1)[0]
        for _ in range(2):
            request = urllib.request.Request(url, data=body, method=method)
            for key, value in (headers or {}).items():
                request.add_header(key, value)
            if repo in self._auth:
                request.add_header("Authorization", self._auth[repo])
            try:
                with urllib.request.urlopen(request, context=self._context()) as response:
                    return response.status, response.headers, response.read()
            except urllib.error.HTTPError as error:
                if error.code != 401:
                    raise
                challenge = error.headers.get("WWW-Authenticate", "")
                if challenge.lower().startswith("basic"):
                    self._auth[repo] = self._basic()
                else:
                    params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
                    query = urllib.parse.urlencode(
                        {"service": params["service"], "scope": f"repository:{repo}:pull,push"}
                    )
                    token_request = urllib.request.Request(f"{params['realm']}?{query}")
                    token_request.add_header("Authorization", self._basic())
                    with urllib.request.urlopen(token_request, context=self._context()) as answer:
                        self._auth[repo] = "Bearer " + json.loads(answer.read())["token"]
        raise RuntimeError(f"push to {url} kept failing authentication")

    def blob(self, repo: str, data: bytes) -> str:
        """Upload a blob (monolithic) and return its digest."""
        blob_digest = digest(data)
        _, headers, _ = self._request("POST", f"{self.base}/v2/{repo}/blobs/uploads/", b"")
        location = urllib.parse.urljoin(self.base, headers["Location"])
        separator = "&" if "?" in location else "?"
        self._request(
            "PUT",
            f"{location}{separator}digest={urllib.parse.quote(blob_digest)}",
            data,
            {"Content-Type": "application/octet-stream"},
        )
        return blob_digest

    def manifest(self, repo: str, ref: str, body: bytes, media_type: str) -> str:
        """Upload a manifest under ``ref`` (tag or digest) and return its digest."""
        self._request(
            "PUT", f"{self.base}/v2/{repo}/manifests/{ref}", body, {"Content-Type": media_type}
        )
        return digest(body)

    def image(
        self,
        repo: str,
        tag: str,
        layers: list[list[Entry]] | list[bytes],
        media_type: str = LAYER_GZIP,
        manifest_type: str = OCI_MANIFEST,
    ) -> str:
        """Push an image whose layers are entry lists (or raw layer blobs); return its digest."""
        descriptors = []
        for layer in layers:
            raw = layer if isinstance(layer, bytes) else compress(tar_bytes(layer), media_type)
            descriptors.append(
                {"mediaType": media_type, "digest": self.blob(repo, raw), "size": len(raw)}
            )
        config = json.dumps(
            {"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": []}}
        ).encode()
        config_type = (
            OCI_CONFIG
            if manifest_type == OCI_MANIFEST
            else "application/vnd.docker.container.image.v1+json"
        )
        manifest = {
            "schemaVersion": 2,
            "mediaType": manifest_type,
            "config": {
                "mediaType": config_type,
                "digest": self.blob(repo, config),
                "size": len(config),
            },
            "layers": descriptors,
        }
        return self.manifest(repo, tag, json.dumps(manifest).encode(), manifest_type)

    def index(self, repo: str, tag: str, entries: list[tuple[str, str, str]]) -> str:
        """Push an image index of (manifest digest, os, architecture); return its digest."""
        manifests = []
        for manifest_digest, os_name, arch in entries:
            status, headers, body = self._request(
                "GET",
                f"{self.base}/v2/{repo}/manifests/{manifest_digest}",
                headers={"Accept": OCI_MANIFEST},
            )
            assert status == 200, headers
            manifests.append(
                {
                    "mediaType": OCI_MANIFEST,
                    "digest": manifest_digest,
                    "size": len(body),
                    "platform": {"os": os_name, "architecture": arch},
                }
            )
        body = json.dumps(
            {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests}
        ).encode()
        return self.manifest(repo, tag, body, OCI_INDEX)


def plain_bundle(name: str = "demo", extra: list[Entry] | None = None) -> list[Entry]:
    """A valid plain+v0 bundle layer: one ConfigMap in manifests/."""
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  k: v\n"
    return [
        Entry("manifests/", kind=tarfile.DIRTYPE),
        file("manifests/objects.yaml", manifest),
        *(extra or []),
    ]
