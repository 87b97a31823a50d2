"""What an image must carry to be installed: the verification policy, typed.

A :class:`VerificationPolicy` says, for each registry or repository, which signatures make an
image acceptable, in the shape of containers-policy.json(5) (so that a cluster's existing
``policy.json`` maps onto it one to one, :mod:`.policyjson`) and of Flux's
``OCIRepository.spec.verify`` (keys, or certificate identities for keyless-style signing):

- A :class:`PolicyScope` names a scope (``host[:port]``, a namespace, a repository, one image,
  or a ``*.example.com`` wildcard) and the :class:`SignatureRequirement` s of the images in it.
  The most specific scope that covers an image applies and the others are ignored, in
  containers/image's order: the image itself (``repo:tag`` or ``repo@digest``), its repository,
  each parent namespace, the host, ``*.`` wildcards of the host's domains, ``""``; then the
  policy's default. A scope covers whole path components only (``quay.io/org`` covers
  ``quay.io/org/bundle``, never ``quay.io/organic``).
- Every requirement of the scope must hold (``reject`` refuses, ``insecureAcceptAnything``
  holds for anything); a ``signed`` requirement holds when at least one signature of the image
  verifies with one of its :class:`TrustedKey` s or with a certificate that one of its
  :class:`TrustedIdentity` s accepts (chained to its roots, subject and issuer matching).
- ``mode`` is what the pull does with a refusal: ``enforce`` stops it, ``warn`` goes on and says
  so, ``off`` verifies nothing (no request is made).

Keys are PEM ``PUBLIC KEY`` s (what ``cosign generate-key-pair`` writes as ``cosign.pub``):
ECDSA P-256 and P-384, Ed25519, RSA of 2048 bits or more. A key is named in results by the
SHA-256 of its DER SubjectPublicKeyInfo (:attr:`TrustedKey.fingerprint`), the same for the key
however its PEM is wrapped. Malformed input raises :class:`VerificationPolicyError`, one line
naming the field; keys are public, yet no key material is ever quoted.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from provisioners.errors import InvalidSourceError
from provisioners.registries.reference import ImageReference, parse_reference

__all__ = [
    "IdentityMatch",
    "PolicyScope",
    "ReferenceRule",
    "ReferenceRuleKind",
    "RequirementKind",
    "SignatureRequirement",
    "TrustedIdentity",
    "TrustedKey",
    "VerificationMode",
    "VerificationPolicy",
    "VerificationPolicyError",
    "key_fingerprint",
    "load_certificates",
    "scope_candidates",
]

MIN_RSA_BITS = 2048
MAX_PEM_BYTES = 1 << 20
"""A key or a CA bundle larger than this is not a key or a CA bundle."""
MAX_CERTIFICATES = 64
"""Roots or intermediates of one identity, at most."""


class VerificationPolicyError(InvalidSourceError):
    """A verification policy (its keys, identities, scopes, or a policy.json) is malformed; the
    message names the field and what is wrong, and nothing of it applies until it is fixed."""


class VerificationMode(enum.StrEnum):
    """What a pull does with an image the policy does not accept."""

    ENFORCE = "enforce"
    """Refuse it: nothing of it is unpacked, the input says why."""
    WARN = "warn"
    """Install it and say so (status and Events)."""
    OFF = "off"
    """Verify nothing, fetch nothing: as before verification existed."""

    @classmethod
    def parse(cls, text: str, *, where: str = "mode") -> VerificationMode:
        """The mode named ``text``, or an error naming ``where`` and the accepted values."""
        try:
            return cls(text)
        except ValueError:
            choices = ", ".join(m.value for m in cls)
            raise VerificationPolicyError(
                f"{where}: {text!r} is not a verification mode (one of {choices})"
            ) from None


@dataclass(frozen=True)
class TrustedKey:
    """A public key whose signatures the policy accepts."""

    key: ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey | rsa.RSAPublicKey
    fingerprint: str
    """``sha256:<hex>`` of the key's DER SubjectPublicKeyInfo: how results name the key."""
    name: str = ""
    """Where it came from (``Secret ns/keys, key cosign.pub``), for messages."""

    @classmethod
    def from_pem(cls, data: bytes | str, *, name: str) -> TrustedKey:
        """Load one PEM public key; ``name`` says where it came from (it names errors too)."""
        raw = data.encode() if isinstance(data, str) else data
        if len(raw) > MAX_PEM_BYTES:
            raise VerificationPolicyError(f"{name}: larger than {MAX_PEM_BYTES} bytes")
        try:
            key = serialization.load_pem_public_key(raw)
        except (ValueError, TypeError) as exc:
            kind = type(exc).__name__
            raise VerificationPolicyError(
                f"{name}: not a PEM public key ({kind}); give the PUBLIC KEY block "
                "that cosign generate-key-pair writes as cosign.pub"
            ) from None
        if isinstance(key, ec.EllipticCurvePublicKey):
            if not isinstance(key.curve, ec.SECP256R1 | ec.SECP384R1):
                raise VerificationPolicyError(
                    f"{name}: ECDSA curve {key.curve.name} is not accepted (P-256 or P-384)"
                )
        elif isinstance(key, rsa.RSAPublicKey):
            if key.key_size < MIN_RSA_BITS:
                raise VerificationPolicyError(
                    f"{name}: RSA key of {key.key_size} bits is too weak (at least {MIN_RSA_BITS})"
                )
        elif not isinstance(key, ed25519.Ed25519PublicKey):
            raise VerificationPolicyError(
                f"{name}: {type(key).__name__} keys are not accepted "
                "(ECDSA P-256/P-384, Ed25519 or RSA)"
            )
        return cls(key, key_fingerprint(key), name)

    def __str__(self) -> str:
        return f"key {self.fingerprint}" + (f" ({self.name})" if self.name else "")


def key_fingerprint(
    key: ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey | rsa.RSAPublicKey,
) -> str:
    """``sha256:<hex>`` of the key's DER SubjectPublicKeyInfo."""
    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return f"sha256:{hashlib.sha256(der).hexdigest()}"


@dataclass(frozen=True)
class IdentityMatch:
    """An expected value: exactly ``exact``, or the whole of it matching ``pattern``."""

    exact: str = ""
    pattern: str = ""

    def __post_init__(self) -> None:
        if bool(self.exact) == bool(self.pattern):
            raise VerificationPolicyError("an identity match needs exactly one of exact or regex")
        if self.pattern:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise VerificationPolicyError(
                    f"regex {self.pattern!r} does not compile: {exc}"
                ) from None

    def matches(self, value: str) -> bool:
        """Whether ``value`` is the expected one (a pattern must match all of it)."""
        if self.exact:
            return value == self.exact
        return re.fullmatch(self.pattern, value) is not None

    def __str__(self) -> str:
        return repr(self.exact) if self.exact else f"/{self.pattern}/"


def load_certificates(data: bytes | str, *, name: str) -> tuple[x509.Certificate, ...]:
    """Every certificate of a PEM bundle (at least one, at most :data:`MAX_CERTIFICATES`)."""
    raw = data.encode() if isinstance(data, str) else data
    if len(raw) > MAX_PEM_BYTES:
        raise VerificationPolicyError(f"{name}: larger than {MAX_PEM_BYTES} bytes")
    try:
        certificates = tuple(x509.load_pem_x509_certificates(raw))
    except ValueError:
        raise VerificationPolicyError(f"{name}: not a PEM bundle of certificates") from None
    if len(certificates) > MAX_CERTIFICATES:
        raise VerificationPolicyError(
            f"{name}: {len(certificates)} certificates, more than {MAX_CERTIFICATES}"
        )
    return certificates


@dataclass(frozen=True)
class TrustedIdentity:
    """Certificates the policy accepts: chained to one of ``roots`` (through ``intermediates``
    or the chain the signature carries), with code signing usage, a subject alternative name
    (email, URI or DNS name) that ``subject`` matches and, when ``issuer`` is set, the OIDC
    issuer Fulcio records (extension 1.3.6.1.4.1.57264.1.8, or the older .1.1) matching it."""

    roots: tuple[x509.Certificate, ...]
    subject: IdentityMatch
    issuer: IdentityMatch | None = None
    intermediates: tuple[x509.Certificate, ...] = ()
    name: str = ""

    def __post_init__(self) -> None:
        if not self.roots:
            raise VerificationPolicyError(
                f"{self.name or 'certificate identity'}: no root certificate to chain to"
            )

    def __str__(self) -> str:
        text = f"subject {self.subject}"
        if self.issuer is not None:
            text += f" issued by {self.issuer}"
        return text + (f" ({self.name})" if self.name else "")


class ReferenceRuleKind(enum.StrEnum):
    """containers-policy.json's ``signedIdentity`` types."""

    MATCH_EXACT = "matchExact"
    MATCH_REPO_DIGEST_OR_EXACT = "matchRepoDigestOrExact"
    MATCH_REPOSITORY = "matchRepository"
    EXACT_REFERENCE = "exactReference"
    EXACT_REPOSITORY = "exactRepository"
    REMAP_IDENTITY = "remapIdentity"


@dataclass(frozen=True)
class ReferenceRule:
    """Which image a signature must claim (the simple-signing payload's
    ``critical.identity.docker-reference``), as containers/image checks ``signedIdentity``.

    ``value`` is the ``dockerReference`` / ``dockerRepository`` of the exact kinds; ``prefix``
    and ``signed_prefix`` belong to ``remapIdentity``."""

    kind: ReferenceRuleKind
    value: str = ""
    prefix: str = ""
    signed_prefix: str = ""

    def accepts(self, image: ImageReference, claimed: str) -> bool:
        """Whether a signature claiming ``claimed`` may sign ``image`` (the reference asked
        for, not a mirror's)."""
        claim = _Claim.parse(claimed)
        if claim is None:
            return False
        name = f"{image.registry}/{image.repository}"
        kind = self.kind
        if kind is ReferenceRuleKind.REMAP_IDENTITY:
            if _covers(self.prefix, name):
                name = self.signed_prefix + name[len(self.prefix) :]
            kind = ReferenceRuleKind.MATCH_REPO_DIGEST_OR_EXACT
        if kind is ReferenceRuleKind.MATCH_REPOSITORY:
            return claim.name == name
        if kind is ReferenceRuleKind.EXACT_REPOSITORY:
            return claim.name == self.value
        if kind is ReferenceRuleKind.EXACT_REFERENCE:
            return claim == _Claim.parse(self.value)
        exact = _Claim(name, image.tag if not image.digest else None, image.digest)
        if kind is ReferenceRuleKind.MATCH_REPO_DIGEST_OR_EXACT and image.digest:
            return claim.name == name
        return claim == exact

    def __str__(self) -> str:
        detail = self.value or (f"{self.prefix} -> {self.signed_prefix}" if self.prefix else "")
        return f"signedIdentity {self.kind.value}" + (f" {detail}" if detail else "")


@dataclass(frozen=True)
class _Claim:
    """A reference as a signature states it: name, and the tag or digest it really wrote (no
    ``latest`` filled in)."""

    name: str
    tag: str | None
    digest: str | None

    @classmethod
    def parse(cls, text: str) -> _Claim | None:
        try:
            parsed = parse_reference(text)
        except InvalidSourceError:
            return None
        name = f"{parsed.registry}/{parsed.repository}"
        bare = text.split("@", 1)[0]
        tagged = bare.rfind(":") > bare.rfind("/")
        return cls(name, parsed.tag if tagged else None, parsed.digest)


class RequirementKind(enum.StrEnum):
    """The three kinds of requirement an image can be held to."""

    ACCEPT_ANYTHING = "insecureAcceptAnything"
    REJECT = "reject"
    SIGNED = "signed"


@dataclass(frozen=True)
class SignatureRequirement:
    """One requirement of a scope (see the module docstring)."""

    kind: RequirementKind
    keys: tuple[TrustedKey, ...] = ()
    identities: tuple[TrustedIdentity, ...] = ()
    reference: ReferenceRule | None = None
    """The identity a signature must claim; None: not checked (cosign's own rule: the signed
    digest is what binds the signature to the image, wherever it was copied)."""

    @classmethod
    def signed(
        cls,
        *,
        keys: Iterable[TrustedKey] = (),
        identities: Iterable[TrustedIdentity] = (),
        reference: ReferenceRule | None = None,
        where: str = "requirement",
    ) -> SignatureRequirement:
        """A requirement met by a signature from one of ``keys`` or ``identities``."""
        requirement = cls(RequirementKind.SIGNED, tuple(keys), tuple(identities), reference)
        if not requirement.keys and not requirement.identities:
            raise VerificationPolicyError(f"{where}: names no key and no certificate identity")
        return requirement

    def __str__(self) -> str:
        if self.kind is not RequirementKind.SIGNED:
            return self.kind.value
        parts = [str(k) for k in self.keys] + [str(i) for i in self.identities]
        return "signed by " + " or ".join(parts)


ACCEPT_ANYTHING = SignatureRequirement(RequirementKind.ACCEPT_ANYTHING)
REJECT = SignatureRequirement(RequirementKind.REJECT)


@dataclass(frozen=True)
class PolicyScope:
    """The requirements of the images a scope covers (``""``: every image)."""

    scope: str
    requirements: tuple[SignatureRequirement, ...]

    def __post_init__(self) -> None:
        if not self.requirements:
            raise VerificationPolicyError(f"scope {self.scope!r}: no requirement")
        if self.scope != self.scope.strip() or "//" in self.scope or self.scope.endswith("/"):
            raise VerificationPolicyError(f"scope {self.scope!r}: not a registry/repository prefix")
        if self.scope.startswith("*.") and "/" in self.scope:
            raise VerificationPolicyError(
                f"scope {self.scope!r}: a wildcard scope names a host's domain only"
            )


@dataclass(frozen=True)
class VerificationPolicy:
    """The policy of a pull: a mode, scopes, and the requirements of images no scope covers."""

    mode: VerificationMode
    scopes: tuple[PolicyScope, ...] = ()
    default: tuple[SignatureRequirement, ...] = ()
    """For images no scope covers; empty: such an image is refused (nothing says how to trust
    it)."""
    name: str = "the verification policy"
    """How messages name it (``ClusterCatalog operators, verification policy``,
    ``policy.json /etc/containers/policy.json``)."""
    _by_scope: dict[str, PolicyScope] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_scope: dict[str, PolicyScope] = {}
        for scope in self.scopes:
            if scope.scope in by_scope:
                raise VerificationPolicyError(f"{self.name}: scope {scope.scope!r} given twice")
            by_scope[scope.scope] = scope
        object.__setattr__(self, "_by_scope", by_scope)

    @classmethod
    def keyed(
        cls,
        mode: VerificationMode,
        *,
        keys: Sequence[TrustedKey] = (),
        identities: Sequence[TrustedIdentity] = (),
        scope: str = "",
        name: str = "the verification policy",
    ) -> VerificationPolicy:
        """The common policy: images under ``scope`` (every image when empty) must be signed by
        one of ``keys`` or ``identities``; images outside it are refused."""
        requirement = SignatureRequirement.signed(keys=keys, identities=identities, where=name)
        return cls(mode, (PolicyScope(scope, (requirement,)),), name=name)

    def requirements_for(
        self, image: ImageReference
    ) -> tuple[str | None, tuple[SignatureRequirement, ...]]:
        """The scope that covers ``image`` (None: the default) and its requirements."""
        for candidate in scope_candidates(image):
            scope = self._by_scope.get(candidate)
            if scope is not None:
                return scope.scope, scope.requirements
        return None, self.default


def _covers(prefix: str, name: str) -> bool:
    """Whether ``prefix`` is ``name`` or a whole-component prefix of it."""
    return name == prefix or name.startswith(prefix + "/")


def scope_candidates(image: ImageReference) -> list[str]:
    """The scopes that may cover ``image``, most specific first (containers/image's order)."""
    name = f"{image.registry}/{image.repository}"
    candidates = [f"{name}@{image.digest}" if image.digest else f"{name}:{image.tag}"]
    while True:
        candidates.append(name)
        slash = name.rfind("/")
        if slash < 0:
            break
        name = name[:slash]
    host = name.split(":", 1)[0] if not name.startswith("[") else name
    while "." in host:
        host = host.split(".", 1)[1]
        candidates.append(f"*.{host}")
    candidates.append("")
    return candidates
