"""``catalog test -o github|junit|sarif``, each read back by a consumer of its format:

* GitHub workflow commands parsed as the Actions runner parses them (``::cmd k=v,...::data``,
  the runner's unescaping of ``%25 %0D %0A`` and, in properties, ``%3A %2C``);
* JUnit XML read by ``junitparser`` and validated against the Jenkins xUnit plugin's
  ``junit-10.xsd`` (``tests/data/ci/``);
* SARIF validated against the official OASIS SARIF 2.1.0 JSON schema (``tests/data/ci/``).

On the crafted catalog with one defect of each code (``tests/data/channeltest/every-code``, its
expectations, and a template that cannot be expanded) every finding points at a file and line
that exist; on the small real catalogs in ``tests/data`` and (``slow``) the shared real catalogs,
every format validates.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import xmlschema
from junitparser import Failure, JUnitXml

from pivoter.cli.exitcodes import ExitCode
from resolver.channeltest.ci.github import annotation, escape_data, escape_property
from resolver.channeltest.findings import CODES, Finding
from resolver.channeltest.grouping import FindingGroup
from tests.channeltest.helpers import DATA
from tests.clirun import pivoter as run_pivoter
from tests.tools import SHARED, requires_shared

ROOT = Path(__file__).resolve().parents[2]
CI_DATA = ROOT / "tests" / "data" / "ci"
EVERY = DATA / "every-code"
EXPECT = DATA / "every-code-expect.yaml"
TEMPLATES = DATA / "templates" / "unresolved"
REAL = DATA / "real" / "community-operators-prod-v4.20"


def pivoter(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIVOTER_CACHE": "/tmp/pivoter-test-cache", "NO_COLOR": "1"}
    return run_pivoter(*args, env=env, cwd=cwd, timeout=120)


def rel(path: Path) -> str:
    return os.path.relpath(path, ROOT)


# -- the consumers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """A workflow command as the Actions runner reads it."""

    name: str
    properties: dict[str, str]
    data: str


def _unescape(text: str, pairs: list[tuple[str, str]]) -> str:
    for escaped, plain in pairs:
        text = text.replace(escaped, plain)
    return text


_DATA = [("%0D", "\r"), ("%0A", "\n"), ("%25", "%")]
_PROPERTY = [("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")]


def parse_commands(output: str) -> Iterator[Command]:
    """The runner's reading (ActionCommand.TryParseV2): ``::`` opens, the next ``::`` ends the
    command part; its first space separates the name from ``k=v`` pairs split at ``,``."""
    for line in output.splitlines():
        if not line.startswith("::"):
            continue
        end = line.index("::", 2)
        head, data = line[2:end], line[end + 2 :]
        name, _, props = head.partition(" ")
        properties = {}
        for pair in filter(None, props.split(",")):
            key, _, value = pair.partition("=")
            properties[key] = _unescape(value, _PROPERTY)
        yield Command(name, properties, _unescape(data, _DATA))


@cache
def sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads((CI_DATA / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


@cache
def junit_schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(CI_DATA / "junit-10.xsd"))


def check_sarif(text: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(text)
    errors = sorted(sarif_validator().iter_errors(doc), key=str)
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    return doc


def check_junit(text: str) -> JUnitXml:
    junit_schema().validate(text)
    return JUnitXml.fromstring(text)


def line_of(path: str, number: int, cwd: Path = ROOT) -> str:
    lines = (cwd / path).read_text().splitlines()
    assert 1 <= number <= len(lines), (path, number)
    return lines[number - 1]


# -- the crafted catalog: one defect of each code ---------------------------------------------


def every_code(fmt: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return pivoter(
        "catalog", "test", rel(EVERY), "--no-cache", "--expect", rel(EXPECT), "-o", fmt, *extra
    )


def template(fmt: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return pivoter("catalog", "test", rel(TEMPLATES), "-o", fmt, *extra)


def test_crafted_catalogs_hold_every_code() -> None:
    found = set()
    for result in (every_code("json"), template("json")):
        assert result.returncode == ExitCode.INVALID, result.stderr
        data = json.loads(result.stdout)
        found |= {f["code"] for f in data["errors"] + data["warnings"]}
    assert set(CODES) <= found
    assert {"validation.load", "validation.missing-bundle"} <= found


def test_github_annotations_name_file_line_and_title_of_every_code() -> None:
    commands = []
    for result in (every_code("github", "-v"), template("github", "-v")):
        assert result.returncode == ExitCode.INVALID, result.stderr
        commands += list(parse_commands(result.stdout))
        assert result.stdout.splitlines()[-1].startswith("pivoter catalog test: ")
    codes = set()
    for c in commands:
        assert c.name in ("error", "warning")
        code = c.properties["title"].split(" ")[0]
        codes.add(code)
        assert c.name == ("warning" if CODES.get(code, ("error",))[0] == "warning" else "error")
        path, line = c.properties["file"], int(c.properties["line"])
        assert path.startswith("tests/data/channeltest/"), path
        text = line_of(path, line)
        assert text.strip(), (c, text)
    assert set(CODES) <= codes
    stranded = next(c for c in commands if c.properties["title"].startswith("stranded-entry"))
    # the annotation sits on the stranded entry's own line, not on its channel's first line
    assert line_of(stranded.properties["file"], int(stranded.properties["line"])) == (
        "  - name: downgrade.v1.2.0"
    )
    assert stranded.properties["title"] == "stranded-entry (downgrade/stable)"
    expectation = next(c for c in commands if c.properties["title"].startswith("expectation"))
    assert expectation.properties["file"] == "tests/data/channeltest/every-code-expect.yaml"
    assert line_of(expectation.properties["file"], int(expectation.properties["line"])).startswith(
        "  - next_upgrade:"
    )


def test_github_escaping_round_trips_through_the_runner_reading() -> None:
    nasty = "50% done\r\nnext: a,b :: ::error file=x::forged"
    finding = Finding("error", "stranded-entry", nasty, "p:1,2", "ch,1", "b", None)
    group = FindingGroup("error", "stranded-entry", "p:1,2", "ch,1", nasty, (finding,), ("b",))
    text = annotation(group, "")
    assert "\n" not in text
    assert "\r" not in text
    (command,) = parse_commands(text)
    assert command.data == nasty
    assert command.properties == {"title": "stranded-entry (p:1,2/ch,1)"}
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    assert escape_data("a:b,c%\n") == "a:b,c%25%0A"


def test_github_groups_by_default() -> None:
    grouped = list(parse_commands(every_code("github").stdout))
    single = list(parse_commands(every_code("github", "-v").stdout))
    assert len(grouped) < len(single)
    cycle = [c for c in grouped if c.properties["title"] == "upgrade-cycle (cycle/loop)"]
    assert len(cycle) == 1
    assert "cycle.a, cycle.b, cycle.c (3 entries)" in cycle[0].data


def test_junit_has_a_case_per_package_and_channel_and_fails_errors() -> None:
    result = every_code("junit")
    assert result.returncode == ExitCode.INVALID
    xml = check_junit(result.stdout)
    (suite,) = list(xml)
    assert suite.name == "every-code"
    cases = {(c.classname, c.name): c for c in suite}
    packages = {"behind", "cycle", "deprecated", "downgrade", "needs", "old-channel"}
    packages |= {"ranges", "skipping", "twin-a", "twin-b"}
    assert {(p, "package") for p in packages} <= set(cases)
    assert ("downgrade", "channel stable") in cases
    assert ("every-code", "catalog files") in cases  # broken.yaml belongs to no package
    failures = {
        key: {r.type for r in case.result if isinstance(r, Failure)} for key, case in cases.items()
    }
    assert failures[("downgrade", "channel stable")] == {"no-path-to-head", "stranded-entry"}
    assert failures[("needs", "package")] == {"unsatisfied-dependency"}
    assert failures[("skipping", "channel stable")] == {"expectation-failed"}
    assert failures[("every-code", "catalog files")] == {"validation.load"}
    # a warning does not fail its case (of the default channel here), it is listed in its output
    assert failures[("behind", "channel stable")] == set()
    assert "default-channel-behind" in (cases[("behind", "channel stable")].system_out or "")
    assert suite.tests == len(cases)
    assert suite.failures == sum(bool(v) for v in failures.values())
    stranded = next(
        r for r in cases[("downgrade", "channel stable")].result if r.type == "stranded-entry"
    )
    assert "users of downgrade.v1.2.0" in stranded.message
    assert "tests/data/channeltest/every-code/catalog.yaml:" in (stranded.text or "")


def test_sarif_rules_results_and_locations() -> None:
    result = every_code("sarif")
    assert result.returncode == ExitCode.INVALID
    doc = check_sarif(result.stdout)
    (run,) = doc["runs"]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert set(CODES) <= set(ids)
    assert "validation.load" in ids
    for r in rules:
        assert r["help"]["text"]
        assert r["defaultConfiguration"]["level"] in ("error", "warning")
    for res in run["results"]:
        assert ids[res["ruleIndex"]] == res["ruleId"]
        location = res["locations"][0]["physicalLocation"]
        path, line = location["artifactLocation"]["uri"], location["region"]["startLine"]
        assert line_of(path, line).strip()
        assert res["partialFingerprints"]["pivoterFindingIdentity/v1"]
    stranded = next(r for r in run["results"] if r["ruleId"] == "stranded-entry")
    place = stranded["locations"][0]["physicalLocation"]
    assert line_of(place["artifactLocation"]["uri"], place["region"]["startLine"]) == (
        "  - name: downgrade.v1.2.0"
    )
    assert stranded["locations"][0]["logicalLocations"] == [
        {"fullyQualifiedName": "downgrade/stable/downgrade.v1.2.0"}
    ]
    cycle = next(r for r in run["results"] if r["ruleId"] == "upgrade-cycle")
    assert cycle["properties"]["findings"] == 3
    assert len(cycle["relatedLocations"]) == 2  # the other two entries' lines


def test_templates_in_sarif_and_junit() -> None:
    doc = check_sarif(template("sarif").stdout)
    results = doc["runs"][0]["results"]
    unresolved = next(r for r in results if r["ruleId"] == "template-unresolved")
    place = unresolved["locations"][0]["physicalLocation"]
    assert "mystery-bundle:latest" in line_of(
        place["artifactLocation"]["uri"], place["region"]["startLine"]
    )
    xml = check_junit(template("junit").stdout)
    assert [s.name for s in xml] == ["basic.yaml (olm.template.basic)"]


# -- real catalogs ----------------------------------------------------------------------------


def test_formats_on_the_real_catalog_subset() -> None:
    doc = check_sarif(pivoter("catalog", "test", rel(REAL), "-o", "sarif").stdout)
    results = doc["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"stranded-entry", "downgrade-edge"}
    xml = check_junit(pivoter("catalog", "test", rel(REAL), "-o", "junit").stdout)
    cases = {(c.classname, c.name) for s in xml for c in s}
    assert ("aws-neuron-operator", "channel Fast") in cases
    commands = list(parse_commands(pivoter("catalog", "test", rel(REAL), "-o", "github").stdout))
    aws = [
        c for c in commands if c.properties["title"] == "stranded-entry (aws-neuron-operator/Fast)"
    ]
    (stranded,) = aws
    assert line_of(stranded.properties["file"], int(stranded.properties["line"])) == (
        "- name: aws-neuron-operator.v0.1.2"
    )


@pytest.mark.slow
@requires_shared  # whole catalogs; the subset in tests/data is tested above
@pytest.mark.parametrize("name", ["community-operators-prod-v4.20", "certified-operators-v4.20"])
def test_formats_on_the_shared_real_catalogs(name: str) -> None:
    catalog = SHARED / "catalogs" / name
    sarif = check_sarif(pivoter("catalog", "test", str(catalog), "-o", "sarif", cwd=SHARED).stdout)
    for res in sarif["runs"][0]["results"]:
        place = res["locations"][0]["physicalLocation"]
        assert line_of(place["artifactLocation"]["uri"], place["region"]["startLine"], SHARED)
    junit = check_junit(pivoter("catalog", "test", str(catalog), "-o", "junit", cwd=SHARED).stdout)
    assert sum(s.tests for s in junit) > 50
    github = pivoter("catalog", "test", str(catalog), "-o", "github", cwd=SHARED).stdout
    commands = list(parse_commands(github))
    assert len(commands) == len(sarif["runs"][0]["results"])
    assert all(c.properties["file"].startswith("catalogs/") for c in commands)


def test_a_catalog_behind_a_symlinked_directory_is_named_from_the_working_directory(
    tmp_path: Path,
) -> None:
    """CI checks out ../shared as the runner likes, a symlink included: the paths of the
    annotations are still the working directory's (catalogs/...), not ../link/catalogs/..."""
    work = tmp_path / "work"
    shutil.copytree(EVERY, work / "catalogs" / "every-code")
    link = tmp_path / "link"
    os.symlink(work, link)
    result = pivoter(
        "catalog",
        "test",
        str(link / "catalogs" / "every-code"),
        "--no-cache",
        "-o",
        "github",
        cwd=link,
    )
    commands = [c for c in parse_commands(result.stdout) if "file" in c.properties]
    assert commands, result.stdout + result.stderr
    files = {c.properties["file"] for c in commands}
    assert all(f.startswith("catalogs/every-code/") for f in files), files
