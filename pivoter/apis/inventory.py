"""A BundleDeployment's ``status.inventory``: the objects it installed, which its next apply and
its uninstall prune against. Read by the BundleDeployment controller, the plan of a pending
revision and the OLM v0 adopter and undo, so it lives with the API rather than in one of them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioners.apply.objects import ObjectRef

__all__ = ["inventory_of"]


def inventory_of(status: Mapping[str, Any] | None) -> list[ObjectRef]:
    """The objects a BundleDeployment's ``status.inventory`` lists (none without a status)."""
    return [ObjectRef.from_dict(ref) for ref in (status or {}).get("inventory") or []]
