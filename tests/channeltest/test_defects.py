"""Each defect ``catalog test`` knows, planted in a catalog derived from the good one, is found
(with its code and severity), and the good catalog has none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from resolver.catalog.model import ChannelEntry
from resolver.channeltest.findings import ERROR, WARNING
from resolver.channeltest.graph import ChannelGraph, Edge
from resolver.channeltest.loading import load_for_test
from resolver.channeltest.report import Report, run_catalog_test
from resolver.versions import Version
from tests.channeltest.helpers import GOOD, Docs, bundle, derive, entry, find, load


def codes(report: Report) -> set[str]:
    return {f.code for f in report.findings}


def test_good_catalog_has_no_findings() -> None:
    report = run_catalog_test(load(GOOD))
    assert report.findings == []
    assert len(report.graphs) == 3


def test_good_catalog_paths() -> None:
    stable = run_catalog_test(load(GOOD)).graph("demo", "stable")
    assert stable is not None
    assert stable.head == "demo.v2.0.0"
    # 1.0.0 -> 1.2.0 through the skipRange (the newest successor), then 2.0.0
    assert stable.path("demo.v1.0.0").steps == ("demo.v1.2.0", "demo.v2.0.0")
    assert stable.path("demo.v1.1.0").length == 2


def _downgrade(docs: Docs) -> None:
    docs.append(bundle("demo", "1.3.0"))
    find(docs, "olm.channel", "stable")["entries"].append({"name": "demo.v1.3.0"})
    entry(docs, "stable", "demo.v1.0.0")["replaces"] = "demo.v1.3.0"


def _skiprange_nothing(docs: Docs) -> None:
    entry(docs, "stable", "demo.v1.2.0")["skipRange"] = "<0.5.0"


def _skiprange_newer(docs: Docs) -> None:
    entry(docs, "stable", "demo.v1.2.0")["skipRange"] = ">=1.0.0 <3.0.0"


def _deprecations(*refs: tuple[str, str]) -> Callable[[Docs], None]:
    def edit(docs: Docs) -> None:
        docs.append(
            {
                "schema": "olm.deprecations",
                "package": "demo",
                "entries": [
                    {"reference": {"schema": s, **({"name": n} if n else {})}, "message": "old"}
                    for s, n in refs
                ],
            }
        )

    return edit


def _default_behind(docs: Docs) -> None:
    docs.append(bundle("demo", "2.1.0"))
    find(docs, "olm.channel", "fast")["entries"].append(
        {"name": "demo.v2.1.0", "replaces": "demo.v2.1.0-rc.1"}
    )


def _no_db(docs: Docs) -> None:
    docs[:] = [d for d in docs if d.get("name") != "db" and d.get("package") != "db"]


def _api_twice(docs: Docs) -> None:
    gvk = {
        "type": "olm.gvk",
        "value": {"group": "db.example.com", "version": "v1", "kind": "Database"},
    }
    docs.append({"schema": "olm.package", "name": "otherdb", "defaultChannel": "stable"})
    docs.append(
        {
            "schema": "olm.channel",
            "package": "otherdb",
            "name": "stable",
            "entries": [{"name": "otherdb.v1.0.0"}],
        }
    )
    docs.append(bundle("otherdb", "1.0.0", gvk))


def _skips(docs: Docs) -> None:
    entry(docs, "stable", "demo.v1.2.0")["skips"] = ["demo.v1.0.0"]


CASES = [
    ("downgrade", _downgrade, {"stranded-entry", "downgrade-edge", "unreachable-entry"}),
    ("skiprange-nothing", _skiprange_nothing, {"skiprange-matches-nothing"}),
    ("skiprange-newer", _skiprange_newer, {"skiprange-covers-newer"}),
    (
        "default-head-deprecated",
        _deprecations(("olm.bundle", "demo.v2.0.0")),
        {"default-head-deprecated"},
    ),
    (
        "default-channel-deprecated",
        _deprecations(("olm.channel", "stable")),
        {"default-channel-deprecated"},
    ),
    ("head-deprecated", _deprecations(("olm.bundle", "demo.v2.1.0-rc.1")), {"head-deprecated"}),
    ("default-behind", _default_behind, {"default-channel-behind"}),
    ("api-claimed-twice", _api_twice, {"api-claimed-twice"}),
    ("skipped", _skips, {"skipped-entry"}),
]


@pytest.mark.parametrize(("name", "edit", "expected"), CASES, ids=[c[0] for c in CASES])
def test_planted_defect_is_found(
    tmp_path: Path, name: str, edit: Callable[[Docs], None], expected: set[str]
) -> None:
    report = run_catalog_test(load(derive(tmp_path, edit, name)))
    assert codes(report) == expected
    assert all(f.package for f in report.findings)


def test_downgrade_details(tmp_path: Path) -> None:
    report = run_catalog_test(load(derive(tmp_path, _downgrade)))
    stranded = next(f for f in report.findings if f.code == "stranded-entry")
    assert stranded.severity == ERROR
    assert stranded.bundle == "demo.v1.3.0"
    assert stranded.channel == "stable"
    assert stranded.origin is not None
    assert stranded.origin.path == "catalog.yaml"
    assert report.errors == [stranded]


def test_skiprange_covers_newer_names_the_newer_bundles(tmp_path: Path) -> None:
    report = run_catalog_test(load(derive(tmp_path, _skiprange_newer)))
    (f,) = report.findings
    assert f.severity == WARNING
    assert "demo.v2.0.0 (2.0.0)" in f.message
    assert "demo.v1.2.0 (1.2.0)" in f.message


def test_unsatisfied_dependency_and_with_catalog(tmp_path: Path) -> None:
    catalog = load(derive(tmp_path, _no_db))
    report = run_catalog_test(catalog)
    assert {(f.code, f.bundle) for f in report.findings} == {
        ("unsatisfied-dependency", "demo.v2.0.0"),
    }
    assert len(report.errors) == 2  # the package and the API requirement
    assert any("package: db" in f.message for f in report.errors)
    assert any("kind: Database" in f.message for f in report.errors)
    # another catalog that has db satisfies both
    assert run_catalog_test(catalog, others=[load(GOOD)]).findings == []


def test_dependency_of_an_old_bundle_is_a_warning(tmp_path: Path) -> None:
    def edit(docs: Docs) -> None:
        _no_db(docs)
        find(docs, "olm.bundle", "demo.v2.0.0")["properties"] = [
            {"type": "olm.package", "value": {"packageName": "demo", "version": "2.0.0"}}
        ]
        find(docs, "olm.bundle", "demo.v1.1.0")["properties"].append(
            {"type": "olm.package.required", "value": {"packageName": "db", "versionRange": ">=1"}}
        )

    report = run_catalog_test(load(derive(tmp_path, edit)))
    assert {(f.code, f.severity) for f in report.findings} == {
        ("unsatisfied-dependency-old", WARNING)
    }


def test_invalid_catalog_still_gets_every_check_with_validation_first(tmp_path: Path) -> None:
    def edit(docs: Docs) -> None:
        _skiprange_nothing(docs)
        # an entry without a bundle: opm validation rejects the catalog
        find(docs, "olm.channel", "fast")["entries"].append(
            {"name": "demo.v3.0.0", "replaces": "demo.v2.1.0-rc.1"}
        )

    report = run_catalog_test(load(derive(tmp_path, edit)))
    assert report.findings[0].code == "validation.missing-bundle"
    assert report.findings[0].severity == ERROR
    assert "skiprange-matches-nothing" in codes(report)


def test_unloadable_file_is_reported_first_and_the_rest_checked(tmp_path: Path) -> None:
    directory = derive(tmp_path, _skiprange_nothing)
    (directory / "broken.yaml").write_text("schema: olm.bundle\nname: [unclosed\n")
    catalog, problems = load_for_test(str(directory), use_cache=False)
    report = run_catalog_test(catalog, load_problems=problems)
    assert report.findings[0].code == "validation.load"
    assert report.findings[0].origin is not None
    assert report.findings[0].origin.path == "broken.yaml"
    assert "skiprange-matches-nothing" in codes(report)


def test_cycle_in_next_upgrades_is_found() -> None:
    # Versions unknown (bundles missing): nothing stops a replaces loop from being walked.
    entries = {
        "a": ChannelEntry("a", replaces="c"),
        "b": ChannelEntry("b", replaces="a"),
        "c": ChannelEntry("c", replaces="b"),
        "h": ChannelEntry("h", skips=("a",)),
    }
    edges = [Edge("c", "a", "replaces"), Edge("a", "b", "replaces"), Edge("b", "c", "replaces")]
    graph = ChannelGraph("p", "ch", entries, dict.fromkeys(entries), edges, ["h"])
    path = graph.path("b")
    assert path.cycle
    assert path.steps == ("c", "a", "b")


def test_prerelease_after_release_is_a_downgrade() -> None:
    # 1.0.1-1 sorts before 1.0.1 in semver: the slurm-operator pattern found in v4.20
    entries = {
        "x.v1.0.1": ChannelEntry("x.v1.0.1"),
        "x.v1.0.1-1": ChannelEntry("x.v1.0.1-1", replaces="x.v1.0.1"),
    }
    versions: dict[str, Version | None] = {
        "x.v1.0.1": Version.parse("1.0.1"),
        "x.v1.0.1-1": Version.parse("1.0.1-1"),
    }
    graph = ChannelGraph(
        "x", "c", entries, versions, [Edge("x.v1.0.1", "x.v1.0.1-1", "replaces")], ["x.v1.0.1-1"]
    )
    assert graph.next_upgrade("x.v1.0.1") is None
