"""OLM rules the conformance corpus checks only by example (issue 33): OLM v0's starting-CSV
counting and its one Subscription/installed-CSV link, OLM v1's catalog selection, its
bundle-only deprecation preference and its tie error."""

from __future__ import annotations

import pytest

from resolver.catalog.model import (
    PROP_PACKAGE,
    SCHEMA_BUNDLE,
    SCHEMA_PACKAGE,
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
from resolver.profiles.olm_v0 import link_subscriptions
from resolver.rules.inputs import (
    CatalogInput,
    Installed,
    PackageRequest,
    ResolutionError,
    ResolutionInput,
    Unsatisfiable,
)
from resolver.rules.selectors import LABEL_CATALOG_NAME, CatalogSelector


def catalog(
    name: str,
    package: str,
    channels: dict[str, list[str]],
    deprecations: tuple[DeprecationEntry, ...] = (),
) -> Catalog:
    """One package; bundle ``<package>.v<version>`` in the channels listing the version."""
    versions = sorted({v for vs in channels.values() for v in vs})
    return Catalog(
        name=name,
        packages=[Package(name=package, default_channel=next(iter(channels)))],
        channels=[
            Channel(package, ch, tuple(ChannelEntry(f"{package}.v{v}") for v in vs))
            for ch, vs in channels.items()
        ],
        bundles=[
            Bundle(
                package=package,
                name=f"{package}.v{v}",
                properties=(Property(PROP_PACKAGE, {"packageName": package, "version": v}),),
            )
            for v in versions
        ],
        deprecations=[Deprecation(package, deprecations)] if deprecations else [],
    )


def test_a_starting_csv_only_in_another_channel_is_a_missing_name_not_a_missing_channel() -> None:
    source = CatalogInput(
        "catsrc", catalog("catsrc", "a", {"alpha": ["1.0.0"], "beta": ["2.0.0"]}), namespace="ns"
    )
    request = PackageRequest(
        "a", ("alpha",), name="a-alpha", catalog="catsrc/ns", starting_bundle="a.v2.0.0"
    )
    with pytest.raises(Unsatisfiable) as err:
        get("olm-v0")(ResolutionInput([source], [request]))
    assert err.value.lines == [
        "subscription a-alpha exists",
        "no operators found with name a.v2.0.0 in channel alpha of package a in the catalog "
        "referenced by subscription a-alpha",
    ]
    # Without a channel every channel counts, and the starting CSV is found.
    anywhere = PackageRequest("a", name="a-", catalog="catsrc/ns", starting_bundle="a.v2.0.0")
    (choice,) = get("olm-v0")(ResolutionInput([source], [anywhere])).choices
    assert choice.bundle.name == "a.v2.0.0"


def test_the_subscription_link_to_its_installed_csv_is_read_from_either_side() -> None:
    inp = ResolutionInput(
        [],
        [
            PackageRequest("a", name="a-alpha"),
            PackageRequest("b", name="b-alpha", installed_bundle="b.v1"),
            PackageRequest("c", name="c-alpha", installed_bundle="c.v2"),
        ],
        [
            Installed("a.v1", "a", subscribed_by="a-alpha"),
            Installed("b.v1", "b"),
            Installed("c.v1", "c", subscribed_by="c-alpha"),
            Installed("d.v1", "d"),
        ],
    )
    linked = link_subscriptions(inp)
    assert [r.installed_bundle for r in linked.requests] == ["a.v1", "b.v1", "c.v2"]
    assert [i.subscribed_by for i in linked.installed] == ["a-alpha", "b-alpha", "c-alpha", None]


def test_a_selector_by_name_picks_a_catalog_given_without_labels() -> None:
    sources = [
        CatalogInput(n, catalog(n, "pkg", {"alpha": ["1.0.0", "1.1.0"]})) for n in ("a", "b")
    ]
    by_name = CatalogSelector(match_labels=((LABEL_CATALOG_NAME, "b"),))
    (choice,) = get("olmv1-filter")(
        ResolutionInput(sources, [PackageRequest("pkg", catalog_selector=by_name)])
    ).choices
    assert (choice.catalog, choice.bundle.name) == ("b", "pkg.v1.1.0")
    with pytest.raises(ResolutionError, match=r"same priority \[a b\]$"):
        get("olmv1-filter")(ResolutionInput(sources, [PackageRequest("pkg")]))
    # The catalog's own labels count too; a selector matching nothing finds nothing.
    sources[0].labels = {"tier": "gold"}
    gold = CatalogSelector(match_labels=(("tier", "gold"),))
    (choice,) = get("olmv1-filter")(
        ResolutionInput(sources, [PackageRequest("pkg", catalog_selector=gold)])
    ).choices
    assert choice.catalog == "a"
    none = CatalogSelector(match_labels=(("tier", "silver"),))
    with pytest.raises(ResolutionError, match=r'^no bundles found for package "pkg"$'):
        get("olmv1-filter")(
            ResolutionInput(sources, [PackageRequest("pkg", catalog_selector=none)])
        )


def test_an_invalid_selector_is_reported_before_anything_is_resolved() -> None:
    bad = CatalogSelector.from_spec({"matchExpressions": [{"key": "k", "operator": "bad"}]})
    with pytest.raises(ResolutionError) as err:
        get("olmv1-filter")(
            ResolutionInput([], [PackageRequest("p", version_range="x", catalog_selector=bad)])
        )
    assert str(err.value) == (
        'desired catalog selector is invalid: "bad" is not a valid label selector operator'
    )


def test_only_bundle_deprecations_rank_candidates_across_catalogs() -> None:
    """OLM v1 compares catalogs' candidates by olm.bundle deprecation entries alone: a package
    deprecation is a condition on the extension, not a reason to prefer another catalog."""
    package_deprecated = (DeprecationEntry(SCHEMA_PACKAGE, "", "pkg is deprecated"),)
    bundle_deprecated = (DeprecationEntry(SCHEMA_BUNDLE, "pkg.v1.0.0", "old"),)
    fresh = CatalogInput("b", catalog("b", "pkg", {"alpha": ["1.0.0"]}))
    tied = [CatalogInput("a", catalog("a", "pkg", {"alpha": ["1.0.0"]}, package_deprecated)), fresh]
    with pytest.raises(ResolutionError, match=r"same priority \[a b\]$"):
        get("olmv1-filter")(ResolutionInput(tied, [PackageRequest("pkg")]))
    ranked = [
        CatalogInput("a", catalog("a", "pkg", {"alpha": ["1.0.0"]}, bundle_deprecated)),
        fresh,
    ]
    (choice,) = get("olmv1-filter")(ResolutionInput(ranked, [PackageRequest("pkg")])).choices
    assert choice.catalog == "b"


def test_a_tie_at_the_top_names_lower_priority_catalogs_still_in_the_running() -> None:
    def source(name: str, priority: int) -> CatalogInput:
        return CatalogInput(name, catalog(name, "pkg", {"alpha": ["1.0.0"]}), priority=priority)

    with pytest.raises(ResolutionError, match=r"same priority \[a b c\]$"):
        get("olmv1-filter")(
            ResolutionInput(
                [source("a", 2), source("b", 1), source("c", 2)], [PackageRequest("pkg")]
            )
        )
    (choice,) = get("olmv1-filter")(
        ResolutionInput([source("a", 2), source("b", 1), source("c", 1)], [PackageRequest("pkg")])
    ).choices
    assert choice.catalog == "a"


def test_a_sqlite_index_label_dependency_served_as_a_legacy_dependency_is_honoured() -> None:
    """A registry built with sqlite serves dependencies.yaml only as ``dependencies`` (and a
    CSV's required APIs as ``requiredApis``): OLM v0 reads them as requirement properties."""
    from resolver.catalog.load import load_objects
    from resolver.catalog.model import Origin
    from resolver.catalog.registryapi import registry_pb2 as api
    from resolver.catalog.sources.registry import _objects

    def bundle(name: str, package: str, **fields: object) -> api.Bundle:
        props = [api.Property(type=PROP_PACKAGE, value=f'{{"packageName":"{package}"}}')]
        return api.Bundle(
            csvName=name,
            packageName=package,
            channelName="alpha",
            bundlePath=f"example.com/{name}:v1",
            properties=props,
            **fields,  # type: ignore[arg-type]
        )

    packages = [
        api.Package(name=p, defaultChannelName="alpha", channels=[api.Channel(name="alpha")])
        for p in ("app", "lts-base", "api-owner", "needs-api")
    ]
    label = api.Dependency(type="olm.label", value='{"label":"lts"}')
    lts = api.Property(type="olm.label", value='{"label":"lts"}')
    gvk = api.GroupVersionKind(group="g", version="v", kind="K", plural="ks")
    bundles = [
        bundle("app.v1", "app", dependencies=[label]),
        bundle("lts-base.v1", "lts-base"),
        bundle("api-owner.v1", "api-owner", providedApis=[gvk]),
        bundle("needs-api.v1", "needs-api", requiredApis=[gvk]),
    ]
    bundles[1].properties.append(lts)
    objects = _objects(packages, bundles, origin=Origin("grpc://test"))
    cat = load_objects(objects, name="idx")
    required = {b.name: [p.type for p in b.properties] for b in cat.bundles}
    assert required["app.v1"] == [PROP_PACKAGE, "olm.label.required"]
    assert required["needs-api.v1"] == [PROP_PACKAGE, "olm.gvk.required"]
    assert required["api-owner.v1"] == [PROP_PACKAGE]  # it has properties: nothing inferred
    source = CatalogInput("idx", cat, namespace="ns")
    request = PackageRequest(
        "app", ("alpha",), name="app-alpha", catalog="idx/ns", starting_bundle="app.v1"
    )
    choices = get("olm-v0")(ResolutionInput([source], [request])).choices
    assert sorted(c.bundle.name for c in choices) == ["app.v1", "lts-base.v1"]
