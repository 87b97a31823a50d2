"""The CI recipe of docs/catalog-testing.md ("A CI job for a catalog repository") works: its shell
step, taken from the page, run in a temporary catalog repository on a pull request that strands
an entry (exit 3, the finding in the log, valid JUnit and SARIF reports) and on a clean one
(exit 0); and every ``pivoter`` command line of its GitHub Actions workflow is one that
``pivoter`` accepts."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pivoter.cli.main import build_parser
from tests.channeltest.helpers import DATA, Docs, entry, good_docs, write
from tests.channeltest.test_ci_formats import check_junit, check_sarif
from tests.tools import tool

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "catalog-testing.md"


def recipe(name: str) -> str:
    """The fenced block that follows ``<!-- recipe: NAME -->`` in the page."""
    text = DOC.read_text()
    found = re.search(rf"<!-- recipe: {re.escape(name)} -->\n```[a-z]*\n(.*?)```", text, re.S)
    assert found, f"no recipe {name} in {DOC}"
    return found.group(1)


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        [str(tool("git")), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def split(docs: Docs, catalog: Path) -> None:
    """One directory per package, as opm renders catalogs."""
    for package in ("demo", "db"):
        write(catalog / package, [d for d in docs if _package_of(d) == package])


def _package_of(doc: dict[str, Any]) -> str:
    return str(doc["name"] if doc["schema"] == "olm.package" else doc["package"])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "catalog-repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    split(good_docs(), repo / "catalog")
    shutil.copy(DATA / "expect-good.yaml", repo / "catalog-expectations.yaml")
    (repo / "ci").mkdir()
    (repo / "ci" / "catalog-test.sh").write_text(recipe("ci/catalog-test.sh"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the catalog")
    git(repo, "checkout", "-q", "-b", "pull-request")
    return repo


def run_step(repo: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = os.path.dirname(sys.executable)  # the virtualenv's: pivoter is installed there
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        "BASE_REF": "main",
        "NO_COLOR": "1",
        "PIVOTER_CACHE": str(repo.parent / "cache"),
    }
    return subprocess.run(
        ["sh", "ci/catalog-test.sh"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.tools  # git
def test_shell_step_fails_a_change_that_strands_an_entry(repo: Path) -> None:
    docs = good_docs()
    entry(docs, "stable", "demo.v1.1.0").pop("replaces")
    entry(docs, "stable", "demo.v1.2.0")["skipRange"] = ">=1.1.0 <1.2.0"
    split(docs, repo / "catalog")
    git(repo, "commit", "-q", "-am", "1.0.0 stranded")
    result = run_step(repo)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "[stranded-entry]" in result.stdout
    assert "changed since main: 1 file(s), packages demo" in result.stdout
    junit = check_junit((repo / "reports" / "catalog-test.xml").read_text())
    failures = [r.type for s in junit for c in s for r in c.result]
    assert "stranded-entry" in failures
    sarif = check_sarif((repo / "reports" / "catalog-test.sarif").read_text())
    (place,) = [
        r["locations"][0]["physicalLocation"]
        for r in sarif["runs"][0]["results"]
        if r["ruleId"] == "stranded-entry"
    ]
    assert place["artifactLocation"]["uri"] == "catalog/demo/catalog.yaml"
    lines = (repo / "catalog" / "demo" / "catalog.yaml").read_text().splitlines()
    assert lines[place["region"]["startLine"] - 1] == "- name: demo.v1.0.0"


@pytest.mark.tools  # git
def test_shell_step_passes_a_clean_change(repo: Path) -> None:
    (repo / "README.md").write_text("the catalog of demo\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "readme")
    result = run_step(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ERRORS (0)" in result.stdout
    assert (
        json.loads((repo / "reports" / "catalog-test.sarif").read_text())["runs"][0]["results"]
        == []
    )


def workflow_command_lines() -> list[list[str]]:
    workflow = yaml.safe_load(recipe(".github/workflows/catalog-test.yaml"))
    (job,) = workflow["jobs"].values()
    assert job["env"]["PIVOTER"].split()[-1].startswith("ghcr.io/pivoter/pivoter:")
    lines = []
    for step in job["steps"]:
        for text in step.get("run", "").splitlines():
            command = text.replace("${{ github.base_ref }}", "main")
            command = command.split(" > ")[0].split(" || ")[0]  # the shell's part
            if "$PIVOTER" in command:
                lines.append(shlex.split(command.split("$PIVOTER", 1)[1]))
    return lines


def test_workflow_command_lines_are_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parsed in a checkout of the layout the page describes (the flags check their files)."""
    split(good_docs(), tmp_path / "catalog")
    shutil.copy(DATA / "expect-good.yaml", tmp_path / "catalog-expectations.yaml")
    monkeypatch.chdir(tmp_path)
    lines = workflow_command_lines()
    assert len(lines) == 3
    parsed = [build_parser().parse_args(argv) for argv in lines]
    assert {a.output for a in parsed} == {"github", "junit", "sarif"}
    assert {a.target for a in parsed} == {"catalog"}
    assert {a.expect for a in parsed} == {"catalog-expectations.yaml"}
    assert [a.changed_since for a in parsed] == ["origin/main", "origin/main", None]
