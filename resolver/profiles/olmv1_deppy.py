"""The ``olmv1-deppy`` profile: OLM v1's SAT era (operator-controller with deppy, 2023-01..2024-05).

Variables ``required package P`` (Mandatory + Dependency on the bundles matching channel and
Masterminds range, newest first, non-deprecated first), ``installed package P`` (Mandatory +
Dependency on the successors then the installed bundle; legacy catalog edges, or with the
``ForceSemverUpgradeConstraints`` gate the caret range of the installed version), one variable
per bundle with its ``olm.package.required`` dependencies, and ``P package uniqueness``.
Solved with OLM's preference search; explanations print one constraint per line, as deppy did.
Called through :mod:`resolver.profiles`.
"""

from __future__ import annotations

from resolver.catalog.model import PROP_PACKAGE_REQUIRED
from resolver.profiles.olmv1_filter import is_legacy_successor, parse_user_range, version_key
from resolver.rules.inputs import (
    Candidate,
    Choice,
    Index,
    Resolution,
    ResolutionError,
    ResolutionInput,
    Unsatisfiable,
)
from resolver.rules.predicates import PredicateError, package_predicate
from resolver.sat import AtMost, Dependency, Engine, Mandatory, NotSatisfiable, Variable
from resolver.sat.constraints import Constraint
from resolver.versions import parse_range, parse_version


def _vid(cand: Candidate) -> str:
    return f"{cand.catalog}-{cand.package}-{cand.name}"


def _sorted(index: Index, cands: list[Candidate]) -> list[Candidate]:
    result = sorted(cands, key=lambda c: version_key(c.version), reverse=True)
    return sorted(result, key=lambda c: bool(index.deprecated(c)))


def resolve(inp: ResolutionInput) -> Resolution:
    """Resolve every request of ``inp`` together."""
    index = Index(inp.catalogs)
    gates = dict(inp.options.get("feature_gates", {}) or {})
    required: list[Variable] = []
    installed_vars: list[Variable] = []
    bundles: dict[str, Candidate] = {}
    for req in inp.requests:
        rng = parse_user_range(req.version_range)
        cands = [
            c
            for c in index.candidates(req.package)
            if (not req.channels or set(req.channels) & set(c.channels))
            and (rng is None or (c.version is not None and rng.contains(c.version)))
        ]
        if not cands:
            text = f'no package "{req.package}"'
            if req.version_range:
                text += f' matching version "{req.version_range}"'
            text += " found"
            if req.channels:
                text += f' in channel "{req.channels[0]}"'
            raise ResolutionError(text)
        cands = _sorted(index, cands)
        bundles.update((_vid(c), c) for c in cands)
        required.append(
            Variable(
                f"required package {req.package}",
                (Mandatory(), Dependency(tuple(_vid(c) for c in cands))),
            )
        )
        inst = next((i for i in inp.installed if not i.package or i.package == req.package), None)
        if inst is None or req.upgrade_policy == "Ignore":
            continue
        current = [c for c in index.candidates(req.package) if c.name == inst.name]
        if gates.get("ForceSemverUpgradeConstraints"):
            version = parse_version(inst.version)
            caret = parse_range(f"^{version}", "masterminds")
            succ = [
                c
                for c in index.candidates(req.package)
                if c.version is not None and caret.contains(c.version) and c.version != version
            ]
        else:
            succ = [
                c
                for c in index.candidates(req.package)
                if c.name != inst.name and is_legacy_successor(c, inst)
            ]
        ordered = [*_sorted(index, succ), *current]
        bundles.update((_vid(c), c) for c in ordered)
        installed_vars.append(
            Variable(
                f"installed package {req.package}",
                (Mandatory(), Dependency(tuple(_vid(c) for c in ordered))),
            )
        )
    bundle_vars: list[Variable] = []
    queue = sorted(bundles)
    seen = set(queue)
    while queue:
        vid = queue.pop(0)
        cand = bundles[vid]
        constraints: list[Constraint] = []
        for value in cand.bundle.props(PROP_PACKAGE_REQUIRED):
            try:
                pred = package_predicate(
                    str(value.get("packageName", "")), str(value.get("versionRange", ""))
                )
            except PredicateError as err:
                raise ResolutionError(str(err)) from None
            deps = _sorted(index, [c for c in index.all() if pred(c.bundle)])
            for d in deps:
                if _vid(d) not in seen:
                    seen.add(_vid(d))
                    bundles[_vid(d)] = d
                    queue.append(_vid(d))
            constraints.append(Dependency(tuple(_vid(d) for d in deps)))
        bundle_vars.append(Variable(vid, tuple(constraints)))
    by_package: dict[str, list[str]] = {}
    for var in bundle_vars:
        by_package.setdefault(bundles[var.id].package, []).append(var.id)
    uniqueness = [
        Variable(f"{pkg} package uniqueness", (AtMost(1, tuple(ids)),))
        for pkg, ids in sorted(by_package.items())
    ]
    variables = [*required, *installed_vars, *bundle_vars, *uniqueness]
    with Engine(variables) as engine:
        try:
            engine.check()
        except NotSatisfiable as err:
            raise Unsatisfiable([str(c) for c in err.constraints]) from None
        fixed = engine.minimize_extras(engine.preference_search())
        selected = engine.canonical_model(fixed)
    choices = []
    for vid in selected:
        if vid in bundles:
            cand = bundles[vid]
            choices.append(
                Choice(cand.package, cand.bundle, cand.catalog, next(iter(cand.channels), ""))
            )
    return Resolution(choices)
