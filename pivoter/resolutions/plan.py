"""The plan of a pivot: which bundles a revision adds, changes and removes against another.

Published in ``status.pendingPlan`` while a Manual pivot waits for approval, and printed by
``pivoter plan``. Pure functions over two ResolveSets.
"""

from __future__ import annotations

from typing import Any

from resolver.resolveset import ResolveSet

__all__ = ["plan", "summary"]


def plan(
    current: ResolveSet | None, target: ResolveSet, *, revision: int, active: int | None
) -> dict[str, Any]:
    """What pivoting from ``current`` (revision ``active``) to ``target`` would do."""
    before = {e.package: e for e in (current.entries if current else ())}
    after = {e.package: e for e in target.entries}
    added = [
        {"package": p, "bundle": e.bundle, "version": e.version}
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


def summary(data: dict[str, Any]) -> str:
    """The plan in one line, for conditions and Events."""
    parts = [f"+{a['package']} {a['version']}" for a in data.get("added") or []]
    parts += [
        f"{c['package']} {c['fromVersion']}->{c['toVersion']}" for c in data.get("changed") or []
    ]
    parts += [f"-{r['package']} {r['version']}" for r in data.get("removed") or []]
    return ", ".join(parts) or "no bundle changes"
