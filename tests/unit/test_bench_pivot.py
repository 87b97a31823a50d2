"""bench/pivot.py without a cluster: its arguments parse, and the pure helpers that turn watch
events into the steps of a pivot and into Markdown tables give the right numbers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "pivot.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_pivot", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_pivot"] = module
    spec.loader.exec_module(module)
    return module


def _resolution(name: str, *, phase: str = "", revision: int = 0, ready: bool = False) -> Any:
    status: dict[str, Any] = {"pivot": {"phase": phase, "revision": revision} if phase else {}}
    if ready:
        status["activeRevision"] = revision
        status["conditions"] = [{"type": "Ready", "status": "True", "observedGeneration": 1}]
    return {"metadata": {"name": name, "generation": 1}, "status": status}


def _child(name: str, revision: int, *, ready: bool) -> Any:
    state = "True" if ready else "False"
    return {
        "metadata": {
            "name": name,
            "generation": 2,
            "annotations": {
                "pivoter.io/input": "Resolution/r",
                "pivoter.io/revision": str(revision),
            },
        },
        "status": {
            "conditions": [
                {"type": "Installed", "status": state, "observedGeneration": 2},
                {"type": "Healthy", "status": state, "observedGeneration": 2},
            ]
        },
    }


def test_defaults_and_choices(bench: ModuleType) -> None:
    args = bench.parse_args([])
    assert args.runs == 5
    assert args.poll_interval == 5.0
    assert args.kinds == ("grpc", "http", "image", "configMaps")
    assert args.workload == "both"
    args = bench.parse_args(
        ["--kinds", "http,configMaps", "--runs", "2", "--workload", "configmap"]
    )
    assert args.kinds == ("http", "configMaps")
    assert (args.runs, args.workload) == (2, "configmap")


@pytest.mark.parametrize(
    "argv", [["--kinds", "ftp"], ["--runs", "0"], ["--poll-interval", "0.5"], ["--workload", "x"]]
)
def test_bad_arguments_are_refused(bench: ModuleType, argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        bench.parse_args(argv)


def test_durations_and_spread(bench: ModuleType) -> None:
    assert bench.duration(5.0) == "5s"
    assert bench.duration(1.5) == "1.5s"
    assert bench.duration(0.5) == "500ms"
    assert bench.spread([3.0, 1.0, 2.0]) == (2.0, 1.0, 3.0)
    assert bench.cell([0.5, 0.25, 1.0]) == "0.50 (0.25-1.00)"
    with pytest.raises(ValueError, match="no samples"):
        bench.spread([])


def test_pivot_marks_from_events(bench: ModuleType) -> None:
    resolutions = [
        (10.0, "MODIFIED", _resolution("r", phase="Succeeded", revision=1, ready=True)),
        (10.3, "MODIFIED", _resolution("other", phase="Applying", revision=2)),
        (10.4, "MODIFIED", _resolution("r", phase="Applying", revision=2)),
        (10.5, "MODIFIED", _resolution("r", phase="Waiting", revision=2)),
        # Pruning was skipped by the watch (two writes merged): Succeeded implies it.
        (11.5, "MODIFIED", _resolution("r", phase="Succeeded", revision=2)),
        (11.6, "MODIFIED", _resolution("r", phase="Succeeded", revision=2, ready=True)),
    ]
    config_maps = [
        (
            10.2,
            "ADDED",
            {"metadata": {"labels": {"pivoter.io/input-name": "r", "pivoter.io/revision": "2"}}},
        )
    ]
    children = [
        (9.0, "ADDED", _child("a", 1, ready=True)),
        (9.0, "ADDED", _child("b", 1, ready=True)),
        (10.6, "MODIFIED", _child("a", 2, ready=False)),
        (10.7, "MODIFIED", _child("a", 2, ready=True)),
        (10.8, "MODIFIED", _child("b", 2, ready=False)),
        (11.2, "MODIFIED", _child("b", 2, ready=True)),
    ]
    marks = bench.pivot_marks(
        detected=10.0,
        resolutions=resolutions,
        config_maps=config_maps,
        children=children,
        name="r",
        revision=2,
        count=2,
    )
    assert marks.pop("workloads") is None
    assert marks.pop("rollout") is None
    assert marks == pytest.approx(
        {
            "revision": 0.2,
            "started": 0.4,
            "prepared": 0.4,
            "applied": 0.5,
            "first_child": 0.7,
            "children": 1.2,
            "installed": 1.5,
            "succeeded": 1.5,
            "ready": 1.6,
            "overhead": 1.6,
        }
    )


def _deployment(name: str, version: str, *, generation: int, observed: int, available: int) -> Any:
    return {
        "metadata": {"name": name, "generation": generation},
        "spec": {
            "replicas": 1,
            "template": {
                "spec": {"containers": [{"env": [{"name": "VERSION", "value": version}]}]}
            },
        },
        "status": {
            "observedGeneration": observed,
            "replicas": 1,
            "updatedReplicas": available,
            "availableReplicas": available,
        },
    }


def test_deployment_rollouts(bench: ModuleType) -> None:
    events = [
        (1.0, "MODIFIED", _deployment("a", "2", generation=2, observed=1, available=1)),
        (1.5, "MODIFIED", _deployment("b", "2", generation=2, observed=1, available=1)),
        (2.0, "MODIFIED", _deployment("a", "2", generation=2, observed=2, available=0)),
        (2.5, "MODIFIED", _deployment("a", "2", generation=2, observed=2, available=1)),
        (4.5, "MODIFIED", _deployment("b", "2", generation=2, observed=2, available=1)),
        (5.0, "MODIFIED", _deployment("c", "2", generation=2, observed=2, available=1)),
    ]
    # b changed at 1.5 and rolled out at 4.5: the longest rollout; c is not asked for.
    assert bench.rollouts(events, ["a", "b"], "2") == (4.5, 3.0)
    assert bench.rollouts(events, ["a", "b"], "3") == (None, None)
    assert bench.rollouts(events, ["a", "d"], "2") == (None, None)


def test_children_are_counted_only_while_all_ready_at_once(bench: ModuleType) -> None:
    events = [
        (1.0, "ADDED", _child("a", 2, ready=True)),
        (2.0, "ADDED", _child("b", 2, ready=False)),
        (3.0, "DELETED", _child("a", 2, ready=True)),
        (4.0, "MODIFIED", _child("b", 2, ready=True)),
        (5.0, "ADDED", _child("a", 2, ready=True)),
    ]
    assert bench.all_children_ready(events, 0.0, "Resolution/r", 2, 2) == 5.0
    assert bench.all_children_ready(events, 0.0, "Resolution/other", 2, 1) is None


def test_tables(bench: ModuleType) -> None:
    run = {"detected": 2.0, "revision": 0.1, "started": 0.2, "ready": 1.0}
    lines = bench.detection_table(5.0, {"grpc": [run, {**run, "detected": 4.0}]})
    assert lines[2].startswith("| grpc | 5 | 3.00 (2.00-4.00) | 0.60 | 0.10 (0.10-0.10) |")
    lines = bench.pivot_table({"configmap": [run, {**run, "ready": None}]})
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:]}
    assert len(rows) == len(bench.MARKS) + len(bench.EXTRA_ROWS)
    assert rows["detected → Resolution `Ready` on the new revision"].endswith(
        "| 1.00 (1.00-1.00) (1 not seen) |"
    )
    assert rows["detected → children applied (`Waiting`)"].endswith("| not seen |")
    # no Deployments in these bundles: their rows do not apply
    assert rows["detected → every Deployment rolled out (the bundles' own readiness)"].endswith(
        "| n/a |"
    )
