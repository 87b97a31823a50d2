"""Parsing of image references (``[registry/]repository[:tag][@digest]``) for the image source.

Follows the distribution reference grammar: lowercase path components, tags of up to 128
characters, ``sha256``/``sha512`` digests, Docker Hub defaults (``docker.io`` and the
``library/`` prefix for single-component names).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from provisioners.errors import InvalidSourceError

# Each ends in \Z, not $: a $ also matches before a final newline, and "host\n/app" would pass
# with a host that then goes into the Host header of every request (and a component into a URL).
_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*\Z")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z")
_DIGEST = re.compile(r"^(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})\Z")
_HOST = re.compile(r"^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\])(?::[0-9]+)?\Z")
DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")


@dataclass(frozen=True)
class ImageReference:
    """A parsed image reference; exactly one of ``tag`` or ``digest`` names the manifest."""

    registry: str
    repository: str
    tag: str | None
    digest: str | None

    @property
    def api_host(self) -> str:
        """The host:port that serves the registry API (Docker Hub's differs from its name)."""
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    @property
    def is_loopback(self) -> bool:
        """Whether the registry is on this machine (plain http is allowed there)."""
        registry = self.registry
        if registry.startswith("["):
            host = registry[: registry.index("]") + 1]
        else:
            host = registry.split(":", 1)[0]
        return host in LOOPBACK_HOSTS

    @property
    def manifest_ref(self) -> str:
        """The path element that names the manifest: the digest if pinned, else the tag."""
        return self.digest or self.tag or "latest"

    def pinned(self, digest: str) -> str:
        """The canonical ``registry/repository@digest`` form of this reference."""
        return f"{self.registry}/{self.repository}@{digest}"

    def __str__(self) -> str:
        text = f"{self.registry}/{self.repository}"
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


def parse_reference(text: str) -> ImageReference:
    """Parse ``text`` or raise :class:`InvalidSourceError` saying which part is wrong."""
    original = text
    if not text or text != text.strip():
        raise InvalidSourceError(f"invalid image reference {original!r}: empty or padded")
    digest = None
    if "@" in text:
        text, digest = text.split("@", 1)
        if not _DIGEST.match(digest):
            raise InvalidSourceError(
                f"invalid image reference {original!r}: {digest!r} is not a sha256/sha512 digest"
            )
    registry = DOCKER_HUB
    first, _, rest = text.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost" or first.startswith("[")):
        registry, text = first, rest
        if not _HOST.match(registry):
            raise InvalidSourceError(f"invalid image reference {original!r}: bad host {registry!r}")
    tag = None
    last_slash = text.rfind("/")
    colon = text.rfind(":")
    if colon > last_slash:
        text, tag = text[:colon], text[colon + 1 :]
        if not _TAG.match(tag):
            raise InvalidSourceError(f"invalid image reference {original!r}: bad tag {tag!r}")
    components = text.split("/")
    for component in components:
        if not _COMPONENT.match(component):
            raise InvalidSourceError(
                f"invalid image reference {original!r}: repository component {component!r} must "
                "be lowercase letters, digits and separators"
            )
    if registry == DOCKER_HUB and len(components) == 1:
        text = f"library/{text}"
    if len(text) > 255:
        raise InvalidSourceError(f"invalid image reference {original!r}: repository too long")
    if tag is None and digest is None:
        tag = "latest"
    return ImageReference(registry=registry, repository=text, tag=tag, digest=digest)
