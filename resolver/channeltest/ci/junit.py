"""``catalog test -o junit``: JUnit XML, one test case per package and per channel check.

Layout, as Jenkins (the xUnit plugin's ``junit-10.xsd``), GitLab and GitHub test-report actions
read it::

    <testsuites name="pivoter catalog test" tests= failures= errors="0" time="0">
      <testsuite name=CATALOG tests= failures= errors="0" skipped="0" time="0">
        <testcase classname=PACKAGE name="package" time="0">        package-level checks
        <testcase classname=PACKAGE name="channel C" time="0">      one per channel tested
        <testcase classname=CATALOG name="catalog files" time="0">  findings of no package

A test case fails with one ``<failure type=CODE message=...>`` per error group in it (the body
names the file and line and, with more than one finding, each of them); warnings do not fail a
case and are listed in its ``<system-out>``. Characters XML 1.0 cannot hold are replaced.
Called by the CLI.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from resolver.channeltest.ci import artifact_path, entries, xml_safe
from resolver.channeltest.findings import ERROR
from resolver.channeltest.grouping import FindingGroup
from resolver.channeltest.report import Report

PACKAGE_CASE = "package"
"""The name of a package's own test case (default channel, deprecations, dependencies)."""
CATALOG_CASE = "catalog files"
"""The name of the test case holding findings of no package (files that cannot be read)."""


def _where(group: FindingGroup, base: str) -> str:
    path = artifact_path(group.origin, base)
    line = group.origin.line if group.origin else 0
    return f"{path}:{line}" if path and line else path


def _body(group: FindingGroup, base: str) -> str:
    lines = [f"{_where(group, base) or '-'}: {group.message} [{group.code}]"]
    if len(group.findings) > 1:
        for f in group.findings:
            path = artifact_path(f.origin, base)
            line = f.origin.line if f.origin else 0
            place = f"{path}:{line}" if path and line else path or "-"
            lines.append(f"  {place}: {f.message}")
    return "\n".join(lines)


def _case_of(group: FindingGroup, channels: set[tuple[str, str]]) -> tuple[str, str]:
    if not group.package:
        return ("", CATALOG_CASE)
    if group.channel and (group.package, group.channel) in channels:
        return (group.package, f"channel {group.channel}")
    return (group.package, PACKAGE_CASE)


def _suite(report: Report, base: str, verbose: bool) -> ET.Element:
    channels = {(g.package, g.channel) for g in report.graphs}
    cases: dict[tuple[str, str], list[FindingGroup]] = {}
    packages = sorted({g.package for g in report.graphs} | set(report.defaults))
    for package in packages:
        cases[(package, PACKAGE_CASE)] = []
        for graph in report.graphs:
            if graph.package == package:
                cases[(package, f"channel {graph.channel}")] = []
    for group in entries(report, verbose):
        cases.setdefault(_case_of(group, channels), []).append(group)
    suite = ET.Element("testsuite", name=xml_safe(report.catalog))
    failed = 0
    for (package, name), groups in cases.items():
        case = ET.SubElement(
            suite,
            "testcase",
            classname=xml_safe(package or report.catalog),
            name=xml_safe(name),
            time="0",
        )
        errors = [g for g in groups if g.severity == ERROR]
        for g in errors:
            failure = ET.SubElement(
                case, "failure", type=xml_safe(g.code), message=xml_safe(g.message)
            )
            failure.text = xml_safe(_body(g, base))
        warnings = [g for g in groups if g.severity != ERROR]
        if warnings:
            out = ET.SubElement(case, "system-out")
            out.text = xml_safe("\n".join(f"warning: {_body(g, base)}" for g in warnings))
        failed += bool(errors)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failed))
    suite.set("errors", "0")
    suite.set("skipped", "0")
    suite.set("time", "0")
    return suite


def to_junit(reports: Sequence[Report], base: str, verbose: bool = False) -> str:
    """Every report as one ``<testsuite>`` of a ``<testsuites>`` document."""
    root = ET.Element("testsuites", name="pivoter catalog test")
    suites = [_suite(r, base, verbose) for r in reports]
    root.extend(suites)
    root.set("tests", str(sum(int(s.get("tests", "0")) for s in suites)))
    root.set("failures", str(sum(int(s.get("failures", "0")) for s in suites)))
    root.set("errors", "0")
    root.set("time", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"
