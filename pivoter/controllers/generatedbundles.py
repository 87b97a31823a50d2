"""The Bundles a BundleDeployment generates from its template (rukpak's ``ReconcileDesiredBundle``).

The template's hash names the generated Bundle ``<bd>-<hash>``; it carries the owner labels and
the hash label and is controlled by the BundleDeployment, so it is garbage-collected with it.
The BundleDeployment controller asks :func:`desired_bundle` for the Bundle its template wants
(found by the hash label, created when missing, at most :data:`MAX_GENERATED_BUNDLES` at a time)
and, once that Bundle is installed, removes the others with :func:`delete_other_bundles`. The
pivot (:mod:`pivoter.pivot.prepare`) names the Bundles it prepares with :func:`template_hash`
and :func:`generated_bundle_name`, so that the BundleDeployment finds them.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from pivoter.apis import rukpak
from pivoter.apis.resources import BUNDLES
from pivoter.kube import Conflict, Kube, KubeError, NotFound, Object
from pivoter.runtime.cache import Store
from provisioners.apply.objects import LABEL_OWNER_KIND, LABEL_OWNER_NAME

__all__ = [
    "KIND",
    "MAX_GENERATED_BUNDLES",
    "delete_other_bundles",
    "desired_bundle",
    "generated_bundle_name",
    "generated_from",
    "template_hash",
]

log = logging.getLogger(__name__)

KIND = "BundleDeployment"
"""The owner kind in a generated Bundle's labels (and the BundleDeployment's applier owner)."""
MAX_GENERATED_BUNDLES = 4  # rukpak's ErrMaxGeneratedLimit


def template_hash(template: Mapping[str, Any]) -> str:
    """A stable hash of a BundleDeployment template (sha224, base32 lower-case, no padding)."""
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    digest = hashlib.sha224(canonical).digest()
    return base64.b32encode(digest).decode().rstrip("=").lower()


def generated_bundle_name(bd_name: str, hash_: str) -> str:
    """``<bd>-<hash>``, within the Bundle name limit (BundleDeployment names are at most 45)."""
    room = rukpak.BUNDLE_NAME_MAX - len(bd_name) - 1
    return f"{bd_name}-{hash_[: max(room, 6)]}"


Generated = Callable[[str], list[Object]]
"""The Bundles generated for a BundleDeployment (by name), as a cache holds them."""


def desired_bundle(
    kube: Kube, bd: Mapping[str, Any], *, generated: Generated | None = None
) -> Object:
    """The Bundle ``bd``'s template wants: the generated one with its hash, created when missing.
    ``generated``: where the Bundles generated so far are read (None: listed from the API).
    Raises :class:`KubeError` (429 ``TooManyBundles``) when the limit is reached."""
    name = bd["metadata"]["name"]
    template = (bd.get("spec") or {}).get("template") or {}
    hash_ = template_hash(template)
    owned = generated(name) if generated is not None else _generated_by(kube, name)
    for bundle in owned:
        if (bundle["metadata"].get("labels") or {}).get(rukpak.LABEL_TEMPLATE_HASH) == hash_[:63]:
            return bundle
    if len(owned) >= MAX_GENERATED_BUNDLES:
        raise KubeError(
            429,
            "TooManyBundles",
            f"reached the maximum generated Bundle limit ({MAX_GENERATED_BUNDLES}); "
            "earlier Bundles are deleted once a new one installs",
        )
    body = _bundle_body(bd, template, hash_)
    try:
        created = kube.create(BUNDLES, body)
    except Conflict:
        # Made by an earlier pass and not yet in the cache it read: that one is the Bundle.
        return kube.get(BUNDLES, body["metadata"]["name"])
    log.info("bundledeployment %s: generated Bundle %s", name, created["metadata"]["name"])
    return created


def delete_other_bundles(
    kube: Kube, bd_name: str, keep: str, *, generated: Generated | None = None
) -> None:
    """Delete every Bundle generated for ``bd_name`` but ``keep`` (the one now installed)."""
    for bundle in generated(bd_name) if generated is not None else _generated_by(kube, bd_name):
        other = bundle["metadata"]["name"]
        if other != keep:
            with contextlib.suppress(NotFound):
                kube.delete(BUNDLES, other)


def _generated_by(kube: Kube, bd_name: str) -> list[Object]:
    owned, _ = kube.list(
        BUNDLES, label_selector=f"{LABEL_OWNER_KIND}={KIND},{LABEL_OWNER_NAME}={bd_name}"
    )
    return owned


def generated_from(bundles: Store) -> Generated:
    """A :data:`Generated` over an informer's store of Bundles, through its label index (a scan
    of every Bundle per BundleDeployment pass was 9 % of the daemon's samples in a change of
    1000 inputs)."""

    def generated(bd_name: str) -> list[Object]:
        found = (bundles.get(key) for key in sorted(bundles.labelled(LABEL_OWNER_NAME, bd_name)))
        return [
            b
            for b in found
            if b is not None
            and (labels := b["metadata"].get("labels") or {}).get(LABEL_OWNER_NAME) == bd_name
            and labels.get(LABEL_OWNER_KIND) == KIND
        ]

    return generated


def _bundle_body(bd: Mapping[str, Any], template: Mapping[str, Any], hash_: str) -> Object:
    """The generated Bundle: the template's metadata and spec, the owner and hash labels, and a
    controller reference to ``bd``."""
    name = bd["metadata"]["name"]
    meta = template.get("metadata") or {}
    labels = {
        **(meta.get("labels") or {}),
        LABEL_OWNER_KIND: KIND,
        LABEL_OWNER_NAME: name,
        rukpak.LABEL_TEMPLATE_HASH: hash_[:63],
    }
    owner = {
        "apiVersion": rukpak.API_VERSION,
        "kind": KIND,
        "name": name,
        "uid": bd["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": rukpak.API_VERSION,
        "kind": "Bundle",
        "metadata": {
            "name": generated_bundle_name(name, hash_),
            "labels": labels,
            "annotations": meta.get("annotations") or {},
            "ownerReferences": [owner],
        },
        "spec": template.get("spec") or {},
    }
