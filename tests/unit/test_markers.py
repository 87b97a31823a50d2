"""The marker set behind the fast inner loop (docs/development.md, "Test markers").

``cluster`` is added to every test reaching the ``cluster`` fixture, however indirectly, and
``tools`` to every cluster, opm or tool-fixture test, before ``-m`` selects; and
:func:`tests.tools.tool` refuses a test that is not marked ``tools``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import tools

REPO = Path(__file__).resolve().parents[2]

SAMPLE = """
import pytest

@pytest.fixture
def through(cluster):
    return cluster

@pytest.fixture
def registry():
    return "no registry runs here"

def test_direct(cluster): pass
def test_indirect(through): pass
@pytest.mark.kwok
def test_kwok(): pass
@pytest.mark.opm
def test_opm(): pass
def test_tool_fixture(registry): pass
@pytest.mark.tools
def test_explicit(): pass
def test_pure(): pass
"""


REPORT = """
from tests.conftest import cluster, pytest_collection_modifyitems  # noqa: F401

def _line(word, item):
    marks = sorted({m.name for m in item.iter_markers()} & {"cluster", "tools"})
    print(word, item.name, ",".join(marks) or "-")

def pytest_deselected(items):
    for item in items:
        _line("DESELECTED", item)

def pytest_collection_finish(session):
    for item in session.items:
        _line("SELECTED", item)
"""


def test_markers_are_implied_before_selection(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(REPORT)
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(REPO / "pyproject.toml"),
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "not cluster and not tools",
            str(tmp_path),
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = {tuple(line.split()) for line in proc.stdout.splitlines() if "SELECTED " in line}
    assert lines == {
        ("DESELECTED", "test_direct", "cluster,tools"),
        ("DESELECTED", "test_indirect", "cluster,tools"),
        ("DESELECTED", "test_kwok", "cluster,tools"),
        ("DESELECTED", "test_opm", "tools"),
        ("DESELECTED", "test_tool_fixture", "tools"),
        ("DESELECTED", "test_explicit", "tools"),
        ("SELECTED", "test_pure", "-"),
    }


def test_tool_refuses_a_test_not_marked_tools() -> None:
    with pytest.raises(pytest.fail.Exception, match="is not marked 'tools'"):
        tools.tool("opm")


def test_a_missing_tool_names_its_installer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(tools, "_running", [])  # as outside a test: no marker check
    monkeypatch.setattr(tools, "TOOLS_DIR", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match=r"dot is not installed; .*tools\.sh graphviz$"):
        tools.tool("dot", "graphviz")
