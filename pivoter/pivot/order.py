"""The order in which the bundles of a group are applied: providers of APIs before consumers.

A bundle *provides* the kinds of the CustomResourceDefinitions it contains and the Namespaces it
creates; it *uses* the kinds of its objects and the namespaces they live in. A bundle that uses
what another bundle of the group provides is applied after it: :func:`waves` layers the group
so that every bundle comes after the providers it uses (bundles in one wave do not depend on one
another). A cycle (two bundles each using what the other provides) cannot be ordered: its bundles
share one wave, and the BundleDeployment controller retries the one that fails first.

Pure functions over the objects each bundle renders; called by :mod:`pivoter.pivot.prepare`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


def dependencies(contents: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, set[str]]:
    """For each package, the other packages of the group whose APIs or namespaces it uses."""
    by_key = providers(contents)
    needs: dict[str, set[str]] = {}
    for package, objects in contents.items():
        found: set[str] = set()
        for key in _uses(objects):
            found |= by_key.get(key, set())
        needs[package] = found - {package}
    return needs


def waves(contents: Mapping[str, Sequence[Mapping[str, Any]]]) -> tuple[tuple[str, ...], ...]:
    """The packages in apply order: each wave after every wave holding a provider it uses."""
    needs = dependencies(contents)
    remaining = set(needs)
    placed: set[str] = set()
    layers: list[tuple[str, ...]] = []
    while remaining:
        ready = sorted(p for p in remaining if needs[p] <= placed)
        if not ready:
            ready = sorted(remaining)  # a cycle: the rest goes together
        layers.append(tuple(ready))
        placed |= set(ready)
        remaining -= set(ready)
    return tuple(layers)
