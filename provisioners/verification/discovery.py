"""Finding an image's signatures in its registry, within limits a hostile registry cannot pass.

cosign stores a signature of the manifest ``sha256:<hex>`` in the image's own repository:

1. as the tag ``sha256-<hex>.sig``: a manifest with one simple-signing layer per signature;
2. as an OCI 1.1 referrer (a manifest whose ``subject`` is the image), listed by the referrers
   API (``GET /v2/<name>/referrers/<digest>``, an index, paged by ``Link: <...>; rel="next"``)
   or, where the registry does not serve that API (404), by the referrers tag schema's index
   at the tag ``sha256-<hex>``. A referrer of artifact type
   ``application/vnd.dev.sigstore.bundle.v0.3+json`` holds a Sigstore bundle (cosign v3's
   default); one of ``application/vnd.dev.cosign.artifact.sig.v1+json`` holds simple-signing
   layers (cosign's ``--registry-referrers-mode=oci-1-1``).

Both are read here, through a :class:`SignatureStore` (the image's repository, as the pull
reached it: :class:`RegistrySignatureStore` over the pull's own client, so the same place,
credentials and deadline), into :class:`~.envelopes.SignatureCandidate` s. What a registry
serves is refused, one line each, never a crash, when it passes :class:`VerificationLimits`:
a signature manifest or index over ``max_manifest_bytes``, more than ``max_layers`` layers,
payloads over ``max_payload_bytes``, JSON nested deeper than ``max_json_depth``, more than
``max_referrers`` referrers or ``max_referrer_pages`` pages (a page that links back to one
already read is a loop and ends the listing), a referrer whose ``subject`` is another image, a
layer with ``urls`` (content elsewhere than this repository), a next page on another host or
in another repository. Every request shares the pull's deadline; once it is spent, what is not
read yet is reported as not read.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from provisioners.errors import (
    ContentTooLargeError,
    IntegrityError,
    SourceError,
    SourceNotFoundError,
)
from provisioners.registries.client import OCI_INDEX, RegistryClient, digest_of
from provisioners.registries.reference import ImageReference
from provisioners.verification.envelopes import (
    BUNDLE_MEDIA_TYPES,
    SIMPLE_SIGNING_MEDIA_TYPE,
    SignatureCandidate,
    SignatureMalformed,
    read_bundle,
    read_simple_signing,
)
from resolver import safedata

__all__ = [
    "COSIGN_SIG_ARTIFACT",
    "DEFAULT_LIMITS",
    "Discovery",
    "ReferrersPage",
    "RegistrySignatureStore",
    "SignatureStore",
    "StoredManifest",
    "VerificationLimits",
    "find_signatures",
]

COSIGN_SIG_ARTIFACT = "application/vnd.dev.cosign.artifact.sig.v1+json"
_DIGEST = re.compile(r"^(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})\Z")
_MANIFEST_ACCEPT = ", ".join(
    (
        "application/vnd.oci.image.manifest.v1+json",
        OCI_INDEX,
        "application/vnd.docker.distribution.manifest.v2+json",
    )
)
_NEXT_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="?next"?')


@dataclass(frozen=True)
class VerificationLimits:
    """What one image's signatures may cost (see the module docstring)."""

    max_manifest_bytes: int = 256 << 10
    max_layers: int = 32
    max_payload_bytes: int = 128 << 10
    max_json_depth: int = 32
    max_referrers: int = 32
    max_referrer_pages: int = 4


@dataclass(frozen=True)
class StoredManifest:
    """A manifest or index as the store served it, its digest checked."""

    digest: str
    document: dict[str, Any]


@dataclass(frozen=True)
class ReferrersPage:
    """One page of the referrers API: an index, and the next page's ``Link`` target."""

    document: dict[str, Any]
    next_page: str | None


class SignatureStore(Protocol):
    """The image's repository, as far as signatures go."""

    def manifest(self, ref: str, *, limit: int, max_depth: int) -> StoredManifest | None:
        """The manifest or index at ``ref`` (tag or digest); None when there is none."""

    def blob(self, digest: str, size: int) -> bytes:
        """The blob ``digest`` of ``size`` bytes, verified."""

    def referrers(
        self, digest: str, *, page: str | None, limit: int, max_depth: int
    ) -> ReferrersPage | None:
        """A page of the referrers of ``digest`` (the first when ``page`` is None); None when
        the registry does not serve the referrers API."""

    def deadline_left(self) -> float:
        """Seconds left of the pull's deadline."""


@dataclass
class Discovery:
    """What was found: the signatures, and what could not be read (one line each)."""

    candidates: list[SignatureCandidate] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    looked_at: list[str] = field(default_factory=list)
    """The places searched, for a message saying where nothing was found."""
    retryable: bool = False
    """A problem may pass (the registry failed or the deadline was spent)."""


class _DeadlineSpent(Exception):
    pass


DEFAULT_LIMITS = VerificationLimits()


def find_signatures(
    store: SignatureStore, digest: str, limits: VerificationLimits = DEFAULT_LIMITS
) -> Discovery:
    """Every signature of the manifest ``digest`` that ``store`` holds (module docstring)."""
    found = Discovery()
    if not _DIGEST.match(digest):
        found.problems.append(f"{digest!r} is not a manifest digest")
        return found
    finder = _Finder(store, digest, limits, found)
    try:
        finder.signature_tag()
        finder.referrers()
    except _DeadlineSpent:
        found.problems.append("the pull's deadline was spent before every signature was read")
        found.retryable = True
    return found


class _Finder:
    def __init__(
        self, store: SignatureStore, digest: str, limits: VerificationLimits, found: Discovery
    ) -> None:
        self.store = store
        self.digest = digest
        self.limits = limits
        self.found = found
        self.tag = digest.replace(":", "-", 1)

    def _live(self) -> None:
        if self.store.deadline_left() <= 0:
            raise _DeadlineSpent

    def _failed(self, where: str, error: SourceError) -> None:
        self.found.problems.append(f"{where}: {error}")
        self.found.retryable = self.found.retryable or error.retryable

    def _manifest(self, ref: str, where: str) -> StoredManifest | None:
        self._live()
        try:
            return self.store.manifest(
                ref, limit=self.limits.max_manifest_bytes, max_depth=self.limits.max_json_depth
            )
        except ContentTooLargeError:
            self.found.problems.append(
                f"{where} is larger than {self.limits.max_manifest_bytes} bytes"
            )
        except SourceError as exc:
            self._failed(where, exc)
        return None

    def signature_tag(self) -> None:
        if not self.digest.startswith("sha256:"):
            return
        where = f"tag {self.tag}.sig"
        self.found.looked_at.append(where)
        stored = self._manifest(f"{self.tag}.sig", where)
        if stored is not None:
            self._simple_signing_layers(stored.document, where)

    def _layers(self, document: dict[str, Any], where: str) -> list[dict[str, Any]]:
        layers = document.get("layers")
        if not isinstance(layers, list):
            self.found.problems.append(f"{where} is not an image manifest (no layers)")
            return []
        if len(layers) > self.limits.max_layers:
            self.found.problems.append(
                f"{where} has {len(layers)} layers, more than {self.limits.max_layers}"
            )
            return []
        return [layer for layer in layers if isinstance(layer, dict)]

    def _blob(self, layer: dict[str, Any], where: str) -> bytes | None:
        digest, size = layer.get("digest"), layer.get("size")
        if "urls" in layer:
            self.found.problems.append(f"{where} points outside the repository (urls)")
            return None
        if not isinstance(digest, str) or not _DIGEST.match(digest):
            self.found.problems.append(f"{where} has no valid digest")
            return None
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            self.found.problems.append(f"{where} has no valid size")
            return None
        if size > self.limits.max_payload_bytes:
            self.found.problems.append(
                f"{where} is {size} bytes, more than {self.limits.max_payload_bytes}"
            )
            return None
        self._live()
        try:
            return self.store.blob(digest, size)
        except SourceError as exc:
            self._failed(where, exc)
            return None

    def _simple_signing_layers(self, document: dict[str, Any], where: str) -> None:
        for number, layer in enumerate(self._layers(document, where)):
            if layer.get("mediaType") != SIMPLE_SIGNING_MEDIA_TYPE:
                continue
            at = f"{where}, layer {number}"
            payload = self._blob(layer, at)
            if payload is None:
                continue
            annotations = layer.get("annotations")
            try:
                self.found.candidates.append(
                    read_simple_signing(
                        payload,
                        annotations if isinstance(annotations, dict) else {},
                        where=at,
                        max_depth=self.limits.max_json_depth,
                    )
                )
            except SignatureMalformed as exc:
                self.found.problems.append(f"{at}: {exc}")

    def referrers(self) -> None:
        descriptors = self._referrer_descriptors()
        wanted = [
            d
            for d in descriptors
            if d.get("artifactType") in (*BUNDLE_MEDIA_TYPES, COSIGN_SIG_ARTIFACT)
        ]
        if len(wanted) > self.limits.max_referrers:
            self.found.problems.append(
                f"{len(wanted)} signature referrers, more than {self.limits.max_referrers}: "
                f"only the first {self.limits.max_referrers} were read"
            )
            wanted = wanted[: self.limits.max_referrers]
        seen: set[str] = set()
        for descriptor in wanted:
            digest = descriptor.get("digest")
            if not isinstance(digest, str) or not _DIGEST.match(digest) or digest in seen:
                continue
            seen.add(digest)
            self._referrer(digest, str(descriptor.get("artifactType")))

    def _referrer_descriptors(self) -> list[dict[str, Any]]:
        where = f"the referrers of {self.digest}"
        self.found.looked_at.append(where)
        descriptors: list[dict[str, Any]] = []
        pages_seen: set[str] = set()
        page: str | None = None
        for number in range(self.limits.max_referrer_pages + 1):
            if number == self.limits.max_referrer_pages:
                self.found.problems.append(
                    f"{where} run past {self.limits.max_referrer_pages} pages; "
                    "the rest was not read"
                )
                break
            self._live()
            try:
                answer = self.store.referrers(
                    self.digest,
                    page=page,
                    limit=self.limits.max_manifest_bytes,
                    max_depth=self.limits.max_json_depth,
                )
            except ContentTooLargeError:
                self.found.problems.append(
                    f"a page of {where} is larger than {self.limits.max_manifest_bytes} bytes"
                )
                break
            except SourceError as exc:
                self._failed(where, exc)
                break
            if answer is None:
                return self._referrers_tag() if number == 0 else descriptors
            descriptors += _entries(answer.document)
            if answer.next_page is None:
                break
            if answer.next_page in pages_seen:
                self.found.problems.append(f"{where} link back to a page already read (a loop)")
                break
            pages_seen.add(answer.next_page)
            page = answer.next_page
        return descriptors

    def _referrers_tag(self) -> list[dict[str, Any]]:
        if not self.digest.startswith("sha256:"):
            return []
        where = f"tag {self.tag} (the referrers tag schema)"
        self.found.looked_at.append(where)
        stored = self._manifest(self.tag, where)
        return _entries(stored.document) if stored is not None else []

    def _referrer(self, digest: str, artifact_type: str) -> None:
        where = f"referrer {digest}"
        stored = self._manifest(digest, where)
        if stored is None:
            return
        subject = stored.document.get("subject")
        if not isinstance(subject, dict) or subject.get("digest") != self.digest:
            named = subject.get("digest") if isinstance(subject, dict) else None
            self.found.problems.append(
                f"{where} is not about this image (its subject is {named or 'missing'})"
            )
            return
        if artifact_type == COSIGN_SIG_ARTIFACT:
            self._simple_signing_layers(stored.document, where)
            return
        for number, layer in enumerate(self._layers(stored.document, where)):
            if layer.get("mediaType") not in BUNDLE_MEDIA_TYPES:
                continue
            at = f"{where}, layer {number}"
            data = self._blob(layer, at)
            if data is None:
                continue
            try:
                candidate = read_bundle(data, where=at, max_depth=self.limits.max_json_depth)
            except SignatureMalformed as exc:
                self.found.problems.append(f"{at}: {exc}")
                continue
            if candidate is not None:
                self.found.candidates.append(candidate)


def _entries(index: dict[str, Any]) -> list[dict[str, Any]]:
    manifests = index.get("manifests")
    if not isinstance(manifests, list):
        return []
    return [m for m in manifests if isinstance(m, dict)]


class RegistrySignatureStore:
    """A :class:`SignatureStore` over the pull's own :class:`RegistryClient` (same place,
    credentials and deadline). ``reference`` is the place's reference (``Opened.place``)."""

    def __init__(self, client: RegistryClient, reference: ImageReference) -> None:
        self._client = client
        self._reference = reference

    def deadline_left(self) -> float:
        """Seconds left of the pull's deadline."""
        return self._client.deadline_left()

    def _load(self, body: bytes, what: str, max_depth: int) -> dict[str, Any]:
        limits = safedata.Limits(max_bytes=max(len(body), 1), max_depth=max_depth)
        try:
            document = safedata.load_json(body, limits=limits)
        except safedata.SafeDataError as exc:
            raise SourceError(f"{what} is not valid JSON: {exc}") from None
        if not isinstance(document, dict):
            raise SourceError(f"{what} is not a JSON object")
        return document

    def manifest(self, ref: str, *, limit: int, max_depth: int) -> StoredManifest | None:
        """The manifest at ``ref``; None when the registry has none there."""
        what = f"manifest {ref}"
        try:
            # The client's one GET (auth, error mapping); its manifest() reads up to 4 MiB and
            # knows no depth: a signature's manifest gets the smaller limits given here.
            response = self._client.get(f"manifests/{ref}", _MANIFEST_ACCEPT, what)
        except SourceNotFoundError:
            return None
        with response:
            body = response.read_all(limit)
        digest = digest_of(body)
        if _DIGEST.match(ref) and digest_of(body, ref.split(":", 1)[0]) != ref:
            raise IntegrityError(f"the registry served a manifest that does not match {ref}")
        return StoredManifest(digest, self._load(body, what, max_depth))

    def blob(self, digest: str, size: int) -> bytes:
        """The blob, its size and digest verified by the client."""
        sink = io.BytesIO()
        self._client.blob(digest, size, sink)
        return sink.getvalue()

    def referrers(
        self, digest: str, *, page: str | None, limit: int, max_depth: int
    ) -> ReferrersPage | None:
        """A page of the referrers API; None when the registry does not serve it (404)."""
        path = f"referrers/{digest}"
        if page is not None:
            path = self._page_path(page, digest)
        try:
            response = self._client.get(path, OCI_INDEX, f"the referrers of {digest}")
        except SourceNotFoundError:
            return None
        with response:
            body = response.read_all(limit)
            link = response.headers.get("Link") or ""
        found = _NEXT_LINK.search(link)
        document = self._load(body, f"the referrers of {digest}", max_depth)
        return ReferrersPage(document, found.group(1) if found else None)

    def _page_path(self, page: str, digest: str) -> str:
        """The path below the repository of a ``Link`` target, refused when it leaves the
        referrers of ``digest`` in this repository on this host."""
        parts = urlsplit(page)
        if parts.netloc and parts.netloc != self._reference.api_host:
            raise SourceError(f"the next page of the referrers is on another host ({parts.netloc})")
        expected = f"/v2/{self._reference.repository}/referrers/{digest}"
        if parts.path != expected:
            raise SourceError("the next page of the referrers points at another repository")
        return f"referrers/{digest}" + (f"?{parts.query}" if parts.query else "")
