"""The conformance runner on the shared corpus: every case passes or is a listed deviation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from resolver.conformance.runner import load_deviations, run_file
from tests.tools import SHARED

CASES = SHARED / "conformance" / "resolver-cases.yaml"


def test_every_shared_case_passes_or_is_a_listed_deviation() -> None:
    deviations = load_deviations()
    verdicts = run_file(CASES, deviations)
    ids = {str(c["id"]) for c in yaml.safe_load(CASES.read_text())["cases"]}
    assert {v.id for v in verdicts} == ids
    failed = [v.line() for v in verdicts if v.status == "fail"]
    assert failed == []
    # A deviation must name a real case and give a reason.
    assert set(deviations) <= ids
    assert all(reason.strip() for reason in deviations.values())


def test_runner_cli_prints_one_line_per_case_and_totals() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "resolver.conformance", str(CASES)],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = proc.stdout.splitlines()
    n = len(yaml.safe_load(CASES.read_text())["cases"])
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert lines[-1] == f"{n} passed, 0 failed"
    assert sum(1 for line in lines if line.startswith(("PASS", "DEVIATION"))) == n


def test_runner_fails_a_wrong_expectation(tmp_path: Path) -> None:
    data = yaml.safe_load(CASES.read_text())
    case = next(
        c for c in data["cases"] if c["id"] == "s06-first-candidate-preferred-with-conflict"
    )
    case["expect"]["selected"] = ["b", "c"]
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump({"schema_version": 1, "cases": [case]}))
    proc = subprocess.run(
        [sys.executable, "-m", "resolver.conformance", str(broken)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1] == "0 passed, 1 failed"
    assert "FAIL" in proc.stdout
    assert "s06" in proc.stdout


def test_deviation_file_is_reported_with_reason(tmp_path: Path) -> None:
    data = yaml.safe_load(CASES.read_text())
    case = next(
        c for c in data["cases"] if c["id"] == "s06-first-candidate-preferred-with-conflict"
    )
    case["expect"]["selected"] = ["b", "c"]
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump({"schema_version": 1, "cases": [case]}))
    devs = tmp_path / "devs.yaml"
    devs.write_text(yaml.safe_dump({case["id"]: "we prefer b here, because reasons"}))
    proc = subprocess.run(
        [sys.executable, "-m", "resolver.conformance", str(broken), "--deviations", str(devs)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0
    assert "DEVIATION" in proc.stdout
    assert "because reasons" in proc.stdout
    assert proc.stdout.splitlines()[-1] == "0 passed, 0 failed"
