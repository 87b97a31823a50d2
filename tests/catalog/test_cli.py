"""``pivoter catalog validate`` and ``render``: output, exit codes (0 valid, 3 invalid, 1 I/O)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pivoter.cli.exitcodes import ExitCode
from tests.catalog.helpers import DATA, split_json_stream, write_catalog
from tests.catalog.test_opm_referee import _cycle, base_objects
from tests.clirun import pivoter


def _pivoter(*args: str) -> subprocess.CompletedProcess[str]:
    cache = os.environ.get("PIVOTER_TEST_CACHE", "/tmp/pivoter-test-cache")
    return pivoter(*args, env={**os.environ, "PIVOTER_CACHE": cache}, timeout=120)


def test_validate_valid_catalog_exits_0() -> None:
    result = _pivoter("catalog", "validate", str(DATA / "certified-operators-v4.20"))
    assert result.returncode == ExitCode.OK, result.stderr
    assert "valid: 3 packages" in result.stdout


def test_validate_invalid_catalog_exits_3_with_json_findings(tmp_path: Path) -> None:
    objs = base_objects()
    _cycle(objs)
    write_catalog(tmp_path, objs)
    result = _pivoter("catalog", "validate", str(tmp_path), "-o", "json")
    assert result.returncode == ExitCode.INVALID
    data = json.loads(result.stdout)
    assert data["passed"] is False
    (finding,) = data["findings"]
    assert finding["category"] == "cycle"
    assert finding["file"] == "catalog.yaml"
    assert finding["line"] > 0
    assert finding["object"] == {
        "schema": "olm.channel",
        "package": "appian-operator",
        "name": "alpha",
    }


def test_validate_unloadable_catalog_exits_3_and_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(
        '{"schema": "x.y", "name": "a"}\n{"schema": "x.y", "name": "b"}\n'
        '{"schema": "olm.package",\n"name": }'
    )
    result = _pivoter("catalog", "validate", str(tmp_path))
    assert result.returncode == ExitCode.INVALID
    assert "a.json:4: error: invalid JSON" in result.stdout


@pytest.mark.parametrize("setup", ["missing", "unreadable-symlink"])
def test_validate_io_failure_exits_1(tmp_path: Path, setup: str) -> None:
    target = tmp_path / "nope"
    if setup == "unreadable-symlink":
        target = tmp_path / "cat"
        target.mkdir()
        os.symlink("/", target / "root.yaml")
    result = _pivoter("catalog", "validate", str(target))
    assert result.returncode == ExitCode.FAILURE, result.stdout


def test_render_prints_fbc_json(tmp_path: Path) -> None:
    result = _pivoter("catalog", "render", str(DATA / "catalogd-testdata"))
    assert result.returncode == ExitCode.OK, result.stderr
    objs = split_json_stream(result.stdout.encode())
    assert [o["schema"] for o in objs] == ["olm.package", "olm.channel", "olm.bundle"]
    assert result.stdout.startswith('{\n    "schema": "olm.package",')


def test_render_of_broken_directory_exits_3(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("name: no-schema\n")
    result = _pivoter("catalog", "render", str(tmp_path))
    assert result.returncode == ExitCode.INVALID
    assert "a.yaml:1" in result.stderr
    assert result.stdout == ""
