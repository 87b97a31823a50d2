"""Admission for ConfigMaps of the system namespace that Bundles read their content from.

rukpak's ``vconfigmaps.core.rukpak.io``: a ConfigMap a Bundle refers to cannot be deleted while
the Bundle exists, and cannot be created mutable (a Bundle may be created before its ConfigMap).
"""

from __future__ import annotations

from collections.abc import Callable

from pivoter.webhook.review import Request, Verdict, allow, deny

__all__ = ["validate_config_map"]

BundlesUsing = Callable[[str], list[str]]
"""``bundles_using(config_map_name)``: names of the Bundles that read that ConfigMap."""


def validate_config_map(request: Request, bundles_using: BundlesUsing) -> Verdict:
    """The verdict on a ConfigMap CREATE or DELETE in the system namespace."""
    name = request.name or str((request.obj.get("metadata") or {}).get("name") or "")
    users = bundles_using(name)
    if not users:
        return allow()
    listed = ", ".join(sorted(users))
    if request.operation == "DELETE":
        return deny(f"ConfigMap {name} is in use by Bundle(s) {listed}; delete them first")
    if request.operation == "CREATE" and not request.obj.get("immutable"):
        return deny(
            f"ConfigMap {name} is referenced by Bundle(s) {listed} and must be immutable "
            "(set immutable: true)"
        )
    return allow()
