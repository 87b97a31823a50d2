"""What the other inputs of the cluster have selected: the held bundles of a joint resolution,
and the package conflicts between inputs.

Read once per reconcile by :mod:`pivoter.inputs.engine` (:func:`observe`). The sources,
cheapest first:

* the child BundleDeployments of every input (those labelled
  ``app.kubernetes.io/managed-by=pivoter``), read from the daemon's shared BundleDeployment cache
  (a list from the API server per reconcile costs every input every other input's children: n²
  objects when n inputs resolve after a catalog change): their annotations name the input,
  package, bundle and version of what is applied now. A child being deleted still holds its
  package until it is gone (its uninstall would remove what a second copy installed). A child
  created a moment ago and not in the cache yet belongs to a pivot in progress, whose target
  (below, read from the API server) holds the same package;
* for an input of any kind (:data:`pivoter.apis.inputs.INPUT_KINDS`) with a pivot in progress,
  the ResolveSet of its target revision: the target is what it is moving to, and its new
  dependencies are held before they are applied. The inputs and their revisions are read from
  the daemon's shared caches (:mod:`pivoter.inputs.targets`, which also says why a pivot
  started a moment ago still counts before the cache shows it).

Reading the holdings, resolving against them and recording the pivot that claims the result
happen under :data:`CLAIMS`, one input at a time in the daemon (only the leader reconciles), so
two inputs never both select a package nobody holds yet: the second one sees the first one's
pivot target, as a held choice for a dependency and as a conflict for a package it requests
(:meth:`Peers.conflict`).

Bundle and catalog content is not trusted here: annotations only name packages and versions,
and the resolver matches them against the catalogs the resolving input selects.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS
from pivoter.catalogs import CatalogCache
from pivoter.inputs.targets import (
    CachedObject,
    InputsSource,
    Ledger,
    RevisionsWith,
    pivot_targets,
)
from pivoter.kube import Kube
from pivoter.pivot import (
    ANNOTATION_BUNDLE,
    ANNOTATION_INPUT,
    ANNOTATION_PACKAGE,
    ANNOTATION_VERSION,
)
from pivoter.pivot.naming import LABEL_MANAGED_BY
from pivoter.resolvesets import InputRef, RevisionStore
from resolver.rules.inputs import Held, SharedChoice

__all__ = [
    "CLAIMS",
    "LEDGER",
    "CachedObject",
    "ChildrenSource",
    "ChildrenWith",
    "Holding",
    "InputsSource",
    "Peers",
    "SharedDependency",
    "child_package",
    "described",
    "holder_text",
    "observe",
    "with_pivot_targets",
]

log = logging.getLogger(__name__)

CLAIMS = threading.Lock()
"""Taken by an input from reading its peers' holdings until its new pivot is recorded (see the
module docstring); shared by the engines of every input kind."""


ChildrenSource = Callable[[], Iterable[Mapping[str, Any]]]
"""The BundleDeployments of the cluster as a shared cache holds them (e.g. an informer store's
``list``)."""
ChildrenWith = Callable[[str], Iterable[Mapping[str, Any]]]
"""The cached BundleDeployments that install a package (:func:`child_package`, an index of the
shared cache)."""


LEDGER = Ledger()
"""The pivots this daemon started that the input caches may not show yet (written under
:data:`CLAIMS` when a pivot's record is persisted)."""


def holder_text(owner: str) -> str:
    """``Resolution/b`` as an explanation says it: ``Resolution b``."""
    kind, _, name = owner.partition("/")
    return f"{kind} {name}" if name else owner


@dataclass(frozen=True, slots=True)
class Holding:
    """One package another input has selected."""

    owner: str
    """The input, ``Kind/name``."""
    package: str
    bundle: str
    version: str
    child: str = ""
    """Its BundleDeployment ("" for an entry of a pivot target)."""
    deleting: bool = False

    @property
    def target(self) -> bool:
        """Whether this is an entry of a pivot target rather than a child."""
        return not self.child

    def held(self) -> Held:
        """The holding as the resolver's fixed choice."""
        origin = holder_text(self.owner)
        if self.deleting:
            origin += " (being removed)"
        return Held(self.bundle, self.package, self.version, origin)


@dataclass(frozen=True, slots=True)
class SharedDependency:
    """A bundle another input installs that this input's selection depends on."""

    package: str
    version: str
    bundle: str
    provided_by: str
    """The input that holds it, ``Kind/name``."""
    required_by: tuple[str, ...]
    """This input's packages that require it."""

    def text(self) -> str:
        """``db 1.1.0 (from Resolution/b)``."""
        return f"{self.package} {self.version} (from {self.provided_by})"


@dataclass(frozen=True, slots=True)
class Peers:
    """What every other input holds, as seen by one input."""

    holdings: tuple[Holding, ...]
    pivoting: frozenset[str] = frozenset()
    """Inputs with a pivot in progress (``Kind/name``) beside those with a target holding
    here: their children are on their way out unless their target keeps the package."""

    def held(self, exclude: Iterable[str] = ()) -> list[Held]:
        """The held bundles, one per package (the first holder by name), without the packages
        in ``exclude`` (those the input requests or installs itself: a duplicate there is a
        conflict, not a shared dependency). An input with a pivot in progress holds its
        target's bundles and its children being deleted; the others hold their children."""
        skip = set(exclude)
        chosen = self._chosen()
        return [chosen[p].held() for p in sorted(chosen) if p not in skip]

    def shared(self, choices: Iterable[SharedChoice]) -> list[SharedDependency]:
        """The held bundles a resolution depends on, with the inputs that hold them."""
        chosen = self._chosen()
        result = []
        for choice in choices:
            holding = chosen.get(choice.held.package)
            owner = holding.owner if holding is not None else choice.held.holder
            result.append(
                SharedDependency(
                    choice.held.package,
                    choice.held.version,
                    choice.held.name,
                    owner,
                    choice.required_by,
                )
            )
        return sorted(result, key=lambda s: s.package)

    def _chosen(self) -> dict[str, Holding]:
        pivoting = {h.owner for h in self.holdings if h.target} | self.pivoting
        by_package: dict[str, Holding] = {}
        for holding in sorted(
            self.holdings, key=lambda h: (h.package, h.owner, not h.target, h.deleting)
        ):
            if holding.owner in pivoting and not (holding.target or holding.deleting):
                continue
            by_package.setdefault(holding.package, holding)
        return by_package

    def conflict(self, packages: Iterable[str]) -> str:
        """A message naming the first of ``packages`` another input installs, or ''. A
        BundleDeployment of another input installs its package; so does the target of its pivot
        in progress (with :func:`with_pivot_targets`), before any of its children exists: two
        inputs resolving one package at the same moment never both install it."""
        wanted = set(packages)
        order = sorted(self.holdings, key=lambda h: (h.target, h.child, h.owner))
        for holding in order:
            if holding.deleting or holding.package not in wanted:
                continue
            where = (
                "its pivot in progress installs it"
                if holding.target
                else f"BundleDeployment {holding.child}"
            )
            return (
                f"package {holding.package} is already managed by {holding.owner} ({where}); "
                "one package is managed by one input: remove it from one of them"
            )
        return ""


def observe(
    kube: Kube,
    ref: InputRef,
    children: ChildrenSource | None = None,
    *,
    packages: Collection[str] | None = None,
    by_package: ChildrenWith | None = None,
) -> Peers:
    """The children of the inputs other than ``ref`` (enough for :meth:`Peers.conflict`; add
    the pivot targets with :func:`with_pivot_targets` before resolving), from ``children`` (the
    daemon's shared cache), else listed from the API server; given ``packages`` and
    ``by_package``, only the children of those packages."""
    items: Iterable[Mapping[str, Any]]
    if packages is not None and by_package is not None:
        items = [bd for package in sorted(packages) for bd in by_package(package) if _managed(bd)]
    elif children is None:
        items, _ = kube.list(BUNDLE_DEPLOYMENTS, label_selector=f"{LABEL_MANAGED_BY}=pivoter")
    else:
        items = [bd for bd in children() if _managed(bd)]
    holdings = [h for h in map(_holding, items) if h is not None and h.owner != str(ref)]
    if packages is not None:
        holdings = [h for h in holdings if h.package in packages]
    return Peers(tuple(holdings))


def child_package(bd: Mapping[str, Any]) -> list[str]:
    """The package a child BundleDeployment installs, by its annotation (none for another
    BundleDeployment): the index :data:`ChildrenWith` reads."""
    if not _managed(bd):
        return []
    package = str(
        ((bd.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_PACKAGE) or ""
    )
    return [package] if package else []


_HOLDINGS: dict[tuple[str, str], Holding | None] = {}
_HOLDINGS_LOCK = threading.Lock()
_HOLDINGS_LIMIT = 16384


def _holding(bd: Mapping[str, Any]) -> Holding | None:
    """:func:`_from_child`, read once per child and resourceVersion (every pass reads every
    other input's children: at 2000 children, parsing their annotations each time was 5 % of
    the daemon's samples in a change of 1000 inputs)."""
    metadata = bd.get("metadata") or {}
    uid, version = str(metadata.get("uid") or ""), str(metadata.get("resourceVersion") or "")
    if not (uid and version):
        return _from_child(bd)  # not as the API server wrote it: nothing identifies the version
    key = (uid, version)
    with _HOLDINGS_LOCK:
        if key in _HOLDINGS:
            return _HOLDINGS[key]
    found = _from_child(bd)
    with _HOLDINGS_LOCK:
        if len(_HOLDINGS) >= _HOLDINGS_LIMIT:
            _HOLDINGS.clear()  # versions of children long gone: start again
        _HOLDINGS[key] = found
    return found


def _managed(bd: Mapping[str, Any]) -> bool:
    labels = (bd.get("metadata") or {}).get("labels") or {}
    return labels.get(LABEL_MANAGED_BY) == "pivoter"


def with_pivot_targets(
    peers: Peers,
    kube: Kube,
    store: RevisionStore,
    ref: InputRef,
    *,
    revisions: CachedObject | None = None,
    inputs: InputsSource | None = None,
    packages: Collection[str] | None = None,
    revisions_with: RevisionsWith | None = None,
) -> Peers:
    """``peers`` plus the target bundles of every other input with a pivot in progress: the
    inputs from ``inputs`` and their revision ConfigMaps from ``revisions`` (the shared caches;
    None: from the API server); given ``packages`` and ``revisions_with``, only those of the
    inputs with a revision of one of those packages, and only of those packages."""
    found = pivot_targets(
        kube,
        store,
        str(ref),
        inputs=inputs,
        revisions=revisions,
        ledger=LEDGER,
        packages=packages,
        revisions_with=revisions_with,
    )
    extra = [
        Holding(owner, package, bundle, version)
        for owner, entries in found.items()
        for package, bundle, version in entries
    ]
    return Peers(peers.holdings + tuple(extra), pivoting=peers.pivoting | frozenset(found))


def _from_child(bd: Mapping[str, Any]) -> Holding | None:
    metadata = bd.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    owner = str(annotations.get(ANNOTATION_INPUT) or "")
    package = str(annotations.get(ANNOTATION_PACKAGE) or "")
    bundle = str(annotations.get(ANNOTATION_BUNDLE) or "")
    if not (owner and package and bundle):
        return None
    return Holding(
        owner=owner,
        package=package,
        bundle=bundle,
        version=str(annotations.get(ANNOTATION_VERSION) or ""),
        child=str(metadata.get("name") or ""),
        deleting=bool(metadata.get("deletionTimestamp")),
    )


def described(helds: Iterable[Held], cache: CatalogCache) -> list[Held]:
    """``helds`` with each bundle's catalog properties, from the highest-priority catalog of the
    daemon's cache that lists it: the resolver then knows the APIs a held bundle provides and
    what it requires even when the resolving input's catalogs do not list it. Unchanged when no
    catalog has it."""
    catalogs = [entry.catalog for _, entry in cache.by_priority()]
    out = []
    for h in helds:
        found = None
        for catalog in catalogs:
            found = catalog.bundle(h.package, h.name)
            if found is not None:
                break
        out.append(replace(h, properties=found.properties) if found is not None else h)
    return out
