"""The worked examples of docs/resolution.md, checked against the default profile."""

from __future__ import annotations

import pytest

from resolver.catalog.model import (
    PROP_GVK,
    PROP_GVK_REQUIRED,
    PROP_PACKAGE,
    PROP_PACKAGE_REQUIRED,
    SCHEMA_BUNDLE,
    Bundle,
    Catalog,
    Channel,
    ChannelEntry,
    Deprecation,
    DeprecationEntry,
    Package,
    Property,
)
from resolver.profiles import get
from resolver.profiles.pivoter import Pivoter
from resolver.rules.inputs import (
    CatalogInput,
    Installed,
    PackageRequest,
    ResolutionInput,
    Unsatisfiable,
)


def bundle(pkg: str, version: str, *extra: Property) -> Bundle:
    props = (Property(PROP_PACKAGE, {"packageName": pkg, "version": version}), *extra)
    return Bundle(pkg, f"{pkg}.v{version}", f"example.com/{pkg}:{version}", props)


def needs(pkg: str, rng: str) -> Property:
    return Property(PROP_PACKAGE_REQUIRED, {"packageName": pkg, "versionRange": rng})


def chain(pkg: str, bundles: list[Bundle], channel: str = "stable") -> Channel:
    entries = [
        ChannelEntry(b.name, replaces=bundles[i - 1].name if i else "")
        for i, b in enumerate(bundles)
    ]
    return Channel(pkg, channel, tuple(entries))


def catalog(name: str, *packages: tuple[str, list[Bundle]], **kw: list[Deprecation]) -> Catalog:
    return Catalog(
        name,
        [Package(p, "stable") for p, _ in packages],
        [chain(p, bs) for p, bs in packages],
        [b for _, bs in packages for b in bs],
        deprecations=kw.get("deprecations", []),
    )


def pick(inp: ResolutionInput) -> dict[str, str]:
    return {c.package: c.bundle.version for c in get("pivoter")(inp).choices}


DB = ("db", [bundle("db", v) for v in ("1.0.0", "1.1.0", "2.0.0", "2.1.0")])
APP = ("app", [bundle("app", "1.0.0"), bundle("app", "2.0.0", needs("db", "<2.0.0"))])


def test_example_1_newest_reachable_in_range() -> None:
    src = [CatalogInput("main", catalog("main", DB))]
    assert pick(ResolutionInput(src, [PackageRequest("db")])) == {"db": "2.1.0"}
    assert pick(ResolutionInput(src, [PackageRequest("db", version_range="^1")])) == {"db": "1.1.0"}


def test_example_2_several_packages_sum_of_ranks_not_request_order() -> None:
    src = [CatalogInput("main", catalog("main", DB, APP))]
    both = [PackageRequest("app"), PackageRequest("db")]
    # app 2.0.0 + db 1.1.0 costs 0 + 2 version steps; app 1.0.0 + db 2.1.0 costs 1 + 0.
    assert pick(ResolutionInput(src, both)) == {"app": "1.0.0", "db": "2.1.0"}
    assert pick(ResolutionInput(src, list(reversed(both)))) == {"app": "1.0.0", "db": "2.1.0"}


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        (["app", "db"], {"app": "2.0.0", "db": "1.1.0"}),
        (["db", "app"], {"app": "1.0.0", "db": "2.1.0"}),
    ],
)
def test_example_2_under_olm_v0_depends_on_subscription_order(
    order: list[str], expected: dict[str, str]
) -> None:
    src = [CatalogInput("main", catalog("main", DB, APP), namespace="ns")]
    subs = [
        PackageRequest(p, channels=("stable",), name=f"{p}-stable", catalog="main/ns")
        for p in order
    ]
    result = get("olm-v0")(ResolutionInput(src, subs))
    assert {c.package: c.bundle.version for c in result.choices} == expected


def test_example_3_dependencies_take_the_newest_that_fits() -> None:
    src = [CatalogInput("main", catalog("main", DB, APP))]
    assert pick(ResolutionInput(src, [PackageRequest("app")])) == {"app": "2.0.0", "db": "1.1.0"}


def test_example_4_installed_packages_stay_unless_needed() -> None:
    src = [CatalogInput("main", catalog("main", DB, APP))]
    installed = [Installed("db.v1.0.0", "db", "1.0.0")]
    # db is installed and not requested: it stays at 1.0.0 although 1.1.0 exists...
    assert pick(
        ResolutionInput(src, [PackageRequest("app", version_range="1.0.0")], installed)
    ) == {
        "app": "1.0.0",
        "db": "1.0.0",
    }
    # ...and moves along its upgrade edge only when something needs it to.
    web = ("web", [bundle("web", "1.0.0", needs("db", ">=1.1.0 <2.0.0"))])
    src2 = [CatalogInput("main", catalog("main", DB, web))]
    assert pick(ResolutionInput(src2, [PackageRequest("web")], installed)) == {
        "web": "1.0.0",
        "db": "1.1.0",
    }


def test_example_5_deprecated_bundles_lose_to_older_ones() -> None:
    dep = Deprecation("db", (DeprecationEntry(SCHEMA_BUNDLE, "db.v2.1.0", "broken"),))
    src = [CatalogInput("main", catalog("main", DB, deprecations=[dep]))]
    assert pick(ResolutionInput(src, [PackageRequest("db")])) == {"db": "2.0.0"}


def test_example_6_catalog_priority_breaks_version_ties_only() -> None:
    low = CatalogInput("low", catalog("low", ("db", [bundle("db", "2.1.0")])), priority=0)
    high = CatalogInput("high", catalog("high", ("db", [bundle("db", "2.0.0")])), priority=10)
    inp = ResolutionInput([low, high], [PackageRequest("db")])
    [choice] = get("pivoter")(inp).choices
    assert (choice.catalog, choice.bundle.version) == ("low", "2.1.0")
    same = CatalogInput("high", catalog("high", ("db", [bundle("db", "2.1.0")])), priority=10)
    [choice] = get("pivoter")(ResolutionInput([low, same], [PackageRequest("db")])).choices
    assert choice.catalog == "high"


def test_example_7_one_provider_per_api_explained() -> None:
    crd = {"group": "zk.example.com", "version": "v1", "kind": "ZooKeeper"}
    a = ("zk-a", [bundle("zk-a", "1.0.0", Property(PROP_GVK, crd))])
    b = ("zk-b", [bundle("zk-b", "1.0.0", Property(PROP_GVK, crd))])
    src = [CatalogInput("main", catalog("main", a, b))]
    with pytest.raises(Unsatisfiable) as err:
        Pivoter(ResolutionInput(src, [PackageRequest("zk-a"), PackageRequest("zk-b")])).resolve()
    assert err.value.summary == [
        "package zk-a is requested: 1 candidate bundle (1.0.0), none installable",
        "package zk-b is requested: 1 candidate bundle (1.0.0), none installable",
        "only one package may provide API zk.example.com/v1/ZooKeeper "
        "(provided by packages zk-a, zk-b)",
    ]


def test_example_8_why_not_newer() -> None:
    gvk_req = Property(PROP_GVK_REQUIRED, {"group": "x.io", "version": "v1", "kind": "Missing"})
    db = ("db", [bundle("db", "1.0.0"), bundle("db", "2.0.0", gvk_req)])
    src = [CatalogInput("main", catalog("main", db))]
    result = get("pivoter")(ResolutionInput(src, [PackageRequest("db")], options={"explain": True}))
    assert [c.bundle.version for c in result.choices] == ["1.0.0"]
    [line] = result.why_not["db"]
    assert line.startswith("db.v2.0.0 2.0.0: ruled out by ")
    assert "providing an API with group: x.io, version: v1, kind: Missing" in line


def test_explanations_do_not_depend_on_request_or_catalog_order() -> None:
    crd = {"group": "zk.example.com", "version": "v1", "kind": "ZooKeeper"}
    one = CatalogInput(
        "one", catalog("one", ("zk-a", [bundle("zk-a", "1.0.0", Property(PROP_GVK, crd))]))
    )
    two = CatalogInput(
        "two", catalog("two", ("zk-b", [bundle("zk-b", "1.0.0", Property(PROP_GVK, crd))]))
    )
    seen = set()
    for cats in ([one, two], [two, one]):
        for names in (["zk-a", "zk-b"], ["zk-b", "zk-a"]):
            with pytest.raises(Unsatisfiable) as err:
                get("pivoter")(ResolutionInput(cats, [PackageRequest(n) for n in names]))
            seen.add(tuple(err.value.lines))
    assert len(seen) == 1
