"""Credentials from a docker-config-json pull secret (``.dockerconfigjson``) for the image source.

The cluster side reads the Secret and passes its bytes; this module finds the username and
password for a registry host. Keys may be bare hosts, ``host:port`` or URLs
(``https://index.docker.io/v1/``), and credentials may be ``auth`` (base64 ``user:pass``) or
separate ``username``/``password`` fields.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from urllib.parse import urlsplit

from provisioners.errors import InvalidSourceError
from resolver import safedata

_LIMITS = safedata.Limits(max_bytes=1 << 20, max_depth=20)
"""A pull secret is a small, flat JSON document."""

_HUB_ALIASES = {"index.docker.io", "registry-1.docker.io", "docker.io", "registry.hub.docker.com"}


@dataclass(frozen=True)
class BasicCredentials:
    """A username and password for one registry."""

    username: str
    password: str

    def __repr__(self) -> str:
        return f"BasicCredentials(username={self.username!r}, password=<redacted>)"


def _host_of(key: str) -> str:
    if "://" in key:
        return urlsplit(key).netloc
    return key.split("/", 1)[0]


def credentials_for(config: bytes, registry: str) -> BasicCredentials | None:
    """Return the credentials ``config`` holds for ``registry``, or None when it has none."""
    try:
        document = safedata.load_json(config, limits=_LIMITS)
    except ValueError as exc:
        raise InvalidSourceError(f"the pull secret is not valid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise InvalidSourceError("the pull secret must be a JSON object with an 'auths' map")
    auths = document.get("auths", document)  # legacy .dockercfg has no "auths" wrapper
    if not isinstance(auths, dict):
        raise InvalidSourceError("the pull secret's 'auths' must be a map of registry to login")
    wanted = {registry} | (_HUB_ALIASES if registry in _HUB_ALIASES else set())
    for key, entry in auths.items():
        if _host_of(str(key)) not in wanted or not isinstance(entry, dict):
            continue
        if entry.get("auth"):
            try:
                decoded = base64.b64decode(str(entry["auth"]), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError) as exc:
                raise InvalidSourceError(
                    f"the pull secret's auth for {key} is not base64 user:password"
                ) from exc
            username, sep, password = decoded.partition(":")
            if not sep:
                raise InvalidSourceError(f"the pull secret's auth for {key} has no ':'")
            return BasicCredentials(username, password)
        if "username" in entry and "password" in entry:
            return BasicCredentials(str(entry["username"]), str(entry["password"]))
    return None
