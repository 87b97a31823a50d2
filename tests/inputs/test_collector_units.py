"""The revision collector runs only while its input is settled, and never while it is being
deleted; it asks the store only when the cache holds more revisions than the history limit."""

from __future__ import annotations

from typing import Any

import pytest

from pivoter.apis.resources import RESOLUTIONS
from pivoter.inputs.collector import RevisionCollector, settled
from pivoter.inputs.reconciler import Kind
from pivoter.inputs.record import Record
from pivoter.inputs.spec import from_resolution
from pivoter.inputs.status import resolution_status
from pivoter.pivot import Phase, PivotRecord
from pivoter.resolvesets import InputRef


def _pivot(phase: Phase) -> PivotRecord:
    return PivotRecord(phase, 3, 2, started=0.0)


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (Record(active=2), True),
        (Record(active=3, pivot=_pivot(Phase.SUCCEEDED)), True),
        (Record(), False),
        (Record(active=2, pivot=_pivot(Phase.WAITING)), False),
        (Record(active=2, pivot=_pivot(Phase.ROLLING_BACK)), False),
        (Record(active=2, pivot=_pivot(Phase.ROLLED_BACK)), False),
        (Record(active=2, pivot=_pivot(Phase.FAILED)), False),
    ],
)
def test_settled(record: Record, expected: bool) -> None:
    assert settled(record) is expected


class FakeStore:
    def __init__(self) -> None:
        self.calls: list[tuple[InputRef, int, set[int | None]]] = []

    def collect_garbage(self, ref: InputRef, *, keep: int, protect: set[int | None]) -> list[int]:
        self.calls.append((ref, keep, set(protect)))
        return []


def _resolution(record: Record, **metadata: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "uid": "u", "generation": 1, **metadata},
        "spec": {"packages": [{"name": "web"}], "historyLimit": 2, "pinnedRevision": 1},
        "status": record.to_status(),
    }


def _collector(obj: dict[str, Any] | None, stored: int) -> tuple[RevisionCollector, FakeStore]:
    store = FakeStore()
    kind = Kind(RESOLUTIONS, from_resolution, resolution_status, lambda _o: "Delete")
    collector = RevisionCollector(
        kind,
        store,  # type: ignore[arg-type]
        lookup=lambda _name: obj,
        stored=lambda _name: stored,
    )
    return collector, store


def test_collects_a_settled_input_beyond_its_limit_protecting_what_it_needs() -> None:
    record = Record(active=5, last_successful=4, pivot=_pivot(Phase.SUCCEEDED))
    collector, store = _collector(_resolution(record), stored=6)
    assert collector.reconcile("web") is None
    assert store.calls == [(InputRef("Resolution", "web"), 2, {5, 4, 1})]


@pytest.mark.parametrize(
    ("obj", "stored"),
    [
        (None, 9),
        (_resolution(Record(active=5), deletionTimestamp="2026-11-28T00:00:00Z"), 9),
        (_resolution(Record(active=5, pivot=_pivot(Phase.APPLYING))), 9),
        (_resolution(Record(active=5, pivot=_pivot(Phase.FAILED))), 9),
        (_resolution(Record(active=5)), 2),
    ],
    ids=["gone", "being deleted", "pivoting", "last pivot failed", "within the limit"],
)
def test_leaves_history_alone(obj: dict[str, Any] | None, stored: int) -> None:
    collector, store = _collector(obj, stored)
    assert collector.reconcile("web") is None
    assert store.calls == []
