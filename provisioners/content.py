"""Unpack a bundle from its source into the content store in one call.

The cluster side's Bundle controller calls :func:`unpack_bundle` with a spec built from
``spec.source`` and the provisioner's format: the source fetches into a store staging
directory, the format checks the tree (so an invalid bundle, e.g. one without ``manifests/``,
fails the unpack as in rukpak and never reaches the store), and the tree is published under its
digest. The result carries the store key (for ``contentURL`` and the appliers), the fetch result
(for ``status.resolvedSource``) and the converted objects. A failure leaves nothing in the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from provisioners.formats.base import BundleFormat, ConvertedBundle
from provisioners.sources import FetchOptions, FetchResult, SourceSpec, fetch
from provisioners.store import BundleStore, StoredBundle


@dataclass(frozen=True)
class UnpackedBundle:
    """A bundle that is in the store, how its source was resolved, and its objects if checked."""

    stored: StoredBundle
    fetched: FetchResult
    converted: ConvertedBundle | None = None


def unpack_bundle(
    spec: SourceSpec,
    store: BundleStore,
    options: FetchOptions | None = None,
    *,
    bundle_format: BundleFormat | None = None,
    config: Mapping[str, Any] | None = None,
) -> UnpackedBundle:
    """Fetch ``spec`` into a staging directory of ``store``, check its format, publish it."""
    with store.staging() as tree:
        fetched = fetch(spec, tree, options)
        converted = bundle_format.convert(tree, config) if bundle_format else None
        stored = store.publish(tree)
    return UnpackedBundle(stored, fetched, converted)
