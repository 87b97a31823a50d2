"""Property tests of the default profile on generated catalogs, checked independently.

Every answer is checked against the catalog by a checker that does not use the solver; an
``unsat`` answer is checked by enumerating every selection; the objective's first levels are
checked against brute force; answers do not depend on catalog object order; explanations are
minimal.
"""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver.catalog.model import (
    PROP_DEPRECATED,
    PROP_GVK,
    PROP_GVK_REQUIRED,
    PROP_PACKAGE,
    PROP_PACKAGE_REQUIRED,
    Bundle,
    Catalog,
    Channel,
    ChannelEntry,
    Package,
    Property,
)
from resolver.profiles.pivoter import Pivoter
from resolver.rules.inputs import (
    CatalogInput,
    Installed,
    PackageRequest,
    ResolutionInput,
    Unsatisfiable,
)
from resolver.sat import Engine, NotSatisfiable, Variable
from resolver.versions import parse_range, parse_version
from tests.resolver.test_sat import holds

PACKAGES = ["p0", "p1", "p2", "p3"]
GVKS = ["g0", "g1", "g2"]


def gvk(name: str) -> dict[str, str]:
    return {"group": f"{name}.example.com", "version": "v1", "kind": name.upper()}


@st.composite
def catalogs(draw: st.DrawFn) -> tuple[list[CatalogInput], list[PackageRequest], list[Installed]]:
    packages = PACKAGES[: draw(st.integers(1, 4))]
    bundles: list[Bundle] = []
    channels: list[Channel] = []
    for pkg in packages:
        count = draw(st.integers(1, 3))
        entries = []
        for i in range(1, count + 1):
            props = [Property(PROP_PACKAGE, {"packageName": pkg, "version": f"{i}.0.0"})]
            if draw(st.integers(0, 3)) == 0:
                other = draw(st.sampled_from(PACKAGES))
                rng = draw(st.sampled_from([">=1.0.0", "<2.0.0", "2.0.0", ">=2.0.0 <3.0.0"]))
                props.append(
                    Property(PROP_PACKAGE_REQUIRED, {"packageName": other, "versionRange": rng})
                )
            if draw(st.integers(0, 4)) == 0:
                props.append(Property(PROP_GVK_REQUIRED, gvk(draw(st.sampled_from(GVKS)))))
            if draw(st.integers(0, 2)) == 0:
                props.append(Property(PROP_GVK, gvk(draw(st.sampled_from(GVKS)))))
            if draw(st.integers(0, 9)) == 0:
                props.append(Property(PROP_DEPRECATED, {}))
            name = f"{pkg}.v{i}"
            bundles.append(Bundle(pkg, name, f"img/{name}", tuple(props)))
            entries.append(ChannelEntry(name, replaces=f"{pkg}.v{i - 1}" if i > 1 else ""))
        channels.append(Channel(pkg, "stable", tuple(entries)))
    catalog = Catalog(
        "main",
        [Package(p, "stable") for p in packages],
        channels,
        bundles,
    )
    sources = [CatalogInput("main", catalog)]
    requested = draw(st.lists(st.sampled_from(packages), min_size=1, max_size=2, unique=True))
    requests = [
        PackageRequest(p, version_range=draw(st.sampled_from(["", "^1", ">=2"]))) for p in requested
    ]
    installed = []
    if draw(st.booleans()):
        pkg = draw(st.sampled_from(packages))
        n = sum(1 for b in bundles if b.package == pkg)
        i = draw(st.integers(1, n))
        installed.append(Installed(f"{pkg}.v{i}", pkg, f"{i}.0.0"))
    return sources, requests, installed


def _version(bundle: Bundle) -> int:
    return int(bundle.version.split(".")[0])


def valid(inp: ResolutionInput, chosen: list[Bundle]) -> str:
    """Check a selection against the catalog directly; return "" or what is violated."""
    by_pkg: dict[str, Bundle] = {}
    for b in chosen:
        if b.package in by_pkg:
            return f"two bundles of {b.package}"
        by_pkg[b.package] = b
        if b.prop(PROP_DEPRECATED) is not None:
            return f"deprecated {b.name}"
    for req in inp.requests:
        b = by_pkg.get(req.package)
        if b is None:
            return f"request {req.package} unmet"
        if req.version_range and not parse_range(req.version_range, "masterminds").contains(
            parse_version(b.version)
        ):
            return f"{b.name} outside {req.version_range}"
    for inst in inp.installed:
        b = by_pkg.get(inst.package)
        if b is None:
            return f"installed {inst.package} removed"
        # Upgrades follow the generated chain: same bundle or one replacing it (version + 1),
        # never a downgrade.
        if _version(b) not in (
            int(inst.version.split(".")[0]),
            int(inst.version.split(".")[0]) + 1,
        ):
            return f"{inst.name} -> {b.name} is not an upgrade edge"
    provided: dict[str, str] = {}
    for b in chosen:
        for value in b.props(PROP_GVK):
            other = provided.setdefault(value["kind"], b.package)
            if other != b.package:
                return f"{value['kind']} provided by {other} and {b.package}"
        for value in b.props(PROP_PACKAGE_REQUIRED):
            rng = parse_range(value["versionRange"], "blang")
            if not any(
                c.package == value["packageName"] and rng.contains(parse_version(c.version))
                for c in chosen
            ):
                return f"{b.name} needs {value}"
        for value in b.props(PROP_GVK_REQUIRED):
            if not any(value in list(c.props(PROP_GVK)) for c in chosen):
                return f"{b.name} needs {value['kind']}"
    return ""


def selections(inp: ResolutionInput) -> list[list[Bundle]]:
    catalog = inp.catalogs[0].catalog
    options = [[None, *catalog.bundles_of(p.name)] for p in catalog.packages]
    return [[b for b in combo if b is not None] for combo in itertools.product(*options)]


def primary_cost(inp: ResolutionInput, chosen: list[Bundle]) -> tuple[int, int]:
    """(installed packages changed, sum of version ranks of requested packages)."""
    by_pkg = {b.package: b for b in chosen}
    changed = sum(
        1
        for i in inp.installed
        if i.package not in {r.package for r in inp.requests} and by_pkg[i.package].name != i.name
    )
    ranks = 0
    for req in inp.requests:
        cands = [
            b
            for s in selections(inp)
            for b in s
            if b.package == req.package and not valid_request_filter(inp, req, b)
        ]
        versions = sorted({_version(b) for b in cands}, reverse=True)
        ranks += versions.index(_version(by_pkg[req.package]))
    return changed, ranks


def valid_request_filter(inp: ResolutionInput, req: PackageRequest, b: Bundle) -> str:
    """Why ``b`` cannot serve ``req`` on its own (range, upgrade edge), or ""."""
    if req.version_range and not parse_range(req.version_range, "masterminds").contains(
        parse_version(b.version)
    ):
        return "range"
    inst = next((i for i in inp.installed if i.package == req.package), None)
    if inst is not None and _version(b) not in (int(inst.version[0]), int(inst.version[0]) + 1):
        return "edge"
    return ""


def as_input(
    data: tuple[list[CatalogInput], list[PackageRequest], list[Installed]],
) -> ResolutionInput:
    sources, requests, installed = data
    return ResolutionInput(sources, requests, installed)


def run(inp: ResolutionInput) -> list[Bundle] | None:
    try:
        return [c.bundle for c in Pivoter(inp).resolve().choices]
    except Unsatisfiable:
        return None


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(catalogs())
def test_answers_satisfy_every_hard_constraint_and_unsat_is_real(data: tuple) -> None:
    inp = as_input(data)
    chosen = run(inp)
    if chosen is None:
        assert not any(valid(inp, s) == "" for s in selections(inp))
    else:
        assert valid(inp, chosen) == ""


@SETTINGS
@given(catalogs())
def test_first_objective_levels_are_optimal(data: tuple) -> None:
    inp = as_input(data)
    chosen = run(inp)
    if chosen is None:
        return
    best = min(primary_cost(inp, s) for s in selections(inp) if valid(inp, s) == "")
    assert primary_cost(inp, chosen) == best


@SETTINGS
@given(catalogs(), st.integers(0, 2**32 - 1))
def test_answers_do_not_depend_on_catalog_order(data: tuple, seed: int) -> None:
    inp = as_input(data)
    first = run(inp)
    rnd = random.Random(seed)
    catalog = inp.catalogs[0].catalog
    shuffled = Catalog(
        catalog.name,
        rnd.sample(catalog.packages, len(catalog.packages)),
        rnd.sample(catalog.channels, len(catalog.channels)),
        rnd.sample(catalog.bundles, len(catalog.bundles)),
    )
    again = run(ResolutionInput([CatalogInput("main", shuffled)], inp.requests, inp.installed))
    assert (first is None) == (again is None)
    if first is not None and again is not None:
        assert sorted(b.name for b in first) == sorted(b.name for b in again)


@SETTINGS
@given(catalogs())
def test_unsat_explanations_are_minimal(data: tuple) -> None:
    inp = as_input(data)
    variables = Pivoter(inp).variables()
    with Engine(variables) as engine:
        if engine.satisfiable():
            return
        mus = engine.explain()
    assert mus

    def restricted(keep: list) -> list[Variable]:
        return [
            Variable(v.id, tuple(a.constraint for a in keep if a.variable.id == v.id))
            for v in variables
        ]

    with Engine(restricted(mus)) as engine:
        assert not engine.satisfiable()
    for dropped in mus:
        rest = restricted([a for a in mus if a is not dropped])
        with Engine(rest) as engine:
            assert engine.satisfiable(), f"still unsatisfiable without: {dropped}"
            assert holds(rest, set(engine.selected()))


def test_unsat_error_carries_the_minimal_lines() -> None:
    catalog = Catalog(
        "main",
        [Package("a", "stable")],
        [Channel("a", "stable", (ChannelEntry("a.v1"),))],
        [
            Bundle(
                "a",
                "a.v1",
                "img",
                (
                    Property(PROP_PACKAGE, {"packageName": "a", "version": "1.0.0"}),
                    Property(
                        PROP_PACKAGE_REQUIRED, {"packageName": "b", "versionRange": ">=1.0.0"}
                    ),
                ),
            )
        ],
    )
    inp = ResolutionInput([CatalogInput("main", catalog)], [PackageRequest("a")])
    with pytest.raises(Unsatisfiable) as err:
        Pivoter(inp).resolve()
    assert err.value.lines == [
        "package a is requested",
        "package a is requested needs one of main/a/a.v1",
        "bundle a.v1 (package a 1.0.0, catalog main) requires a bundle with package: b and with "
        "version in range: >=1.0.0: no bundle in any catalog satisfies it",
    ]
    assert err.value.summary == [
        "package a is requested: 1 candidate bundle (1.0.0), none installable",
        "a 1.0.0 requires a bundle with package: b and with version in range: >=1.0.0, which no "
        "bundle in any catalog provides",
    ]
    _ = NotSatisfiable
