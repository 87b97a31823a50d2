"""Install only what was signed: cosign signatures of catalog and bundle images, verified
offline against a policy before anything is unpacked.

:mod:`.policy` is the typed verification policy (mode, keys, certificate identities, scopes);
:mod:`.policyjson` reads a cluster's containers-policy.json into one; :mod:`.discovery` finds an
image's signatures in its repository (cosign's ``sha256-<hex>.sig`` tag, OCI 1.1 referrers and
the referrers tag schema) within limits a hostile registry cannot pass; :mod:`.envelopes` reads
the two storage formats (simple signing, Sigstore bundle); :mod:`.certificates` decides whether a
signing certificate is one a policy trusts; :mod:`.cosign` puts them together for one opened
image and returns a typed result. Pure: no cluster, no network beyond the pull's own registry
client; the cluster side reads Secrets, ConfigMaps and files and passes bytes.

Why not the ``sigstore`` package: it verifies Sigstore bundles only (not cosign's
simple-signing ``.sig`` format), always requires a transparency log entry (sigstore-python issue
1529: bundles without one are refused by design), and verifies keyless certificates against the
public-good or a TUF-distributed trust root. Pivoter's case is offline, with a company's keys or
CA and ``--tlog-upload=false`` signatures; ``cryptography`` (already a dependency) does the
signatures and the certificate path (``cryptography.x509.verification``).
"""

from __future__ import annotations

from provisioners.verification.cosign import (
    ImageNotVerifiedError,
    SignatureRefused,
    SignatureVerified,
    SignedBy,
    Verdict,
    enforce,
    verify_all,
    verify_image,
    verify_opened,
)
from provisioners.verification.discovery import (
    RegistrySignatureStore,
    SignatureStore,
    VerificationLimits,
)
from provisioners.verification.policy import (
    IdentityMatch,
    PolicyScope,
    ReferenceRule,
    SignatureRequirement,
    TrustedIdentity,
    TrustedKey,
    VerificationMode,
    VerificationPolicy,
    VerificationPolicyError,
    load_certificates,
)
from provisioners.verification.policyjson import read_policy_json

__all__ = [
    "IdentityMatch",
    "ImageNotVerifiedError",
    "PolicyScope",
    "ReferenceRule",
    "RegistrySignatureStore",
    "SignatureRefused",
    "SignatureRequirement",
    "SignatureStore",
    "SignatureVerified",
    "SignedBy",
    "TrustedIdentity",
    "TrustedKey",
    "Verdict",
    "VerificationLimits",
    "VerificationMode",
    "VerificationPolicy",
    "VerificationPolicyError",
    "enforce",
    "load_certificates",
    "read_policy_json",
    "verify_all",
    "verify_image",
    "verify_opened",
]
