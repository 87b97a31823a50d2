"""The image source: pull a bundle image from an OCI registry and unpack its layers in-process.

Resolves a tag or digest to a manifest (choosing ``linux/amd64`` or the only entry of an index)
at the first place that serves it (its mirrors, then the source, with the credentials that match
each: :func:`provisioners.registries.pull.open_image`), downloads every layer to a temporary file
while verifying its digest, and only then applies it (gzip, zstd or plain tar, with OCI
whiteouts) through :class:`provisioners.unpack.Unpacker`, within the fetch's one deadline
(``deadline_seconds``: downloads and decompression share it). Records
``registry/repository@digest`` (the reference as written, pinned; the mirror that served it is
:attr:`FetchResult.served_by`) as the resolved source and warns when the spec used a tag. With a
verification policy (:attr:`ImageSpec.verification`), the top manifest's signatures are checked
right after it is resolved and before any layer is fetched (:attr:`FetchResult.verification`).
Called through :func:`provisioners.sources.fetch`.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provisioners.errors import (
    ContentTooLargeError,
    InvalidSourceError,
    SourceError,
    UnsupportedContentError,
)
from provisioners.httpclient import TlsOptions
from provisioners.registries.client import INDEX_TYPES, MANIFEST_TYPES, ImageManifest
from provisioners.registries.pull import RegistryAccess, open_image
from provisioners.registries.reference import parse_reference
from provisioners.sources.base import FetchOptions, FetchResult
from provisioners.unpack import Compression, Unpacker
from provisioners.verification import SignatureRefused, VerificationPolicy, verify_all

_LAYER_COMPRESSION = {
    "application/vnd.oci.image.layer.v1.tar": Compression.NONE,
    "application/vnd.oci.image.layer.v1.tar+gzip": Compression.GZIP,
    "application/vnd.oci.image.layer.v1.tar+zstd": Compression.ZSTD,
    "application/vnd.oci.image.layer.nondistributable.v1.tar": Compression.NONE,
    "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip": Compression.GZIP,
    "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd": Compression.ZSTD,
    "application/vnd.docker.image.rootfs.diff.tar.gzip": Compression.GZIP,
    "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip": Compression.GZIP,
}


@dataclass(frozen=True)
class ImageSpec:
    """Where the bundle image is and how to reach it (rukpak ``source.image`` plus TLS)."""

    ref: str
    access: RegistryAccess = field(default_factory=RegistryAccess)
    """The credentials (pull secrets in precedence order) and the mirrors."""
    ca_pem: bytes | None = None
    insecure_skip_tls_verify: bool = False
    plain_http: bool | None = None
    """None: plain http for loopback registries without a CA, https otherwise."""
    platform: str = "linux/amd64"
    """Which entry of an image index to pull (the only entry is taken when none matches)."""
    verification: tuple[VerificationPolicy, ...] = ()
    """The policies whose signatures the image must carry (:mod:`provisioners.verification`;
    each must accept it), checked against the manifest digest the pull then unpacks, before any
    layer is fetched. Empty: none (as mode ``off``)."""


def _select(index: ImageManifest, platform: str, ref: str) -> dict[str, Any]:
    """Pick the manifest descriptor for ``platform`` from an index."""
    entries = [
        e
        for e in index.document.get("manifests", [])
        if isinstance(e, dict)
        and e.get("mediaType", MANIFEST_TYPES[0]) in MANIFEST_TYPES
        # buildx attestation manifests are not images to unpack.
        and (e.get("annotations") or {}).get("vnd.docker.reference.type") != "attestation-manifest"
    ]
    wanted_os, _, wanted_arch = platform.partition("/")
    for entry in entries:
        described = entry.get("platform") or {}
        if described.get("os") == wanted_os and described.get("architecture") == wanted_arch:
            return entry
    if len(entries) == 1:
        return entries[0]
    platforms = [e.get("platform") or {} for e in entries]
    available = sorted(f"{p.get('os', '?')}/{p.get('architecture', '?')}" for p in platforms)
    raise UnsupportedContentError(
        f"image {ref} has no {platform} manifest; it offers {', '.join(available) or 'none'}"
    )


def _descriptor(raw: Any, what: str) -> tuple[str, int, str]:
    if not isinstance(raw, dict):
        raise SourceError(f"{what} is not a descriptor")
    digest, size, media_type = raw.get("digest"), raw.get("size"), raw.get("mediaType")
    if not isinstance(digest, str) or not isinstance(size, int) or size < 0:
        raise SourceError(f"{what} lacks a digest or size")
    return digest, size, str(media_type or "")


class ImageSource:
    """Fetches bundle content from an OCI registry."""

    def fetch(self, spec: ImageSpec, dest: Path, options: FetchOptions) -> FetchResult:
        """Pull ``spec.ref`` and unpack its layers into ``dest``."""
        reference = parse_reference(spec.ref)
        if spec.plain_http and not reference.is_loopback:
            raise InvalidSourceError(
                f"plain http is only allowed for registries on this machine, not "
                f"{reference.registry}"
            )
        opened = open_image(
            reference,
            spec.access,
            tls=TlsOptions(spec.ca_pem, spec.insecure_skip_tls_verify),
            timeout=options.timeout_seconds,
            deadline=options.deadline_seconds,
            plain_http=spec.plain_http,
        )
        client, top = opened.client, opened.top
        # The digest verified is the one unpacked below (never the tag resolved again); a
        # refusal under mode enforce raises here, before any layer is fetched.
        verification = verify_all(reference, opened, spec.verification)
        manifest = top
        if top.media_type in INDEX_TYPES:
            digest, _, _ = _descriptor(_select(top, spec.platform, str(reference)), "index entry")
            manifest = client.manifest(digest)
        if manifest.media_type not in MANIFEST_TYPES:
            raise UnsupportedContentError(
                f"image {reference} has media type {manifest.media_type!r}; expected an OCI or "
                "Docker v2 image manifest (schema 1 and artifacts are not supported)"
            )
        layers = [
            _descriptor(raw, f"layer {n}")
            for n, raw in enumerate(manifest.document.get("layers") or [])
        ]
        if not layers:
            raise UnsupportedContentError(f"image {reference} has no layers")
        declared = sum(size for _, size, _ in layers)
        if declared > options.limits.max_total_bytes:
            raise ContentTooLargeError(
                f"image {reference} has {declared} bytes of layers, more than max_total_bytes="
                f"{options.limits.max_total_bytes}"
            )
        # One deadline for the whole fetch: downloads and unpacking (decompression included).
        unpacker = Unpacker(dest, options.limits, deadline=client.budget)
        with tempfile.TemporaryDirectory(prefix=".layers-", dir=dest.parent) as scratch:
            for index, (digest, size, media_type) in enumerate(layers):
                compression = _LAYER_COMPRESSION.get(media_type)
                if compression is None:
                    raise UnsupportedContentError(
                        f"layer {index} of {reference} has unsupported media type {media_type!r}"
                    )
                blob = Path(scratch) / f"layer-{index}"
                # Verify the whole blob before unpacking any of it: never act on tampered bytes.
                with open(blob, "wb") as sink:
                    client.blob(digest, size, sink)
                with open(blob, "rb") as layer:
                    unpacker.apply(layer, compression, whiteouts=True)
                blob.unlink()
        unpacker.finish()
        warnings = []
        for verdict in verification:
            if isinstance(verdict, SignatureRefused):  # mode warn: unpacked, and said so
                warnings.append(f"not verified (mode warn): {verdict.message}")
        if reference.digest is None:
            warnings.append(
                f"image {spec.ref} is referenced by tag; the content behind a tag can change. "
                f"Pin it as {reference.pinned(top.digest)}"
            )
        return FetchResult(
            resolved_source={"type": "image", "image": {"ref": reference.pinned(top.digest)}},
            revision=top.digest,
            warnings=warnings,
            served_by=opened.served_by,
            verification=verification,
        )
