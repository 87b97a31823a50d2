"""A cluster's containers-policy.json(5), read into a :class:`~.policy.VerificationPolicy`.

A cluster that already states what its nodes may run (``/etc/containers/policy.json``) keeps that
policy for what pivoter installs. The file is read as containers/image reads it: strictly (an
unknown or misplaced field refuses the whole file; a policy half understood is one nobody wrote),
``default`` mandatory, the ``docker`` transport's scopes looked up most specific first
(:func:`~.policy.scope_candidates`). Other transports (``atomic``, ``dir``, ``oci``, ...) describe
images pivoter never pulls and are skipped once checked to be objects.

Requirements:

- ``insecureAcceptAnything`` and ``reject``: as upstream.
- ``sigstoreSigned`` with ``keyPath`` / ``keyPaths`` / ``keyData`` / ``keyDatas`` (public keys),
  ``fulcio`` (``caPath``/``caData``, ``oidcIssuer``, ``subjectEmail``) or ``pki``
  (``caRootsPath``/``caRootsData``, ``caIntermediatesPath``/``caIntermediatesData``, one of
  ``subjectEmail``/``subjectHostname``), and ``signedIdentity`` (default
  ``matchRepoDigestOrExact``; cosign's payloads name a repository only, so upstream documents
  ``matchRepository`` or ``exactRepository`` for them, and so do we).
- Not supported, refused with a line that says so: ``signedBy`` (GPG simple signing: pivoter
  verifies Sigstore signatures only), and ``rekorPublicKey*`` (verification here is offline: a
  policy that requires Rekor inclusion would be silently weakened if the field were skipped).

``*Path`` fields are read through ``read_file`` (the node's files in the daemon; a test's
mapping in tests); ``*Data`` fields are base64 as in the Go original.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from provisioners.verification.policy import (
    ACCEPT_ANYTHING,
    MAX_PEM_BYTES,
    REJECT,
    IdentityMatch,
    PolicyScope,
    ReferenceRule,
    ReferenceRuleKind,
    SignatureRequirement,
    TrustedIdentity,
    TrustedKey,
    VerificationMode,
    VerificationPolicy,
    VerificationPolicyError,
    load_certificates,
)
from resolver import safedata, safefiles

__all__ = ["MAX_POLICY_JSON_BYTES", "read_policy_json"]

MAX_POLICY_JSON_BYTES = 4 << 20
_LIMITS = safedata.Limits(max_bytes=MAX_POLICY_JSON_BYTES, max_depth=16)

ReadFile = Callable[[str], bytes]


def _read_node_file(path: str) -> bytes:
    """A key or certificate file a policy names (an absolute path on this machine), read as
    every untrusted file is (resolver.safefiles: no device, FIFO or oversized file)."""
    return safefiles.read_bytes(
        Path(path).anchor or "/", path, max_bytes=MAX_PEM_BYTES, what="key or certificate file"
    )


def read_policy_json(
    data: bytes | str,
    *,
    name: str,
    mode: VerificationMode = VerificationMode.ENFORCE,
    read_file: ReadFile = _read_node_file,
) -> VerificationPolicy:
    """The policy ``data`` (a policy.json) states; ``name`` (its path or object) names errors."""
    try:
        document = safedata.load_json(data, limits=_LIMITS, where=name)
    except safedata.SafeDataError as exc:
        raise VerificationPolicyError(f"policy.json {exc}") from None
    reader = _Reader(name, read_file)
    top = reader.object(document, "")
    reader.only(top, "", {"default", "transports"})
    if "default" not in top:
        raise VerificationPolicyError(f"{name}: default: missing (it is mandatory)")
    default = reader.requirements(top["default"], "default")
    scopes: list[PolicyScope] = []
    transports = reader.object(top.get("transports", {}), "transports")
    for transport, value in transports.items():
        where = f"transports.{transport}"
        table = reader.object(value, where)
        if transport != "docker":
            continue  # images pivoter never pulls (see the module docstring)
        for scope, requirements in table.items():
            at = f"{where}[{scope!r}]"
            if scope.startswith("*.") and ("/" in scope or "*" in scope[2:]):
                raise VerificationPolicyError(f"{name}: {at}: a wildcard scope is *.domain only")
            try:
                scopes.append(PolicyScope(scope, reader.requirements(requirements, at)))
            except VerificationPolicyError as exc:
                if str(exc).startswith(name):
                    raise
                raise VerificationPolicyError(f"{name}: {at}: {exc}") from None
    return VerificationPolicy(mode, tuple(scopes), default, name=f"policy.json {name}")


class _Reader:
    """Reads the parts of one file, naming each error by its path in the document."""

    def __init__(self, name: str, read_file: ReadFile) -> None:
        self.name = name
        self.read_file = read_file

    def fail(self, where: str, problem: str) -> VerificationPolicyError:
        return VerificationPolicyError(f"{self.name}: {where or 'the document'}: {problem}")

    def object(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"must be an object, not {_kind(value)}")
        return value

    def only(self, value: Mapping[str, Any], where: str, allowed: set[str]) -> None:
        unknown = sorted(set(value) - allowed)
        if unknown:
            raise self.fail(f"{where}.{unknown[0]}" if where else unknown[0], "unknown field")

    def string(self, value: Mapping[str, Any], key: str, where: str) -> str:
        text = value.get(key, "")
        if not isinstance(text, str):
            raise self.fail(f"{where}.{key}", f"must be a string, not {_kind(text)}")
        return text

    def requirements(self, value: Any, where: str) -> tuple[SignatureRequirement, ...]:
        if not isinstance(value, list) or not value:
            raise self.fail(where, "must be a non-empty list of requirements")
        return tuple(self.requirement(item, f"{where}[{i}]") for i, item in enumerate(value))

    def requirement(self, value: Any, where: str) -> SignatureRequirement:
        item = self.object(value, where)
        kind = item.get("type")
        if kind == "insecureAcceptAnything":
            self.only(item, where, {"type"})
            return ACCEPT_ANYTHING
        if kind == "reject":
            self.only(item, where, {"type"})
            return REJECT
        if kind == "signedBy":
            raise self.fail(
                f"{where}.type",
                "signedBy (GPG simple signing) is not supported: pivoter verifies Sigstore "
                "(cosign) signatures; use sigstoreSigned",
            )
        if kind == "sigstoreSigned":
            return self.sigstore(item, where)
        raise self.fail(f"{where}.type", f"unknown requirement type {kind!r}")

    def sigstore(self, item: Mapping[str, Any], where: str) -> SignatureRequirement:
        key_fields = ("keyPath", "keyPaths", "keyData", "keyDatas")
        rekor = (
            "rekorPublicKeyPath",
            "rekorPublicKeyPaths",
            "rekorPublicKeyData",
            "rekorPublicKeyDatas",
        )
        self.only(item, where, {"type", "fulcio", "pki", "signedIdentity", *key_fields, *rekor})
        for field in rekor:
            if field in item:
                raise self.fail(
                    f"{where}.{field}",
                    "Rekor inclusion is not verified (pivoter verifies offline, against the "
                    "keys and certificates of the policy); remove it to accept signatures "
                    "without the log",
                )
        given = [f for f in (*key_fields, "fulcio", "pki") if f in item]
        if len(given) != 1:
            listed = ", ".join(given) if given else "none"
            raise self.fail(
                where,
                "needs exactly one of keyPath, keyPaths, keyData, keyDatas, fulcio, pki "
                f"(given: {listed})",
            )
        reference = self.signed_identity(item.get("signedIdentity"), f"{where}.signedIdentity")
        source = given[0]
        at = f"{where}.{source}"
        if source == "fulcio":
            identity = self.fulcio(self.object(item[source], at), at)
            return SignatureRequirement.signed(identities=[identity], reference=reference)
        if source == "pki":
            identity = self.pki(self.object(item[source], at), at)
            return SignatureRequirement.signed(identities=[identity], reference=reference)
        keys = [TrustedKey.from_pem(pem, name=label) for label, pem in self.key_sources(item, at)]
        return SignatureRequirement.signed(keys=keys, reference=reference, where=where)

    def key_sources(self, item: Mapping[str, Any], at: str) -> list[tuple[str, bytes]]:
        field = at.rsplit(".", 1)[1]
        value = item[field]
        if field in ("keyPath", "keyData"):
            values = [value]
        elif not isinstance(value, list) or not value:
            raise self.fail(at, "must be a non-empty list")
        else:
            values = value
        found: list[tuple[str, bytes]] = []
        for number, entry in enumerate(values):
            label = at if field in ("keyPath", "keyData") else f"{at}[{number}]"
            if not isinstance(entry, str) or not entry:
                raise self.fail(label, "must be a non-empty string")
            if field.startswith("keyPath"):
                found.append((f"{self.name}: {label} {entry}", self.file(entry, label)))
            else:
                found.append((f"{self.name}: {label}", self.base64(entry, label)))
        return found

    def file(self, path: str, where: str) -> bytes:
        try:
            return self.read_file(path)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise self.fail(where, f"cannot read {path}: {reason}") from None

    def base64(self, text: str, where: str) -> bytes:
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise self.fail(where, "is not base64") from None

    def pem(self, item: Mapping[str, Any], path_field: str, data_field: str, where: str) -> bytes:
        path, data = item.get(path_field), item.get(data_field)
        if (path is None) == (data is None):
            raise self.fail(where, f"needs exactly one of {path_field} and {data_field}")
        if path is not None:
            if not isinstance(path, str) or not path:
                raise self.fail(f"{where}.{path_field}", "must be a non-empty string")
            return self.file(path, f"{where}.{path_field}")
        if not isinstance(data, str) or not data:
            raise self.fail(f"{where}.{data_field}", "must be a non-empty string")
        return self.base64(data, f"{where}.{data_field}")

    def fulcio(self, item: Mapping[str, Any], where: str) -> TrustedIdentity:
        self.only(item, where, {"caPath", "caData", "oidcIssuer", "subjectEmail"})
        roots = load_certificates(
            self.pem(item, "caPath", "caData", where), name=f"{self.name}: {where}"
        )
        issuer = self.string(item, "oidcIssuer", where)
        email = self.string(item, "subjectEmail", where)
        if not issuer or not email:
            missing = "oidcIssuer" if not issuer else "subjectEmail"
            raise self.fail(
                f"{where}.{missing}", "missing (fulcio needs oidcIssuer and subjectEmail)"
            )
        return TrustedIdentity(
            roots,
            IdentityMatch(exact=email),
            IdentityMatch(exact=issuer),
            name=f"{self.name}: {where}",
        )

    def pki(self, item: Mapping[str, Any], where: str) -> TrustedIdentity:
        allowed = {"caRootsPath", "caRootsData", "caIntermediatesPath", "caIntermediatesData"}
        self.only(item, where, allowed | {"subjectEmail", "subjectHostname"})
        label = f"{self.name}: {where}"
        roots = load_certificates(self.pem(item, "caRootsPath", "caRootsData", where), name=label)
        intermediates: tuple[Any, ...] = ()
        if "caIntermediatesPath" in item or "caIntermediatesData" in item:
            intermediates = load_certificates(
                self.pem(item, "caIntermediatesPath", "caIntermediatesData", where), name=label
            )
        email = self.string(item, "subjectEmail", where)
        hostname = self.string(item, "subjectHostname", where)
        if bool(email) == bool(hostname):
            raise self.fail(
                where, "needs one of subjectEmail and subjectHostname (both are not supported)"
            )
        return TrustedIdentity(
            roots,
            IdentityMatch(exact=email or hostname),
            None,
            intermediates,
            name=label,
        )

    def signed_identity(self, value: Any, where: str) -> ReferenceRule:
        if value is None:
            return ReferenceRule(ReferenceRuleKind.MATCH_REPO_DIGEST_OR_EXACT)
        item = self.object(value, where)
        try:
            kind = ReferenceRuleKind(str(item.get("type")))
        except ValueError:
            raise self.fail(
                f"{where}.type", f"unknown signedIdentity type {item.get('type')!r}"
            ) from None
        if kind is ReferenceRuleKind.EXACT_REFERENCE:
            self.only(item, where, {"type", "dockerReference"})
            return ReferenceRule(kind, self.required(item, "dockerReference", where))
        if kind is ReferenceRuleKind.EXACT_REPOSITORY:
            self.only(item, where, {"type", "dockerRepository"})
            return ReferenceRule(kind, self.required(item, "dockerRepository", where))
        if kind is ReferenceRuleKind.REMAP_IDENTITY:
            self.only(item, where, {"type", "prefix", "signedPrefix"})
            return ReferenceRule(
                kind,
                prefix=self.required(item, "prefix", where),
                signed_prefix=self.required(item, "signedPrefix", where),
            )
        self.only(item, where, {"type"})
        return ReferenceRule(kind)

    def required(self, item: Mapping[str, Any], key: str, where: str) -> str:
        text = self.string(item, key, where)
        if not text:
            raise self.fail(f"{where}.{key}", "missing")
        return text


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )
