"""Verify the image a pull opened against the verification policy, before anything is unpacked.

:func:`verify_opened` is the call the pull makes once :func:`provisioners.registries.open_image`
has the top manifest: it verifies the digest of *that* manifest (``Opened.top.digest``), which
the pull then unpacks, so what is verified is what is used, never the tag resolved again.
:func:`verify_image` is the same over any :class:`~.discovery.SignatureStore`.

For the image (as the catalog names it: a mirror's copy is held to the source's policy) the
policy's most specific scope gives the requirements (:meth:`~.policy.VerificationPolicy.
requirements_for`); each must hold. A ``signed`` requirement holds when one signature found
(:func:`~.discovery.find_signatures`) passes, in this order:

1. it signs the pulled digest (``critical.image.docker-manifest-digest``, or an in-toto
   statement's subject): a signature of another image, or one left behind by a moved tag, is
   not this image's;
2. the image identity it claims is one the requirement's ``signedIdentity`` accepts (policy.json
   only; cosign itself checks the digest alone);
3. its signature over the payload verifies with one of the requirement's keys (ECDSA with
   SHA-256, or SHA-384 on P-384; Ed25519; RSA PKCS#1 v1.5 or PSS with SHA-256), or the
   certificate it carries is accepted by one of the requirement's identities
   (:func:`~.certificates.check_certificate`: chain, code signing, valid now, subject, issuer)
   and the signature verifies with the certificate's key.

The result is typed: :class:`SignatureVerified` (the digest, and for each requirement the key
fingerprint or the certificate's subject and issuer that signed), or :class:`SignatureRefused`,
whose message names the image, the policy and scope, and why each signature found failed. The
pull decides by the policy's mode: :func:`enforce` raises :class:`ImageNotVerifiedError` under
``enforce``; ``warn`` goes on with the refusal to report; ``off`` made no request at all.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

from provisioners.errors import SourceError
from provisioners.registries.pull import Opened
from provisioners.registries.reference import ImageReference
from provisioners.verification.certificates import CertificateRefusal, check_certificate
from provisioners.verification.discovery import (
    DEFAULT_LIMITS,
    RegistrySignatureStore,
    SignatureStore,
    VerificationLimits,
    find_signatures,
)
from provisioners.verification.envelopes import SignatureCandidate
from provisioners.verification.policy import (
    RequirementKind,
    SignatureRequirement,
    VerificationMode,
    VerificationPolicy,
)

__all__ = [
    "ImageNotVerifiedError",
    "SignatureRefused",
    "SignatureVerified",
    "SignedBy",
    "Verdict",
    "enforce",
    "signature_valid",
    "verify_all",
    "verify_image",
    "verify_opened",
]

MAX_REASONS = 6
"""Reasons a refusal lists before it says how many more there were."""

PublicKey = ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey | rsa.RSAPublicKey


@dataclass(frozen=True)
class SignedBy:
    """Who signed: a key (its fingerprint) or a certificate (its subject and issuer)."""

    key: str = ""
    """``sha256:<hex>`` of the key's SubjectPublicKeyInfo ("" for a certificate)."""
    key_name: str = ""
    subject: str = ""
    issuer: str = ""
    where: str = ""
    """Where the signature was found (``tag sha256-....sig, layer 0``, ``referrer ...``)."""

    def __str__(self) -> str:
        if self.key:
            return f"key {self.key}" + (f" ({self.key_name})" if self.key_name else "")
        return f"certificate of {self.subject}" + (
            f" issued by {self.issuer}" if self.issuer else ""
        )


@dataclass(frozen=True)
class SignatureVerified:
    """The image is accepted: by digest, and by whom."""

    image: str
    """The image as the pull names it (``registry/repository[:tag]``)."""
    digest: str
    policy: str
    scope: str
    signers: tuple[SignedBy, ...]
    """One per signed requirement; empty when the scope accepts anything."""

    @property
    def message(self) -> str:
        """One line for a status or an Event."""
        if not self.signers:
            return f"{self.image}@{self.digest} accepted unsigned by {self.policy} ({self.scope})"
        who = "; ".join(str(s) for s in self.signers)
        return (
            f"{self.image}@{self.digest} verified by {self.policy} ({self.scope}): signed by {who}"
        )


@dataclass(frozen=True)
class SignatureRefused:
    """The image is not accepted; ``message`` says which image, which policy, and why."""

    image: str
    digest: str
    policy: str
    scope: str
    reasons: tuple[str, ...]
    retryable: bool = False
    """A reason may pass by itself (the registry failed, the deadline was spent)."""

    @property
    def message(self) -> str:
        """One line for a status, an Event or an error."""
        shown = list(self.reasons[:MAX_REASONS])
        if len(self.reasons) > MAX_REASONS:
            shown.append(f"and {len(self.reasons) - MAX_REASONS} more")
        return (
            f"{self.image}@{self.digest} is not verified by {self.policy} ({self.scope}): "
            + "; ".join(shown)
        )


class ImageNotVerifiedError(SourceError):
    """The policy (mode ``enforce``) refused the image; nothing of it is unpacked."""

    def __init__(self, refusal: SignatureRefused) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal
        self.retryable = refusal.retryable


def enforce(
    result: SignatureVerified | SignatureRefused | None, policy: VerificationPolicy
) -> None:
    """Raise :class:`ImageNotVerifiedError` for a refusal under mode ``enforce``."""
    if isinstance(result, SignatureRefused) and policy.mode is VerificationMode.ENFORCE:
        raise ImageNotVerifiedError(result)


def verify_opened(
    image: ImageReference,
    opened: Opened,
    policy: VerificationPolicy,
    *,
    now: dt.datetime | None = None,
    limits: VerificationLimits = DEFAULT_LIMITS,
) -> SignatureVerified | SignatureRefused | None:
    """Verify the manifest ``opened`` served (``opened.top.digest``) at the place that served
    it; None under mode ``off`` (no request made). ``image`` is the reference the pull was asked
    for (a mirror's copy is held to the source's scope)."""
    if policy.mode is VerificationMode.OFF:
        return None
    store = RegistrySignatureStore(opened.client, opened.place.reference)
    return verify_image(image, opened.top.digest, store, policy, now=now, limits=limits)


Verdict = SignatureVerified | SignatureRefused
"""What one policy said of one image."""


def verify_all(
    image: ImageReference,
    opened: Opened,
    policies: Sequence[VerificationPolicy],
    *,
    now: dt.datetime | None = None,
    limits: VerificationLimits = DEFAULT_LIMITS,
) -> tuple[Verdict, ...]:
    """Every policy's verdict on the manifest ``opened`` served (policies in mode ``off`` make
    no request and give none). Levels combine: each policy must accept the image, so a catalog
    or an input can ask for more than the cluster's policy, never for less. Raises
    :class:`ImageNotVerifiedError` at the first refusal by a policy in mode ``enforce``."""
    verdicts: list[Verdict] = []
    for policy in policies:
        verdict = verify_opened(image, opened, policy, now=now, limits=limits)
        if verdict is None:
            continue
        enforce(verdict, policy)
        verdicts.append(verdict)
    return tuple(verdicts)


def verify_image(
    image: ImageReference,
    digest: str,
    store: SignatureStore,
    policy: VerificationPolicy,
    *,
    now: dt.datetime | None = None,
    limits: VerificationLimits = DEFAULT_LIMITS,
) -> SignatureVerified | SignatureRefused:
    """Verify the manifest ``digest`` of ``image`` with the signatures ``store`` holds."""
    now = now or dt.datetime.now(dt.UTC)
    scope, requirements = policy.requirements_for(image)
    scope_text = "default" if scope is None else f"scope {scope!r}" if scope else "every image"
    name = f"{image.registry}/{image.repository}" + (f":{image.tag}" if image.tag else "")

    def refused(*reasons: str, retryable: bool = False) -> SignatureRefused:
        return SignatureRefused(name, digest, policy.name, scope_text, reasons, retryable)

    if not requirements:
        return refused("no scope of the policy covers the image, and it has no default")
    if any(r.kind is RequirementKind.REJECT for r in requirements):
        return refused("the policy rejects every image here")
    signed = [r for r in requirements if r.kind is RequirementKind.SIGNED]
    if not signed:
        return SignatureVerified(name, digest, policy.name, scope_text, ())
    found = find_signatures(store, digest, limits)
    if not found.candidates:
        places = " and ".join(found.looked_at)
        return refused(
            f"no signature found (looked at {places})", *found.problems, retryable=found.retryable
        )
    signers: list[SignedBy] = []
    for requirement in signed:
        reasons: list[str] = []
        for candidate in found.candidates:
            outcome = _check(candidate, requirement, image, digest, now)
            if isinstance(outcome, SignedBy):
                signers.append(outcome)
                break
            reasons.append(f"{candidate.where}: {outcome}")
        else:
            if len(signed) > 1:
                reasons.insert(0, f"nothing meets the requirement {requirement}")
            return refused(*dict.fromkeys([*reasons, *found.problems]), retryable=found.retryable)
    return SignatureVerified(name, digest, policy.name, scope_text, tuple(signers))


def _check(
    candidate: SignatureCandidate,
    requirement: SignatureRequirement,
    image: ImageReference,
    digest: str,
    now: dt.datetime,
) -> SignedBy | str:
    """The signer when ``candidate`` meets ``requirement``, else why not (one line)."""
    if digest not in candidate.digests:
        claimed = ", ".join(candidate.digests) or "no digest"
        return f"signs {claimed}, not the pulled {digest}"
    rule = requirement.reference
    if rule is not None:
        if candidate.claimed_reference is None:
            return f"the {candidate.format} states no image identity, which {rule} needs"
        if not rule.accepts(image, candidate.claimed_reference):
            return f"claims {candidate.claimed_reference!r}, which {rule} refuses for {image}"
    for key in requirement.keys:
        if any(signature_valid(key.key, s, candidate.signed) for s in candidate.signatures):
            return SignedBy(key=key.fingerprint, key_name=key.name, where=candidate.where)
    problems: list[str] = []
    if requirement.keys:
        problems.append(f"the signature does not verify with {_keys(requirement)}")
    if requirement.identities and candidate.certificate is None:
        problems.append("it carries no certificate for the policy's certificate identities")
    elif requirement.identities and candidate.certificate is not None:
        for identity in requirement.identities:
            try:
                signer = check_certificate(
                    candidate.certificate, candidate.chain, identity, now=now
                )
            except CertificateRefusal as exc:
                problems.append(str(exc))
                continue
            if any(signature_valid(signer.key, s, candidate.signed) for s in candidate.signatures):
                return SignedBy(subject=signer.subject, issuer=signer.issuer, where=candidate.where)
            problems.append(
                f"the signature does not verify with the key of {signer.subject}'s certificate"
            )
    return "; ".join(problems)


def _keys(requirement: SignatureRequirement) -> str:
    if len(requirement.keys) == 1:
        return str(requirement.keys[0])
    prints = ", ".join(k.fingerprint[:19] for k in requirement.keys)
    return f"any of {len(requirement.keys)} keys ({prints})"


def signature_valid(key: PublicKey, signature: bytes, data: bytes) -> bool:
    """Whether ``signature`` over ``data`` verifies with ``key`` (the schemes cosign signs
    with: ECDSA over SHA-256, or SHA-384 on P-384; Ed25519; RSA PKCS#1 v1.5 or PSS, SHA-256)."""
    try:
        if isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(signature, data)
            return True
        if isinstance(key, ec.EllipticCurvePublicKey):
            hashers: list[hashes.HashAlgorithm] = [hashes.SHA256()]
            if isinstance(key.curve, ec.SECP384R1):
                hashers.insert(0, hashes.SHA384())
            for hasher in hashers:
                try:
                    key.verify(signature, data, ec.ECDSA(hasher))
                    return True
                except InvalidSignature:
                    continue
            return False
        for scheme in (
            padding.PKCS1v15(),
            padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.AUTO),
        ):
            try:
                key.verify(signature, data, scheme, hashes.SHA256())
                return True
            except InvalidSignature:
                continue
        return False
    except (InvalidSignature, ValueError, TypeError):
        return False
