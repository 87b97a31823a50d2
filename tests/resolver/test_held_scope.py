"""The scope of joint resolution (resolver.rules.scope): the packages whose held bundles can meet
a resolution. Leaving the other held bundles out must change nothing: the same choices, the same
shared dependencies and the same explanation, on the small catalog of test_held and on real
catalog data with dependencies."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from resolver.catalog.load import load_directory
from resolver.catalog.model import (
    PROP_CONSTRAINT,
    PROP_GVK,
    PROP_GVK_REQUIRED,
    Bundle,
    Catalog,
    Property,
)
from resolver.profiles import get
from resolver.rules.inputs import (
    CatalogInput,
    Held,
    Installed,
    PackageRequest,
    ResolutionInput,
    Unsatisfiable,
)
from resolver.rules.scope import PackageGraph, scope
from tests.resolver.test_held import SOURCES, ZK_API
from tests.resolver.test_resolution_doc import bundle, catalog, needs

DATA = Path(__file__).resolve().parents[1] / "data" / "resolver"


def test_the_scope_follows_requirements_by_package_and_by_api_transitively() -> None:
    main = SOURCES[0].catalog
    # app needs db; user needs the ZooKeeper API, which zk-a and zk-b provide.
    assert scope([main], {"app"}) == {"app", "db"}
    assert scope([main], {"user"}) == {"user", "zk-a", "zk-b"}
    # A provider of an API is in scope with every other provider of it (API uniqueness).
    assert scope([main], {"zk-a"}) == {"zk-a", "zk-b"}
    assert scope([main], {"web"}) == {"web", "db"}


def test_the_scope_holds_the_dependents_of_what_the_input_installs() -> None:
    main = SOURCES[0].catalog
    installed = [Installed("db.v1.0.0", "db", "1.0.0")]
    # app and web require db: their held bundles must keep finding a db they accept.
    assert scope([main], {"db"}, installed) == {"db", "app", "web"}
    zk = [Installed("zk-a.v1.0.0", "zk-a", "1.0.0")]
    assert scope([main], {"zk-a"}, zk) == {"zk-a", "zk-b", "user"}


def test_a_requirement_naming_no_package_or_api_puts_everything_in_scope() -> None:
    anything = Property(PROP_CONSTRAINT, {"cel": {"rule": "true"}, "failureMessage": "x"})
    odd = catalog("odd", ("open", [bundle("open", "1.0.0", anything)]), *_packages())
    assert scope([odd], {"open"}) is None
    # Unreached, it is still in scope: its holder may depend on anything this input installs.
    assert scope([odd], {"app"}) == {"app", "db", "open"}


def test_a_provider_of_a_required_api_brings_its_own_requirements_into_scope() -> None:
    zk = Property(PROP_GVK, ZK_API)
    chained = catalog(
        "chained",
        ("user", [bundle("user", "1.0.0", Property(PROP_GVK_REQUIRED, ZK_API))]),
        ("zk-a", [bundle("zk-a", "1.0.0", zk, needs("db", ">=2.0.0"))]),
        ("db", [bundle("db", v) for v in ("1.0.0", "2.0.0")]),
    )
    assert scope([chained], {"user"}) == {"user", "zk-a", "db"}
    # db held at 1.0.0 rules zk-a out, and with it the only provider user needs.
    held = [Held("db.v1.0.0", "db", "1.0.0", "Resolution d")]
    _compare([CatalogInput("chained", chained)], ["user"], [], held)


def test_the_graph_spans_catalogs_and_is_kept_with_each_catalog() -> None:
    zk = catalog("zk", ("zk-a", [bundle("zk-a", "1.0.0", Property(PROP_GVK, ZK_API))]))
    user = catalog("user", ("user", [bundle("user", "1.0.0", Property(PROP_GVK_REQUIRED, ZK_API))]))
    assert scope([user, zk], {"user"}) == {"user", "zk-a"}
    assert PackageGraph.of(zk) is PackageGraph.of(zk)


def _packages() -> list[tuple[str, list[Bundle]]]:
    return [
        ("db", [bundle("db", v) for v in ("1.0.0", "2.0.0")]),
        ("app", [bundle("app", "1.0.0", needs("db", ">=1.0.0"))]),
    ]


# ---------------------------------------------------------------------- same answers


def _outcome(inp: ResolutionInput) -> tuple[object, ...]:
    try:
        result = get("pivoter")(inp)
    except Unsatisfiable as err:
        return ("unsatisfiable", tuple(err.summary))
    return (
        sorted((c.package, c.bundle.name, c.catalog) for c in result.choices),
        sorted((s.held.package, s.held.name, s.required_by) for s in result.shared),
    )


def _compare(
    sources: list[CatalogInput], requests: list[str], installed: list[Installed], held: list[Held]
) -> None:
    catalogs = [s.catalog for s in sources]
    own = set(requests) | {i.package for i in installed}
    within = scope(catalogs, own, installed)
    kept = [h for h in held if h.package not in own]
    scoped = kept if within is None else [h for h in kept if h.package in within]
    reqs = [PackageRequest(p) for p in requests]
    full = _outcome(ResolutionInput(sources, reqs, installed, held=kept))
    assert _outcome(ResolutionInput(sources, reqs, installed, held=scoped)) == full, (
        requests,
        installed,
        [(h.package, h.name) for h in kept],
    )


def _real(name: str) -> Catalog:
    return load_directory(DATA / name, use_cache=False)


@pytest.mark.parametrize("name", ["community", "certified"])
def test_leaving_out_of_scope_held_bundles_changes_no_answer_on_real_catalogs(name: str) -> None:
    real = _real(name)
    # Beside the real packages: a package holding each API a real bundle provides, and one
    # depending on each real package, so held bundles meet the resolution in every way.
    extra: list[tuple[str, list[Bundle]]] = []
    apis = sorted({str(a): a for b in real.bundles for a in b.provided_apis}.items())
    for n, (_, api) in enumerate(apis[:6]):
        value = {"group": api.group, "version": api.version, "kind": api.kind}
        extra.append((f"rival{n}", [bundle(f"rival{n}", "1.0.0", Property(PROP_GVK, value))]))
        extra.append(
            (f"user{n}", [bundle(f"user{n}", "1.0.0", Property(PROP_GVK_REQUIRED, value))])
        )
    for package in sorted({b.package for b in real.bundles}):
        extra.append(
            (f"fan-{package}", [bundle(f"fan-{package}", "1.0.0", needs(package, ">=0.0.1"))])
        )
    extra += [(f"idle{n}", [bundle(f"idle{n}", "1.0.0")]) for n in range(20)]
    side = catalog("side", *extra)
    sources = [CatalogInput(real.name or name, real, priority=1), CatalogInput("side", side)]
    every = [(b.package, b.name, b.version) for c in (real, side) for b in c.bundles]
    rng = random.Random(32)
    packages = sorted({p for p, _, _ in every})
    for _ in range(40):
        held = []
        for package in packages:
            versions = [e for e in every if e[0] == package]
            if rng.random() < 0.6:
                p, bundle_name, version = rng.choice(versions)
                held.append(Held(bundle_name, p, version, f"Resolution h-{p}"))
        # Held bundles no catalog lists (by package, beside real packages' names too).
        held.append(Held("ghost.v1.0.0", "ghost", "1.0.0", "Resolution ghost"))
        requests = rng.sample(packages, rng.choice([1, 1, 2]))
        installed = []
        if rng.random() < 0.5:
            p, bundle_name, version = rng.choice(every)
            installed.append(Installed(bundle_name, p, version))
        _compare(sources, requests, installed, held)


def test_leaving_out_of_scope_held_bundles_changes_no_answer_on_the_small_catalog() -> None:
    packages = ["db", "app", "web", "zk-a", "zk-b", "user"]
    for requests in (["app"], ["web"], ["user"], ["zk-b"], ["app", "user"]):
        for held_packages in (packages, ["db"], ["zk-a"], ["db", "zk-a", "user"]):
            held = [Held(f"{p}.v1.0.0", p, "1.0.0", f"Resolution {p}") for p in held_packages]
            _compare(SOURCES, requests, [], held)
    installed = [Installed("db.v2.0.0", "db", "2.0.0")]
    held = [Held("web.v1.0.0", "web", "1.0.0", "Resolution w")]
    _compare(SOURCES, ["db"], installed, held)
