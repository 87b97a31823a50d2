"""Pin and verify the bundle images of a new ResolveSet revision before it is written.

With a verification policy in force (:mod:`pivoter.registries.verification`), every bundle image
of a new revision is resolved to its manifest digest and that digest's signatures are checked,
here, once: the revision records the digest and who signed it (``digest``, ``signedBy`` in the
ResolveSet, shown by ``pivoter history`` and ``pivoter plan``), and the child BundleDeployments
install the image by that digest (:attr:`resolver.resolveset.Entry.pinned_image`), never the tag
resolved again. Under ``enforce`` an image the policy refuses stops the revision: nothing is
written, the input stays on its active revision and says which image and which policy refused
(:class:`ImageNotVerifiedError`); under ``warn`` the revision records why it was not verified.
The Bundle controller checks the pinned digest again when it pulls it.

Without a policy (mode ``off``, no ConfigMap) nothing is pinned and no registry is asked:
resolution is as it was before verification existed. An image the catalog already names by
digest is verified for that digest. Pull credentials are those a catalog offers for the images
it names, and the cluster-wide pull secret (a service account's own pull secrets are offered by
the Bundle controller only).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pivoter.registries import RegistryAccessProvider
from provisioners.httpclient import TlsOptions
from provisioners.registries.pull import open_image
from provisioners.registries.reference import parse_reference
from provisioners.sources import FetchOptions
from provisioners.verification import (
    ImageNotVerifiedError,
    SignatureRefused,
    SignatureVerified,
    VerificationPolicy,
    enforce,
    verify_opened,
)
from resolver.resolveset import Entry, ResolveSet

__all__ = ["ImageNotVerifiedError", "ImagePinner"]


@dataclass(frozen=True)
class ImagePinner:
    """Pins and verifies a new revision's images (see the module docstring)."""

    registries: RegistryAccessProvider
    options: FetchOptions = dataclasses.field(default_factory=FetchOptions)

    def pin(self, document: ResolveSet) -> ResolveSet:
        """``document`` with each image's digest and signer recorded; raises
        :class:`ImageNotVerifiedError` (under ``enforce``), or the pull's or the policy's
        :class:`~provisioners.errors.ProvisionerError` when it cannot be checked."""
        policy = self.registries.verification_policy()
        if policy is None:
            return document
        entries = tuple(self._entry(entry, policy) for entry in document.entries)
        return dataclasses.replace(document, entries=entries)

    def _entry(self, entry: Entry, policy: VerificationPolicy) -> Entry:
        if not entry.image or entry.digest:
            return entry  # nothing to pull, or kept from a revision that pinned it
        reference = parse_reference(entry.image)
        secrets = self.registries.catalog_secrets.for_image(entry.image)
        opened = open_image(
            reference,
            self.registries.access(secrets),
            tls=TlsOptions(),
            timeout=self.options.timeout_seconds,
            deadline=self.options.deadline_seconds,
        )
        outcome = verify_opened(reference, opened, policy)
        enforce(outcome, policy)
        if isinstance(outcome, SignatureVerified):
            signed = "; ".join(str(s) for s in outcome.signers) or "accepted unsigned"
            signed += f" ({outcome.policy}, {outcome.scope})"
        elif isinstance(outcome, SignatureRefused):
            signed = f"not verified (mode {policy.mode.value}): {'; '.join(outcome.reasons)}"
        else:
            return entry
        return dataclasses.replace(entry, digest=opened.top.digest, signed_by=signed)
