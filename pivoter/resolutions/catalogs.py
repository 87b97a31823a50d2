"""Which cached catalogs an input resolves from: all of them by priority, or those whose
``Catalog`` objects match the input's label selector.

Called by :mod:`pivoter.resolutions.engine` before every resolution; reads the
:class:`pivoter.catalogs.CatalogCache` (content) and, with a selector, the ``Catalog`` objects
(labels) from the API server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pivoter.catalogs import CATALOGS, CatalogCache
from pivoter.kube import Kube
from resolver.rules.inputs import CatalogSource

__all__ = ["SelectorError", "gather", "selector_string"]


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
