"""The work queue: de-duplication, no concurrent processing of a key, delays, backoff, shutdown."""

from __future__ import annotations

import threading
import time

from pivoter.observability import Metrics
from pivoter.runtime import ExponentialBackoff, WorkQueue
from tests.runtime.fakes import FakeClock


def _queue(clock: FakeClock | None = None, **kwargs: object) -> WorkQueue:
    return WorkQueue("test", clock=clock or FakeClock(), **kwargs)  # type: ignore[arg-type]


def test_fifo_and_duplicates_collapse() -> None:
    queue = _queue()
    for key in ["a", "b", "a", "c", "b"]:
        queue.add(key)
    assert len(queue) == 3
    assert [queue.get(0) for _ in range(3)] == ["a", "b", "c"]
    assert queue.get(0) is None


def test_a_key_added_while_processing_comes_back_only_after_done() -> None:
    queue = _queue()
    queue.add("a")
    assert queue.get(0) == "a"
    queue.add("a")
    queue.add("a")
    # Never handed out twice at once.
    assert queue.get(0) is None
    queue.done("a")
    assert queue.get(0) == "a"
    queue.done("a")
    assert queue.get(0) is None
    assert queue.pending() == 0


def test_add_after_waits_for_the_clock_and_earliest_wins() -> None:
    clock = FakeClock()
    queue = _queue(clock)
    queue.add_after("a", 10)
    queue.add_after("a", 5)
    queue.add_after("a", 20)
    assert queue.get(0) is None
    clock.advance(5)
    assert queue.get(0) == "a"
    queue.done("a")
    clock.advance(100)
    assert queue.get(0) is None  # the superseded 10s and 20s entries do not fire again


def test_delayed_key_already_queued_is_not_duplicated() -> None:
    clock = FakeClock()
    queue = _queue(clock)
    queue.add_after("a", 1)
    queue.add("a")
    clock.advance(2)
    assert queue.get(0) == "a"
    assert queue.get(0) is None


def test_rate_limited_adds_back_off_per_key_and_forget_resets() -> None:
    clock = FakeClock()
    queue = _queue(clock, rate_limiter=ExponentialBackoff(base=1.0, cap=4.0))
    ready_after = []
    for _ in range(4):
        queue.add_rate_limited("k")
        waited = 0.0
        while queue.get(0) is None:
            clock.advance(0.5)
            waited += 0.5
        queue.done("k")
        ready_after.append(waited)
    assert ready_after == [1.0, 2.0, 4.0, 4.0]
    assert queue.num_requeues("k") == 4
    queue.forget("k")
    assert queue.num_requeues("k") == 0


def test_shutdown_releases_blocked_workers_and_ignores_new_keys() -> None:
    queue = WorkQueue("test")
    got: list[str | None] = []
    worker = threading.Thread(target=lambda: got.append(queue.get()))
    worker.start()
    queue.shutdown()
    worker.join(5)
    assert not worker.is_alive()
    assert got == [None]
    queue.add("late")
    assert len(queue) == 0
    assert queue.shutting_down


def test_blocking_get_wakes_for_a_real_delay() -> None:
    queue = WorkQueue("test")
    queue.add_after("soon", 0.05)
    start = time.monotonic()
    assert queue.get(timeout=5) == "soon"
    assert time.monotonic() - start < 5


def test_many_workers_never_share_a_key() -> None:
    queue = WorkQueue("test")
    active: set[str] = set()
    overlaps = []
    guard = threading.Lock()

    def work() -> None:
        while (key := queue.get()) is not None:
            with guard:
                if key in active:
                    overlaps.append(key)
                active.add(key)
            time.sleep(0.001)
            with guard:
                active.discard(key)
            queue.done(key)

    workers = [threading.Thread(target=work) for _ in range(4)]
    for w in workers:
        w.start()
    for n in range(400):
        queue.add(f"k{n % 7}")
    deadline = time.monotonic() + 10
    while queue.pending() and time.monotonic() < deadline:
        time.sleep(0.01)
    queue.shutdown()
    for w in workers:
        w.join(5)
    assert overlaps == []
    assert queue.pending() == 0


def test_metrics_count_adds_retries_and_depth() -> None:
    metrics = Metrics(process=False)
    clock = FakeClock()
    queue = WorkQueue("q", metrics=metrics, clock=clock)
    queue.add("a")
    queue.add("b")
    queue.add("a")
    sample = metrics.registry.get_sample_value
    assert sample("workqueue_adds_total", {"name": "q"}) == 2
    assert sample("workqueue_depth", {"name": "q"}) == 2
    clock.advance(3)
    assert queue.get(0) == "a"
    assert sample("workqueue_queue_duration_seconds_sum", {"name": "q"}) == 3
    queue.add_rate_limited("a")
    assert sample("workqueue_retries_total", {"name": "q"}) == 1
    clock.advance(2)
    queue.done("a")
    assert sample("workqueue_work_duration_seconds_sum", {"name": "q"}) == 2
