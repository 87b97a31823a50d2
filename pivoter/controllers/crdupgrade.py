"""CRD upgrade preflight for BundleDeployments: refuse unsafe CRD changes, migrate stored versions.

Called by the BundleDeployment controller before it applies content that changes a CRD which
already exists. :func:`preflight` runs :func:`provisioners.crdsafety.check_crd_upgrade` (asking
the API server whether custom resources exist in a version) and raises
:class:`~provisioners.crdsafety.UnsafeCRDChange` naming the version and field. One case is made
safe rather than refused: the new CRD drops a version that is still listed in
``status.storedVersions`` but the live storage version is one the new CRD keeps, and nothing else
is wrong. Then every custom resource is rewritten (a no-op update re-encodes it in the storage
version, as kube-storage-version-migrator does), ``status.storedVersions`` is set to
:func:`~provisioners.crdsafety.stored_versions_after` and the upgrade goes on.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from pivoter.apis.resources import CRDS
from pivoter.kube import Conflict, Kube, KubeAPI, NotFound
from provisioners.apply.objects import CRD_KIND
from provisioners.crdsafety import (
    UnsafeCRDChange,
    check_crd_upgrade,
    stored_versions_after,
)

__all__ = ["preflight"]

log = logging.getLogger(__name__)

_CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def preflight(
    api: Kube, objects: Iterable[Mapping[str, Any]], *, disabled: bool = False
) -> list[str]:
    """Check every CRD among ``objects`` against its live version; return notes on migrations
    done, or raise :class:`UnsafeCRDChange`."""
    notes: list[str] = []
    if disabled:
        return notes
    for new in objects:
        if new.get("kind") != CRD_KIND:
            continue
        name = str(new["metadata"]["name"])
        try:
            live = api.request("GET", f"{_CRDS}/{name}")
        except NotFound:
            continue  # a new CRD: nothing to break

        def has_objects(version: str, crd: Mapping[str, Any] = live) -> bool:
            return _count(api, crd, version, limit=1) > 0

        problems = check_crd_upgrade(live, new, has_objects=has_objects)
        if not problems:
            continue
        after = stored_versions_after(live, new)
        migrated = {**live, "status": {**(live.get("status") or {}), "storedVersions": after}}
        storage = _storage_version(live)
        if storage in after and not check_crd_upgrade(migrated, new, has_objects=has_objects):
            rewritten = _rewrite_objects(api, live, storage)
            api.patch_status(CRDS, name, {"storedVersions": after})
            stored = (live.get("status") or {}).get("storedVersions")
            notes.append(
                f"migrated CustomResourceDefinition {name}: rewrote {rewritten} objects in "
                f"{storage}, storedVersions {stored} -> {after}"
            )
            log.info(notes[-1])
            continue
        raise UnsafeCRDChange(name, problems)
    return notes


def _storage_version(crd: Mapping[str, Any]) -> str:
    for version in crd.get("spec", {}).get("versions") or []:
        if version.get("storage"):
            return str(version.get("name"))
    return ""


def _collection(crd: Mapping[str, Any], version: str) -> str:
    spec = crd["spec"]
    return f"/apis/{spec['group']}/{version}/{spec['names']['plural']}"


def _count(api: KubeAPI, crd: Mapping[str, Any], version: str, *, limit: int) -> int:
    try:
        listing = api.request("GET", _collection(crd, version), query=[("limit", str(limit))])
    except NotFound:
        return 0
    remaining = int((listing.get("metadata") or {}).get("remainingItemCount") or 0)
    return len(listing.get("items") or []) + remaining


def _rewrite_objects(api: KubeAPI, crd: Mapping[str, Any], storage: str) -> int:
    """Update every custom resource unchanged, so the API server stores it in ``storage``."""
    collection = _collection(crd, storage)
    namespaced = crd["spec"].get("scope") == "Namespaced"
    count, token = 0, ""
    while True:
        query = [("limit", "500")] + ([("continue", token)] if token else [])
        page = api.request("GET", collection, query=query)
        for item in page.get("items") or []:
            metadata = item["metadata"]
            item.setdefault("apiVersion", f"{crd['spec']['group']}/{storage}")
            item.setdefault("kind", crd["spec"]["names"]["kind"])
            prefix = _collection(crd, storage)
            if namespaced:
                group_path, _, plural = prefix.rpartition("/")
                path = f"{group_path}/namespaces/{metadata['namespace']}/{plural}"
            else:
                path = prefix
            # A conflict means someone else just wrote it, which re-encoded it as well.
            with contextlib.suppress(Conflict, NotFound):
                api.request("PUT", f"{path}/{metadata['name']}", body=item)
            count += 1
        token = str((page.get("metadata") or {}).get("continue") or "")
        if not token:
            return count
