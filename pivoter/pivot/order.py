"""The order in which the bundles of a group are applied: providers of APIs before consumers.

A bundle *provides* the kinds of the CustomResourceDefinitions it contains and the Namespaces it
creates; it *uses* the kinds of its objects and the namespaces they live in, and, from the
ResolveSet, the packages whose bundles meet its catalog requirements (``olm.gvk.required``,
``olm.package.required``: an operator that needs another's API only at run time brings no object
of that kind). A bundle that uses what another bundle of the group provides is applied after
it: :func:`waves` layers the group so that every bundle comes after the providers it uses
(bundles in one wave do not depend on one another). A cycle (two bundles each using what the
other provides) cannot be ordered: its bundles share one wave, before the bundles that need
them, and the BundleDeployment controller retries the one that fails first.

Pure functions over the objects each bundle renders; called by :mod:`pivoter.pivot.prepare`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from provisioners.apply.objects import crd_kinds, ref_of

__all__ = ["Key", "dependencies", "providers", "waves"]

Key = tuple[str, str, str]
"""("kind", group, kind) or ("namespace", "", name)."""


def _provides(objects: Sequence[Mapping[str, Any]]) -> set[Key]:
    keys: set[Key] = {("kind", group, kind) for group, kind in crd_kinds(objects)}
    for obj in objects:
        if obj.get("kind") == "Namespace" and obj.get("apiVersion") == "v1":
            keys.add(("namespace", "", str((obj.get("metadata") or {}).get("name") or "")))
    return keys


def _uses(objects: Sequence[Mapping[str, Any]]) -> set[Key]:
    keys: set[Key] = set()
    for obj in objects:
        try:
            ref = ref_of(obj)
        except ValueError:
            continue  # the dry run names the malformed object
        keys.add(("kind", ref.group, ref.kind))
        if ref.namespace:
            keys.add(("namespace", "", ref.namespace))
    return keys


def providers(contents: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[Key, set[str]]:
    """Which packages of the group provide each kind (by its CRD) and each Namespace."""
    found: dict[Key, set[str]] = {}
    for package, objects in contents.items():
        for key in _provides(objects):
            found.setdefault(key, set()).add(package)
    return found


def dependencies(
    contents: Mapping[str, Sequence[Mapping[str, Any]]],
    requires: Mapping[str, Collection[str]] | None = None,
) -> dict[str, set[str]]:
    """For each package, the other packages of the group whose APIs or namespaces it uses, or
    that it ``requires`` (by package, from the ResolveSet)."""
    by_key = providers(contents)
    needs: dict[str, set[str]] = {}
    for package, objects in contents.items():
        found = set((requires or {}).get(package, ())) & set(contents)
        for key in _uses(objects):
            found |= by_key.get(key, set())
        needs[package] = found - {package}
    return needs


def waves(
    contents: Mapping[str, Sequence[Mapping[str, Any]]],
    requires: Mapping[str, Collection[str]] | None = None,
) -> tuple[tuple[str, ...], ...]:
    """The packages in apply order: each wave after every wave holding a provider it uses."""
    needs = dependencies(contents, requires)
    remaining = set(needs)
    placed: set[str] = set()
    layers: list[tuple[str, ...]] = []
    while remaining:
        ready = sorted(p for p in remaining if needs[p] <= placed)
        if not ready:
            ready = sorted(_a_cycle(needs, remaining))
        layers.append(tuple(ready))
        placed |= set(ready)
        remaining -= set(ready)
    return tuple(layers)


def _a_cycle(needs: Mapping[str, set[str]], remaining: set[str]) -> set[str]:
    """A cycle among ``remaining`` that needs nothing else still remaining (the smallest set a
    package of a cycle reaches): its packages go in one wave, and what needs them after it."""

    def reach(package: str) -> set[str]:
        seen: set[str] = set()
        todo = [package]
        while todo:
            for other in needs[todo.pop()] & remaining:
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
        return seen

    # Stuck, every remaining package needs another remaining one: following needs always ends
    # in a cycle, and the smallest set a package of a cycle reaches is a cycle needing no more.
    reached = {package: reach(package) for package in sorted(remaining)}
    in_cycle = [found for package, found in reached.items() if package in found]
    return min(in_cycle, key=lambda found: (len(found), sorted(found))) if in_cycle else remaining
