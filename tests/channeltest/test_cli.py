"""``pivoter catalog test|diff|graph`` as a user runs them: output, JSON shape, exit codes
(0 no errors, 3 errors found, 1 unreadable input, 2 bad --expect file or -o value)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pivoter.cli.exitcodes import ExitCode
from tests.channeltest.helpers import DATA, GOOD, Docs, derive, entry
from tests.channeltest.test_graph import dot_binary
from tests.clirun import pivoter as run_pivoter


def pivoter(*args: str, tmp: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIVOTER_CACHE": str(tmp or "/tmp/pivoter-test-cache"), "NO_COLOR": "1"}
    return run_pivoter(*args, env=env, timeout=120)


def _strand(docs: Docs) -> None:
    entry(docs, "stable", "demo.v1.1.0").pop("replaces")
    entry(docs, "stable", "demo.v1.2.0")["skipRange"] = ">=1.1.0 <1.2.0"


def test_good_catalog_passes_with_expectations() -> None:
    result = pivoter("catalog", "test", str(GOOD), "--expect", str(DATA / "expect-good.yaml"))
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    assert "ERRORS (0)" in result.stdout
    assert "demo/stable (default): head demo.v2.0.0, 4 entries" in result.stdout
    assert "\033[" not in result.stdout  # no colour when not on a terminal


def test_errors_exit_3_and_are_listed_before_warnings(tmp_path: Path) -> None:
    directory = derive(tmp_path, _strand)
    result = pivoter("catalog", "test", str(directory), "--package", "demo")
    assert result.returncode == ExitCode.INVALID
    out = result.stdout
    assert (
        out.index("ERRORS (2)") < out.index("[validation.multiple-heads]") < out.index("WARNINGS")
    )
    assert "[stranded-entry]" in out
    # --package prints every entry's path
    assert "demo.v1.0.0: 0 step(s): no upgrade  (does not reach the head)" in out


def test_json_output(tmp_path: Path) -> None:
    result = pivoter("catalog", "test", str(derive(tmp_path, _strand)), "-o", "json")
    data = json.loads(result.stdout)
    assert data["passed"] is False
    assert [e["code"] for e in data["errors"]] == ["validation.multiple-heads", "stranded-entry"]
    stable = next(c for c in data["channels"] if c["channel"] == "stable")
    first = stable["entries"][0]
    assert first == {
        "bundle": "demo.v2.0.0",
        "version": "2.0.0",
        "next": "",
        "path": [],
        "length": 0,
        "reaches_head": True,
        "deprecated": False,
    }


def test_failed_expectation_is_an_error(tmp_path: Path) -> None:
    expect = tmp_path / "expect.yaml"
    expect.write_text(
        "package: demo\nexpect:\n  - next_upgrade: {channel: stable, from: 1.0.0, to: 1.1.0}\n"
    )
    result = pivoter("catalog", "test", str(GOOD), "--expect", str(expect), "-o", "json")
    assert result.returncode == ExitCode.INVALID
    (error,) = json.loads(result.stdout)["errors"]
    assert error["code"] == "expectation-failed"
    assert "the next upgrade is demo.v1.2.0" in error["message"]


def test_bad_expectations_file_is_a_usage_error(tmp_path: Path) -> None:
    expect = tmp_path / "expect.yaml"
    expect.write_text("expect: [{sometime: {}}]\n")
    result = pivoter("catalog", "test", str(GOOD), "--expect", str(expect))
    assert result.returncode == ExitCode.USAGE
    assert "unknown statement 'sometime'" in result.stderr


def test_missing_directory_exits_1(tmp_path: Path) -> None:
    result = pivoter("catalog", "test", str(tmp_path / "nope"))
    assert result.returncode == ExitCode.FAILURE
    assert "does not exist" in result.stderr


def test_with_catalog_satisfies_dependencies(tmp_path: Path) -> None:
    def no_db(docs: Docs) -> None:
        docs[:] = [d for d in docs if d.get("name") != "db" and d.get("package") != "db"]

    directory = derive(tmp_path, no_db)
    assert pivoter("catalog", "test", str(directory)).returncode == ExitCode.INVALID
    result = pivoter("catalog", "test", str(directory), "--with", str(GOOD))
    assert result.returncode == ExitCode.OK, result.stdout


def test_templates_directory() -> None:
    result = pivoter(
        "catalog", "test", str(DATA / "templates" / "clusterpulse"), "--legacy-semver-skips"
    )
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    assert "semver.yaml (olm.semver)" in result.stdout
    assert "clusterpulse/fast-v1 (default): head clusterpulse.v1.0.2" in result.stdout


def test_diff(tmp_path: Path) -> None:
    result = pivoter("catalog", "diff", str(GOOD), str(derive(tmp_path, _strand)))
    assert result.returncode == ExitCode.OK
    assert "demo/stable demo.v1.0.0: now-stranded; path now: no upgrade" in result.stdout
    assert "7 installed bundle(s) compared; 1 affected (now-stranded: 1)" in result.stdout
    data = json.loads(pivoter("catalog", "diff", str(GOOD), str(GOOD), "-o", "json").stdout)
    assert data["changes"] == []


@pytest.mark.tools  # svg and png come from graphviz's dot
def test_graph_formats(tmp_path: Path) -> None:
    dot_binary()
    for name in ("g.svg", "g.png", "g.dot", "g.mmd"):
        out = tmp_path / name
        result = pivoter("catalog", "graph", str(GOOD), "--package", "demo", "-o", str(out))
        assert result.returncode == ExitCode.OK, result.stderr
        assert out.stat().st_size > 100
    assert (tmp_path / "g.svg").read_text().lstrip().startswith("<?xml")
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"
    stdout = pivoter(
        "catalog", "graph", str(GOOD), "--package", "demo", "--channel", "fast", "-o", "mermaid"
    )
    assert stdout.stdout.startswith("flowchart LR")


def test_graph_refuses_what_is_too_large_and_unknown_formats() -> None:
    result = pivoter(
        "catalog", "graph", str(GOOD), "--package", "demo", "-o", "dot", "--max-nodes", "3"
    )
    assert result.returncode == ExitCode.INVALID
    assert "narrow it with --channel C" in result.stderr
    result = pivoter("catalog", "graph", str(GOOD), "--package", "demo", "-o", "g.jpeg")
    assert result.returncode == ExitCode.USAGE
    result = pivoter("catalog", "graph", str(GOOD), "--package", "nope", "-o", "dot")
    assert result.returncode == ExitCode.INVALID
    assert "no package 'nope'" in result.stderr
