"""The GitHub Actions workflows: checked by actionlint (hack/tools/actionlint.sh), and each does
what docs/releasing.md says: pull requests run the README's test command, a tag ``v*`` runs
hack/release.sh and publishes dist/."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.packaging.clones import REPO
from tests.tools import tool

pytestmark = pytest.mark.tools

WORKFLOWS = REPO / ".github" / "workflows"


def _actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tool("actionlint")), "-no-color", *map(str, files)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _load(name: str) -> dict[Any, Any]:
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    assert isinstance(data, dict)
    return data


def _runs(workflow: dict[Any, Any]) -> str:
    return "\n".join(
        str(step.get("run", "")) for job in workflow["jobs"].values() for step in job["steps"]
    )


def test_actionlint_passes_every_workflow() -> None:
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert [f.name for f in files] == ["ci.yml", "release.yml"]
    result = _actionlint(*files)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    text = (WORKFLOWS / "ci.yml").read_text().replace("runs-on: ubuntu-24.04", "runs-on: [", 1)
    broken.write_text(text.replace("${{ github.ref }}", "${{ github.no_such_context }}", 1))
    result = _actionlint(broken)
    assert result.returncode != 0
    assert "broken.yml" in result.stdout


def test_pull_requests_run_the_test_command() -> None:
    ci = _load("ci.yml")
    assert "pull_request" in ci[True]  # YAML 1.1 reads the key `on` as true
    assert "hack/test.sh" in _runs(ci)
    assert (REPO / ".ci" / "run").read_text().rstrip().endswith("exec hack/test.sh")


def test_a_tag_runs_the_release_and_publishes_dist() -> None:
    release = _load("release.yml")
    assert release[True]["push"]["tags"] == ["v*"]
    assert release["permissions"] == {"contents": "write", "packages": "write"}
    runs = _runs(release)
    assert 'hack/release.sh "$GITHUB_REF_NAME" --registry "ghcr.io/$owner"' in runs
    assert "gh release upload" in runs
    assert "dist/*" in runs
