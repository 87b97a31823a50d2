"""Which cached catalogs an input resolves from: all of them by priority, or those whose
``Catalog`` objects match the input's label selector.

Called by :mod:`pivoter.resolutions.engine` before every resolution; reads the
:class:`pivoter.catalogs.CatalogCache` (content) and, with a selector, the ``Catalog`` objects
(labels) from the API server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pivoter.apis import pivoter as api
from pivoter.catalogs import CATALOGS, CatalogCache
from pivoter.controllers.conditions import TRUE, find
from pivoter.kube import Kube, Object
from resolver.rules.inputs import CatalogSource

__all__ = ["SelectorError", "gather", "not_serving", "selector_string", "serving_flips"]


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


def gather(
    kube: Kube, cache: CatalogCache, selector: Mapping[str, Any] | None
) -> list[tuple[CatalogSource, str]]:
    """The catalogs to resolve from, highest priority first, each with its content digest."""
    entries = cache.by_priority()
    if selector:
        items, _ = kube.list(CATALOGS, label_selector=selector_string(selector))
        wanted = {str(c["metadata"]["name"]) for c in items}
        entries = [(name, entry) for name, entry in entries if name in wanted]
    return [
        (CatalogSource(name, entry.catalog, priority=entry.priority), entry.digest)
        for name, entry in entries
    ]


def not_serving(kube: Kube, names: list[str]) -> list[str]:
    """For each of the catalogs ``names`` whose ``Catalog`` is not ``Serving`` now, a sentence
    saying that the resolution used its last good content (the cache keeps it)."""
    if not names:
        return []
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


def serving_flips() -> Callable[[Object], bool]:
    """A watch filter for ``Catalog`` objects: True when a catalog's ``Serving`` status differs
    from the last one seen (the inputs then say, or stop saying, that they resolve from its
    last good content). Status heartbeats and unchanged polls are not flips."""
    seen: dict[str, str] = {}

    def flipped(catalog: Object) -> bool:
        name = str((catalog.get("metadata") or {}).get("name") or "")
        serving = find((catalog.get("status") or {}).get("conditions"), api.TYPE_SERVING)
        state = str((serving or {}).get("status") or "")
        before = seen.get(name)
        seen[name] = state
        return before is not None and before != state

    return flipped
