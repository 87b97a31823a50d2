"""The conformance runner on the shared corpus (its copy in tests/data/conformance) and on
pivoter's own cases: every case passes or is a listed deviation; malformed cases and files are
one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from resolver.conformance.runner import load_deviations, run_file
from tests.tools import SHARED, requires_shared

DATA = Path(__file__).resolve().parents[1] / "data" / "conformance"
CASES = DATA / "resolver-cases.yaml"
"""The shared corpus, copied (tests/data/conformance/README.md says from where)."""
OWN = DATA / "pivoter-cases.yaml"
"""pivoter's own cases, transcribed from the upstream suites in the same schema."""
FILES = (CASES, OWN)


def conformance(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m resolver.conformance ARGS``."""
    return subprocess.run(
        [sys.executable, "-m", "resolver.conformance", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def one_case_file(tmp_path: Path, case: dict[str, Any]) -> Path:
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "cases": [case]}))
    return path


def shared_case(case_id: str) -> dict[str, Any]:
    data = yaml.safe_load(CASES.read_text())
    case: dict[str, Any] = next(c for c in data["cases"] if c["id"] == case_id)
    return case


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_case_passes_or_is_a_listed_deviation(path: Path) -> None:
    deviations = load_deviations()
    verdicts = run_file(path, deviations)
    ids = [str(c["id"]) for c in yaml.safe_load(path.read_text())["cases"]]
    assert [v.id for v in verdicts] == ids
    failed = [v.line() for v in verdicts if v.status not in {"pass", "deviation"}]
    assert failed == []


def test_case_ids_are_unique_across_both_files_and_deviations_name_real_cases() -> None:
    ids = [str(c["id"]) for f in FILES for c in yaml.safe_load(f.read_text())["cases"]]
    assert len(ids) == len(set(ids))
    deviations = load_deviations()
    assert set(deviations) <= set(ids)
    assert all(reason.strip() for reason in deviations.values())


def test_own_cases_cite_an_upstream_test_and_cover_each_class_of_issue_33() -> None:
    cases = yaml.safe_load(OWN.read_text())["cases"]
    for case in cases:
        repo, _, rest = str(case["source"]).partition(":")
        assert repo in ("operator-lifecycle-manager", "operator-controller", "deppy"), case["id"]
        assert "::Test" in rest, case["id"]
    tags = {t for c in cases for t in c.get("tags", [])}
    classes = {"label-dependency", "system-constraint", "catalog-selector", "error-text"}
    assert classes <= tags
    assert "implied-field" in tags


@requires_shared
def test_the_copy_is_the_shared_file() -> None:
    assert CASES.read_bytes() == (SHARED / "conformance" / "resolver-cases.yaml").read_bytes()


def test_runner_cli_runs_both_files_by_default_one_line_per_case_and_totals() -> None:
    proc = conformance()
    lines = proc.stdout.splitlines()
    n = sum(len(yaml.safe_load(f.read_text())["cases"]) for f in FILES)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert lines[-1] == f"{n} passed, 0 failed"
    assert sum(1 for line in lines if line.startswith(("PASS", "DEVIATION"))) == n
    assert any(line.split()[-1] == "u06-legacy-successor" for line in lines)
    assert any(line.split()[-1] == "s01-mandatory-selected" for line in lines)


def test_runner_fails_a_wrong_expectation(tmp_path: Path) -> None:
    case = shared_case("s06-first-candidate-preferred-with-conflict")
    case["expect"]["selected"] = ["b", "c"]
    proc = conformance(str(one_case_file(tmp_path, case)))
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1] == "0 passed, 1 failed"
    assert "FAIL" in proc.stdout
    assert "s06" in proc.stdout


def test_deviation_file_is_reported_with_reason(tmp_path: Path) -> None:
    case = shared_case("s06-first-candidate-preferred-with-conflict")
    case["expect"]["selected"] = ["b", "c"]
    broken = one_case_file(tmp_path, case)
    devs = tmp_path / "devs.yaml"
    devs.write_text(yaml.safe_dump({case["id"]: "we prefer b here, because reasons"}))
    proc = conformance(str(broken), "--deviations", str(devs))
    assert proc.returncode == 0
    assert "DEVIATION" in proc.stdout
    assert "because reasons" in proc.stdout
    assert proc.stdout.splitlines()[-1] == "0 passed, 0 failed"


def test_a_case_missing_a_field_nothing_implies_is_one_line_naming_case_and_field(
    tmp_path: Path,
) -> None:
    case = shared_case("w04-no-candidates-in-channel")
    del case["catalogs"][0]["entries"][0]["bundle"]
    proc = conformance(str(one_case_file(tmp_path, case)))
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "ERROR     w04-no-candidates-in-channel: malformed case: "
        "catalogs[0].entries[0].bundle: is required",
        "0 passed, 1 failed",
    ]
    assert proc.stderr == ""


def test_a_package_left_out_is_the_one_the_case_names_else_an_error(tmp_path: Path) -> None:
    # One package named by the request: the entry's package is implied.
    case = shared_case("w04-no-candidates-in-channel")
    del case["catalogs"][0]["entries"][0]["package"]
    assert conformance(str(one_case_file(tmp_path, case))).stdout.startswith("PASS")
    # Two packages named: which one the entry belongs to is not implied.
    case = shared_case("v01-new-sub-installed-untouched")
    del case["catalogs"][0]["entries"][1]["package"]
    proc = conformance(str(one_case_file(tmp_path, case)))
    assert proc.stdout.splitlines()[0] == (
        "ERROR     v01-new-sub-installed-untouched: malformed case: "
        "catalogs[0].entries[1].package: is required"
    )


def test_a_successors_case_naming_no_package_at_all_runs(tmp_path: Path) -> None:
    case = shared_case("u03-skiprange")
    for entry in case["catalogs"][0]["entries"]:
        del entry["package"]
    proc = conformance(str(one_case_file(tmp_path, case)))
    assert proc.stdout.splitlines() == ["PASS      u03-skiprange", "1 passed, 0 failed"]


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (lambda c: c.pop("id"), "ERROR     cases[0]: malformed case: id: is required"),
        (lambda c: c.pop("engine"), "v10-gvk-dependency: malformed case: engine: is required"),
        (lambda c: c.update(level="graph"), "level: unknown level 'graph'"),
        (lambda c: c.pop("expect"), "expect: is required (a map with an outcome)"),
        (lambda c: c["expect"].update(outcome="maybe"), "expect.outcome: must be one of"),
        (lambda c: c["catalogs"].append({"entries": []}), "catalogs[1].name: is required"),
        (
            lambda c: c["catalogs"][0]["entries"][0].update(provides=["g/v"]),
            "catalogs[0].entries[0].provides[0]: must be group/version/Kind, not 'g/v'",
        ),
        (
            lambda c: c["request"][0].update(catalog_selector=["a"]),
            "request[0].catalog_selector: must be a map",
        ),
    ],
)
def test_malformed_cases_are_named_errors(tmp_path: Path, change: Any, line: str) -> None:
    case = shared_case("v10-gvk-dependency")
    change(case)
    proc = conformance(str(one_case_file(tmp_path, case)))
    first = proc.stdout.splitlines()[0]
    assert first.startswith("ERROR     ")
    assert line in first
    assert proc.returncode == 1


def test_a_file_that_is_not_a_case_file_is_one_line_on_stderr(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("cases: [\n")
    proc = conformance(str(bad))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1
    assert "not valid YAML" in proc.stderr
    bad.write_text("schema_version: 1\n")
    proc = conformance(str(bad))
    assert proc.returncode == 2
    assert "not a conformance case file" in proc.stderr


@pytest.mark.parametrize(
    "selector",
    [
        "olm.operatorframework.io/metadata.name=b",
        {"olm.operatorframework.io/metadata.name": "b"},
        {"match_labels": {"olm.operatorframework.io/metadata.name": "b"}},
    ],
)
def test_a_catalog_selector_may_be_written_in_each_usual_form(
    tmp_path: Path, selector: object
) -> None:
    data = yaml.safe_load(OWN.read_text())
    case = next(c for c in data["cases"] if c["id"] == "f24a-selector-by-catalog-name")
    case["request"][0]["catalog_selector"] = selector
    proc = conformance(str(one_case_file(tmp_path, case)))
    assert proc.stdout.splitlines()[-1] == "1 passed, 0 failed", proc.stdout
