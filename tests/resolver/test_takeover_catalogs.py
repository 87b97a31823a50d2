"""A bundle taken over from another manager (an Installed that names no catalog) under the pivoter
profile: it is the installed bundle in every catalog that lists it, so the catalogs' priority
decides which copy is installed, and staying on it is never refused as "no upgrade edge"."""

from __future__ import annotations

from resolver.profiles import get
from resolver.rules.inputs import CatalogInput, Installed, PackageRequest, ResolutionInput
from tests.resolver.test_resolution_doc import bundle, catalog

AQUA = ("aqua", [bundle("aqua", v) for v in ("6.5.5", "6.5.6")])


def _resolve(installed: Installed) -> tuple[str, str]:
    sources = [
        CatalogInput("olm-catalogsource", catalog("olm-catalogsource", AQUA)),
        CatalogInput("pivoter-catalog", catalog("pivoter-catalog", AQUA), priority=10),
    ]
    request = PackageRequest("aqua", version_range="6.5.5")
    (choice,) = get("pivoter")(ResolutionInput(sources, [request], [installed])).choices
    return choice.catalog, choice.bundle.version


def test_a_taken_over_bundle_comes_from_the_highest_priority_catalog_listing_it() -> None:
    assert _resolve(Installed("aqua.v6.5.5", "aqua", "6.5.5")) == ("pivoter-catalog", "6.5.5")


def test_a_bundle_pivoter_installed_stays_in_the_catalog_it_came_from() -> None:
    installed = Installed("aqua.v6.5.5", "aqua", "6.5.5", catalog="olm-catalogsource")
    assert _resolve(installed) == ("olm-catalogsource", "6.5.5")
