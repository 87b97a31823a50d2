"""Expectations files (each statement kind holding and failing, malformed files) and
``catalog diff`` (each kind of change for the users of an old catalog)."""

from __future__ import annotations

from pathlib import Path

import pytest

from resolver.channeltest.diff import (
    CHANNEL_REMOVED,
    NEW_HEAD,
    NEW_PATH,
    NOW_DEPRECATED,
    NOW_STRANDED,
    REMOVED,
    diff_catalogs,
)
from resolver.channeltest.expectations import (
    ExpectationError,
    check_expectations,
    load_expectations,
    parse_expectations,
)
from resolver.channeltest.report import run_catalog_test
from tests.channeltest.helpers import DATA, GOOD, Docs, bundle, derive, entry, find, load

EXPECT = DATA / "expect-good.yaml"


def test_every_statement_holds_on_the_good_catalog() -> None:
    report = run_catalog_test(load(GOOD))
    expectations = load_expectations(str(EXPECT))
    assert len(expectations) == 6
    assert check_expectations(report, expectations) == []


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        ({"next_upgrade": {"channel": "stable", "from": "1.0.0", "to": "1.1.0"}}, "is demo.v1.2.0"),
        ({"reachable": {"channel": "fast", "to": "2.0.0", "from": "2.1.0-rc.1"}}, "not reachable"),
        ({"head": {"channel": "fast", "is": "2.0.0"}}, "the head is demo.v2.1.0-rc.1"),
        ({"max_path_length": {"channel": "stable", "steps": 1}}, "demo.v1.1.0 (2)"),
        ({"head": {"channel": "nightly", "is": "2.0.0"}}, "has no channel 'nightly'"),
    ],
)
def test_a_statement_that_does_not_hold_is_an_error(
    statement: dict[str, object], problem: str
) -> None:
    report = run_catalog_test(load(GOOD))
    (failed,) = check_expectations(
        report, parse_expectations({"package": "demo", "expect": [statement]})
    )
    assert failed.code == "expectation-failed"
    assert failed.severity == "error"
    assert problem in failed.message


def test_not_deprecated_fails_when_an_entry_is_deprecated(tmp_path: Path) -> None:
    def edit(docs: Docs) -> None:
        docs.append(
            {
                "schema": "olm.deprecations",
                "package": "demo",
                "entries": [
                    {"reference": {"schema": "olm.bundle", "name": "demo.v2.0.0"}, "message": "x"}
                ],
            }
        )

    report = run_catalog_test(load(derive(tmp_path, edit)))
    doc = {"package": "demo", "expect": [{"not_deprecated": {"channel": "fast"}}]}
    (failed,) = check_expectations(report, parse_expectations(doc))
    assert "deprecated entries: demo.v2.0.0" in failed.message


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "must be a mapping with an 'expect' list"),
        ({"expect": [{"next_upgrade": {"channel": "s", "from": "1"}}]}, "needs key(s): to"),
        ({"expect": [{"soon": {}}]}, "unknown statement 'soon'"),
        ({"expect": [{"head": {"channel": "s", "is": "1"}}]}, "no package"),
        (
            {"package": "p", "expect": [{"head": {"channel": "s", "is": "1", "x": 1}}]},
            "unknown key(s): x",
        ),
        (
            {"package": "p", "expect": [{"max_path_length": {"channel": "s", "steps": "a"}}]},
            "whole number",
        ),
    ],
)
def test_malformed_expectations_name_the_statement(doc: object, message: str) -> None:
    with pytest.raises(ExpectationError, match="expect") as info:
        parse_expectations(doc, "expect.yaml")
    assert message in str(info.value)


def test_diff_of_a_catalog_with_itself_is_empty() -> None:
    result = diff_catalogs(load(GOOD), load(GOOD))
    assert result.changes == []
    assert result.compared == 7


def test_diff_reports_each_kind_of_change(tmp_path: Path) -> None:
    def edit(docs: Docs) -> None:
        # new head 2.1.0 in stable; 1.1.0 removed (its users still upgrade through the
        # skipRange of 1.2.0); 1.0.0 stranded by dropping that skipRange and replaces chain;
        # fast deprecated; db's channel renamed.
        docs.append(bundle("demo", "2.1.0"))
        stable = find(docs, "olm.channel", "stable")
        stable["entries"] = [
            {"name": "demo.v1.0.0"},
            {"name": "demo.v1.2.0", "skipRange": ">=1.1.0 <1.2.0"},
            {"name": "demo.v2.0.0", "replaces": "demo.v1.2.0"},
            {"name": "demo.v2.1.0", "replaces": "demo.v2.0.0", "skips": ["demo.v1.0.0"]},
        ]
        docs.append(
            {
                "schema": "olm.deprecations",
                "package": "demo",
                "entries": [
                    {"reference": {"schema": "olm.channel", "name": "fast"}, "message": "x"}
                ],
            }
        )
        find(docs, "olm.channel", "stable", "db")["name"] = "main"
        find(docs, "olm.package", "db")["defaultChannel"] = "main"

    new = load(derive(tmp_path, edit))
    result = diff_catalogs(load(GOOD), new)
    kinds = {(c.package, c.channel, c.bundle): set(c.kinds) for c in result.changes}
    assert kinds[("demo", "stable", "demo.v1.1.0")] >= {REMOVED, NEW_HEAD}
    assert kinds[("demo", "stable", "demo.v1.2.0")] == {NEW_HEAD, NEW_PATH}
    assert kinds[("db", "stable", "db.v1.0.0")] == {CHANNEL_REMOVED}
    assert kinds[("demo", "fast", "demo.v2.0.0")] == {NOW_DEPRECATED}
    removed = next(c for c in result.changes if c.bundle == "demo.v1.1.0")
    assert removed.new_path == ("demo.v1.2.0", "demo.v2.0.0", "demo.v2.1.0")
    # 1.0.0: still reaches the head through the skips of 2.1.0
    assert result.counts()[NEW_HEAD] == 4


def test_diff_finds_users_left_stranded(tmp_path: Path) -> None:
    def edit(docs: Docs) -> None:
        # nothing upgrades 1.0.0 any more: 1.1.0 no longer replaces it, the skipRange excludes it
        entry(docs, "stable", "demo.v1.1.0").pop("replaces")
        entry(docs, "stable", "demo.v1.2.0")["skipRange"] = ">=1.1.0 <1.2.0"

    result = diff_catalogs(load(GOOD), load(derive(tmp_path, edit)))
    changed = {c.bundle: c.kinds for c in result.changes}
    assert changed == {"demo.v1.0.0": (NOW_STRANDED,)}
