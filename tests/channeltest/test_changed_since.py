"""``catalog test --changed-since GIT_REF`` and ``--changed-files FILE`` on a temporary git
repository holding a catalog of three packages, one directory each:

* ``a`` (its head provides the API ``widgets.example.com/v1 Widget``; one skipped entry, a
  warning that was always there),
* ``b`` (a clean replaces chain 1.0.0 -> 1.1.0 -> 1.2.0),
* ``c`` (its head requires ``Widget``; one skipped entry, always there).

Commit 2 releases a 1.2.0 and removes b's 1.1.0, which strands b 1.0.0; commit 3 touches only
``a``: it stops providing ``Widget``, which breaks ``c``. Each run reports the findings of the
packages the change touched and the findings it introduced anywhere, never the old ones of the
packages it left alone.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pivoter.cli.exitcodes import ExitCode
from tests.channeltest.helpers import Docs, bundle, write
from tests.clirun import pivoter as run_pivoter
from tests.tools import tool

pytestmark = pytest.mark.tools  # git

WIDGET = {
    "type": "olm.gvk",
    "value": {"group": "widgets.example.com", "version": "v1", "kind": "Widget"},
}
NEEDS_WIDGET = {
    "type": "olm.gvk.required",
    "value": {"group": "widgets.example.com", "version": "v1", "kind": "Widget"},
}


def package(name: str, entries: list[dict[str, Any]], bundles: Docs) -> Docs:
    return [
        {"schema": "olm.package", "name": name, "defaultChannel": "stable"},
        {"schema": "olm.channel", "package": name, "name": "stable", "entries": entries},
        *bundles,
    ]


def package_a(release: bool, widget: bool) -> Docs:
    entries: list[dict[str, Any]] = [
        {"name": "a.v1.0.0"},
        {"name": "a.v1.1.0", "replaces": "a.v1.0.0", "skips": ["a.v1.0.0"]},
    ]
    provides = [WIDGET] if widget else []
    bundles = [bundle("a", "1.0.0"), bundle("a", "1.1.0", *provides)]
    if release:
        entries.append({"name": "a.v1.2.0", "replaces": "a.v1.1.0"})
        bundles.append(bundle("a", "1.2.0", *provides))
    return package("a", entries, bundles)


def package_b(whole: bool) -> Docs:
    entries: list[dict[str, Any]] = [{"name": "b.v1.0.0"}]
    bundles = [bundle("b", "1.0.0"), bundle("b", "1.2.0")]
    if whole:
        entries.append({"name": "b.v1.1.0", "replaces": "b.v1.0.0"})
        bundles.append(bundle("b", "1.1.0"))
    entries.append({"name": "b.v1.2.0", "replaces": "b.v1.1.0"})
    return package("b", entries, bundles)


def package_c() -> Docs:
    entries = [
        {"name": "c.v0.9.0"},
        {"name": "c.v1.0.0", "replaces": "c.v0.9.0", "skips": ["c.v0.9.0"]},
    ]
    return package("c", entries, [bundle("c", "0.9.0"), bundle("c", "1.0.0", NEEDS_WIDGET)])


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        [str(tool("git")), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Commit 1: a, b and c as described; commit 2: a 1.2.0 released, b 1.1.0 removed;
    commit 3: a no longer provides Widget."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo / "catalog" / "a", package_a(release=False, widget=True))
    write(repo / "catalog" / "b", package_b(whole=True))
    write(repo / "catalog" / "c", package_c())
    (repo / "README.md").write_text("a catalog repository\n")
    commit(repo, "a, b and c")
    write(repo / "catalog" / "a", package_a(release=True, widget=True))
    write(repo / "catalog" / "b", package_b(whole=False))
    commit(repo, "a 1.2.0; b 1.1.0 removed")
    write(repo / "catalog" / "a", package_a(release=True, widget=False))
    commit(repo, "a stops providing Widget")
    return repo


def catalog_test(repo: Path, *args: str) -> tuple[int, dict[str, Any]]:
    env = {**os.environ, "PIVOTER_CACHE": str(repo.parent / "cache"), "NO_COLOR": "1"}
    result = run_pivoter("catalog", "test", "catalog", *args, "-o", "json", env=env, cwd=repo)
    assert result.stderr == "", result.stderr
    return result.returncode, json.loads(result.stdout)


def found(data: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(f["package"], f["code"], f["bundle"]) for f in data["errors"] + data["warnings"]}


def test_whole_catalog_has_old_and_new_findings(repo: Path) -> None:
    code, data = catalog_test(repo)
    assert code == ExitCode.INVALID
    assert ("b", "stranded-entry", "b.v1.0.0") in found(data)
    assert ("c", "skipped-entry", "c.v0.9.0") in found(data)
    assert "changed" not in data


def test_a_commit_that_strands_a_bundle_of_another_package(repo: Path) -> None:
    git(repo, "checkout", "-q", "HEAD~1")  # commit 2: a released 1.2.0 and b lost 1.1.0
    code, data = catalog_test(repo, "--changed-since", "HEAD~1")
    assert code == ExitCode.INVALID
    assert data["changed"] == {
        "since": "HEAD~1",
        "files": ["a/catalog.yaml", "b/catalog.yaml"],
        "packages": ["a", "b"],
        "introduced_in": [],
    }
    assert found(data) == {
        ("a", "skipped-entry", "a.v1.0.0"),  # a was touched: its old warning is its business
        ("b", "stranded-entry", "b.v1.0.0"),  # the new defects
        ("b", "unreachable-entry", "b.v1.2.0"),
        ("b", "validation.multiple-heads", ""),
    }
    stranded = next(f for f in data["errors"] if f["code"] == "stranded-entry")
    lines = (repo / "catalog" / stranded["file"]).read_text().splitlines()
    assert lines[stranded["line"] - 1] == "- name: b.v1.0.0"  # the stranded entry's own line
    assert {c["package"] for c in data["channels"]} == {"a", "b"}  # c is left out entirely


def test_findings_introduced_in_a_package_the_change_did_not_touch(repo: Path) -> None:
    code, data = catalog_test(repo, "--changed-since", "HEAD~1")  # commit 3 touches only a
    assert code == ExitCode.INVALID
    assert data["changed"]["packages"] == ["a"]
    assert data["changed"]["introduced_in"] == ["c"]
    assert found(data) == {
        ("a", "skipped-entry", "a.v1.0.0"),
        ("c", "unsatisfied-dependency", "c.v1.0.0"),  # new, in a package the change left alone
    }  # neither c's old skipped entry nor b's old stranded entry


def test_a_list_of_changed_files(repo: Path) -> None:
    git(repo, "checkout", "-q", "HEAD~1")
    listed = repo.parent / "changed.txt"
    listed.write_text("catalog/a/catalog.yaml\nREADME.md\n\n")
    code, data = catalog_test(repo, "--changed-files", str(listed))
    assert code == ExitCode.OK  # without a ref nothing counts as introduced: only a is reported
    assert found(data) == {("a", "skipped-entry", "a.v1.0.0")}
    assert data["changed"]["files"] == ["a/catalog.yaml"]


def test_no_change_reports_nothing_and_passes(repo: Path) -> None:
    code, data = catalog_test(repo, "--changed-since", "HEAD")
    assert code == ExitCode.OK
    assert data["errors"] == data["warnings"] == []
    assert data["passed"] is True


def test_uncommitted_and_untracked_files_count(repo: Path) -> None:
    docs = package_c()
    docs[1]["entries"].append({"name": "c.v1.1.0", "replaces": "c.v1.0.0"})
    docs.append(bundle("c", "1.1.0"))
    write(repo / "catalog" / "c", docs)  # not committed
    (repo / "catalog" / "d").mkdir()
    _, data = catalog_test(repo, "--changed-since", "HEAD")
    assert data["changed"]["packages"] == ["c"]
    assert ("c", "skipped-entry", "c.v0.9.0") in found(data)


def test_bad_refs_and_templates_are_one_line_errors(repo: Path, tmp_path: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    result = run_pivoter("catalog", "test", "catalog", "--changed-since", "v9", env=env, cwd=repo)
    assert result.returncode == ExitCode.FAILURE
    assert result.stderr.startswith("pivoter: error: --changed-since v9: no such commit")
    outside = write(tmp_path / "elsewhere", package_c())
    result = run_pivoter("catalog", "test", str(outside), "--changed-since", "HEAD", env=env)
    assert result.returncode == ExitCode.FAILURE
    assert "not in a git work tree" in result.stderr
