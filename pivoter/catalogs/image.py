"""A catalog source for a catalog image: the FBC directory inside an OCI image.

The image's config names the directory with the label
``operators.operatorframework.io.index.configs.v1`` (what ``opm`` writes into every catalog
image, usually ``/configs``). A fetch resolves the reference to a manifest digest first; when the
digest is the one fetched last time, the cached catalog is returned after that one request (the
cheap poll). Otherwise the layers are pulled and unpacked into a temporary directory with
:mod:`provisioners.sources.image` (hardened unpacking: no escapes, size and entry limits), the
labelled directory is loaded, and the directory is removed. With a verification policy the
resolved digest's signatures are checked before anything is pulled (:attr:`ImageCatalogSource.
verified`; under ``enforce`` a refusal fails the fetch with the policy's reason). Built by
:func:`pivoter.catalogs.sources.build_source` for ``spec.source.type: image``.
"""

from __future__ import annotations

import dataclasses
import posixpath
import tempfile
from collections.abc import Callable, Sequence
from io import BytesIO
from pathlib import Path
from typing import Any

from pivoter.catalogs.errors import FetchFailed, InvalidCatalog
from provisioners.errors import ProvisionerError
from provisioners.httpclient import TlsOptions
from provisioners.registries.client import (
    INDEX_TYPES,
    MANIFEST_TYPES,
    ImageManifest,
    RegistryClient,
)
from provisioners.registries.pull import Opened, RegistryAccess, open_image
from provisioners.registries.reference import ImageReference, parse_reference
from provisioners.sources import FetchOptions, ImageSpec
from provisioners.sources.image import ImageSource
from provisioners.verification import Verdict, VerificationPolicy, verify_all
from resolver import safedata
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.load import load_directory
from resolver.catalog.model import Catalog

__all__ = [
    "CONFIGS_LABEL",
    "MAX_CONFIG_BYTES",
    "ImageCatalogSource",
    "PulledCatalog",
    "configs_directory",
]

CONFIGS_LABEL = "operators.operatorframework.io.index.configs.v1"
MAX_CONFIG_BYTES = 4 << 20
"""Largest image config accepted (real ones are a few KiB)."""


def configs_directory(config: Any, ref: str) -> str:
    """The FBC directory an image config's label names, as a relative path inside the image.

    Raises :class:`InvalidCatalog` when the label is missing or points outside the image.
    """
    labels = ((config or {}).get("config") or {}).get("Labels") if isinstance(config, dict) else {}
    value = (labels or {}).get(CONFIGS_LABEL) if isinstance(labels, dict) else None
    if not isinstance(value, str) or not value.strip():
        raise InvalidCatalog(
            f"image {ref} is not a file-based catalog image: its config has no "
            f"{CONFIGS_LABEL} label naming the catalog directory (opm sets it; build the image "
            "with `opm generate dockerfile`)"
        )
    relative = posixpath.normpath("/" + value.strip()).lstrip("/")
    if relative.startswith(".."):  # normpath of an absolute path never leaves "/", but be sure
        raise InvalidCatalog(f"image {ref}: label {CONFIGS_LABEL}={value!r} leaves the image")
    return relative or "."


@dataclasses.dataclass(frozen=True, slots=True)
class PulledCatalog:
    """An unpacked catalog image: its manifest digest, the digest-pinned reference, and its
    catalog directory (``label``: the same, as the image's label names it)."""

    digest: str
    pinned: str
    directory: Path
    label: str


class ImageCatalogSource:
    """Fetches the catalog inside an OCI image (see the module docstring)."""

    def __init__(
        self,
        ref: str,
        *,
        name: str = "",
        access: Callable[[], RegistryAccess] | None = None,
        ca_pem: bytes | None = None,
        options: FetchOptions | None = None,
        platform: str = "linux/amd64",
        verification: Callable[[], Sequence[VerificationPolicy]] | None = None,
    ) -> None:
        self.spec = ref
        self.name = name
        self.access = access or RegistryAccess
        """Called at every fetch: the credentials and mirrors as they are then."""
        self.verification = verification
        """Called at every pull: the verification policies as they are then (each must accept
        the image; none: nothing verified). The digest resolved is the one verified and then
        unpacked."""
        self.verified: tuple[Verdict, ...] = ()
        """The last pull's signature checks, one per policy (empty: nothing checked)."""
        self._opened: Opened | None = None
        self.ca_pem = ca_pem
        self.options = options or FetchOptions()
        self.platform = platform
        self._access = RegistryAccess()
        self._digest: str | None = None
        self._catalog: Catalog | None = None
        self.served_by = ""
        """The mirror that served the last fetch (``host/repository@digest``); empty: the source."""
        self.fetched_bytes = 0
        """Bytes the last fetch transferred as counted by the manifests' sizes: the layers and
        config when the image was pulled again, 0 for the cheap poll (one manifest request)."""

    @property
    def digest(self) -> str | None:
        """The manifest (or index) digest of the last successful fetch."""
        return self._digest

    def fetch(self) -> Catalog:
        """Return the image's catalog, re-pulling only when the reference's digest moved."""
        client, reference, top = self._resolve()
        if top.digest == self._digest and self._catalog is not None:
            return self._catalog
        with tempfile.TemporaryDirectory(prefix="pivoter-catalog-image-") as scratch:
            pulled = self._pull(Path(scratch), client, reference, top)
            try:
                catalog = load_directory(pulled.directory, name=self.name, use_cache=False)
            except CatalogLoadError as exc:
                raise InvalidCatalog(
                    f"image {pulled.pinned}, directory /{pulled.label}: {exc}"
                ) from exc
        self._digest = top.digest
        self._catalog = catalog
        return catalog

    def resolve(self) -> str:
        """The manifest (or index) digest the reference names now (one registry request)."""
        return self._resolve()[2].digest

    def pull_into(self, scratch: Path) -> PulledCatalog:
        """Pull the image into ``scratch`` (an empty directory the caller owns and removes) and
        return where its catalog directory is, without loading it: for callers that serve the
        files themselves (the ClusterCatalog controller)."""
        client, reference, top = self._resolve()
        return self._pull(scratch, client, reference, top)

    def _resolve(self) -> tuple[RegistryClient, ImageReference, ImageManifest]:
        try:
            self._access = self.access()
            reference = parse_reference(self.spec)
            opened = open_image(
                reference,
                self._access,
                tls=TlsOptions(self.ca_pem, False),
                timeout=self.options.timeout_seconds,
                deadline=self.options.deadline_seconds,
            )
        except ProvisionerError as exc:
            raise FetchFailed(f"image {self.spec}: {exc}") from exc
        self.fetched_bytes = 0
        self.served_by = opened.served_by
        self._opened = opened
        return opened.client, reference, opened.top

    def _verify(self, reference: ImageReference) -> None:
        """Check the resolved image's signatures (before any of it is pulled); raise under
        ``enforce`` when the policy refuses it."""
        self.verified = ()
        if self.verification is None or self._opened is None:
            return
        try:
            self.verified = verify_all(reference, self._opened, self.verification())
        except ProvisionerError as exc:
            raise FetchFailed(f"image {self.spec}: {exc}") from exc

    def _pull(
        self, scratch: Path, client: RegistryClient, reference: ImageReference, top: ImageManifest
    ) -> PulledCatalog:
        self._verify(reference)
        try:
            manifest = self._image_manifest(client, top)
            config = self._config(client, manifest)
            self.fetched_bytes = sum(
                int(d.get("size") or 0)
                for d in [
                    manifest.document.get("config") or {},
                    *manifest.document.get("layers", []),
                ]
                if isinstance(d, dict)
            )
        except ProvisionerError as exc:
            raise FetchFailed(f"image {self.spec}: {exc}") from exc
        directory = configs_directory(config, self.spec)
        pinned = reference.pinned(top.digest)
        root = scratch / "root"
        root.mkdir()
        spec = ImageSpec(pinned, access=self._access, ca_pem=self.ca_pem, platform=self.platform)
        # The layers' pull gets what is left of this fetch's deadline, not a fresh one.
        left = client.deadline_left()
        options = dataclasses.replace(self.options, deadline_seconds=max(left, 0.001))
        try:
            ImageSource().fetch(spec, root, options)
        except ProvisionerError as exc:
            raise FetchFailed(f"image {self.spec}: {exc}") from exc
        path = root / directory
        if not path.is_dir():
            raise InvalidCatalog(
                f"image {self.spec}: label {CONFIGS_LABEL} names /{directory}, which is not "
                "a directory in the image"
            )
        return PulledCatalog(top.digest, str(pinned), path, directory)

    def _image_manifest(self, client: RegistryClient, top: ImageManifest) -> ImageManifest:
        if top.media_type not in INDEX_TYPES:
            return top
        wanted_os, _, wanted_arch = self.platform.partition("/")
        entries = [e for e in top.document.get("manifests") or [] if isinstance(e, dict)]
        entries = [e for e in entries if e.get("mediaType", MANIFEST_TYPES[0]) in MANIFEST_TYPES]
        chosen = [
            e
            for e in entries
            if (e.get("platform") or {}).get("os") == wanted_os
            and (e.get("platform") or {}).get("architecture") == wanted_arch
        ] or (entries if len(entries) == 1 else [])
        if not chosen:
            raise FetchFailed(f"image {self.spec}: the index has no {self.platform} image")
        return client.manifest(str(chosen[0].get("digest") or ""))

    def _config(self, client: RegistryClient, manifest: ImageManifest) -> Any:
        if manifest.media_type not in MANIFEST_TYPES:
            raise InvalidCatalog(
                f"image {self.spec} has media type {manifest.media_type!r}, not an image manifest"
            )
        descriptor = manifest.document.get("config") or {}
        digest, size = str(descriptor.get("digest") or ""), descriptor.get("size")
        if not digest or not isinstance(size, int) or not 0 <= size <= MAX_CONFIG_BYTES:
            raise InvalidCatalog(f"image {self.spec}: the manifest's config descriptor is invalid")
        sink = BytesIO()
        client.blob(digest, size, sink)  # verifies size and digest
        try:
            return safedata.load_json(sink.getvalue())
        except ValueError as exc:
            raise InvalidCatalog(f"image {self.spec}: its config is not JSON: {exc}") from exc
