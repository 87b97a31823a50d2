"""The packages whose held bundles one resolution can meet: the scope of joint resolution.

A resolution of the ``pivoter`` profile (:mod:`resolver.profiles.pivoter`) reads the bundles other
inputs hold (:class:`~resolver.rules.inputs.Held`) only where they touch it:

* a held bundle of a package it may select (package uniqueness, or a shared dependency that
  meets a requirement);
* a held bundle providing an API that a bundle it may select provides or requires (API
  uniqueness, or a requirement met by the held bundle);
* a held bundle with a requirement that a bundle it installs meets (the holder depends on it:
  the profile keeps that requirement met).

Anything else is inert: the profile adds no variable or constraint for it, so leaving it out
changes no selection and no explanation. :func:`scope` gives the packages those held bundles can
belong to, from the catalogs alone: the packages reachable from what the input requests and
installs through the requirements of every bundle the catalogs list (by package, and by API
through every package that provides it), the packages providing an API one of them provides or
requires, and the packages with a requirement one of the installed packages may meet. It is a
superset (every bundle of a package counts, whatever its version), built from a per-catalog
graph kept in :attr:`Catalog.memo <resolver.catalog.model.Catalog.memo>`, so a resolution in a
cluster of a thousand inputs reads the few held bundles that matter instead of all of them.

A requirement that names neither a package nor an API (``olm.label.required``, a compound or
CEL ``olm.constraint``) may be met by any bundle: when one is reachable the scope is every
package (None); a package with one is always in scope (its held bundle may depend on anything
the input installs). So is a requirement that does not parse (the resolution reports it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from resolver.catalog.model import GVK, Bundle, Catalog
from resolver.rules.inputs import Installed
from resolver.rules.predicates import PredicateError, requirements

__all__ = ["PackageGraph", "scope"]

_MEMO_KEY = "resolver.rules.scope.PackageGraph"


@dataclass(slots=True)
class PackageGraph:
    """What the bundles of one catalog require and provide, by package (every version)."""

    requires: dict[str, set[str]] = field(default_factory=dict)
    """package -> the packages its bundles' requirements name."""
    requires_apis: dict[str, set[GVK]] = field(default_factory=dict)
    """package -> the APIs its bundles' requirements name."""
    provides: dict[str, set[GVK]] = field(default_factory=dict)
    """package -> the APIs its bundles provide."""
    providers: dict[GVK, set[str]] = field(default_factory=dict)
    """API -> the packages with a bundle providing it."""
    required_by: dict[str, set[str]] = field(default_factory=dict)
    """package -> the packages with a bundle whose requirement names it."""
    required_by_api: dict[GVK, set[str]] = field(default_factory=dict)
    """API -> the packages with a bundle whose requirement names it."""
    open: set[str] = field(default_factory=set)
    """Packages with a requirement that names neither a package nor an API (or does not parse)."""

    @classmethod
    def of(cls, catalog: Catalog) -> PackageGraph:
        """The graph of ``catalog``, built on first use and kept with it (a loaded catalog does
        not change)."""
        found = catalog.memo.get(_MEMO_KEY)
        if isinstance(found, PackageGraph):
            return found
        graph = cls()
        for bundle in catalog.bundles:
            graph._add(bundle.package, bundle)
        catalog.memo[_MEMO_KEY] = graph
        return graph

    def _add(self, package: str, bundle: Bundle) -> None:
        for api in bundle.provided_apis:
            self.provides.setdefault(package, set()).add(api)
            self.providers.setdefault(api, set()).add(package)
        try:
            predicates = list(requirements(bundle))
        except PredicateError:
            self.open.add(package)
            return
        for predicate in predicates:
            if predicate.package:
                self.requires.setdefault(package, set()).add(predicate.package)
                self.required_by.setdefault(predicate.package, set()).add(package)
            elif predicate.gvk is not None:
                self.requires_apis.setdefault(package, set()).add(predicate.gvk)
                self.required_by_api.setdefault(predicate.gvk, set()).add(package)
            else:
                self.open.add(package)


def scope(
    catalogs: Sequence[Catalog], packages: Iterable[str], installed: Iterable[Installed] = ()
) -> frozenset[str] | None:
    """The packages whose held bundles a resolution of ``packages`` (requested and installed)
    from bundles of ``catalogs`` can meet, ``installed`` being the bundles it installs now;
    None when that may be any package (see the module docstring). ``catalogs`` should be every
    catalog a held bundle's properties may come from."""
    graphs = [PackageGraph.of(c) for c in catalogs]
    reached = set(packages)
    queue = list(reached)
    apis: set[GVK] = set()
    while queue:
        package = queue.pop()
        for graph in graphs:
            if package in graph.open:
                return None
            apis |= graph.provides.get(package, set())
            needed = set(graph.requires.get(package, ()))
            for api in graph.requires_apis.get(package, ()):
                apis.add(api)
                for provider_graph in graphs:
                    needed |= provider_graph.providers.get(api, set())
            for other in needed - reached:
                reached.add(other)
                queue.append(other)
    result = set(reached)
    for graph in graphs:
        result |= graph.open
        for api in apis:
            # API uniqueness, or an API requirement a held bundle meets.
            result |= graph.providers.get(api, set())
    for inst in installed:
        # A holder whose requirement an installed bundle meets: by package, or by an API the
        # bundle (any version of its package the catalogs list) provides.
        provided = set(inst.as_bundle().provided_apis)
        for graph in graphs:
            provided |= graph.provides.get(inst.package, set())
        for graph in graphs:
            result |= graph.required_by.get(inst.package, set())
            for api in provided:
                result |= graph.required_by_api.get(api, set())
    return frozenset(result)
