"""Pin and verify the bundle images of a new ResolveSet revision before it is written.

With a verification policy in force (:mod:`pivoter.registries.verification`: the cluster's, the
one the input names and the one the bundle's catalog names, each of which must accept it), every
bundle image of a new revision is resolved to its manifest digest and that digest's signatures
are checked, here, once: the revision records the digest and who signed it (``digest`` and
``signedBy`` in the ResolveSet, shown by ``pivoter history`` and ``pivoter plan``), and the child
BundleDeployments install the image by that digest (:attr:`resolver.resolveset.Entry.
pinned_image`), never the tag resolved again. Under ``enforce`` an image a policy refuses stops
the revision: nothing is written, the input stays on its active revision and says which image
and which policy refused (:class:`ImageNotVerifiedError`); under ``warn`` the revision records
why it was not verified. The Bundle controller checks the pinned digest again when it pulls it.

Without a policy (mode ``off``, no ConfigMap) nothing is pinned and no registry is asked:
resolution is as it was before verification existed. An image the catalog already names by
digest is verified for that digest. Pull credentials are those a catalog offers for the images
it names, and the cluster-wide pull secret (a service account's own pull secrets are offered by
the Bundle controller only).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pivoter.apis.resources import CATALOGS, CLUSTER_CATALOGS
from pivoter.kube import Kube, NotFound
from pivoter.registries import RegistryAccessProvider
from pivoter.registries.verification import named_policy
from provisioners.httpclient import TlsOptions
from provisioners.registries.pull import open_image
from provisioners.registries.reference import parse_reference
from provisioners.sources import FetchOptions
from provisioners.verification import (
    ImageNotVerifiedError,
    SignatureRefused,
    Verdict,
    VerificationPolicy,
    verify_all,
)
from resolver.resolveset import Entry, ResolveSet

__all__ = ["ImageNotVerifiedError", "ImagePinner"]


@dataclass(frozen=True)
class ImagePinner:
    """Pins and verifies a new revision's images (see the module docstring)."""

    registries: RegistryAccessProvider
    options: FetchOptions = dataclasses.field(default_factory=FetchOptions)
    reads: Kube | None = None
    """Where the catalogs that name a policy are read (the daemon's informer caches, so that
    pinning under the claims lock asks the API server nothing it holds); None: the registries'
    client."""

    def pin(self, document: ResolveSet, owner: Mapping[str, Any] | None) -> ResolveSet:
        """``document`` (of the input ``owner``) with each image's digest and signers recorded;
        raises :class:`ImageNotVerifiedError` (under ``enforce``), or the pull's or the
        policy's :class:`~provisioners.errors.ProvisionerError` when it cannot be checked."""
        own = named_policy(owner, str(owner.get("kind") or "input")) if owner else ("", "")
        by_catalog: dict[str, tuple[VerificationPolicy, ...]] = {}
        entries = []
        for entry in document.entries:
            if entry.catalog not in by_catalog:
                catalog = self._catalog_policy(entry.catalog)
                by_catalog[entry.catalog] = self.registries.verification_policies(own, catalog)
            entries.append(self._entry(entry, by_catalog[entry.catalog]))
        return dataclasses.replace(document, entries=tuple(entries))

    def _catalog_policy(self, catalog: str) -> tuple[str, str]:
        """The policy a pivoter Catalog or a ClusterCatalog names (the catalog cache calls
        them ``name`` and ``ClusterCatalog/name``); ``("", "")`` for none."""
        kind, _, name = catalog.rpartition("/") if "/" in catalog else ("Catalog", "", catalog)
        resource = _CATALOG_KINDS.get(kind)
        if resource is None or not name:
            return "", ""  # OLM v0's CatalogSources name no policy
        try:
            obj = (self.reads or self.registries.kube).get(resource, name)
        except NotFound:
            return "", ""  # deleted since it was resolved from: its policy no longer applies
        return named_policy(obj, kind)

    def _entry(self, entry: Entry, policies: tuple[VerificationPolicy, ...]) -> Entry:
        if not policies or not entry.image or entry.digest:
            return entry  # nothing to check, nothing to pull, or pinned by an earlier revision
        reference = parse_reference(entry.image)
        secrets = self.registries.catalog_secrets.for_image(entry.image)
        opened = open_image(
            reference,
            self.registries.access(secrets),
            tls=TlsOptions(),
            timeout=self.options.timeout_seconds,
            deadline=self.options.deadline_seconds,
        )
        verdicts = verify_all(reference, opened, policies)
        if not verdicts:
            return entry  # every policy is off
        signed = "; ".join(map(_signed, verdicts))
        return dataclasses.replace(entry, digest=opened.top.digest, signed_by=signed)


def _signed(verdict: Verdict) -> str:
    if isinstance(verdict, SignatureRefused):
        return f"not verified by {verdict.policy} (mode warn): {'; '.join(verdict.reasons)}"
    who = "; ".join(str(s) for s in verdict.signers) or "accepted unsigned"
    return f"{who} ({verdict.policy}, {verdict.scope})"


_CATALOG_KINDS = {"Catalog": CATALOGS, "ClusterCatalog": CLUSTER_CATALOGS}
