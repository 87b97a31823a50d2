"""An operator and the dependencies OLM v0 installed for it, adopted together as one group.

OLM v0 resolves a Subscription's dependencies in its namespace: a CSV that requires an API
(``spec.customresourcedefinitions.required``, ``spec.apiservicedefinitions.required``) or a
package (``olm.package.required`` in its ``operatorframework.io/properties`` annotation) gets
the operator that provides it installed beside it, under a Subscription OLM v0 generates.
Adopting the dependent alone would leave its dependency to OLM v0, which would then see a
dependent it no longer resolves; adopting the dependency alone would leave OLM v0 with a
dependent whose dependency it no longer manages, and OLM v0 would install it again. So an
adoption takes the closure of what the adopted operator requires among the operators OLM v0
installed in the namespace (:func:`group_of`), as one Resolution with one package per member
and one point of no return; and it is refused while an operator left to OLM v0 requires a
member (:func:`held_back_by`). OLM's own migration tool refuses every operator with
dependencies.

Requirements and what meets them are read from the installed CSVs only (OLM v0 resolved them
when it installed them). Pure functions over :class:`~pivoter.olmv0.survey.InstalledOperator`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pivoter.olmv0.survey import InstalledOperator
from resolver import safedata

__all__ = ["group_of", "held_back_by", "provides", "requires"]

PROPERTIES_ANNOTATION = "operatorframework.io/properties"
PACKAGE_REQUIRED = "olm.package.required"
PROPERTIES_LIMITS = safedata.Limits(max_bytes=256 << 10, max_depth=16, max_nodes=10_000)
"""A CSV's properties annotation: the bundle's properties, as OLM v0 records them."""


def _definitions(csv: Mapping[str, Any], field: str, side: str) -> list[Mapping[str, Any]]:
    spec = csv.get("spec") or {}
    section = spec.get(field) or {}
    items = section.get(side) if isinstance(section, Mapping) else None
    return [i for i in items or [] if isinstance(i, Mapping)]


def _apis(csv: Mapping[str, Any], side: str) -> set[str]:
    """The APIs a CSV owns or requires: CRDs by name, APIServices as ``<version>.<group>``."""
    found = {
        f"crd {d.get('name')}"
        for d in _definitions(csv, "customresourcedefinitions", side)
        if d.get("name")
    }
    found |= {
        f"apiservice {d.get('version')}.{d.get('group')}"
        for d in _definitions(csv, "apiservicedefinitions", side)
        if d.get("group") and d.get("version")
    }
    return found


def _required_packages(csv: Mapping[str, Any]) -> set[str]:
    annotations = (csv.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(PROPERTIES_ANNOTATION)
    if not isinstance(text, str) or not text:
        return set()
    try:
        value = safedata.load_json(text, limits=PROPERTIES_LIMITS)
    except safedata.SafeDataError:
        return set()
    properties = value.get("properties") if isinstance(value, dict) else None
    return {
        f"package {p['value'].get('packageName')}"
        for p in properties or []
        if isinstance(p, dict)
        and p.get("type") == PACKAGE_REQUIRED
        and isinstance(p.get("value"), dict)
        and p["value"].get("packageName")
    }


def provides(operator: InstalledOperator) -> set[str]:
    """What ``operator``'s installed CSV provides: its owned APIs and its package."""
    csv = operator.csv or {}
    return _apis(csv, "owned") | {f"package {operator.package}"}


def requires(operator: InstalledOperator) -> set[str]:
    """What ``operator``'s installed CSV requires (APIs and packages), less what it provides."""
    csv = operator.csv or {}
    return (_apis(csv, "required") | _required_packages(csv)) - provides(operator)


def _providers(
    operator: InstalledOperator, others: Sequence[InstalledOperator]
) -> list[InstalledOperator]:
    needed = requires(operator)
    return [o for o in others if o is not operator and needed & provides(o)]


def group_of(
    primary: InstalledOperator, namespace: Sequence[InstalledOperator]
) -> tuple[InstalledOperator, ...]:
    """``primary`` and, transitively, the operators of its namespace (``namespace``: every
    installed operator there) that provide what it requires: ``primary`` first, then the rest
    by Subscription name."""
    members = [primary]
    queue = [primary]
    while queue:
        for provider in _providers(queue.pop(), namespace):
            if provider not in members:
                members.append(provider)
                queue.append(provider)
    return (primary, *sorted(members[1:], key=lambda o: str(o.name)))


def held_back_by(
    group: Sequence[InstalledOperator], namespace: Sequence[InstalledOperator]
) -> list[str]:
    """Why ``group`` cannot be adopted without the operators of ``namespace`` outside it that
    require one of its members (OLM v0 would install that member again for them): one reason
    each, naming the Subscription to adopt instead."""
    reasons = []
    for other in namespace:
        if other in group:
            continue
        for member in group:
            shared = requires(other) & provides(member)
            if shared:
                reasons.append(
                    f"{_what(member)} provides {', '.join(sorted(shared))}, which "
                    f"{_what(other)} requires and which stays OLM v0's: adopt Subscription "
                    f"{other.name} instead (it adopts {member.name} with it), or the whole "
                    "namespace"
                )
    return reasons


def _what(operator: InstalledOperator) -> str:
    csv = operator.csv or {}
    name = (csv.get("metadata") or {}).get("name") or operator.package
    return f"CSV {name} (Subscription {operator.name})"


def partition(
    namespace: Sequence[InstalledOperator],
) -> list[tuple[InstalledOperator, tuple[InstalledOperator, ...]]]:
    """Every installed operator of a namespace, in groups that depend on nothing outside them
    (connected by what they require and provide): each group's primary (the first by
    Subscription name that no other member requires) and its other members, by name."""
    ordered = sorted(namespace, key=lambda o: str(o.name))
    parent = list(range(len(ordered)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, operator in enumerate(ordered):
        for j, other in enumerate(ordered):
            if i != j and requires(operator) & provides(other):
                parent[root(i)] = root(j)
    components: dict[int, list[InstalledOperator]] = {}
    for i, operator in enumerate(ordered):
        components.setdefault(root(i), []).append(operator)
    found = []
    for members in components.values():
        needed = set().union(*(requires(m) for m in members))
        primary = next((m for m in members if not (provides(m) & needed)), members[0])
        found.append((primary, tuple(m for m in members if m is not primary)))
    return sorted(found, key=lambda g: str(g[0].name))
