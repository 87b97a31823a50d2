"""Turn a Bundle's ``spec.source`` into a provisioner source spec, reading its Secrets and
ConfigMaps from the system namespace.

The Bundle controller calls :func:`source_spec`; the provisioners (which never see the cluster)
get plain data. A reference to a missing Secret or ConfigMap, a mutable ConfigMap or a source
type pivoter does not serve raises :class:`provisioners.errors.InvalidSourceError` with a message
that names the field, which the controller writes into the ``Unpacked`` condition.

Credentials are checked here, where they enter from their Secrets: the ``username`` and
``password`` of http and git sources (:func:`resolver.net.basic_credential`: exactly as stored,
no control characters, a trailing newline included); an image's pull secrets are read and
checked by the Bundle controller with the rest of its registry access
(:mod:`pivoter.registries`). A refusal names the field, the
Secret and the key, never the value, so status and Events never carry a credential.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any, Literal

from provisioners.errors import InvalidSourceError
from provisioners.sources import (
    ConfigMapContent,
    ConfigMapsSpec,
    GitAuth,
    GitRef,
    GitSpec,
    HttpSpec,
    ImageSpec,
    SourceSpec,
)
from resolver.net import InvalidCredential, basic_credential

__all__ = ["ObjectReader", "source_spec"]

ObjectReader = Callable[[str, str], Mapping[str, Any] | None]
"""``read(kind, name)`` with kind ``Secret`` or ``ConfigMap`` in the system namespace, or None."""


def source_spec(source: Mapping[str, Any], read: ObjectReader) -> SourceSpec:
    """Build the spec of ``source`` (a Bundle's ``spec.source``)."""
    kind = str(source.get("type") or "")
    if kind == "image":
        return _image(source.get("image") or {}, read)
    if kind == "git":
        return _git(source.get("git") or {}, read)
    if kind == "http":
        return _http(source.get("http") or {}, read)
    if kind == "configMaps":
        return _config_maps(source.get("configMaps") or [], read)
    if kind == "upload":
        raise InvalidSourceError(
            "spec.source.type upload is not served by pivoter (rukpak removed uploads); "
            "use configMaps, http, git or image"
        )
    raise InvalidSourceError(
        f"spec.source.type {kind!r} is not one of image, git, http, configMaps"
    )


def _secret_data(read: ObjectReader, name: str, field: str) -> dict[str, bytes]:
    secret = read("Secret", name)
    if secret is None:
        raise InvalidSourceError(f"{field}: Secret {name!r} not found in the system namespace")
    out: dict[str, bytes] = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            out[key] = base64.b64decode(value, validate=True)
        except (binascii.Error, TypeError) as exc:
            raise InvalidSourceError(f"{field}: Secret {name!r} key {key!r} is not base64") from exc
    for key, value in (secret.get("stringData") or {}).items():
        out[key] = str(value).encode()
    return out


def _image(image: Mapping[str, Any], read: ObjectReader) -> ImageSpec:
    """The image spec without credentials: the pull secrets (``pullSecret`` among them) and
    the mirrors are the Bundle controller's to add (:mod:`pivoter.registries.names`)."""
    ref = str(image.get("ref") or "")
    if not ref:
        raise InvalidSourceError("spec.source.image.ref is required")
    ca = str(image.get("certificateData") or "").encode() or None
    return ImageSpec(
        ref=ref,
        ca_pem=ca,
        insecure_skip_tls_verify=bool(image.get("insecureSkipTLSVerify")),
    )


class _Login:
    """The data of an auth Secret, and its username and password checked as they enter."""

    def __init__(self, auth: Mapping[str, Any], read: ObjectReader, field: str) -> None:
        secret = (auth.get("secret") or {}).get("name")
        where = f"{field}.auth.secret"
        self.data = _secret_data(read, str(secret), where) if secret else {}
        self.username = self._basic(f"{where}: Secret {str(secret)!r}", "username")
        self.password = self._basic(f"{where}: Secret {str(secret)!r}", "password")

    def _basic(self, where: str, key: Literal["username", "password"]) -> str | None:
        value = self.data.get(key)
        if value is None:
            return None
        try:
            return basic_credential(value, where=f"{where} key {key!r}", part=key)
        except InvalidCredential as exc:
            raise InvalidSourceError(str(exc)) from None


def _git(git: Mapping[str, Any], read: ObjectReader) -> GitSpec:
    repository = str(git.get("repository") or "")
    if not repository:
        raise InvalidSourceError("spec.source.git.repository is required")
    ref = git.get("ref") or {}
    chosen = [k for k in ("branch", "tag", "commit") if ref.get(k)]
    if len(chosen) != 1:
        raise InvalidSourceError("spec.source.git.ref needs exactly one of branch, tag, commit")
    auth_spec = git.get("auth") or {}
    login = _Login(auth_spec, read, "spec.source.git")
    data = login.data
    auth = None
    if data or auth_spec.get("insecureSkipVerify"):
        auth = GitAuth(
            username=login.username,
            password=login.password,
            ssh_private_key=data.get("ssh-privatekey"),
            ssh_known_hosts=data.get("ssh-knownhosts"),
            ca_pem=data.get("ca.crt"),
            insecure_skip_verify=bool(auth_spec.get("insecureSkipVerify")),
            allow_plain_http_credentials=bool(auth_spec.get("insecureSendCredentials")),
        )
    return GitSpec(
        repository=repository,
        ref=GitRef(branch=ref.get("branch"), tag=ref.get("tag"), commit=ref.get("commit")),
        directory=str(git.get("directory") or ""),
        auth=auth,
    )


def _http(http: Mapping[str, Any], read: ObjectReader) -> HttpSpec:
    url = str(http.get("url") or "")
    if not url:
        raise InvalidSourceError("spec.source.http.url is required")
    auth_spec = http.get("auth") or {}
    login = _Login(auth_spec, read, "spec.source.http")
    return HttpSpec(
        url=url,
        username=login.username,
        password=login.password,
        ca_pem=login.data.get("ca.crt"),
        insecure_skip_tls_verify=bool(auth_spec.get("insecureSkipVerify")),
        allow_plain_http_credentials=bool(auth_spec.get("insecureSendCredentials")),
    )


def _config_maps(entries: list[Mapping[str, Any]], read: ObjectReader) -> ConfigMapsSpec:
    if not entries:
        raise InvalidSourceError("spec.source.configMaps lists no ConfigMaps")
    contents = []
    for i, entry in enumerate(entries):
        name = str((entry.get("configMap") or {}).get("name") or "")
        field = f"spec.source.configMaps[{i}]"
        if not name:
            raise InvalidSourceError(f"{field}.configMap.name is required")
        config_map = read("ConfigMap", name)
        if config_map is None:
            raise InvalidSourceError(
                f"{field}: ConfigMap {name!r} not found in the system namespace"
            )
        if not config_map.get("immutable"):
            raise InvalidSourceError(
                f"{field}: ConfigMap {name!r} is not immutable; bundle content must not change "
                "under a Bundle (set immutable: true)"
            )
        contents.append(
            ConfigMapContent(
                name=name,
                data=config_map.get("data") or {},
                binary_data=config_map.get("binaryData") or {},
                path=str(entry.get("path") or ""),
            )
        )
    return ConfigMapsSpec(tuple(contents))
