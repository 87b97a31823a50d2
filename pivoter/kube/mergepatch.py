"""A JSON merge patch (RFC 7386) that leaves an object's field exactly as a controller computed
it.

A merge patch merges nested objects key by key: a key the new value no longer has stays on the
stored object unless the patch sets it to null. A controller that writes a computed object into
a field (a status section such as ``pendingPlan``) would otherwise keep keys of an earlier value
forever: a plan's ``pending`` marker stayed beside the finished plan that replaced it, and every
reader took the plan as still pending. :func:`replacing` nulls those keys, at every depth of the
objects the new value writes; top-level keys the new value does not name are left alone (other
writers own them). Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["replacing"]


def replacing(previous: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``patch``, with null for every key of a nested object of ``previous`` that the same
    object in ``patch`` no longer has, so that applying it leaves each object ``patch`` names
    exactly as ``patch`` says (top-level keys absent from ``patch`` are not touched)."""
    out: dict[str, Any] = {}
    for key, value in patch.items():
        before = previous.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            out[key] = _exact(before, value)
        else:
            out[key] = value
    return out


def _exact(before: Mapping[str, Any], value: Mapping[str, Any]) -> dict[str, Any]:
    out = replacing(before, value)
    for key in before:
        if key not in value:
            out[key] = None
    return out
