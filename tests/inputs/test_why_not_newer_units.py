"""Why not newer (issue 15 item 12), the pure parts: the resolver's reason for the newest bundle
an input does not take, read into one line by :func:`resolver.explain.why_not_newer`, through
the daemon's own :func:`pivoter.inputs.resolve.resolve`, and the ``UpToDate`` condition the
engine derives from it (with the gates the engine adds: approval, pause, a failed revision).

The catalogs are built in memory; the resolver is the real one (no fakes)."""

from __future__ import annotations

import pytest

from pivoter.inputs.facts import Freshness, FreshnessState
from pivoter.inputs.outcome import Draft
from pivoter.inputs.passfacts import set_freshness
from pivoter.inputs.record import Record
from pivoter.inputs.resolve import resolve
from pivoter.inputs.status import resolution_status
from resolver.catalog.model import (
    PROP_DEPRECATED,
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
from resolver.explain import NotNewer, why_not_newer
from resolver.resolveset import ResolveSet
from resolver.rules.inputs import CatalogInput, Installed, PackageRequest


def bundle(pkg: str, version: str, *extra: Property) -> Bundle:
    props = (Property(PROP_PACKAGE, {"packageName": pkg, "version": version}), *extra)
    return Bundle(pkg, f"{pkg}.v{version}", f"example.com/{pkg}:{version}", props)


def chain(pkg: str, versions: list[str], channel: str = "stable", edges: bool = True) -> Channel:
    entries = [
        ChannelEntry(f"{pkg}.v{v}", replaces=f"{pkg}.v{versions[i - 1]}" if i and edges else "")
        for i, v in enumerate(versions)
    ]
    return Channel(pkg, channel, tuple(entries))


def source(
    bundles: list[Bundle],
    channels: list[Channel],
    deprecations: list[Deprecation] | None = None,
) -> list[tuple[CatalogInput, str]]:
    packages = sorted({b.package for b in bundles})
    cat = Catalog(
        "main",
        [Package(p, "stable") for p in packages],
        channels,
        bundles,
        deprecations=deprecations or [],
    )
    return [(CatalogInput("main", cat), "sha256:test")]


def newest_not_taken(
    sources: list[tuple[CatalogInput, str]],
    request: PackageRequest,
    installed: list[Installed] | None = None,
) -> tuple[str, NotNewer | None]:
    selection = resolve(sources, [request], installed or [])
    (entry,) = selection.document.entries
    notes = [n for n in selection.not_newer if n.package == request.package]
    return entry.version, (notes[0] if notes else None)


WEB = [bundle("web", v) for v in ("1.0.0", "1.1.0", "2.0.0")]


def test_the_newest_is_taken_and_nothing_is_said() -> None:
    version, note = newest_not_taken(
        source(WEB, [chain("web", ["1.0.0", "1.1.0", "2.0.0"])]), PackageRequest("web")
    )
    assert (version, note) == ("2.0.0", None)


def test_a_version_range_keeps_an_older_bundle() -> None:
    version, note = newest_not_taken(
        source(WEB, [chain("web", ["1.0.0", "1.1.0", "2.0.0"])]),
        PackageRequest("web", version_range="^1"),
    )
    assert version == "1.1.0"
    assert note is not None
    assert (note.version, note.bundle, note.reason) == (
        "2.0.0",
        "web.v2.0.0",
        "OutsideVersionRange",
    )
    assert note.text() == "web 2.0.0 (web.v2.0.0) is not taken: version 2.0.0 is outside range ^1"


def test_a_channel_without_the_newer_version() -> None:
    channels = [chain("web", ["1.0.0", "1.1.0"]), chain("web", ["1.1.0", "2.0.0"], "fast")]
    version, note = newest_not_taken(
        source(WEB, channels), PackageRequest("web", channels=("stable",))
    )
    assert version == "1.1.0"
    assert note is not None
    assert (note.version, note.reason) == ("2.0.0", "NotInChannel")
    assert note.why == "not in channel stable"


def test_a_missing_upgrade_edge_from_the_installed_bundle() -> None:
    # 2.0.0 neither replaces nor skips 1.0.0: no way up from what is installed.
    channels = [chain("web", ["1.0.0", "2.0.0"], edges=False)]
    installed = [Installed(name="web.v1.0.0", package="web", version="1.0.0", catalog="main")]
    version, note = newest_not_taken(
        source([WEB[0], WEB[2]], channels), PackageRequest("web"), installed
    )
    assert version == "1.0.0"
    assert note is not None
    assert note.reason == "NoUpgradeEdge"
    assert "no upgrade edge (replaces, skips, skipRange) from installed web.v1.0.0" in note.why


def test_a_dependency_the_newer_bundle_cannot_have() -> None:
    needs = Property(PROP_PACKAGE_REQUIRED, {"packageName": "db", "versionRange": ">=9.0.0"})
    bundles = [WEB[0], bundle("web", "2.0.0", needs), bundle("db", "1.0.0")]
    channels = [chain("web", ["1.0.0", "2.0.0"]), chain("db", ["1.0.0"])]
    version, note = newest_not_taken(source(bundles, channels), PackageRequest("web"))
    assert version == "1.0.0"
    assert note is not None
    assert note.reason == "Unsatisfiable"
    assert note.why.startswith("ruled out by ")
    assert "db" in note.why
    assert ">=9.0.0" in note.why
    assert "\n" not in note.text()


@pytest.mark.parametrize("how", ["property", "deprecations"])
def test_a_deprecated_newer_bundle(how: str) -> None:
    if how == "property":
        bundles = [WEB[0], bundle("web", "2.0.0", Property(PROP_DEPRECATED, {}))]
        deprecations = None
    else:
        bundles = [WEB[0], WEB[2]]
        entry = DeprecationEntry(SCHEMA_BUNDLE, "web.v2.0.0", "broken, use 1.0.0")
        deprecations = [Deprecation("web", (entry,))]
    version, note = newest_not_taken(
        source(bundles, [chain("web", ["1.0.0", "2.0.0"])], deprecations),
        PackageRequest("web"),
    )
    assert version == "1.0.0"
    assert note is not None
    assert note.reason == "Deprecated", note.why
    if how == "deprecations":
        assert "broken, use 1.0.0" in note.why  # the catalog's own words


def test_only_the_newest_in_channel_is_explained_first() -> None:
    """A newer bundle outside the channel does not hide the newest one of the channel."""
    bundles = [*WEB, bundle("web", "3.0.0")]
    channels = [chain("web", ["1.0.0", "1.1.0", "2.0.0"]), chain("web", ["3.0.0"], "fast")]
    version, note = newest_not_taken(
        source(bundles, channels), PackageRequest("web", channels=("stable",), version_range="<2")
    )
    assert version == "1.1.0"
    assert note is not None
    assert (note.version, note.reason) == ("2.0.0", "OutsideVersionRange")


@pytest.mark.parametrize(
    "lines",
    [[], ["garbage"], [": no bundle"], ["web.v2.0.0: no version"]],
)
def test_lines_that_do_not_read_say_nothing(lines: list[str]) -> None:
    assert why_not_newer("web", lines) is None


def test_a_reason_over_several_lines_becomes_one() -> None:
    note = why_not_newer("web", ["web.v2 2.0.0: ruled out by a\nb\r\n  c"])
    assert note is not None
    assert note.why == "ruled out by a b c"
    assert note.reason == "Unsatisfiable"


# -- the UpToDate condition ---------------------------------------------------------------------


def _document(version: str) -> ResolveSet:
    sources = source(WEB, [chain("web", ["1.0.0", "1.1.0", "2.0.0"])])
    return resolve(sources, [PackageRequest("web", version_range=version)], []).document


def test_up_to_date_names_the_gate_before_the_resolver() -> None:
    active, target = _document("1.0.0"), _document("^1")
    out = Draft(record=Record(active=1))
    out.not_newer = (NotNewer("web", "web.v2.0.0", "2.0.0", "version 2.0.0 is outside", "X"),)
    set_freshness(out, target, active, gate=("AwaitingApproval", "revision 2 waits for approval"))
    assert out.up_to_date == Freshness(
        FreshnessState.NOT_NEWEST,
        "AwaitingApproval",
        "web 1.1.0 (web.v1.1.0) is not taken: revision 2 waits for approval; "
        "web 2.0.0 (web.v2.0.0) is not taken: version 2.0.0 is outside",
    )


def test_up_to_date_true_and_the_condition_in_status() -> None:
    target = _document("")
    out = Draft(record=Record(active=1))
    set_freshness(out, target, target, gate=("Paused", "paused"))
    assert out.up_to_date is not None
    assert (out.up_to_date.state, out.up_to_date.reason) == (FreshnessState.NEWEST, "Newest")
    status = resolution_status({"metadata": {"name": "x"}}, out.outcome(), 3)
    (cond,) = [c for c in status["conditions"] if c["type"] == "UpToDate"]
    assert (cond["status"], cond["observedGeneration"]) == ("True", 3)
    assert "web 2.0.0" in cond["message"]


def test_up_to_date_is_kept_when_a_pass_does_not_resolve() -> None:
    previous = {
        "type": "UpToDate",
        "status": "False",
        "reason": "OutsideVersionRange",
        "message": "web 2.0.0 (web.v2.0.0) is not taken: ...",
        "observedGeneration": 1,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    obj = {"metadata": {"name": "x"}, "status": {"conditions": [previous]}}
    status = resolution_status(obj, Draft(record=Record()).outcome(), 1)
    (cond,) = [c for c in status["conditions"] if c["type"] == "UpToDate"]
    assert cond == previous


def test_control_characters_from_a_catalog_never_reach_a_terminal() -> None:
    note = why_not_newer("web", ["web.v2\x1b[2J 2.0.0: deprecated: \x1b[31mred\x07\u202e"])
    assert note is not None
    assert "\x1b" not in note.text()
    assert "\x07" not in note.text()
    assert "\u202e" not in note.text()
    assert note.why == "deprecated: ?[31mred??"
