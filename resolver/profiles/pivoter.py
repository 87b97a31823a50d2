"""The ``pivoter`` profile (the default): the semantics written in ``docs/resolution.md``.

Hard constraints: every requested package gets exactly one bundle from its allowed candidates
(channel, Masterminds version range, upgrade edges from the installed bundle unless the policy is
``SelfCertified``), installed packages that are not requested stay installed (their bundle or a
successor), every requirement of a selected bundle is met, one bundle per package, one package
per provided API, no ``olm.deprecated`` bundle, no bundle whose ``minKubeVersion`` exceeds the
cluster's. Among the solutions, the objective vector is minimised exactly, level by level:

1. installed packages that were not requested keep their bundle;
2. no bundle deprecated by its catalog (``olm.deprecations``);
3. newest candidate per requested package (sum of version ranks);
4. newest bundle per dependency package (sum of version ranks);
5. the default channel when no channel was requested;
6. the highest-priority catalog;
7. fewest bundles;

then a canonical tie-break (package, version, catalog, name).

**Held bundles** (:class:`~resolver.rules.inputs.Held`: what other inputs of the cluster
selected) are fixed choices: a requirement may be met by one (it is then reported in
``Resolution.shared``, not among the choices), no other bundle of a held package and no bundle of
another package providing a held bundle's API may be selected (each such bundle is prohibited
with a constraint naming the holder, so explanations say who holds what), and their own
requirements are their holder's business, except those this resolution's installed bundles meet
now: those must stay met (a holder never moves a shared dependency out of the range its
dependents need). Called through :mod:`resolver.profiles` by the CLI
and the daemon.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from resolver.catalog.model import GVK, PROP_DEPRECATED, Catalog
from resolver.explain import Fact, RequestFact, Requirement, summarize
from resolver.profiles.olmv1_filter import parse_user_range, version_key
from resolver.rules.channels import is_successor
from resolver.rules.inputs import (
    Candidate,
    CatalogInput,
    Choice,
    Held,
    Index,
    Installed,
    PackageRequest,
    Resolution,
    ResolutionError,
    ResolutionInput,
    SharedChoice,
    Unsatisfiable,
    safe_version,
)
from resolver.rules.predicates import Predicate, PredicateError, requirements
from resolver.sat import (
    AtMost,
    Dependency,
    Engine,
    Mandatory,
    NotSatisfiable,
    Objective,
    Prohibited,
    Variable,
)
from resolver.sat.constraints import Constraint
from resolver.versions import PrecedenceKey, VersionRange, parse_version

LEVELS = (
    "keep installed packages",
    "avoid deprecated bundles",
    "newest requested bundles",
    "newest dependencies",
    "default channel",
    "catalog priority",
    "fewest bundles",
)
"""The names of the objective levels, most important first."""

INSTALLED_CATALOG = "@installed"
"""The pseudo-catalog of installed bundles that no catalog lists any more."""

HELD_CATALOG = "@held"
"""The pseudo-catalog of held bundles that no catalog of this resolution lists."""


def describe(cand: Candidate) -> str:
    """A bundle in domain words: name, package, version, catalog."""
    version = cand.bundle.version or "?"
    if cand.catalog == HELD_CATALOG:  # no catalog of this resolution lists it
        return f"bundle {cand.name} (package {cand.package} {version})"
    return f"bundle {cand.name} (package {cand.package} {version}, catalog {cand.catalog})"


@dataclass(slots=True)
class _Request:
    req: PackageRequest
    rng: VersionRange | None
    installed: Installed | None
    candidates: list[Candidate] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)


class Pivoter:
    """One resolution under pivoter's own semantics."""

    def __init__(self, inp: ResolutionInput, index: Index | None = None) -> None:
        """``index`` may be reused across resolutions over the same catalogs (it is read-only)."""
        self.inp = inp
        self.index = index if index is not None else Index(inp.catalogs, inp.reads)
        self.kube = parse_version(inp.kube_version) if inp.kube_version else None
        ranked = sorted(self.index.sources, key=lambda s: (-s.priority, s.name))
        self.catalog_rank = {s.name: i for i, s in enumerate(ranked)}
        self.catalog_rank[INSTALLED_CATALOG] = len(ranked)
        self.catalog_rank[HELD_CATALOG] = len(ranked)
        self.vars: dict[str, Candidate] = {}
        self.order: list[str] = []
        self.requests: list[_Request] = []
        self.kept: list[tuple[Installed, list[Candidate]]] = []
        self.facts: dict[Constraint, Fact] = {}
        self.held: dict[str, Held] = {}
        for held in sorted(inp.held, key=lambda h: (h.package, h.holder, h.name)):
            self.held.setdefault(held.package, held)
        self.held_pseudo: list[Candidate] = []
        self.held_apis: dict[GVK, Held] = {}
        for held in self.held.values():
            for cand in self._held_candidates(held):
                if cand.catalog == HELD_CATALOG:
                    self.held_pseudo.append(cand)
                for api in cand.bundle.provided_apis:
                    self.held_apis.setdefault(api, held)
        self.requires: dict[str, list[tuple[str, ...]]] = {}

    # ------------------------------------------------------------------ candidates

    def _vid(self, cand: Candidate) -> str:
        return f"{cand.catalog}/{cand.package}/{cand.name}"

    def _add(self, cand: Candidate) -> str:
        vid = self._vid(cand)
        if vid not in self.vars:
            self.vars[vid] = cand
            self.order.append(vid)
        return vid

    def _sorted(self, cands: Sequence[Candidate]) -> list[Candidate]:
        """Newest first, then by catalog rank, then by name (the canonical order)."""
        result = sorted(cands, key=lambda c: (self.catalog_rank.get(c.catalog, 0), c.name))
        return sorted(result, key=lambda c: version_key(c.version), reverse=True)

    def _installed_candidate(self, inst: Installed) -> Candidate:
        """The installed bundle as catalogs list it, or as a pseudo-catalog entry."""
        for cand in self.index.candidates(inst.package):
            if cand.name == inst.name and (not inst.catalog or cand.catalog == inst.catalog):
                return cand
        for cand in self.index.candidates(inst.package):
            if cand.name == inst.name:
                return cand
        source = CatalogInput(INSTALLED_CATALOG, Catalog(name=INSTALLED_CATALOG))
        return Candidate(source, inst.as_bundle(), (), safe_version(inst.version))

    def _held_candidates(self, held: Held) -> list[Candidate]:
        """The held bundle as the catalogs list it (maybe in several), or a pseudo entry."""
        found = self.index.named(held.package, held.name)
        if found:
            return found
        source = CatalogInput(HELD_CATALOG, Catalog(name=HELD_CATALOG))
        inst = held.as_installed()
        return [Candidate(source, inst.as_bundle(), (), safe_version(inst.version))]

    def _is_held(self, cand: Candidate) -> bool:
        held = self.held.get(cand.package)
        return held is not None and cand.name == held.name

    def _held_conflict(self, cand: Candidate) -> str:
        """Why a held bundle rules ``cand`` out ("" when none does)."""
        held = self.held.get(cand.package)
        if held is not None:
            return "" if cand.name == held.name else held.text()
        for api in cand.bundle.provided_apis:
            other = self.held_apis.get(api)
            if other is not None:
                return (
                    f"it provides API {api}, which package {other.package} "
                    f"({other.origin()}) provides: only one package may provide an API"
                )
        return ""

    def _successor(self, cand: Candidate, inst: Installed, channels: Sequence[str]) -> bool:
        version = safe_version(inst.version)
        if cand.version is not None and version is not None and cand.version < version:
            return False  # no downgrade under CatalogProvided, whatever the edges say
        entries = [e for c, e in cand.entries if not channels or c in channels]
        return any(is_successor(e, inst.name, version) for e in entries)

    def _request(self, req: PackageRequest) -> _Request:
        installed = next((i for i in self.inp.installed if i.package == req.package), None)
        r = _Request(req, parse_user_range(req.version_range), installed)
        current = self._installed_candidate(installed) if installed else None
        pool = list(self.index.candidates(req.package))
        if current is not None and current.catalog == INSTALLED_CATALOG:
            pool.append(current)
        for cand in pool:
            why = self._filter(r, cand, current)
            if why:
                r.rejected[self._vid(cand)] = why
            else:
                r.candidates.append(cand)
        r.candidates = self._sorted(r.candidates)
        return r

    def _filter(self, r: _Request, cand: Candidate, current: Candidate | None) -> str:
        """Why ``cand`` cannot serve request ``r`` ("" when it can)."""
        req = r.req
        # An installed bundle that names no catalog (taken over from another manager) is
        # current in whichever catalog lists it: staying on it is no upgrade, and the catalogs'
        # priority decides which copy to install from.
        is_current = current is not None and (
            self._vid(cand) == self._vid(current)
            or (
                r.installed is not None
                and not r.installed.catalog
                and (cand.package, cand.name) == (r.installed.package, r.installed.name)
            )
        )
        if req.channels and not is_current and not set(req.channels) & set(cand.channels):
            return f"not in channel {' or '.join(req.channels)}"
        if r.rng is not None and (cand.version is None or not r.rng.contains(cand.version)):
            return f"version {cand.bundle.version or '?'} is outside range {req.version_range}"
        if (
            r.installed is not None
            and not is_current
            and req.upgrade_policy != "SelfCertified"
            and not self._successor(cand, r.installed, req.channels)
        ):
            return (
                f"no upgrade edge (replaces, skips, skipRange) from installed "
                f"{r.installed.name} {r.installed.version}"
            )
        return ""

    # ------------------------------------------------------------------ variables

    def _bundle_constraints(self, vid: str) -> list[Constraint]:
        cand = self.vars[vid]
        if self._is_held(cand):
            return []  # a fixed choice: its holder met its requirements
        held = self._held_conflict(cand)
        if held:
            return [Prohibited(f"{describe(cand)} cannot be selected: {held}")]
        constraints: list[Constraint] = []
        if cand.bundle.prop(PROP_DEPRECATED) is not None:
            constraints.append(Prohibited(f"{describe(cand)} is marked olm.deprecated"))
        min_kube = str(cand.bundle.csv_metadata.get("minKubeVersion", "") or "")
        if self.kube is not None and min_kube:
            needed = safe_version(min_kube)
            if needed is not None and needed > self.kube:
                constraints.append(
                    Prohibited(
                        f"{describe(cand)} needs Kubernetes {min_kube} or newer "
                        f"(minKubeVersion); the cluster runs {self.kube}"
                    )
                )
        try:
            preds = list(requirements(cand.bundle))
        except PredicateError as err:
            raise ResolutionError(f"{describe(cand)}: {err}") from None
        for pred in preds:
            # A bundle may meet its own requirement (it provides the API it needs), as in OLM.
            deps = self._sorted(self._providers(pred))
            ids = tuple(self._add(d) for d in deps)
            tail = "" if ids else ": no bundle in any catalog satisfies it"
            dep = Dependency(ids, f"{describe(cand)} requires {self._pred_text(pred)}{tail}")
            self.facts[dep] = Requirement(
                cand.package, cand.bundle.version or cand.name, self._pred_text(pred), bool(ids)
            )
            self.requires.setdefault(vid, []).append(ids)
            constraints.append(dep)
        return constraints

    def _dependents(self) -> list[Variable]:
        """The requirements of held bundles that this resolution's installed bundles meet now
        (another input depends on them): they must stay met, so a holder does not move a
        shared dependency out of its dependents' ranges. Requirements a held bundle meets are
        left alone, and so are held bundles whose requirements are unknown (no catalog lists
        them and the daemon gave no properties)."""
        installed = [self._installed_candidate(i) for i in self.inp.installed if i.package]
        variables: list[Variable] = []
        for package, held in sorted(self.held.items()):
            cand = self._held_candidates(held)[0]
            if cand.catalog == HELD_CATALOG and not held.properties:
                continue
            try:
                preds = list(requirements(cand.bundle))
            except PredicateError:
                continue  # its holder reports it
            for n, pred in enumerate(preds):
                if not any(pred(i.bundle) for i in installed):
                    continue
                providers = self._sorted(self._providers(pred))
                if any(self._is_held(p) for p in providers):
                    continue
                ids = tuple(self._add(p) for p in providers)
                user = f"{describe(cand)}, installed by {held.holder or 'another input'},"
                text = f"{user} requires {self._pred_text(pred)}"
                variables.append(
                    Variable(
                        f"dependent/{package}/{n}",
                        # One text for both: the summary shows it once.
                        (Mandatory(text), Dependency(ids, text)),
                    )
                )
        return variables

    def _providers(self, pred: Predicate) -> list[Candidate]:
        held = [c for c in self.held_pseudo if pred(c.bundle)]
        if pred.package:
            return [c for c in self.index.candidates(pred.package) if pred(c.bundle)] + held
        if pred.gvk is not None:
            return list(self.index.providers(pred.gvk)) + held
        return [c for c in self.index.all() if pred(c.bundle)] + held

    @staticmethod
    def _pred_text(pred: Predicate) -> str:
        text = f"a bundle {pred.text}"
        if pred.failure_message:
            text += f' ("{pred.failure_message}")'
        return text

    def variables(self) -> list[Variable]:
        """Build the problem: requests, kept installed packages, bundles, uniqueness."""
        head: list[Variable] = []
        requested = {r.package for r in self.inp.requests}
        # Requests are symmetric in this profile: sorting them makes explanations independent
        # of the order packages were named in.
        for req in sorted(self.inp.requests, key=lambda q: (q.package, q.channels)):
            r = self._request(req)
            self.requests.append(r)
            what = _request_text(req)
            ids = tuple(self._add(c) for c in r.candidates)
            if ids:
                text = f"{what} needs one of {', '.join(ids)}"
            else:
                text = f"{what}: {_no_candidates(r)}"
            dep = Dependency(ids, text)
            self.facts[dep] = RequestFact(
                what, tuple(c.bundle.version or c.name for c in r.candidates)
            )
            head.append(Variable(f"request/{req.package}", (Mandatory(what), dep)))
        for inst in sorted(self.inp.installed, key=lambda i: (i.package, i.name)):
            if inst.package in requested or not inst.package:
                continue
            current = self._installed_candidate(inst)
            succ = [
                c
                for c in self.index.candidates(inst.package)
                if self._vid(c) != self._vid(current) and self._successor(c, inst, ())
            ]
            keep = [current, *self._sorted(succ)]
            self.kept.append((inst, keep))
            ids = tuple(self._add(c) for c in keep)
            what = f"package {inst.package} is installed ({inst.name} {inst.version})"
            head.append(
                Variable(
                    f"installed/{inst.package}",
                    (
                        Mandatory(what),
                        Dependency(ids, f"{what} and stays: one of {', '.join(ids)}"),
                    ),
                )
            )
        head += self._dependents()
        bundle_constraints: dict[str, list[Constraint]] = {}
        i = 0
        while i < len(self.order):
            vid = self.order[i]
            bundle_constraints[vid] = self._bundle_constraints(vid)
            i += 1
        variables = [*head]
        variables += [Variable(v, tuple(bundle_constraints[v])) for v in self.order]
        by_package: dict[str, list[str]] = {}
        by_api: dict[str, list[str]] = {}
        for vid in self.order:
            cand = self.vars[vid]
            by_package.setdefault(cand.package, []).append(vid)
            for gvk in cand.bundle.provided_apis:
                by_api.setdefault(str(gvk), []).append(vid)
        for pkg in sorted(by_package):
            pkg_ids = by_package[pkg]
            if len(pkg_ids) > 1:
                variables.append(
                    Variable(
                        f"package/{pkg}",
                        (
                            AtMost(
                                1,
                                tuple(pkg_ids),
                                f"only one bundle of package {pkg} can be installed",
                            ),
                        ),
                    )
                )
        for api in sorted(by_api):
            api_ids = by_api[api]
            packages = sorted({self.vars[v].package for v in api_ids})
            if len(packages) > 1:
                variables.append(
                    Variable(
                        f"api/{api}",
                        (
                            AtMost(
                                1,
                                tuple(api_ids),
                                f"only one package may provide API {api} "
                                f"(provided by packages {', '.join(packages)})",
                            ),
                        ),
                    )
                )
        return variables

    # ------------------------------------------------------------------ objectives

    def objectives(self, engine: Engine) -> list[Objective]:
        """The objective vector of ``docs/resolution.md``, as solver literals."""
        keep = tuple(-engine.lit(self._vid(inst_keep[0])) for _, inst_keep in self.kept)
        deprecated = []
        for vid in self.order:
            cand = self.vars[vid]
            req = next((r for r in self.requests if r.req.package == cand.package), None)
            channel = req.req.channels[0] if req and req.req.channels else ""
            if self.index.deprecated(cand, channel):
                deprecated.append(engine.lit(vid))
        newest_requested: list[int] = []
        for r in self.requests:
            newest_requested += engine.rank_literals(self._version_groups(engine, r.candidates))
        special = {r.req.package for r in self.requests} | {i.package for i, _ in self.kept}
        special |= set(self.held)
        by_package: dict[str, list[Candidate]] = {}
        for vid in self.order:
            by_package.setdefault(self.vars[vid].package, []).append(self.vars[vid])
        newest_deps: list[int] = []
        for pkg in sorted(set(by_package) - special):
            newest_deps += engine.rank_literals(self._version_groups(engine, by_package[pkg]))
        off_default = []
        for r in self.requests:
            if r.req.channels:
                continue
            for cand in r.candidates:
                default = self.index.default_channel.get((cand.catalog, cand.package), "")
                if default and default not in cand.channels:
                    off_default.append(engine.lit(self._vid(cand)))
        priority: list[int] = []
        for pkg in sorted(set(by_package) - set(self.held)):
            groups: dict[int, list[int]] = {}
            for cand in by_package[pkg]:
                rank = self.catalog_rank.get(cand.catalog, 0)
                groups.setdefault(rank, []).append(engine.lit(self._vid(cand)))
            priority += engine.rank_literals([groups[k] for k in sorted(groups)])
        # Fewest bundles: one bundle per package at most (package uniqueness), so the count of
        # bundles is the count of packages with one. Counted per package, the bound that pins it
        # is over hundreds of literals instead of thousands.
        fewest = tuple(
            engine.any_literal([engine.lit(self._vid(c)) for c in by_package[pkg]])
            for pkg in sorted(by_package)
        )
        return [
            Objective(LEVELS[0], keep),
            Objective(LEVELS[1], tuple(deprecated)),
            Objective(LEVELS[2], tuple(newest_requested)),
            Objective(LEVELS[3], tuple(newest_deps)),
            Objective(LEVELS[4], tuple(off_default)),
            Objective(LEVELS[5], tuple(priority)),
            Objective(LEVELS[6], fewest),
        ]

    def _version_groups(self, engine: Engine, cands: Sequence[Candidate]) -> list[list[int]]:
        groups: dict[tuple[int, PrecedenceKey | None], list[int]] = {}
        for cand in cands:
            groups.setdefault(version_key(cand.version), []).append(engine.lit(self._vid(cand)))
        return [groups[k] for k in sorted(groups, reverse=True)]

    def canonical_order(self) -> list[str]:
        """Variables in tie-break order: older, lower-priority, later-named bundles go first."""
        ranked = sorted(
            self.order,
            key=lambda v: (
                self.vars[v].package,
                -self.catalog_rank.get(self.vars[v].catalog, 0),
                self.vars[v].name,
            ),
            reverse=True,
        )
        return sorted(ranked, key=lambda v: version_key(self.vars[v].version))

    # ------------------------------------------------------------------ answer

    def _channel(self, cand: Candidate) -> str:
        req = next((r for r in self.requests if r.req.package == cand.package), None)
        if req is not None:
            for ch in req.req.channels:
                if ch in cand.channels:
                    return ch
        default = self.index.default_channel.get((cand.catalog, cand.package), "")
        if default in cand.channels:
            return default
        inst = next((i for i in self.inp.installed if i.package == cand.package), None)
        if inst is not None and inst.channel in cand.channels:
            return inst.channel
        return next(iter(cand.channels), "")

    def resolve(self, explain: bool = False) -> Resolution:
        """Solve; raise :class:`Unsatisfiable` with a minimal explanation when impossible."""
        variables = self.variables()
        with Engine(variables) as engine:
            try:
                engine.check()
            except NotSatisfiable as err:
                raise Unsatisfiable(
                    [str(c) for c in err.constraints],
                    summary=summarize(err.constraints, self.facts),
                ) from None
            objectives = self.objectives(engine)
            fixed = engine.optimize(objectives)
            selected = set(engine.canonical_model(fixed, self.canonical_order())) & set(self.vars)
            limit = self.inp.options.get("why_not_newer_limit")
            why = (
                self._why_not(
                    engine, selected, objectives, limit if isinstance(limit, int) else None
                )
                if explain
                else {}
            )
        choices = []
        for vid in self.order:
            if vid not in selected or self._is_held(self.vars[vid]):
                continue
            cand = self.vars[vid]
            inst = next((i for i in self.inp.installed if i.package == cand.package), None)
            choices.append(
                Choice(
                    cand.package,
                    cand.bundle,
                    cand.catalog,
                    self._channel(cand),
                    replaces=inst.name if inst is not None and inst.name != cand.name else "",
                    installed=inst is not None and inst.name == cand.name,
                )
            )
        return Resolution(choices, why, self._shared(selected))

    def _shared(self, selected: set[str]) -> list[SharedChoice]:
        """The held bundles the own selected bundles require, with who requires them."""
        users: dict[str, set[str]] = {}
        for vid in sorted(selected):
            cand = self.vars[vid]
            if self._is_held(cand):
                continue
            for ids in self.requires.get(vid, []):
                for dep in ids:
                    if dep in selected and self._is_held(self.vars[dep]):
                        users.setdefault(self.vars[dep].package, set()).add(cand.package)
        return [
            SharedChoice(self.held[package], tuple(sorted(users[package])))
            for package in sorted(users)
        ]

    def _why_not(
        self,
        engine: Engine,
        selected: set[str],
        objectives: Sequence[Objective],
        limit: int | None = None,
    ) -> dict[str, list[str]]:
        """For each requested package, why every newer bundle was not chosen: those outside the
        requested channels say so; ``limit`` caps how many of the others are explained (newest
        first; each may cost solver calls)."""
        result: dict[str, list[str]] = {}
        for r in self.requests:
            chosen = next(
                (
                    self.vars[v]
                    for v in selected
                    if v in self.vars and self.vars[v].package == r.req.package
                ),
                None,
            )
            if chosen is None or chosen.version is None:
                continue
            lines: list[str] = []
            pool = [
                c
                for c in self.index.candidates(r.req.package)
                if c.version is not None and c.version > chosen.version
            ]
            explained = 0
            for cand in self._sorted(pool):
                vid = self._vid(cand)
                in_channel = not r.req.channels or bool(set(r.req.channels) & set(cand.channels))
                if not in_channel:
                    why = r.rejected.get(vid) or f"not in channel {' or '.join(r.req.channels)}"
                    lines.append(f"{cand.name} {cand.bundle.version}: {why}")
                    continue
                if limit is not None and explained >= limit:
                    continue
                explained += 1
                if vid in r.rejected:
                    lines.append(f"{cand.name} {cand.bundle.version}: {r.rejected[vid]}")
                    continue
                lit = engine.lit(vid)
                if not engine.satisfiable([lit]):
                    mus = engine.explain([lit])
                    lines.append(
                        f"{cand.name} {cand.bundle.version}: ruled out by "
                        + "; ".join(str(c) for c in mus)
                    )
                    continue
                worse = self._worse_level(engine, lit, objectives)
                channel = next(iter(r.req.channels), "")
                deprecation = self.index.deprecated(cand, channel) if LEVELS[1] in worse else ""
                if deprecation:
                    worse += f" (its catalog deprecates it: {deprecation})"
                lines.append(f"{cand.name} {cand.bundle.version}: {worse}")
            result[r.req.package] = lines
        return result

    def _worse_level(self, engine: Engine, lit: int, objectives: Sequence[Objective]) -> str:
        """Name the first objective level that choosing ``lit`` would make worse."""
        pinned_with: list[int] = [lit]
        pinned_free: list[int] = []
        for objective in objectives:
            pinned_with = engine.optimize([objective], pinned_with)
            cost_with = sum(1 for x in objective.literals if engine.value(x))
            pinned_free = engine.optimize([objective], pinned_free)
            cost_free = sum(1 for x in objective.literals if engine.value(x))
            if cost_with > cost_free:
                return f"possible, but worse for the objective {objective.name!r}"
        return "possible and equally good; the canonical tie-break chose the other bundle"


def _request_text(req: PackageRequest) -> str:
    text = f"package {req.package} is requested"
    if req.channels:
        text += f" in channel {' or '.join(req.channels)}"
    if req.version_range:
        text += f" with version {req.version_range}"
    return text


def _no_candidates(r: _Request) -> str:
    if not r.rejected:
        return "no catalog has this package"
    reasons: dict[str, list[str]] = {}
    for vid, why in r.rejected.items():
        reasons.setdefault(why, []).append(vid.rsplit("/", 1)[-1])
    parts = [
        f"{why} ({', '.join(sorted(names)[:5])}{', ...' if len(names) > 5 else ''})"
        for why, names in sorted(reasons.items())
    ]
    return "no bundle qualifies: " + "; ".join(parts)


def resolve(inp: ResolutionInput) -> Resolution:
    """Resolve ``inp`` with pivoter's semantics."""
    return Pivoter(inp).resolve(explain=bool(inp.options.get("explain")))


__all__ = ["HELD_CATALOG", "INSTALLED_CATALOG", "LEVELS", "Pivoter", "resolve"]
