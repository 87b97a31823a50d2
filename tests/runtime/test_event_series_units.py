"""The Event recorder's memory of series (pivoter.kube.events): repeats within the window fold
into the Event written first; what has not been seen for the window is forgotten, oldest first,
whatever order the series began in."""

from __future__ import annotations

from typing import Any

from pivoter.kube.events import EventRecorder

WINDOW = 600.0


class FakeKube:
    """Records the Event writes (pure logic: the cluster test of the same recorder is
    tests/runtime/test_informer_cluster.py)."""

    def __init__(self) -> None:
        self.created: list[str] = []
        self.patched: list[str] = []

    def create(self, resource: Any, body: dict[str, Any], namespace: str) -> dict[str, Any]:
        self.created.append(body["metadata"]["name"].split(".")[0])
        return body

    def merge_patch(
        self, resource: Any, name: str, patch: dict[str, Any], namespace: str
    ) -> dict[str, Any]:
        self.patched.append(name.split(".", maxsplit=1)[0])
        return {"metadata": {"name": name}}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def subject(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "uid": name}}


def recorder() -> tuple[EventRecorder, FakeKube, Clock]:
    kube, clock = FakeKube(), Clock()
    events = EventRecorder(
        kube,  # type: ignore[arg-type]
        reporting_controller="pivoter.io/test",
        reporting_instance="test-0",
        series_window=WINDOW,
        clock=clock,
    )
    return events, kube, clock


def record(events: EventRecorder, clock: Clock, at: float, name: str) -> None:
    clock.now = at
    events.normal(subject(name), "Applied", "Apply", "applied")


def test_a_series_seen_again_outlives_those_begun_after_it() -> None:
    events, kube, clock = recorder()
    record(events, clock, 0, "a")
    record(events, clock, 100, "b")
    record(events, clock, 500, "a")  # a repeat: folded into a's Event
    record(events, clock, 750, "c")  # b was last seen 650 s ago: forgotten; a (250 s) is not
    assert kube.created == ["a", "b", "c"]
    assert kube.patched == ["a"]
    assert len(events._series) == 2
    record(events, clock, 800, "a")  # still a's series
    record(events, clock, 800, "b")  # a new one
    assert kube.patched == ["a", "a"]
    assert kube.created == ["a", "b", "c", "b"]


def test_a_series_begun_again_after_the_window_is_forgotten_in_its_new_place() -> None:
    events, kube, clock = recorder()
    record(events, clock, 0, "a")
    record(events, clock, 10, "b")
    record(events, clock, 700, "a")  # a's series is stale: a new Event, a new series
    assert kube.created == ["a", "b", "a"]
    record(events, clock, 1000, "c")  # b (990 s) goes though it is behind a's first place
    assert len(events._series) == 2
    record(events, clock, 1250, "d")  # a (550 s) stays
    record(events, clock, 1260, "a")
    assert kube.patched == ["a"]


def test_thousands_of_series_are_forgotten_once_the_window_passes() -> None:
    events, _, clock = recorder()
    for i in range(5000):
        record(events, clock, i * 0.01, f"s{i}")
    record(events, clock, 10_000, "last")
    assert len(events._series) == 1
