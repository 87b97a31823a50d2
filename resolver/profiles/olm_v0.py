"""The ``olm-v0`` profile: OLM v0's catalog-operator resolution, reproduced on our SAT engine.

Subscriptions, the virtual ``@existing`` catalog of installed CSVs, candidates ordered as OLM
orders them (default channel, replaces chain, installed last; dependency candidates by
``@existing``, own catalog, priority, namespace, name), a Subscription's installed CSV named on
either side (:func:`link_subscriptions`), system constraints on catalog entries only (installed
CSVs are exempt), package and GVK uniqueness, fail-forward,
and OLM's preference search followed by its extras minimisation. Explanations are minimal (a MUS)
where OLM prints whatever gini's core holds. Called through :mod:`resolver.profiles`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from resolver.catalog.model import PROP_DEPRECATED, Bundle, ChannelEntry
from resolver.rules.channels import ChannelError, is_successor, sort_channel
from resolver.rules.inputs import (
    Candidate,
    Choice,
    Index,
    Installed,
    PackageRequest,
    Resolution,
    ResolutionError,
    ResolutionInput,
    Unsatisfiable,
    safe_version,
)
from resolver.rules.predicates import Predicate, PredicateError, requirements
from resolver.sat import (
    AtMost,
    ConflictsWith,
    Dependency,
    Engine,
    Mandatory,
    NotSatisfiable,
    Prohibited,
    Variable,
)
from resolver.sat.constraints import Constraint


def join_or(items: list[str]) -> str:
    """``A``, ``A or B``, ``A, B or C`` (OLM's wording)."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def join_and(items: list[str]) -> str:
    """``A``, ``A and B``, ``A, B and C`` (OLM's wording)."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


@dataclass(slots=True)
class _Node:
    """A bundle variable under construction: a catalog entry or an installed CSV."""

    id: str
    bundle: Bundle
    package: str
    catalog: str
    channel: str
    existing: Installed | None = None
    constraints: list[Constraint] = field(default_factory=list)


class OlmV0:
    """One OLM v0 resolution of one namespace."""

    def __init__(self, inp: ResolutionInput) -> None:
        self.inp = inp
        self.index = Index(inp.catalogs)
        self.namespace = self._namespace()
        self.nodes: dict[str, _Node] = {}
        self.order: list[str] = []
        self.existing: dict[str, _Node] = {}
        self._channel_cache: dict[tuple[str, str, str], list[str]] = {}

    def _namespace(self) -> str:
        for req in self.inp.requests:
            if "/" in req.catalog:
                return req.catalog.split("/", 1)[1]
        return next((s.namespace for s in self.inp.catalogs if s.namespace), "")

    # ------------------------------------------------------------------ installed state

    def _live_installed(self) -> list[Installed]:
        installed = list(self.inp.installed)
        if not self.inp.options.get("fail_forward"):
            return installed
        by_name = {i.name: i for i in installed}
        dropped: set[str] = set()
        for csv in installed:
            if csv.phase != "Failed" or csv.subscribed_by is None:
                continue
            prev = by_name.get(csv.replaces)
            while prev is not None:
                if prev.phase != "Replacing":
                    raise ResolutionError(
                        f"error using catalogsource {self.namespace}/@existing: csv {prev.name} "
                        f"in phase {prev.phase} instead of Replacing"
                    )
                dropped.add(prev.name)
                prev = by_name.get(prev.replaces)
        return [i for i in installed if i.name not in dropped]

    # ------------------------------------------------------------------ candidate ordering

    def _channel_order(self, cand: Candidate, channel: str) -> list[str]:
        key = (cand.catalog, cand.package, channel)
        if key not in self._channel_cache:
            chan = next(
                (
                    c
                    for c in cand.source.catalog.channels
                    if c.package == cand.package and c.name == channel
                ),
                None,
            )
            entries = chan.entries if chan is not None else ()
            self._channel_cache[key] = sort_channel(cand.package, channel, entries)
        return self._channel_cache[key]

    def _entry_id(self, cand: Candidate, channel: str) -> str:
        return f"{cand.catalog}/{cand.source.namespace}/{channel}/{cand.name}"

    def _node(self, cand: Candidate, channel: str) -> str:
        vid = self._entry_id(cand, channel)
        if vid not in self.nodes:
            self.nodes[vid] = _Node(vid, cand.bundle, cand.package, cand.catalog, channel)
            self.order.append(vid)
        return vid

    def _grouped(
        self, source_name: str, package: str | None, only: str = ""
    ) -> list[tuple[Candidate, str]]:
        """Entries of one catalog (optionally one package) in OLM's within-catalog order.

        ``only`` keeps just that bundle name *before* ordering, as OLM filters a startingCSV
        before sorting the channel.
        """
        cands = [
            c
            for c in self.index.all()
            if c.catalog == source_name
            and (package is None or c.package == package)
            and (not only or c.name == only)
        ]
        groups: dict[tuple[str, str], list[Candidate]] = {}
        for c in cands:
            for channel in c.channels or ("",):
                groups.setdefault((c.package, channel), []).append(c)
        result: list[tuple[Candidate, str]] = []

        def key(k: tuple[str, str]) -> tuple[int, str, str]:
            default = self.index.default_channel.get((source_name, k[0]), "")
            return (0 if k[1] == default and k[1] else 1, k[0], k[1])

        for pkg, channel in sorted(groups, key=key):
            members = {c.name: c for c in groups[(pkg, channel)]}
            if not channel:
                result.extend((members[n], "") for n in sorted(members))
                continue
            if only:
                result.extend((members[n], channel) for n in sorted(members))
                continue
            ordered = self._channel_order(members[next(iter(members))], channel)
            result.extend((members[n], channel) for n in ordered if n in members)
        return result

    def _catalog_rank(self, own: str) -> list[str]:
        ranked = sorted(
            self.index.sources,
            key=lambda src: (
                0 if src.name == own else 1,
                -src.priority,
                0 if src.namespace == self.namespace else 1,
                src.name,
            ),
        )
        return [s.name for s in ranked]

    # ------------------------------------------------------------------ variables

    def _subscription(self, req: PackageRequest) -> Variable:
        sub = req.name or req.package
        cat_name, _, cat_ns = req.catalog.partition("/")
        source = next(
            (
                s
                for s in self.index.sources
                if s.name == cat_name and (not cat_ns or s.namespace == cat_ns)
            ),
            None,
        )
        channel = req.channels[0] if req.channels else ""
        reason = ""
        candidates: list[str] = []
        installed = next(
            (
                n
                for n in self.existing.values()
                if n.existing and n.existing.name == req.installed_bundle
            ),
            None,
        )
        pkg_cands = (
            [c for c in self.index.candidates(req.package) if c.catalog == source.name]
            if source
            else []
        )
        if source is None or not source.catalog.bundles:
            reason = (
                f"no operators found from catalog {cat_name} in namespace {cat_ns} "
                f"referenced by subscription {sub}"
            )
        elif not pkg_cands:
            reason = (
                f"no operators found in package {req.package} in the catalog referenced by "
                f"subscription {sub}"
            )
        elif channel and not any(channel in c.channels for c in pkg_cands):
            reason = (
                f"no operators found in channel {channel} of package {req.package} in the "
                f"catalog referenced by subscription {sub}"
            )
        elif (
            installed is None
            and req.starting_bundle
            and not any(
                c.name == req.starting_bundle and (not channel or channel in c.channels)
                for c in pkg_cands
            )
        ):
            # OLM counts the package, then the channel, then the starting CSV's name: a
            # starting CSV that is only in another channel is a missing name, not channel.
            reason = (
                f"no operators found with name {req.starting_bundle} in channel {channel} of "
                f"package {req.package} in the catalog referenced by subscription {sub}"
            )
        else:
            only = req.starting_bundle if installed is None else ""
            ordered = self._grouped(source.name, req.package, only)
            if channel:
                ordered = [(c, ch) for c, ch in ordered if ch == channel]
                # A broken channel graph is an error for the subscribed channel (not skipped).
                if any(channel in c.channels for c in pkg_cands):
                    self._channel_order(
                        next(c for c in pkg_cands if channel in c.channels), channel
                    )
            if not ordered:
                reason = (
                    f"no operators found in channel {channel} of package {req.package} in the "
                    f"catalog referenced by subscription {sub}"
                )
            if installed is not None:
                inst = installed.existing
                assert inst is not None
                version = safe_version(inst.version)
                for cand, ch in ordered:
                    entry = cand.entry(ch) or ChannelEntry(cand.name)
                    if is_successor(entry, inst.name, version):
                        vid = self._node(cand, ch)
                        self.nodes[vid].constraints.append(ConflictsWith(installed.id))
                        candidates.append(vid)
                candidates.append(installed.id)
            elif req.starting_bundle and not reason:
                candidates = [
                    self._node(c, ch) for c, ch in ordered if c.name == req.starting_bundle
                ]
                if not candidates:
                    reason = (
                        f"no operators found with name {req.starting_bundle} in channel "
                        f"{channel} of package {req.package} in the catalog referenced by "
                        f"subscription {sub}"
                    )
            elif not reason:
                candidates = [self._node(c, ch) for c, ch in ordered]
        constraints: list[Constraint] = [Mandatory(f"subscription {sub} exists")]
        if not candidates:
            constraints.append(Prohibited(reason))
        else:
            text = (
                f"subscription {sub} requires {candidates[0]}"
                if len(candidates) == 1
                else f"subscription {sub} requires at least one of {join_or(candidates)}"
            )
            constraints.append(Dependency(tuple(candidates), text))
        return Variable(f"subscription:{sub}", tuple(constraints))

    def _dependency_candidates(self, node: _Node, pred: Predicate) -> list[str]:
        result = [eid for eid, e in self.existing.items() if pred(e.bundle)]
        for catalog in self._catalog_rank(node.catalog):
            for cand, channel in self._grouped(catalog, pred.package or None):
                if pred(cand.bundle):
                    result.append(self._node(cand, channel))
        return result

    def _expand(self, vid: str) -> None:
        node = self.nodes[vid]
        if node.existing is None:
            if node.bundle.prop(PROP_DEPRECATED) is not None:
                node.constraints.append(Prohibited(f"bundle {vid} is deprecated"))
            allowed = self.inp.options.get("allowed_bundles")
            if allowed is not None and node.bundle.name not in allowed:
                template = str(self.inp.options.get("disallowed_reason", "{package} not allowed"))
                node.constraints.append(Prohibited(template.format(package=node.package)))
        try:
            preds = list(requirements(node.bundle))
        except PredicateError as err:
            raise ResolutionError(f"bundle {node.bundle.name}: {err}") from None
        for pred in preds:
            cands = self._dependency_candidates(node, pred)
            node.constraints.append(
                Dependency(
                    tuple(cands),
                    f"bundle {node.bundle.name} requires an operator {pred.text}",
                )
            )

    def variables(self) -> list[Variable]:
        """Build the whole problem (subscriptions, bundles, uniqueness), in a stable order."""
        for inst in self._live_installed():
            vid = f"@existing/{self.namespace}//{inst.name}"
            node = _Node(vid, inst.as_bundle(), inst.package, "@existing", "", existing=inst)
            if inst.subscribed_by is None:
                node.constraints.append(
                    Mandatory(
                        f"clusterserviceversion {inst.name} exists and is not referenced by a "
                        "subscription"
                    )
                )
            self.existing[vid] = node
            self.nodes[vid] = node
        existing_order = list(self.existing)
        subs = [self._subscription(r) for r in self.inp.requests]
        for vid in existing_order:
            self._expand(vid)
        # Breadth-first closure: expanding a bundle may add its dependency candidates.
        i = 0
        while i < len(self.order):
            self._expand(self.order[i])
            i += 1
        bundle_ids = [*existing_order, *self.order]
        variables: list[Variable] = list(subs)
        variables += [Variable(v, tuple(self.nodes[v].constraints)) for v in bundle_ids]
        by_package: dict[str, list[str]] = {}
        by_gvk: dict[tuple[str, str, str], list[str]] = {}
        for v in bundle_ids:
            node = self.nodes[v]
            if node.package:
                by_package.setdefault(node.package, []).append(v)
            for gvk in node.bundle.provided_apis:
                by_gvk.setdefault((gvk.group, gvk.version, gvk.kind), []).append(v)
        for group, version, kind in sorted(by_gvk):
            ids = by_gvk[(group, version, kind)]
            if len(ids) > 1:
                what = f"{kind} ({group}/{version})"
                variables.append(
                    Variable(
                        what,
                        (
                            Mandatory(f"there can be only one provider of {what}"),
                            AtMost(1, tuple(ids), f"{join_and(ids)} provide {what}"),
                        ),
                    )
                )
        for pkg in sorted(by_package):
            ids = by_package[pkg]
            if len(ids) > 1:
                variables.append(
                    Variable(
                        pkg,
                        (
                            Mandatory(f"there can be only one operator from package {pkg}"),
                            AtMost(1, tuple(ids), f"{join_and(ids)} originate from package {pkg}"),
                        ),
                    )
                )
        return variables

    def resolve(self) -> Resolution:
        """Solve; raise :class:`Unsatisfiable` with a minimal explanation when impossible."""
        try:
            variables = self.variables()
        except ChannelError as err:
            raise ResolutionError(str(err)) from None
        with Engine(variables) as engine:
            try:
                engine.check()
            except NotSatisfiable as err:
                raise Unsatisfiable([str(c) for c in err.constraints]) from None
            guesses = engine.preference_search()
            fixed = engine.minimize_extras(guesses)
            selected = set(engine.canonical_model(fixed))
        replaces: dict[str, str] = {}
        for var in variables:
            if not var.id.startswith("subscription:"):
                continue
            for c in var.constraints:
                if isinstance(c, Dependency) and c.ids and c.ids[-1] in self.existing:
                    old = self.existing[c.ids[-1]].existing
                    assert old is not None
                    for vid in c.ids[:-1]:
                        if vid in selected:
                            replaces[vid] = old.name
        choices = [
            Choice(
                package=self.nodes[v].package,
                bundle=self.nodes[v].bundle,
                catalog=self.nodes[v].catalog,
                channel=self.nodes[v].channel,
                replaces=replaces.get(v, ""),
            )
            for v in self.order
            if v in selected
        ]
        return Resolution(choices)


def as_subscriptions(inp: ResolutionInput) -> ResolutionInput:
    """Turn plain requests (the CLI's: no catalog, no name) into OLM Subscriptions.

    Each request subscribes to the highest-priority catalog that has its package (OLM needs one
    catalog per Subscription); an installed bundle of a requested package becomes that
    Subscription's installed CSV, other installed bundles stay free-standing.
    """
    if all(r.catalog for r in inp.requests):
        return inp
    ranked = sorted((s for s in inp.catalogs if s.available), key=lambda s: (-s.priority, s.name))
    requests = []
    installed = list(inp.installed)
    for req in inp.requests:
        if req.catalog:
            requests.append(req)
            continue
        source = next(
            (s for s in ranked if s.catalog.package(req.package) is not None),
            ranked[0] if ranked else None,
        )
        name = req.name or req.package
        current = next((i for i in installed if i.package == req.package), None)
        if current is not None:
            installed[installed.index(current)] = replace(current, subscribed_by=name)
        requests.append(
            replace(
                req,
                name=name,
                catalog=f"{source.name}/{source.namespace}" if source else "",
                installed_bundle=current.name if current is not None else req.installed_bundle,
            )
        )
    return replace(inp, requests=requests, installed=installed)


def link_subscriptions(inp: ResolutionInput) -> ResolutionInput:
    """Make both sides of "this Subscription's installed CSV" agree.

    OLM v0 knows one fact, a Subscription's ``status.installedCSV``: it finds the Subscription's
    current CSV by it, and a CSV no Subscription names that way is free-standing (required to
    stay). An input may state it on either side, as the request's ``installed_bundle`` or as the
    installed bundle's ``subscribed_by``; each is filled in from the other when left out (the
    request's own value wins).
    """
    requests = list(inp.requests)
    installed = list(inp.installed)
    for n, req in enumerate(requests):
        sub = req.name or req.package
        if req.installed_bundle:
            continue
        found = next((i for i in installed if i.subscribed_by == sub), None)
        if found is not None:
            requests[n] = replace(req, installed_bundle=found.name)
    for n, inst in enumerate(installed):
        if inst.subscribed_by is not None:
            continue
        owner = next((r for r in requests if r.installed_bundle == inst.name), None)
        if owner is not None:
            installed[n] = replace(inst, subscribed_by=owner.name or owner.package)
    return replace(inp, requests=requests, installed=installed)


def resolve(inp: ResolutionInput) -> Resolution:
    """Resolve ``inp`` with OLM v0's semantics."""
    return OlmV0(link_subscriptions(as_subscriptions(inp))).resolve()
