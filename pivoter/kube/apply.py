"""Server-side apply with a named field manager: the one way pivoter's controllers write objects.

Reconcilers declare the fields they own and let the API server merge, detect conflicts with other
managers and record ownership in ``managedFields``, instead of read-modify-write cycles. Called by
reconcilers for the objects they manage and for their status.
"""

from __future__ import annotations

from pivoter.kube.client import APPLY_PATCH, Kube, Object
from provisioners.apply.kubeerrors import Invalid

__all__ = ["DEFAULT_FIELD_MANAGER", "apply", "apply_status"]

DEFAULT_FIELD_MANAGER = "pivoter"


def apply(
    kube: Kube,
    obj: Object,
    *,
    field_manager: str = DEFAULT_FIELD_MANAGER,
    force: bool = False,
    dry_run: bool = False,
) -> Object:
    """Server-side apply ``obj`` (a full manifest: apiVersion, kind, metadata.name) and return
    the object as stored. ``force`` takes over fields other managers own; without it such a
    change raises :class:`pivoter.kube.errors.Conflict` naming the fields and their owners."""
    return _apply(kube, obj, "", field_manager=field_manager, force=force, dry_run=dry_run)


def apply_status(
    kube: Kube, obj: Object, *, field_manager: str = DEFAULT_FIELD_MANAGER, force: bool = True
) -> Object:
    """Server-side apply the ``status`` subresource of ``obj`` (forced by default: a controller
    is the only writer of its status)."""
    return _apply(kube, obj, "status", field_manager=field_manager, force=force, dry_run=False)


def _apply(
    kube: Kube, obj: Object, subresource: str, *, field_manager: str, force: bool, dry_run: bool
) -> Object:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    metadata = obj.get("metadata") or {}
    name = metadata.get("name")
    if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
        raise Invalid(
            400, "BadRequest", "server-side apply needs apiVersion, kind and metadata.name"
        )
    if not field_manager:
        raise Invalid(400, "BadRequest", "server-side apply needs a field manager name")
    resource = kube.resource(api_version, kind)
    path = resource.path(metadata.get("namespace"), name)
    if subresource:
        path += f"/{subresource}"
    query = [("fieldManager", field_manager)]
    query += [("force", "true")] if force else []
    query += [("dryRun", "All")] if dry_run else []
    return kube.request("PATCH", path, query=query, body=obj, content_type=APPLY_PATCH)
