"""The cluster's verification policy: what every catalog and bundle image pull must be signed by.

The policy lives in one ConfigMap in pivoter's namespace, :data:`CONFIG_MAP`
(``pivoter-verification``), read at every pull like the pull secrets
(:mod:`pivoter.registries.access`): a changed mode, a key added to or removed from its Secret
(a rotation) applies to the next pull, with no restart and nothing to touch on the objects that
pull. No ConfigMap: nothing is verified (mode ``off``, as before verification existed).

``data`` (every other key refuses the ConfigMap, so a typo never weakens the policy):

- ``mode``: ``enforce`` (nothing unverified is unpacked; the object that pulled says why),
  ``warn`` (install it, and say so in status and an Event) or ``off``. Required.
- Then either ``policy.json``: a containers-policy.json(5) (:mod:`provisioners.verification.
  policyjson`; ``keyPath``/``caPath`` name files in the daemon's container, ``keyData`` inline),
  so a cluster that has one keeps it, or ``policyPath``: the path of such a file in the daemon's
  container (a node's ``/etc/containers/policy.json`` mounted there), read at every pull; or
  the short form: ``keys``, the name of a Secret in pivoter's namespace whose entries ending in
  ``.pub`` are trusted public keys (what ``cosign generate-key-pair`` writes as ``cosign.pub``),
  and/or ``roots`` (a Secret whose entries ending in ``.crt`` or ``.pem`` are root certificates)
  with ``subject`` and optionally ``issuer`` (regular expressions the signing certificate's
  subject alternative name and OIDC issuer must match wholly: the shape of keyless signing,
  verified offline). In the short form every image must be signed by one of them.

Three levels, combined: the cluster's ConfigMap; a catalog's (annotation :data:`ANNOTATION` on a
Catalog or ClusterCatalog), for its own image and the bundle images it offers; an input's (the
same annotation on a Resolution, PlatformOperator or ClusterExtension, or on a BundleDeployment's
``spec.template`` for its Bundle), for its bundles. Each names a ConfigMap of the same format in
pivoter's namespace, labelled :data:`LABEL_POLICY` ``=true`` (so that nobody points pivoter at
another ConfigMap of its namespace). Every level that applies must accept an image: a catalog or
an input can ask for more than the cluster's policy, never for less, so naming a policy gives no
one a way around the admin's.

A ConfigMap that cannot be used (unknown key, bad mode, a Secret missing or holding no key, a
malformed key or certificate) fails every pull with one line naming the field, under any mode
but ``off``: a cluster that asked for verification never falls back to accepting anything.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pivoter.apis.resources import CONFIG_MAPS, SECRETS
from pivoter.kube import Kube, NotFound
from provisioners.verification import (
    IdentityMatch,
    TrustedIdentity,
    TrustedKey,
    VerificationMode,
    VerificationPolicy,
    VerificationPolicyError,
    load_certificates,
    read_policy_json,
)
from provisioners.verification.policyjson import MAX_POLICY_JSON_BYTES
from resolver import safefiles

__all__ = [
    "ANNOTATION",
    "CONFIG_MAP",
    "LABEL_POLICY",
    "ReadSecret",
    "VerificationPolicyProvider",
    "named_policy",
    "policy_from_config_map",
]

CONFIG_MAP = "pivoter-verification"
ANNOTATION = "pivoter.io/verification"
"""On a Catalog, a ClusterCatalog, an input or a Bundle: the name of a policy ConfigMap (same
format, labelled :data:`LABEL_POLICY`) that its images must also pass."""
LABEL_POLICY = "pivoter.io/verification-policy"
KEYS = frozenset({"mode", "policy.json", "policyPath", "keys", "roots", "subject", "issuer"})
MAX_ENTRIES = 64
"""Keys or certificate files one Secret may hold for the policy."""

ReadSecret = Callable[[str, str], Mapping[str, bytes]]
"""``(name, where)``: a Secret's decoded data; raises naming ``where`` when it cannot."""


@dataclass(frozen=True)
class VerificationPolicyProvider:
    """Reads the cluster's verification policy for one pull (see the module docstring)."""

    kube: Kube
    namespace: str
    """pivoter's namespace: where the ConfigMap and the Secrets it names live."""

    def policy(self) -> VerificationPolicy | None:
        """The cluster's policy as it is now; None: no ConfigMap (nothing verified). Raises
        :class:`VerificationPolicyError` for one that cannot be used."""
        try:
            config_map = self.kube.get(CONFIG_MAPS, CONFIG_MAP, self.namespace)
        except NotFound:
            return None
        return policy_from_config_map(config_map, self._secret)

    def named(self, name: str, where: str) -> VerificationPolicy | None:
        """The policy a catalog or an input names (``where``: which object and annotation);
        the ConfigMap must be labelled :data:`LABEL_POLICY` ``=true`` (no other ConfigMap of
        pivoter's namespace can be named). None under mode ``off``."""
        at = f"{where}: ConfigMap {self.namespace}/{name}"
        try:
            config_map = self.kube.get(CONFIG_MAPS, name, self.namespace)
        except NotFound:
            raise VerificationPolicyError(f"{at} not found") from None
        labels = (config_map.get("metadata") or {}).get("labels") or {}
        if labels.get(LABEL_POLICY) != "true":
            raise VerificationPolicyError(
                f"{at} is not a verification policy (it lacks the label {LABEL_POLICY}=true)"
            )
        return policy_from_config_map(config_map, self._secret)

    def policies(self, *named: tuple[str, str]) -> tuple[VerificationPolicy, ...]:
        """The cluster's policy and each ``(name, where)`` named one (empty names skipped), as
        they are now: every one of them must accept an image."""
        found = [self.policy(), *(self.named(name, where) for name, where in named if name)]
        return tuple(p for p in found if p is not None)

    def _secret(self, name: str, where: str) -> Mapping[str, bytes]:
        try:
            secret = self.kube.get(SECRETS, name, self.namespace)
        except NotFound:
            raise VerificationPolicyError(
                f"{where}: Secret {self.namespace}/{name} not found"
            ) from None
        data: dict[str, bytes] = {}
        for key, value in (secret.get("data") or {}).items():
            try:
                data[str(key)] = base64.b64decode(str(value), validate=True)
            except (binascii.Error, ValueError):
                raise VerificationPolicyError(
                    f"{where}: Secret {self.namespace}/{name} key {key!r} is not base64"
                ) from None
        return data


def policy_from_config_map(
    config_map: Mapping[str, Any], read_secret: ReadSecret
) -> VerificationPolicy | None:
    """The policy a ``pivoter-verification`` ConfigMap states (None under mode ``off``);
    ``read_secret(name, where)`` gives a Secret's decoded data."""
    meta = config_map.get("metadata") or {}
    where = f"ConfigMap {meta.get('namespace', '')}/{meta.get('name', CONFIG_MAP)}"
    data = {str(k): str(v) for k, v in (config_map.get("data") or {}).items()}
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise VerificationPolicyError(
            f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(KEYS))})"
        )
    if "mode" not in data:
        raise VerificationPolicyError(f"{where}: mode: missing (enforce, warn or off)")
    mode = VerificationMode.parse(data["mode"].strip(), where=f"{where}: mode")
    if mode is VerificationMode.OFF:
        return None
    given = [k for k in ("policy.json", "policyPath") if k in data]
    if given:
        if len(given) > 1 or (KEYS - {"mode", given[0]}) & set(data):
            raise VerificationPolicyError(
                f"{where}: {given[0]} and {(sorted(set(data) - {'mode', given[0]}))[0]} are "
                "exclusive (one policy.json, or the short form)"
            )
        if given[0] == "policyPath":
            path = data["policyPath"].strip()
            text = _policy_file(path, f"{where}: policyPath")
            return read_policy_json(text, name=f"{where}, policyPath {path}", mode=mode)
        return read_policy_json(data["policy.json"], name=f"{where}, key policy.json", mode=mode)
    keys: list[TrustedKey] = []
    if data.get("keys"):
        at = f"{where}: keys"
        for entry, value in _entries(read_secret(data["keys"].strip(), at), (".pub",), at):
            keys.append(TrustedKey.from_pem(value, name=f"Secret {data['keys'].strip()}, {entry}"))
    identities: list[TrustedIdentity] = []
    if data.get("roots") or data.get("subject") or data.get("issuer"):
        identities.append(_identity(data, read_secret, where))
    if not keys and not identities:
        raise VerificationPolicyError(
            f"{where}: names no key and no certificate identity (give keys, or roots and "
            "subject, or policy.json)"
        )
    return VerificationPolicy.keyed(mode, keys=keys, identities=identities, name=where)


def _identity(data: Mapping[str, str], read_secret: ReadSecret, where: str) -> TrustedIdentity:
    if not data.get("roots") or not data.get("subject"):
        raise VerificationPolicyError(f"{where}: a certificate identity needs roots and subject")
    at = f"{where}: roots"
    name = data["roots"].strip()
    roots = tuple(
        certificate
        for entry, value in _entries(read_secret(name, at), (".crt", ".pem"), at)
        for certificate in load_certificates(value, name=f"Secret {name}, {entry}")
    )
    try:
        subject = IdentityMatch(pattern=data["subject"].strip())
        issuer = IdentityMatch(pattern=data["issuer"].strip()) if data.get("issuer") else None
    except VerificationPolicyError as exc:
        raise VerificationPolicyError(f"{where}: {exc}") from None
    return TrustedIdentity(roots, subject, issuer, name=f"Secret {name}")


def _entries(
    data: Mapping[str, bytes], suffixes: tuple[str, ...], where: str
) -> list[tuple[str, bytes]]:
    chosen = sorted((k, v) for k, v in data.items() if k.endswith(suffixes))
    if not chosen:
        raise VerificationPolicyError(f"{where}: the Secret has no entry ending in {suffixes[0]}")
    if len(chosen) > MAX_ENTRIES:
        raise VerificationPolicyError(f"{where}: more than {MAX_ENTRIES} entries")
    return chosen


def named_policy(obj: Mapping[str, Any], kind: str) -> tuple[str, str]:
    """``(name, where)`` of the policy ``obj`` (of ``kind``) names in :data:`ANNOTATION`
    (``("", ...)`` when none), for :meth:`VerificationPolicyProvider.policies`."""
    meta = obj.get("metadata") or {}
    name = str((meta.get("annotations") or {}).get(ANNOTATION) or "").strip()
    return name, f"{kind} {meta.get('name', '')} annotation {ANNOTATION}"


def _policy_file(path: str, where: str) -> bytes:
    """A policy.json on the daemon's file system (a node's ``/etc/containers/policy.json``
    mounted into its container), read at every pull as every untrusted file is."""
    if not path.startswith("/"):
        raise VerificationPolicyError(f"{where}: {path!r} is not an absolute path")
    try:
        return safefiles.read_bytes("/", path, max_bytes=MAX_POLICY_JSON_BYTES, what="policy.json")
    except (OSError, ValueError) as exc:
        raise VerificationPolicyError(f"{where}: cannot read {path}: {exc}") from None
