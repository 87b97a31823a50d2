"""Held bundles under the pivoter profile: what other inputs of the cluster selected is a fixed
choice a resolution may depend on and must not duplicate (package or API), and explanations
name the holder."""

from __future__ import annotations

import pytest

from resolver.catalog.model import PROP_GVK, PROP_GVK_REQUIRED, Property
from resolver.profiles import get
from resolver.rules.inputs import (
    CatalogInput,
    Held,
    Installed,
    PackageRequest,
    ResolutionInput,
    Unsatisfiable,
)
from tests.resolver.test_resolution_doc import bundle, catalog, needs

DB = ("db", [bundle("db", v) for v in ("1.0.0", "1.1.0", "2.0.0")])
APP = ("app", [bundle("app", "1.0.0", needs("db", ">=1.0.0"))])
WEB = ("web", [bundle("web", "1.0.0", needs("db", ">=2.0.0"))])
ZK_API = {"group": "zk.example.com", "version": "v1", "kind": "ZooKeeper"}
ZK_A = ("zk-a", [bundle("zk-a", "1.0.0", Property(PROP_GVK, ZK_API))])
ZK_B = ("zk-b", [bundle("zk-b", "1.0.0", Property(PROP_GVK, ZK_API))])
USER = ("user", [bundle("user", "1.0.0", Property(PROP_GVK_REQUIRED, ZK_API))])
SOURCES = [CatalogInput("main", catalog("main", DB, APP, WEB, ZK_A, ZK_B, USER))]
HELD_DB = Held("db.v1.1.0", "db", "1.1.0", "Resolution b")


def test_a_shared_dependency_is_the_held_bundle_and_not_a_choice() -> None:
    result = get("pivoter")(ResolutionInput(SOURCES, [PackageRequest("app")], held=[HELD_DB]))
    assert {c.package: c.bundle.version for c in result.choices} == {"app": "1.0.0"}
    assert [(s.held, s.required_by) for s in result.shared] == [(HELD_DB, ("app",))]


def test_without_held_bundles_the_dependency_is_its_own_choice() -> None:
    result = get("pivoter")(ResolutionInput(SOURCES, [PackageRequest("app")]))
    assert {c.package: c.bundle.version for c in result.choices} == {
        "app": "1.0.0",
        "db": "2.0.0",
    }
    assert result.shared == []


def test_an_unused_held_bundle_is_not_shared() -> None:
    result = get("pivoter")(ResolutionInput(SOURCES, [PackageRequest("zk-a")], held=[HELD_DB]))
    assert [c.package for c in result.choices] == ["zk-a"]
    assert result.shared == []


def test_another_version_of_a_held_package_is_unsatisfiable_naming_the_holder() -> None:
    with pytest.raises(Unsatisfiable) as err:
        get("pivoter")(ResolutionInput(SOURCES, [PackageRequest("web")], held=[HELD_DB]))
    text = "\n".join(err.value.summary)
    assert "package db is held at 1.1.0 by Resolution b" in text
    assert "web 1.0.0 requires a bundle with package: db" in text
    assert "@" not in text  # no internal literal


def test_a_second_provider_of_a_held_api_is_refused() -> None:
    held = [Held("zk-a.v1.0.0", "zk-a", "1.0.0", "Resolution a")]
    with pytest.raises(Unsatisfiable) as err:
        get("pivoter")(ResolutionInput(SOURCES, [PackageRequest("zk-b")], held=held))
    text = "\n".join(err.value.summary)
    assert "provides API zk.example.com/v1/ZooKeeper" in text
    assert "which package zk-a (held at 1.0.0 by Resolution a) provides" in text


def test_a_held_api_provider_meets_a_gvk_requirement() -> None:
    held = [Held("zk-a.v1.0.0", "zk-a", "1.0.0", "Resolution a")]
    result = get("pivoter")(ResolutionInput(SOURCES, [PackageRequest("user")], held=held))
    assert [c.package for c in result.choices] == ["user"]
    assert [(s.held.package, s.required_by) for s in result.shared] == [("zk-a", ("user",))]


def test_a_held_bundle_no_catalog_lists_still_meets_a_package_requirement() -> None:
    held = [Held("db.v1.5.0", "db", "1.5.0", "PlatformOperator p")]
    result = get("pivoter")(ResolutionInput(SOURCES, [PackageRequest("app")], held=held))
    assert [c.package for c in result.choices] == ["app"]
    assert [s.held.name for s in result.shared] == ["db.v1.5.0"]


def test_held_bundles_do_not_change_the_answer_of_other_profiles_inputs() -> None:
    # The OLM profiles ignore held bundles: they reproduce engines that have no such notion.
    inp = ResolutionInput(SOURCES, [PackageRequest("app")], held=[HELD_DB])
    assert {c.package for c in get("olm-v0")(inp).choices} == {"app", "db"}


def test_a_holder_keeps_a_shared_dependency_in_its_dependents_range() -> None:
    # Resolution a installed app 2.0.0 (db <2.0.0), sharing db 1.1.0 that this input installed.
    app2 = ("app", [bundle("app", "2.0.0", needs("db", "<2.0.0"))])
    sources = [CatalogInput("main", catalog("main", DB, app2))]
    held = [Held("app.v2.0.0", "app", "2.0.0", "Resolution a")]
    installed = [Installed("db.v1.1.0", "db", "1.1.0")]
    inp = ResolutionInput(sources, [PackageRequest("db")], installed, held=held)
    result = get("pivoter")(inp)
    assert {c.package: c.bundle.version for c in result.choices} == {"db": "1.1.0"}
    alone = ResolutionInput(sources, [PackageRequest("db")], installed)
    assert {c.package: c.bundle.version for c in get("pivoter")(alone).choices} == {"db": "2.0.0"}
    with pytest.raises(Unsatisfiable) as err:
        get("pivoter")(
            ResolutionInput(
                sources, [PackageRequest("db", version_range=">=2")], installed, held=held
            )
        )
    text = "\n".join(err.value.summary)
    assert "bundle app.v2.0.0 (package app 2.0.0, catalog main), installed by Resolution a," in text
    assert "requires a bundle with package: db and with version in range: <2.0.0" in text


def test_properties_of_a_held_bundle_no_catalog_lists_are_honoured() -> None:
    """The daemon passes the held bundle's properties from any catalog it has: API uniqueness
    and a holder's requirements then hold though this resolution's catalogs do not list it."""
    sources = [CatalogInput("main", catalog("main", DB, ZK_B))]
    zk = Held("zk-a.v1.0.0", "zk-a", "1.0.0", "Resolution a", (Property(PROP_GVK, ZK_API),))
    with pytest.raises(Unsatisfiable) as err:
        get("pivoter")(ResolutionInput(sources, [PackageRequest("zk-b")], held=[zk]))
    assert "which package zk-a (held at 1.0.0 by Resolution a) provides" in "\n".join(
        err.value.summary
    )
    # Without its properties the clash cannot be seen (the limit this closes).
    bare = Held("zk-a.v1.0.0", "zk-a", "1.0.0", "Resolution a")
    result = get("pivoter")(ResolutionInput(sources, [PackageRequest("zk-b")], held=[bare]))
    assert [c.package for c in result.choices] == ["zk-b"]

    app2 = bundle("app", "2.0.0", needs("db", "<2.0.0"))
    app = Held("app.v2.0.0", "app", "2.0.0", "Resolution a", app2.properties)
    installed = [Installed("db.v1.1.0", "db", "1.1.0")]
    inp = ResolutionInput(sources, [PackageRequest("db")], installed, held=[app])
    assert {c.package: c.bundle.version for c in get("pivoter")(inp).choices} == {"db": "1.1.0"}
    with pytest.raises(Unsatisfiable) as err:
        get("pivoter")(
            ResolutionInput(
                sources, [PackageRequest("db", version_range=">=2")], installed, held=[app]
            )
        )
    text = "\n".join(err.value.summary)
    assert "bundle app.v2.0.0 (package app 2.0.0), installed by Resolution a," in text
    assert "@" not in text
