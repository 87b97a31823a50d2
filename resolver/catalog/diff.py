"""What changed between two versions of one catalog, package by package.

The daemon re-resolves an input on a catalog change only when the change touches what the
input's last resolution read (:class:`resolver.rules.reads.Reads`): :func:`diff` names the
packages, bundles and provided APIs that differ. Where an object sits in the files (its
``origin``) is not content: moving a package to another file changes nothing here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from resolver.catalog.model import GVK, Bundle, Catalog

__all__ = ["CatalogDiff", "diff"]


@dataclass(frozen=True, slots=True)
class CatalogDiff:
    """The packages with any change (package, channel, bundle or deprecation objects), the
    bundles added, removed or changed (``(package, name)``), and every API a changed bundle
    provides, before or after."""

    packages: frozenset[str]
    bundles: frozenset[tuple[str, str]]
    apis: frozenset[GVK]

    def __bool__(self) -> bool:
        return bool(self.packages)


def diff(before: Catalog, after: Catalog) -> CatalogDiff:
    """The difference between ``before`` and ``after`` (the same catalog, two contents)."""
    if before is after:
        return CatalogDiff(frozenset(), frozenset(), frozenset())
    old, new = before.index(), after.index()
    packages: set[str] = set()
    bundles: set[tuple[str, str]] = set()
    apis: set[GVK] = set()
    names = set(old.packages) | set(new.packages) | set(old.bundles) | set(new.bundles)
    names |= set(old.channels) | set(new.channels) | set(old.deprecations) | set(new.deprecations)
    for name in names:
        old_bundles = {b.name: b for b in old.bundles.get(name, ())}
        new_bundles = {b.name: b for b in new.bundles.get(name, ())}
        changed = [
            b
            for n in set(old_bundles) | set(new_bundles)
            if _bundle(old_bundles.get(n)) != _bundle(new_bundles.get(n))
            for b in (old_bundles.get(n), new_bundles.get(n))
            if b is not None
        ]
        same = (
            not changed
            and _package(old.packages.get(name)) == _package(new.packages.get(name))
            and _channels(old.channels.get(name, ())) == _channels(new.channels.get(name, ()))
            and _deprecation(old.deprecations.get(name)) == _deprecation(new.deprecations.get(name))
        )
        if same:
            continue
        packages.add(name)
        for bundle in changed:
            bundles.add((bundle.package, bundle.name))
            apis.update(bundle.provided_apis)
    return CatalogDiff(frozenset(packages), frozenset(bundles), frozenset(apis))


def _bundle(bundle: Bundle | None) -> Any:
    if bundle is None:
        return None
    return (bundle.image, bundle.properties, bundle.related_images)


def _package(package: Any) -> Any:
    if package is None:
        return None
    return (package.default_channel, package.icon, package.description, package.properties)


def _channels(channels: Iterable[Any]) -> Any:
    return sorted(((c.name, c.entries, c.properties) for c in channels), key=lambda c: c[0])


def _deprecation(deprecation: Any) -> Any:
    return None if deprecation is None else deprecation.entries
