"""Credentials from a docker-config-json pull secret (``.dockerconfigjson``) for the image source.

The cluster side reads the Secret and passes its bytes; this module finds the username and
password for a registry host. Keys may be bare hosts, ``host:port`` or URLs
(``https://index.docker.io/v1/``), and credentials may be ``auth`` (base64 ``user:pass``) or
separate ``username``/``password`` fields.

Every credential of every entry (``auth``, ``username``, ``password``, ``identitytoken``,
``registrytoken``) must be text that can be sent (:mod:`resolver.net.credentials`: no control
characters, no colon in a username; tokens visible ASCII), checked as the secret is read, as
kubelet decodes every entry of a pull secret, not only the one a pull needs. A bad one is refused
naming the Secret (``where``), the entry and the field, never the value.
:func:`check_pull_secret` is that check alone, for the cluster side to run where it reads the
Secret; :func:`credentials_for` runs it too.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from provisioners.errors import InvalidSourceError
from resolver import safedata
from resolver.net import InvalidCredential, basic_credential, bearer_token

_LIMITS = safedata.Limits(max_bytes=1 << 20, max_depth=20)
"""A pull secret is a small, flat JSON document."""

_HUB_ALIASES = {"index.docker.io", "registry-1.docker.io", "docker.io", "registry.hub.docker.com"}
_TOKENS = ("identitytoken", "registrytoken")
"""Token fields of an entry (docker's ``AuthConfig``): checked, not used for pulls."""
_KEY_SHOWN = 100
"""Characters of an entry's key shown in an error (the key is a registry, not a secret)."""


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


def _auths(config: bytes, where: str) -> dict[str, Any]:
    """The ``auths`` map of ``config``."""
    try:
        document = safedata.load_json(config, limits=_LIMITS)
    except ValueError as exc:
        raise InvalidSourceError(f"{where} is not valid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise InvalidSourceError(f"{where} must be a JSON object with an 'auths' map")
    auths = document.get("auths", document)  # legacy .dockercfg has no "auths" wrapper
    if not isinstance(auths, dict):
        raise InvalidSourceError(f"{where}: 'auths' must be a map of registry to login")
    return auths


def _login(key: str, entry: dict[str, Any], where: str) -> BasicCredentials | None:
    """The basic credentials of one entry (None when it has none), every field checked."""
    shown = key if len(key) <= _KEY_SHOWN else key[:_KEY_SHOWN] + "..."
    at = f"{where} auths entry {shown!r}"

    def text(field: str) -> str:
        value = entry[field]
        if not isinstance(value, str):
            raise InvalidSourceError(f"{at} {field} must be a string")
        return value

    try:
        for field in _TOKENS:
            if entry.get(field):
                bearer_token(text(field), where=f"{at} {field}")
        if entry.get("auth"):
            try:
                decoded = base64.b64decode(text("auth"), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError) as exc:
                raise InvalidSourceError(f"{at}: auth is not base64 user:password") from exc
            username, sep, password = decoded.partition(":")
            if not sep:
                raise InvalidSourceError(f"{at}: auth has no ':'")
            return BasicCredentials(
                basic_credential(username, where=f"{at} auth", part="username"),
                basic_credential(password, where=f"{at} auth", part="password"),
            )
        if "username" in entry and "password" in entry:
            return BasicCredentials(
                basic_credential(text("username"), where=f"{at} username", part="username"),
                basic_credential(text("password"), where=f"{at} password", part="password"),
            )
    except InvalidCredential as exc:
        raise InvalidSourceError(str(exc)) from None
    return None


def check_pull_secret(config: bytes, *, where: str = "the pull secret") -> None:
    """Raise :class:`InvalidSourceError` (naming ``where``, an entry and a field, never a
    credential) unless every entry of ``config`` holds credentials that can be sent."""
    for key, entry in _auths(config, where).items():
        if isinstance(entry, dict):
            _login(str(key), entry, where)


def credentials_for(
    config: bytes, registry: str, *, where: str = "the pull secret"
) -> BasicCredentials | None:
    """Return the credentials ``config`` holds for ``registry``, or None when it has none.

    Every entry is checked (:func:`check_pull_secret`); ``where`` names the secret in errors.
    """
    auths = _auths(config, where)
    wanted = {registry} | (_HUB_ALIASES if registry in _HUB_ALIASES else set())
    found: BasicCredentials | None = None
    for key, entry in auths.items():
        if not isinstance(entry, dict):
            continue
        login = _login(str(key), entry, where)
        if found is None and login is not None and _host_of(str(key)) in wanted:
            found = login
    return found
