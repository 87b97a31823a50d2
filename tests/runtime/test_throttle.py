"""pivoter.runtime.throttle: a burst of asks runs the job once now and once at the end of the
interval, never more, and the last ask is never dropped."""

from __future__ import annotations

import threading

from pivoter.runtime.throttle import Throttle
from tests.polling import wait_for


def test_a_burst_runs_the_job_once_now_and_once_at_the_interval_end() -> None:
    runs: list[int] = []
    done = threading.Event()

    def job() -> None:
        runs.append(len(runs))
        if len(runs) == 2:
            done.set()

    throttle = Throttle(job, 0.3)
    assert throttle.ask() is True
    assert [throttle.ask() for _ in range(100)] == [False] * 100
    assert runs == [0]
    assert done.wait(5)
    assert runs == [0, 1]
    # Nothing more was asked: nothing more runs.
    threading.Event().wait(0.5)
    assert runs == [0, 1]


def test_an_ask_after_the_interval_runs_at_once() -> None:
    now = [100.0]
    runs: list[float] = []
    throttle = Throttle(lambda: runs.append(now[0]), 10.0, clock=lambda: now[0])
    assert throttle.ask()
    now[0] += 10.0
    assert throttle.ask()
    assert runs == [100.0, 110.0]


def test_a_failing_job_on_the_timer_is_logged_and_the_next_ask_runs_it() -> None:
    calls: list[str] = []

    def job() -> None:
        calls.append("run")
        if len(calls) == 2:
            raise RuntimeError("boom")

    throttle = Throttle(job, 0.2)
    throttle.ask()
    throttle.ask()  # scheduled: runs on the timer and fails there
    wait_for(lambda: len(calls) == 2, timeout=5, what="the timer's run")
    threading.Event().wait(0.3)  # the interval since the failed run
    assert throttle.ask() is True
    assert len(calls) == 3
    throttle.stop()
