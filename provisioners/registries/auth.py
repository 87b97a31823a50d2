"""Which credentials to offer a registry for one image, from several pull secrets at once.

A pull can have more than one pull secret behind it: a Bundle's own ``pullSecret``, the installing
service account's ``imagePullSecrets``, the catalog's pull secret, the cluster's global pull
secret. Each is an auth file (``.dockerconfigjson`` or the legacy ``.dockercfg``), and each key of
its ``auths`` map names a registry or a namespace in one (``quay.io``, ``quay.io/org``,
``quay.io/org/app``), as containers/image reads ``auth.json`` (containers-auth.json(5)):

- keys are normalized once, when the file is parsed: a key with a scheme is a legacy API URL
  (``https://index.docker.io/v1/``) and only its host counts; any other key is ``host[/path]``
  with trailing slashes dropped. When two keys of a file normalize to the same one, the key that
  needed the least rewriting wins (as written, then trailing slash dropped, then URL), then the
  first in the document, as containers/image prefers exact keys to normalized ones;
- within one file the most specific key wins: ``quay.io/org/team/app`` is looked up as
  ``quay.io/org/team/app``, ``quay.io/org/team``, ``quay.io/org``, then ``quay.io``. Namespaces
  match whole path components only (``quay.io/or`` is not a namespace of ``quay.io/org/app``) and
  the host matches exactly, port included (``localhost:5000`` is not ``localhost``), except that
  Docker Hub's names (``docker.io``, ``index.docker.io``, ``registry-1.docker.io``,
  ``registry.hub.docker.com``) are one registry; among those the key spelled as the reference
  spells it is preferred;
- across files, precedence decides the order, not specificity: a :class:`Keyring` gives each
  file's best match, most preferred file first, and leaves out a login whose credentials an
  earlier one already offers. As the kubelet's keyring does, the caller tries them in turn and
  the first the registry accepts wins, so a stale secret early in the list cannot lock a pull out.

Only basic credentials are used. Every credential of every entry (``auth``, ``username``,
``password``, ``identitytoken``, ``registrytoken``) must be text that can be sent
(:mod:`resolver.net.credentials`), checked as the file is read, as kubelet decodes every entry of
a pull secret and not only the one a pull needs: :func:`read_auths` refuses a bad one with an
:class:`~provisioners.errors.InvalidSourceError` naming the file's ``source``, the key and the
field, never the value. An entry holding no basic credentials (only an ``identitytoken``, or
nothing) is checked, then left out. Nothing here prints a password: the ``repr`` of every type
shows usernames and keys only.

The reading of one file lives here rather than in :mod:`provisioners.sources.pull_secret` (the
one-secret, host-only lookup older callers use, built on :func:`read_auths`) because the sources
pull through this package: this module imports nothing from :mod:`provisioners.sources`.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from provisioners.errors import InvalidSourceError
from resolver import safedata
from resolver.net import InvalidCredential, basic_credential, bearer_token

DOCKER_HUB_HOSTS = frozenset(
    {"docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com"}
)
"""The names Docker Hub goes by in references and ``auths`` keys: one registry."""
_LIMITS = safedata.Limits(max_bytes=1 << 20, max_depth=20)
"""An auth file is a small, flat JSON document."""
_TOKENS = ("identitytoken", "registrytoken")
"""Token fields of an entry (docker's ``AuthConfig``): checked, not used for pulls."""
_KEY_SHOWN = 100
"""Characters of an entry's key shown in an error (the key is a registry, not a secret)."""

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
"""The start of a legacy URL key (``https://``, ``http://``)."""
_AS_WRITTEN, _SLASH_DROPPED, _FROM_URL = range(3)
"""How much rewriting a key needed to be normalized; the least wins a collision within a file."""


def _normalized(key: str) -> tuple[str, int]:
    """``key`` as ``host[/path]`` and how much rewriting that took.

    A URL key keeps only its host (its path is an API version, not a namespace, and user info,
    if any, is no part of a registry's name). Split by hand rather than by ``urlsplit``, which
    raises on some malformed hosts: a key that is no registry simply never matches.
    """
    scheme = _SCHEME.match(key)
    if scheme is not None:
        authority = key[scheme.end() :].split("/", 1)[0]
        return authority.rpartition("@")[2], _FROM_URL
    stripped = key.rstrip("/")
    return stripped, _AS_WRITTEN if stripped == key else _SLASH_DROPPED


def _same_registry(host: str, registry: str) -> bool:
    """Whether ``host`` (of a key) names ``registry`` (of a reference): exactly, or both Hub."""
    return host == registry or (host in DOCKER_HUB_HOSTS and registry in DOCKER_HUB_HOSTS)


def _namespaces(repository: str) -> list[str]:
    """The paths a key may name for ``repository``, most specific first, ending with ``""`` (the
    registry itself): ``org/team/app``, ``org/team``, ``org``, ``""``."""
    parts = repository.split("/") if repository else []
    return ["/".join(parts[:n]) for n in range(len(parts), -1, -1)]


@dataclass(frozen=True)
class BasicCredentials:
    """A username and password for one registry."""

    username: str
    password: str

    def __repr__(self) -> str:
        return f"BasicCredentials(username={self.username!r}, password=<redacted>)"


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


def read_auths(
    config: bytes, *, where: str = "the pull secret"
) -> tuple[tuple[str, BasicCredentials | None], ...]:
    """Every entry of the auth file ``config``, in document order: its key as written and its
    basic credentials (None when it holds none, e.g. only a token). Entries that are not maps
    are skipped.

    Every field of every entry is checked; raises :class:`~provisioners.errors.InvalidSourceError`
    naming ``where``, the entry's key and the field, never the value.
    """
    return tuple(
        (str(key), _login(str(key), entry, where))
        for key, entry in _auths(config, where).items()
        if isinstance(entry, dict)
    )


@dataclass(frozen=True)
class Login:
    """The credentials one auth file offers for an image, with the file and key they came from.

    ``source`` and ``key`` are for messages ("tried Secret ns/name key quay.io/org"); they are
    never a credential. The ``repr`` leaves the password out.
    """

    source: str
    key: str
    credentials: BasicCredentials

    def __repr__(self) -> str:
        return (
            f"Login(source={self.source!r}, key={self.key!r}, "
            f"username={self.credentials.username!r}, password=<redacted>)"
        )


@dataclass(frozen=True)
class AuthFile:
    """The usable logins of one auth file, keyed by normalized ``auths`` key in document order.

    ``source`` names where the file came from (e.g. ``Secret openshift-config/pull-secret``) in
    errors and in each :class:`Login` it gives.
    """

    source: str
    entries: tuple[tuple[str, BasicCredentials], ...] = ()

    @classmethod
    def parse(cls, data: bytes, source: str) -> AuthFile:
        """Read a ``.dockerconfigjson`` (``{"auths": {...}}``) or legacy ``.dockercfg`` (the map
        itself), checking every entry.

        Raises :class:`~provisioners.errors.InvalidSourceError` naming ``source``, the entry's key
        and the field, never the value, when the document or any entry cannot be used.
        """
        best: dict[str, tuple[int, BasicCredentials]] = {}
        for raw, credentials in read_auths(data, where=source):
            if credentials is None:
                continue
            key, rewriting = _normalized(raw)
            if not key:
                continue
            held = best.get(key)
            if held is None or rewriting < held[0]:
                best[key] = (rewriting, credentials)
        return cls(source, tuple((key, held[1]) for key, held in best.items()))

    def lookup(self, registry: str, repository: str) -> Login | None:
        """The login of the most specific key matching ``registry/repository``, or None.

        ``registry`` is the reference's registry as written (``quay.io``, ``localhost:5000``,
        ``docker.io``); ``repository`` its path (``org/app``, ``library/nginx``).
        """
        for namespace in _namespaces(repository):
            alias: tuple[str, BasicCredentials] | None = None
            for key, credentials in self.entries:
                host, _, path = key.partition("/")
                if path != namespace or not _same_registry(host, registry):
                    continue
                if host == registry:
                    return Login(self.source, key, credentials)
                alias = alias or (key, credentials)
            if alias is not None:
                return Login(self.source, *alias)
        return None

    def __repr__(self) -> str:
        keys = [key for key, _ in self.entries]
        return f"AuthFile(source={self.source!r}, keys={keys!r})"


@dataclass(frozen=True)
class Keyring:
    """Auth files in precedence order (first = most preferred), matched per image reference."""

    files: tuple[AuthFile, ...] = ()

    def candidates(self, registry: str, repository: str) -> list[Login]:
        """The logins to try for ``registry/repository``, in order: each file's best match (see
        :meth:`AuthFile.lookup`), leaving out one whose credentials an earlier login offers.

        Empty when no file has a matching key: the pull then goes anonymous.
        """
        found: list[Login] = []
        for auth_file in self.files:
            login = auth_file.lookup(registry, repository)
            if login is not None and all(login.credentials != f.credentials for f in found):
                found.append(login)
        return found

    @property
    def sources(self) -> tuple[str, ...]:
        """Where each file came from, in precedence order (for messages)."""
        return tuple(auth_file.source for auth_file in self.files)
