"""Cross-package checks: requirements no bundle satisfies, APIs provided by two packages.

Requirements are read with the resolver's own predicates
(:func:`resolver.rules.predicates.requirements`: ``olm.package.required``, ``olm.gvk.required``
and ``olm.constraint``), so "satisfied" means what it means during resolution. Candidates are
the bundles of the tested catalog and of every ``--with`` catalog. Called by
:func:`resolver.channeltest.report.run_catalog_test`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from resolver.catalog.model import GVK, Bundle, Catalog
from resolver.channeltest.findings import Finding, finding
from resolver.rules.predicates import Predicate, PredicateError, requirements


def check_dependencies(
    catalog: Catalog,
    others: Sequence[Catalog],
    heads: set[tuple[str, str]],
    packages: set[str] | None = None,
) -> list[Finding]:
    """Requirements of bundles of ``catalog`` that no bundle of ``catalog`` or ``others`` meets.

    ``heads`` holds (package, bundle) of channel heads: an unmet requirement there is an error,
    elsewhere a warning. ``packages`` limits which packages' bundles are checked.
    """
    pool = [b for c in (catalog, *others) for b in c.bundles]
    by_package: dict[str, list[Bundle]] = {}
    providers: dict[GVK, list[Bundle]] = {}
    for b in pool:
        by_package.setdefault(b.package, []).append(b)
        for api in b.provided_apis:
            providers.setdefault(api, []).append(b)
    out: list[Finding] = []
    for bundle in catalog.bundles:
        if packages is not None and bundle.package not in packages:
            continue
        try:
            preds = list(requirements(bundle))
        except PredicateError as err:
            what = f"has a requirement that cannot be read: {err}"
            out.append(_unmet(bundle, heads, what, f"an unreadable requirement ({err})"))
            continue
        for pred in preds:
            if not any(pred(b) for b in _candidates(pred, pool, by_package, providers)):
                what = f"requires a bundle {pred.text}; none exists"
                out.append(_unmet(bundle, heads, what, requirement_text(pred)))
    return out


def requirement_text(pred: Predicate) -> str:
    """A requirement in few words: ``cert-manager.io/v1 Certificate``, ``package db >=1.0.0``."""
    if pred.kind == "gvk" and pred.gvk is not None:
        gvk = pred.gvk
        return f"{gvk.group}/{gvk.version} {gvk.kind}" if gvk.group else f"{gvk.version} {gvk.kind}"
    if pred.kind == "package":
        _, _, rng = pred.text.partition("in range: ")
        return f"package {pred.package} {rng}".strip()
    return pred.text


def _candidates(
    pred: Predicate,
    pool: Sequence[Bundle],
    by_package: dict[str, list[Bundle]],
    providers: dict[GVK, list[Bundle]],
) -> Iterable[Bundle]:
    if pred.kind == "package":
        return by_package.get(pred.package, [])
    if pred.kind == "gvk" and pred.gvk is not None:
        return providers.get(pred.gvk, [])
    return pool


def _unmet(bundle: Bundle, heads: set[tuple[str, str]], what: str, detail: str) -> Finding:
    head = (bundle.package, bundle.name) in heads
    code = "unsatisfied-dependency" if head else "unsatisfied-dependency-old"
    role = "channel head " if head else ""
    return finding(
        code,
        f"package {bundle.package!r}: {role}{bundle.name} {what} in the catalogs tested",
        package=bundle.package,
        bundle=bundle.name,
        origin=bundle.origin,
        detail=detail,
    )


def check_provided_apis(
    catalog: Catalog, others: Sequence[Catalog], packages: set[str] | None = None
) -> list[Finding]:
    """APIs that bundles of two different packages provide (one finding per API)."""
    owners: dict[GVK, dict[str, tuple[str, Bundle]]] = {}
    for cat in (catalog, *others):
        for b in cat.bundles:
            for api in b.provided_apis:
                owners.setdefault(api, {}).setdefault(b.package, (cat.name, b))
    out = []
    for api, by_package in sorted(owners.items(), key=lambda kv: str(kv[0])):
        if len(by_package) < 2:
            continue
        if packages is not None and not packages & set(by_package):
            continue
        if not any(cat == catalog.name for cat, _ in by_package.values()):
            continue
        names = sorted(by_package)
        first = by_package[names[0]][1]
        shown = ", ".join(f"{p} (catalog {by_package[p][0]})" for p in names)
        out.append(
            finding(
                "api-claimed-twice",
                f"API {api} is provided by {len(names)} packages: {shown}",
                package=names[0],
                bundle=first.name,
                origin=first.origin,
                detail=f"{api} ({', '.join(names)})",
            )
        )
    return out
