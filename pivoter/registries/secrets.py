"""Pull secrets as pivoter finds them in the cluster: read, checked and named, never copied.

A :class:`PullSecretRef` names a Secret of type ``kubernetes.io/dockerconfigjson`` (key
``.dockerconfigjson``) or ``kubernetes.io/dockercfg`` (key ``.dockercfg``) and says what to do
when it is missing: a Secret that an object names itself (a Bundle's ``pullSecret``, a Catalog's,
a ClusterCatalog's annotation) is required, and its absence is an error naming the field to fix;
the secrets pivoter only offers (the global pull secret, a service account's
``imagePullSecrets``, as the kubelet treats them) are skipped when missing.

:func:`read_auth_file` returns the Secret parsed into an
:class:`~provisioners.registries.auth.AuthFile` whose ``source`` is ``Secret <ns>/<name>``:
what every message about a credential says instead of its value.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from pivoter.apis.resources import SECRETS
from pivoter.kube import Forbidden, Kube, NotFound
from provisioners.errors import InvalidSourceError
from provisioners.registries.auth import AuthFile

__all__ = [
    "DOCKER_CONFIG_KEYS",
    "PullSecretRef",
    "UnusablePullSecret",
    "parse_refs",
    "read_auth_file",
]

DOCKER_CONFIG_KEYS = (".dockerconfigjson", ".dockercfg")
"""The keys of a pull secret, in the order they are looked for."""


class UnusablePullSecret(InvalidSourceError):
    """A Secret that a pull must use is missing or malformed: fixing the Secret fixes the pull
    (the Bundle controller looks again soon rather than backing off)."""


@dataclass(frozen=True, slots=True)
class PullSecretRef:
    """One pull secret to read, and how its absence is treated."""

    namespace: str
    name: str
    required: bool = False
    """True: a missing Secret is an error (the object named it); False: it is skipped."""
    field: str = ""
    """Where the reference was written, for errors (e.g. ``spec.source.image.pullSecret``)."""

    def __str__(self) -> str:
        return f"Secret {self.namespace}/{self.name}"


def parse_refs(text: str, *, field: str) -> list[PullSecretRef]:
    """``NAMESPACE/NAME[,NAMESPACE/NAME...]`` (an annotation's value) as required references.

    Raises :class:`InvalidSourceError` naming ``field`` for an entry that is not
    ``namespace/name``.
    """
    refs = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        namespace, sep, name = item.partition("/")
        if not sep or not namespace or not name or "/" in name:
            raise InvalidSourceError(f"{field}: {item[:100]!r} is not NAMESPACE/NAME")
        refs.append(PullSecretRef(namespace, name, required=True, field=field))
    return refs


def read_auth_file(kube: Kube, ref: PullSecretRef) -> AuthFile | None:
    """The Secret ``ref`` names as an :class:`AuthFile`; None when it is missing and optional.

    Raises :class:`UnusablePullSecret` (naming the field, the Secret and the key, never a value)
    when a required Secret is missing, when pivoter may not read a Secret (required or not: an
    offered Secret that cannot be read is a setup to fix, not one to skip), and when a Secret
    has no docker config key or holds a malformed one.
    """
    where = f"{ref.field}: {ref}" if ref.field else str(ref)
    try:
        secret = kube.get(SECRETS, ref.name, ref.namespace)
    except NotFound:
        if ref.required:
            raise UnusablePullSecret(f"{where} not found") from None
        return None
    except Forbidden:
        raise UnusablePullSecret(
            f"{where}: pivoter may not read it (grant its service account get on that Secret; "
            "docs/registries.md)"
        ) from None
    data = secret.get("data") or {}
    for key in DOCKER_CONFIG_KEYS:
        value = data.get(key)
        if not value:
            continue
        try:
            raw = base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            raise UnusablePullSecret(f"{where} key {key!r} is not base64") from None
        try:
            return AuthFile.parse(raw, f"{where} key {key!r}")
        except InvalidSourceError as exc:
            raise UnusablePullSecret(str(exc)) from None
    if ref.required:
        raise UnusablePullSecret(f"{where} has no .dockerconfigjson or .dockercfg key")
    return None
