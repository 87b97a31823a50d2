"""The plan of a pivot: which bundles a revision adds, changes and removes against another.

Published in ``status.pendingPlan`` while a Manual pivot waits for approval, and printed by
``pivoter plan``. Pure functions over two ResolveSets (:func:`plan`) and over the objects the
installed and the planned bundles hold (:func:`object_changes`, computed from the prepared
bundles by :mod:`pivoter.inputs.objectplan`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from provisioners.apply.objects import ObjectRef
from resolver.resolveset import Entry, ResolveSet

__all__ = ["MAX_LISTED_OBJECTS", "object_changes", "plan", "summary"]

MAX_LISTED_OBJECTS = 100
"""Objects listed per change kind in a plan (status stays small); the counts are always full."""


def plan(
    current: ResolveSet | None, target: ResolveSet, *, revision: int, active: int | None
) -> dict[str, Any]:
    """What pivoting from ``current`` (revision ``active``) to ``target`` would do."""
    before = {e.package: e for e in (current.entries if current else ())}
    after = {e.package: e for e in target.entries}
    added = [
        {"package": p, "bundle": e.bundle, "version": e.version, **_verified(e)}
        for p, e in sorted(after.items())
        if p not in before
    ]
    removed = [
        {"package": p, "bundle": e.bundle, "version": e.version}
        for p, e in sorted(before.items())
        if p not in after
    ]
    changed = [
        {
            "package": p,
            "bundle": e.bundle,
            "fromVersion": before[p].version,
            "toVersion": e.version,
            **_verified(e),
        }
        for p, e in sorted(after.items())
        if p in before and (before[p].bundle, before[p].image) != (e.bundle, e.image)
    ]
    return {
        "revision": revision,
        "fromRevision": active,
        "selectionHash": target.selection_hash,
        "added": added,
        "changed": changed,
        "removed": removed,
    }


def _verified(entry: Entry) -> dict[str, str]:
    """The image by digest and who signed it, where the revision records them."""
    if not entry.digest:
        return {}
    return {"image": entry.pinned_image, "signedBy": entry.signed_by}


def summary(data: dict[str, Any]) -> str:
    """The plan in one line, for conditions and Events."""
    parts = [f"+{a['package']} {a['version']}" for a in data.get("added") or []]
    parts += [
        f"{c['package']} {c['fromVersion']}->{c['toVersion']}" for c in data.get("changed") or []
    ]
    parts += [f"-{r['package']} {r['version']}" for r in data.get("removed") or []]
    text = ", ".join(parts) or "no bundle changes"
    counts = (data.get("objects") or {}).get("counts")
    if counts:
        text += (
            f" (objects: +{counts['added']} -{counts['removed']}, {counts['kept']} applied again)"
        )
    return text


def object_changes(
    installed: Mapping[str, Iterable[ObjectRef]], planned: Mapping[str, Iterable[ObjectRef]]
) -> dict[str, Any]:
    """The objects a pivot adds, removes, keeps (applied again, possibly changed) and moves
    between packages, from each package's installed inventory and planned objects. An object
    is the same object across API versions of its group."""

    def index(by_package: Mapping[str, Iterable[ObjectRef]]) -> dict[tuple[str, ...], Any]:
        return {
            (ref.group, ref.kind, ref.namespace, ref.name): (package, ref)
            for package, refs in by_package.items()
            for ref in refs
        }

    before, after = index(installed), index(planned)

    def listed(keys: Iterable[tuple[str, ...]], side: dict[tuple[str, ...], Any]) -> list[Any]:
        ordered = sorted(keys)
        return [_describe(*side[k]) for k in ordered[:MAX_LISTED_OBJECTS]]

    added = [k for k in after if k not in before]
    removed = [k for k in before if k not in after]
    kept = [k for k in after if k in before]
    moved = [k for k in kept if before[k][0] != after[k][0]]
    return {
        "added": listed(added, after),
        "removed": listed(removed, before),
        "moved": [
            {**_describe(*after[k]), "fromPackage": before[k][0]}
            for k in sorted(moved)[:MAX_LISTED_OBJECTS]
        ],
        "counts": {
            "added": len(added),
            "removed": len(removed),
            "kept": len(kept),
            "moved": len(moved),
        },
    }


def _describe(package: str, ref: ObjectRef) -> dict[str, str]:
    entry = {"package": package, "apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name}
    if ref.namespace:
        entry["namespace"] = ref.namespace
    return entry
