"""``catalog test -o sarif``: a SARIF 2.1.0 log (OASIS), as GitHub code scanning uploads it.

One run of the tool ``pivoter``. Its rules are the finding codes (:data:`CODES`, plus each
``validation.<category>`` found), with what they mean as help text and their severity as the
default level. One result per finding group (per finding with ``verbose``): the code as rule, the
message, the group's first file and line as location (relative to the working directory, the
repository root in CI), the other findings' places as related locations, the package/channel/
bundle as logical location, and a partial fingerprint made of the finding identity (code,
package, channel, bundle), so a consumer follows a defect from one run to the next whatever the
message says. Checked against the official schema in ``tests/channeltest/test_ci_formats.py``.
Called by the CLI.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from resolver.channeltest.ci import entries, locations
from resolver.channeltest.findings import CODES, ERROR
from resolver.channeltest.grouping import FindingGroup
from resolver.channeltest.report import VALIDATION_PREFIX, Report

SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
"""The ``$schema`` of the log: the OASIS standard's schema (with its approved errata)."""

HELP = "See 'Finding codes' in docs/catalog-testing.md of pivoter."


def _rule_name(code: str) -> str:
    return "".join(part.capitalize() for part in code.replace(".", "-").split("-"))


def rules(codes: Sequence[str]) -> list[dict[str, Any]]:
    """The rule of each finding code: id, name, help text and default level."""
    out = []
    for code in codes:
        if code in CODES:
            severity, meaning = CODES[code]
        else:
            category = code.removeprefix(VALIDATION_PREFIX)
            severity, meaning = ERROR, f"the catalog breaks a rule of opm validate ({category})"
        out.append(
            {
                "id": code,
                "name": _rule_name(code),
                "shortDescription": {"text": meaning},
                "fullDescription": {"text": meaning},
                "help": {"text": f"{meaning}. {HELP}"},
                "defaultConfiguration": {"level": "error" if severity == ERROR else "warning"},
            }
        )
    return out


def _physical(path: str, line: int) -> dict[str, Any]:
    place: dict[str, Any] = {"artifactLocation": {"uri": quote(path)}}
    if line > 0:
        place["region"] = {"startLine": line}
    return place


def _fingerprint(group: FindingGroup) -> str:
    first = group.findings[0]
    identity = (
        "\x1f".join(first.identity)
        if len(group.findings) == 1
        else "\x1f".join((group.code, group.package, group.channel))
    )
    return hashlib.sha256(identity.encode()).hexdigest()


def result(group: FindingGroup, base: str, rule_index: int) -> dict[str, Any]:
    """The SARIF result of one group."""
    location: dict[str, Any] = {}
    places = locations(group, base)
    if places:
        location["physicalLocation"] = _physical(*places[0])
    first = group.findings[0]
    name = "/".join(p for p in (group.package, group.channel, first.bundle) if p)
    if name:
        location["logicalLocations"] = [{"fullyQualifiedName": name}]
    out: dict[str, Any] = {
        "ruleId": group.code,
        "ruleIndex": rule_index,
        "level": "error" if group.severity == ERROR else "warning",
        "message": {"text": group.message},
        "partialFingerprints": {"pivoterFindingIdentity/v1": _fingerprint(group)},
        "properties": {
            "package": group.package,
            "channel": group.channel,
            "bundles": list(group.bundles),
            "details": group.details,
            "findings": len(group.findings),
        },
    }
    if location:
        out["locations"] = [location]
    related = [
        {"id": i, "physicalLocation": _physical(path, line)}
        for i, (path, line) in enumerate(places[1:], 1)
    ]
    if related:
        out["relatedLocations"] = related
    return out


def to_sarif(
    reports: Sequence[Report], base: str, verbose: bool = False, version: str = ""
) -> dict[str, Any]:
    """Every report's findings as one SARIF run of the tool ``pivoter`` (``version``)."""
    groups = [g for r in reports for g in entries(r, verbose)]
    codes = list(CODES) + sorted({g.code for g in groups} - set(CODES))
    index = {code: i for i, code in enumerate(codes)}
    driver: dict[str, Any] = {
        "name": "pivoter",
        "fullName": "pivoter catalog test",
        "rules": rules(codes),
    }
    if version:
        driver["version"] = version
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                "results": [result(g, base, index[g.code]) for g in groups],
                "columnKind": "unicodeCodePoints",
                "properties": {"summaries": [r.summary() for r in reports]},
            }
        ],
    }
