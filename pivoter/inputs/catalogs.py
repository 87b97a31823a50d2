"""Which cached catalogs an input resolves from: all of them by priority, or those whose
``Catalog`` objects match the input's label selector; for a ClusterExtension, the
``ClusterCatalog`` objects its selector matches that are not ``availabilityMode: Unavailable``.

Called by :mod:`pivoter.inputs.engine` before every resolution; reads the
:class:`pivoter.catalogs.CatalogCache` (content) and, with a selector, the ``Catalog`` objects
(labels) from the API server (``ClusterCatalog`` objects always: their availability is in the
spec).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pivoter.apis import olmv1
from pivoter.apis import pivoter as api
from pivoter.apis.conditions import TRUE, find
from pivoter.apis.resources import CATALOGS, CLUSTER_CATALOGS
from pivoter.catalogs import CatalogCache
from pivoter.kube import Kube, NotFound, Object
from resolver.rules.inputs import CatalogInput

__all__ = [
    "CLUSTER_CATALOG",
    "SelectorError",
    "any_catalog",
    "catalog_flips",
    "gather",
    "not_serving",
    "selector_string",
]

CLUSTER_CATALOG = "ClusterCatalog"
"""The ``catalog_kind`` of inputs that resolve from ClusterCatalogs only (ClusterExtensions)."""


class SelectorError(ValueError):
    """The catalog selector cannot be expressed as a label selector; fix the spec."""


def selector_string(selector: Mapping[str, Any]) -> str:
    """A ``metav1.LabelSelector`` (``matchLabels``, ``matchExpressions``) as a query string."""
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op = expr.get("key"), expr.get("operator")
        values = ",".join(str(v) for v in expr.get("values") or [])
        if op == "In":
            terms.append(f"{key} in ({values})")
        elif op == "NotIn":
            terms.append(f"{key} notin ({values})")
        elif op == "Exists":
            terms.append(str(key))
        elif op == "DoesNotExist":
            terms.append(f"!{key}")
        else:
            raise SelectorError(f"catalogSelector: unknown operator {op!r} for key {key!r}")
    return ",".join(terms)


def _cluster_catalogs(kube: Kube, selector: Mapping[str, Any] | None) -> list[Object]:
    """The ClusterCatalog objects ``selector`` matches (all without one), minus those whose
    ``availabilityMode`` is ``Unavailable`` (treated as absent, as OLM v1 does)."""
    query = selector_string(selector) if selector else ""
    try:
        items, _ = kube.list(CLUSTER_CATALOGS, label_selector=query)
    except NotFound:  # the CRD is not installed: there are none
        return []
    return [
        c
        for c in items
        if (c.get("spec") or {}).get("availabilityMode", olmv1.AVAILABLE) != olmv1.UNAVAILABLE
    ]


def gather(
    kube: Kube, cache: CatalogCache, selector: Mapping[str, Any] | None, *, kind: str = "Catalog"
) -> list[tuple[CatalogInput, str]]:
    """The catalogs to resolve from, highest priority first, each with its content digest."""
    if kind == CLUSTER_CATALOG:
        wanted = {
            f"{CLUSTER_CATALOG}/{c['metadata']['name']}" for c in _cluster_catalogs(kube, selector)
        }
        return [
            (
                CatalogInput(name.partition("/")[2], entry.catalog, priority=entry.priority),
                entry.digest,
            )
            for name, entry in cache.by_priority()
            if name in wanted
        ]
    entries = cache.by_priority()
    if selector:
        items, _ = kube.list(CATALOGS, label_selector=selector_string(selector))
        wanted = {str(c["metadata"]["name"]) for c in items}
        entries = [(name, entry) for name, entry in entries if name in wanted]
    return [
        (CatalogInput(name, entry.catalog, priority=entry.priority), entry.digest)
        for name, entry in entries
    ]


def not_serving(kube: Kube, names: list[str], *, kind: str = "Catalog") -> list[str]:
    """For each of the catalogs ``names`` whose ``Catalog`` (or ``ClusterCatalog``) is not
    ``Serving`` now, a sentence saying that the resolution used its last good content (the cache
    keeps it)."""
    if not names:
        return []
    if kind == CLUSTER_CATALOG:
        return [
            f"{text}: resolved from its last good content"
            for name, text in cluster_catalogs_not_serving(kube, None)
            if name in names
        ]
    items, _ = kube.list(CATALOGS)
    notes = []
    for catalog in sorted(items, key=lambda c: str(c["metadata"]["name"])):
        name = str(catalog["metadata"]["name"])
        serving = find((catalog.get("status") or {}).get("conditions"), api.TYPE_SERVING)
        if name in names and serving is not None and serving.get("status") != TRUE:
            fetched = (catalog.get("status") or {}).get("lastFetchTime")
            when = f", fetched by {fetched}" if fetched else ""
            notes.append(
                f"catalog {name} is not serving ({serving.get('reason')}: "
                f"{serving.get('message')}): resolved from its last good content{when}"
            )
    return notes


def catalog_flips() -> Callable[[Object], bool]:
    """A watch filter for ``Catalog`` objects: True when what resolution reads of a catalog
    object itself differs from the last one seen: its ``Serving`` status (the inputs then say,
    or stop saying, that they resolve from its last good content) or its labels (catalog
    selectors match them). Status heartbeats and unchanged polls are not flips; content and
    priority reach the inputs through the catalog cache (its ``on_change``)."""
    seen: dict[str, tuple[str, object]] = {}

    def flipped(catalog: Object) -> bool:
        meta = catalog.get("metadata") or {}
        name = str(meta.get("name") or "")
        serving = find((catalog.get("status") or {}).get("conditions"), api.TYPE_SERVING)
        state = (str((serving or {}).get("status") or ""), dict(meta.get("labels") or {}))
        before = seen.get(name)
        seen[name] = state
        return before is not None and before != state

    return flipped


def cluster_catalogs_not_serving(
    kube: Kube, selector: Mapping[str, Any] | None, cache: CatalogCache | None = None
) -> list[tuple[str, str]]:
    """Each ClusterCatalog ``selector`` matches that is not ``Serving``, with a sentence saying
    so and, with ``cache``, whether its last good content is still used (name, sentence)."""
    notes = []
    for catalog in sorted(_cluster_catalogs(kube, selector), key=lambda c: c["metadata"]["name"]):
        name = str(catalog["metadata"]["name"])
        serving = find((catalog.get("status") or {}).get("conditions"), olmv1.TYPE_SERVING)
        if serving is not None and serving.get("status") == TRUE:
            continue
        why = (
            f"{serving.get('reason')}: {serving.get('message') or 'no message'}"
            if serving is not None
            else "no Serving condition yet"
        )
        text = f'catalog "{name}" is not being served ({why})'
        if cache is not None:
            kept = cache.get(f"{CLUSTER_CATALOG}/{name}") is not None
            text += (
                ": resolved from its last good content"
                if kept
                else ": nothing from it is available to resolution"
            )
        notes.append((name, text))
    return notes


def any_catalog(kube: Kube, selector: Mapping[str, Any] | None, kind: str) -> bool:
    """Whether any catalog object the selector matches exists (unavailable or not serving
    included): False only when they were all deleted."""
    resource = CLUSTER_CATALOGS if kind == CLUSTER_CATALOG else CATALOGS
    try:
        items, _ = kube.list(resource, label_selector=selector_string(selector) if selector else "")
    except NotFound:
        return False
    return bool(items)
