"""Findings said once per package and defect: the grouped messages (bundles as a version range
and count, the APIs they require), ``-v`` listing every single finding, ``-o json`` keeping every
single finding where it was and adding the groups, and (``slow``) the counts on
community-operators-prod-v4.20 quoted in docs/catalog-testing.md."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from resolver.channeltest.expectations import statement_lines
from resolver.channeltest.findings import Finding, finding
from resolver.channeltest.grouping import group_findings
from resolver.channeltest.loading import load_for_test
from resolver.channeltest.report import run_catalog_test
from resolver.versions import Version
from tests.channeltest.helpers import DATA
from tests.clirun import pivoter as run_pivoter
from tests.tools import SHARED, requires_shared

EVERY = DATA / "every-code"


def pivoter(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIVOTER_CACHE": "/tmp/pivoter-test-cache", "NO_COLOR": "1"}
    return run_pivoter(*args, env=env, timeout=120)


def version_of(package: str, bundle: str) -> Version | None:
    return Version.parse(bundle.split(".v", 1)[1]) if ".v" in bundle else None


def needs(bundle: str, what: str, code: str = "unsatisfied-dependency-old") -> Finding:
    return finding(code, f"{bundle} requires {what}", package="op", bundle=bundle, detail=what)


def test_dependencies_of_many_bundles_are_one_finding() -> None:
    apis = ["cert-manager.io/v1 Certificate", "cert-manager.io/v1 ClusterIssuer"]
    findings = [needs(f"op.v1.{minor}.0", api) for minor in range(3, 8) for api in apis]
    findings.append(needs("op.v1.3.0", "package cert-manager >=1.12.2"))
    (group,) = group_findings(findings, version_of)
    assert group.message == (
        "op 1.3.0-1.7.0 (5 bundles) require cert-manager.io/v1 Certificate, ClusterIssuer; "
        "1.3.0 also requires package cert-manager >=1.12.2; no catalog tested provides them"
    )
    assert group.bundles == tuple(f"op.v1.{m}.0" for m in range(3, 8))
    assert group.details == [*apis, "package cert-manager >=1.12.2"]
    assert len(group.findings) == 11
    assert group.to_dict()["count"] == 11


def test_a_head_and_its_requirements() -> None:
    code = "unsatisfied-dependency"
    findings = [needs("op.v2.0.0", "a.io/v1 X", code), needs("op.v2.0.0", "b.io/v2 Y", code)]
    (group,) = group_findings(findings, version_of)
    assert group.message == (
        "op channel head 2.0.0 requires a.io/v1 X and b.io/v2 Y; no catalog tested provides them"
    )


def test_one_finding_keeps_its_message_and_some_codes_are_never_grouped() -> None:
    single = needs("op.v1.0.0", "a.io/v1 X")
    expectations = [
        finding("expectation-failed", f"expect[{i}] failed", package="op", channel="s")
        for i in range(2)
    ]
    unreadable = [Finding("error", "validation.load", f"file {i} broken") for i in range(2)]
    groups = group_findings([single, *expectations, *unreadable], version_of)
    assert [g.message for g in groups] == [
        "op.v1.0.0 requires a.io/v1 X",
        "expect[0] failed",
        "expect[1] failed",
        "file 0 broken",
        "file 1 broken",
    ]


def test_every_code_catalog_groups() -> None:
    catalog, problems = load_for_test(str(EVERY), use_cache=False)
    report = run_catalog_test(catalog, load_problems=problems, root=str(EVERY))
    groups = report.groups()
    cycle = next(g for g in groups if g.code == "upgrade-cycle")
    assert len(cycle.findings) == 3
    assert cycle.message == (
        "package 'cycle', channel 'loop': upgrades from cycle.a, cycle.b, cycle.c (3 entries) "
        "go round in a cycle"
    )
    assert cycle.node == "node-loop__cycle.a"
    counts = report.counts(groups)
    assert counts["error_findings"] == len(report.errors)
    assert counts["errors"] == len(report.errors) - 2  # the cycle's three are one
    assert report.summary(groups).endswith(
        f"{counts['errors']} error(s), {counts['warnings']} warning(s) "
        f"(from {counts['error_findings']} and {counts['warning_findings']} single findings)"
    )


def test_human_output_grouped_and_expanded_with_v() -> None:
    grouped = pivoter("catalog", "test", str(EVERY), "--no-cache").stdout
    assert "ERRORS (8; 10 findings)" in grouped
    assert "upgrades from cycle.a, cycle.b, cycle.c (3 entries) go round in a cycle" in grouped
    assert "cycle.a -> cycle.b" not in grouped
    assert "-v lists every single finding" in grouped
    expanded = pivoter("catalog", "test", str(EVERY), "--no-cache", "-v").stdout
    assert "    - catalog.yaml:" in expanded
    assert "upgrades from cycle.b go round in a cycle: cycle.b -> cycle.c" in expanded


def test_json_keeps_every_single_finding_and_adds_groups() -> None:
    data = json.loads(pivoter("catalog", "test", str(EVERY), "--no-cache", "-o", "json").stdout)
    assert {"catalog", "passed", "errors", "warnings", "channels", "summary"} <= set(data)
    keys = {"severity", "code", "message", "package", "channel", "bundle", "file", "line"}
    assert all(keys <= set(f) for f in data["errors"] + data["warnings"])
    assert sum(g["count"] for g in data["groups"]) == len(data["errors"]) + len(data["warnings"])
    assert data["counts"]["error_findings"] == len(data["errors"])
    cycle = next(g for g in data["groups"] if g["code"] == "upgrade-cycle")
    assert cycle["bundles"] == ["cycle.a", "cycle.b", "cycle.c"]
    assert [f["bundle"] for f in cycle["findings"]] == ["cycle.a", "cycle.b", "cycle.c"]
    stranded = next(f for f in data["errors"] if f["code"] == "stranded-entry")
    assert stranded["node"] == "node-stable__downgrade.v1.2.0"


def test_expectation_lines() -> None:
    block = (
        "package: p\nexpect:\n  # a comment\n  - head: {channel: a, is: 1}\n"
        "  - head:\n      channel: b\n      is: 2\nother: 1\n"
    )
    assert statement_lines(block, 2) == [4, 5]
    flow = "expect: [{head: {channel: a, is: 1}}, {head: {channel: b, is: 2}}]\n"
    assert statement_lines(flow, 2) == [1, 1]
    assert statement_lines("package: p\n", 1) == [0]


@pytest.mark.slow
@requires_shared  # the figures of the whole community catalog
def test_community_v4_20_before_and_after_grouping() -> None:
    """The figures of docs/catalog-testing.md ("Grouped findings")."""
    root = SHARED / "catalogs" / "community-operators-prod-v4.20"
    catalog, problems = load_for_test(str(root), use_cache=False)
    report = run_catalog_test(catalog, load_problems=problems, root=str(root))
    assert report.counts() == {
        "errors": 7,
        "warnings": 27,
        "error_findings": 13,
        "warning_findings": 57,
    }
    messages = [g.message for g in report.groups()]
    assert (
        "alloydb-omni-operator 1.3.0-1.7.1 (10 bundles) require cert-manager.io/v1 Certificate, "
        "ClusterIssuer, Issuer; 1.3.0 also requires package cert-manager >=1.12.2; no catalog "
        "tested provides them"
    ) in messages
    assert (
        "package 'aws-neuron-operator', channel 'Fast': upgrades from 0.0.1-0.0.3 (3 entries) "
        "stop at 0.1.2, not at the head 1.2.0"
    ) in messages
