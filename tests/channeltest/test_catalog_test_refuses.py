"""``pivoter catalog test`` (and ``diff``) on something that is not a catalog, or asked about a
package or channel the catalog does not have, fails with one clear line instead of passing on
nothing."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pivoter.cli.exitcodes import ExitCode
from tests.channeltest.helpers import DATA, GOOD
from tests.clirun import pivoter as run_pivoter

TEMPLATE = DATA / "templates" / "clusterpulse" / "semver.yaml"


def pivoter(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIVOTER_CACHE": str(tmp / "cache"), "NO_COLOR": "1"}
    return run_pivoter(*args, env=env, timeout=120)


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("pivoter: error: "), result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return lines[0]


def _target(tmp: Path, kind: str) -> Path:
    """A path that is not a catalog, of the given kind."""
    if kind == "missing":
        return tmp / "nope"
    if kind == "empty-dir":
        (tmp / "empty").mkdir()
        return tmp / "empty"
    if kind == "plain-yaml-file":
        (tmp / "values.yaml").write_text("replicas: 3\nimage: x\n")
        return tmp / "values.yaml"
    if kind == "binary-file":
        (tmp / "blob.yaml").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
        return tmp / "blob.yaml"
    if kind == "custom-objects-only":
        (tmp / "custom").mkdir()
        (tmp / "custom" / "c.yaml").write_text("schema: my.thing\nname: x\n")
        return tmp / "custom"
    if kind == "no-yaml-files":
        (tmp / "docs").mkdir()
        (tmp / "docs" / "README.md").write_text("# not a catalog\n")
        return tmp / "docs"
    raise AssertionError(kind)


@pytest.mark.parametrize(
    ("kind", "message", "code"),
    [
        ("missing", "does not exist", ExitCode.FAILURE),
        ("empty-dir", "neither a file-based catalog nor catalog templates", ExitCode.FAILURE),
        ("plain-yaml-file", "neither a file-based catalog nor catalog templates", ExitCode.FAILURE),
        ("binary-file", "not UTF-8 text", ExitCode.FAILURE),
        (
            "custom-objects-only",
            "neither a file-based catalog nor catalog templates",
            ExitCode.FAILURE,
        ),
        # a file that does not load says why, as catalog validate does (3: content refused)
        ("no-yaml-files", "README.md:1: empty YAML document", ExitCode.INVALID),
    ],
)
def test_not_a_catalog_fails(tmp_path: Path, kind: str, message: str, code: int) -> None:
    target = _target(tmp_path, kind)
    for extra in ([], ["-o", "json"]):
        result = pivoter("catalog", "test", str(target), *extra, tmp=tmp_path)
        assert result.returncode == code, result.stdout + result.stderr
        assert message in _one_error_line(result)
        assert result.stdout == ""


def test_a_directory_without_packages_fails(tmp_path: Path) -> None:
    """Bundles with no olm.package (nor channel) are not a catalog that passes."""
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "b.yaml").write_text(
        "schema: olm.bundle\nname: p.v1\npackage: p\nimage: x/p:v1\n"
        "properties: [{type: olm.package, value: {packageName: p, version: 1.0.0}}]\n"
    )
    result = pivoter("catalog", "test", str(tmp_path / "cat"), "-o", "json", tmp=tmp_path)
    assert result.returncode == ExitCode.INVALID, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["passed"] is False
    assert any("unknown package 'p'" in e["message"] for e in report["errors"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--package", "no-such-package"], "no package 'no-such-package' in the catalog"),
        (["--channel", "no-such-channel"], "no channel 'no-such-channel' in any package"),
        (
            ["--package", "demo", "--channel", "no-such-channel"],
            "no channel 'no-such-channel' in package 'demo'",
        ),
    ],
)
def test_a_package_or_channel_that_does_not_exist_fails(
    tmp_path: Path, args: list[str], message: str
) -> None:
    for extra in ([], ["-o", "json"]):
        result = pivoter("catalog", "test", str(GOOD), *args, *extra, tmp=tmp_path)
        assert result.returncode == ExitCode.INVALID, result.stdout + result.stderr
        line = _one_error_line(result)
        assert message in line
        assert "demo" in line or "--channel" in " ".join(args)
        assert result.stdout == ""


def test_an_existing_package_and_channel_still_pass(tmp_path: Path) -> None:
    result = pivoter(
        "catalog", "test", str(GOOD), "--package", "demo", "--channel", "stable", tmp=tmp_path
    )
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    assert "demo/stable" in result.stdout


def test_templates_are_checked_for_the_package_too(tmp_path: Path) -> None:
    ref = ["--with", str(DATA / "templates" / "ref" / "clusterpulse")]
    missing = pivoter("catalog", "test", str(TEMPLATE), *ref, "--package", "nope", tmp=tmp_path)
    assert missing.returncode == ExitCode.INVALID, missing.stdout + missing.stderr
    assert "no package 'nope'" in _one_error_line(missing)
    present = pivoter(
        "catalog", "test", str(TEMPLATE), *ref, "--package", "clusterpulse", tmp=tmp_path
    )
    assert present.returncode in (ExitCode.OK, ExitCode.INVALID), present.stderr
    assert "no package" not in present.stderr


def test_diff_of_a_package_in_neither_catalog_fails(tmp_path: Path) -> None:
    result = pivoter("catalog", "diff", str(GOOD), str(GOOD), "--package", "nope", tmp=tmp_path)
    assert result.returncode == ExitCode.INVALID, result.stdout + result.stderr
    assert "no package 'nope'" in _one_error_line(result)
    same = pivoter("catalog", "diff", str(GOOD), str(GOOD), "--package", "demo", tmp=tmp_path)
    assert same.returncode == ExitCode.OK, same.stderr
