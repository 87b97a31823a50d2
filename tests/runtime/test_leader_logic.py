"""Leader-election decision rules on an in-memory Lease and a fake clock (no API server).

The same elector runs against real Leases in test_leader_cluster.py; here the clock is
controlled so each rule is checked exactly: who may take a Lease, when, and when a leader must
consider itself deposed.
"""

from __future__ import annotations

import threading
import time

import pytest

from pivoter.observability import Metrics
from pivoter.runtime import LeaderElectionConfig, LeaderElector, LeaseRecord
from tests.polling import wait_for
from tests.runtime.fakes import FakeClock, MemoryLeaseLock


def _config(identity: str, **timing: float) -> LeaderElectionConfig:
    return LeaderElectionConfig(namespace="ns", name="lease", identity=identity, **timing)


def _elector(identity: str, lock: MemoryLeaseLock, clock: FakeClock, **kw: object) -> LeaderElector:
    return LeaderElector(_config(identity), lock, clock=clock, wall_clock=clock, **kw)  # type: ignore[arg-type]


def test_documented_defaults() -> None:
    config = _config("a")
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (15, 10, 2)


@pytest.mark.parametrize(
    ("timing", "message"),
    [
        ({"lease_duration": 10, "renew_deadline": 10}, "must exceed the renew deadline"),
        ({"renew_deadline": 2, "retry_period": 2}, "must exceed 1.2 x the retry period"),
        ({"retry_period": 0}, "must be positive"),
    ],
)
def test_unsafe_timings_are_refused(timing: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _config("a", **timing)


def test_first_candidate_creates_the_lease_and_others_wait_for_expiry() -> None:
    clock, lock = FakeClock(), MemoryLeaseLock()
    a, b = _elector("a", lock, clock), _elector("b", lock, clock)
    assert a.try_acquire_or_renew()
    assert lock.record is not None
    assert lock.record.holder == "a"
    assert not b.try_acquire_or_renew()
    assert b.leader == "a"
    clock.advance(14.9)
    assert not b.try_acquire_or_renew()  # a's lease is still valid for b
    clock.advance(0.2)
    assert b.try_acquire_or_renew()  # no change seen for 15s: expired
    assert lock.record.holder == "b"
    assert lock.record.transitions == 1


def test_renewals_keep_the_lease_and_reset_the_standby_timer() -> None:
    clock, lock = FakeClock(), MemoryLeaseLock()
    a, b = _elector("a", lock, clock), _elector("b", lock, clock)
    assert a.try_acquire_or_renew()
    for _ in range(20):
        clock.advance(2)
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew()
    assert lock.record is not None
    assert lock.record.transitions == 0


def test_standby_measures_expiry_on_its_own_clock_not_the_recorded_time() -> None:
    clock, lock = FakeClock(), MemoryLeaseLock()
    # A lease renewed "long ago" by another holder's (skewed) clock is still honoured for a full
    # lease duration from when this candidate first sees it.
    lock.record = LeaseRecord("other", 15, acquire_time=0.0, renew_time=0.0)
    lock.version = 7
    b = _elector("b", lock, clock)
    assert not b.try_acquire_or_renew()
    clock.advance(15.1)
    assert b.try_acquire_or_renew()


def test_a_released_lease_is_taken_at_once() -> None:
    clock, lock = FakeClock(), MemoryLeaseLock()
    lock.record = LeaseRecord("", 1, transitions=3)
    b = _elector("b", lock, clock)
    assert b.try_acquire_or_renew()
    assert lock.record.holder == "b"
    assert lock.record.transitions == 4


def test_leader_is_deposed_when_renewals_fail_past_the_deadline() -> None:
    clock, lock = FakeClock(), MemoryLeaseLock()
    a = _elector("a", lock, clock)
    assert a.try_acquire_or_renew()
    a._set_leading(True)
    assert a.is_leader()
    lock.fail = True
    clock.advance(9.9)
    assert not a.try_acquire_or_renew()
    assert a.is_leader()
    clock.advance(0.2)
    assert not a.is_leader()  # even without the renew loop noticing


def test_a_lost_race_is_a_conflict_not_a_double_leader() -> None:
    clock = FakeClock()

    class RacingLock(MemoryLeaseLock):
        """Another candidate writes between our read and our write."""

        def update(self, record: LeaseRecord, version: str) -> str:
            if record.holder == "b":
                super().update(LeaseRecord("a", 15, renew_time=clock()), version)
            return super().update(record, version)

    lock = RacingLock()
    lock.record = LeaseRecord("", 1)
    b = _elector("b", lock, clock)
    assert not b.try_acquire_or_renew()
    assert lock.record.holder == "a"
    assert not b.is_leader()


def _threaded(identity: str, lock: MemoryLeaseLock, log: list[str], **kw: object) -> LeaderElector:
    return LeaderElector(
        _config(identity, lease_duration=1.0, renew_deadline=0.6, retry_period=0.1),
        lock,
        on_started_leading=lambda: log.append(f"{identity}+"),
        on_stopped_leading=lambda: log.append(f"{identity}-"),
        **kw,  # type: ignore[arg-type]
    )


def _watch_leaders(electors: list[LeaderElector], stop: threading.Event, both: list[float]) -> None:
    while not stop.is_set():
        if sum(e.is_leader() for e in electors) > 1:
            both.append(time.monotonic())
        time.sleep(0.005)


def test_threads_never_lead_together_and_a_crash_hands_over() -> None:
    lock, log = MemoryLeaseLock(), list[str]()
    metrics = Metrics(process=False)
    a = _threaded("a", lock, log, metrics=metrics)
    b = _threaded("b", lock, log)
    both: list[float] = []
    stop = threading.Event()
    watcher = threading.Thread(target=_watch_leaders, args=([a, b], stop, both))
    watcher.start()
    try:
        a.start()
        wait_for(a.is_leader, timeout=5, interval=0.01, what="a to lead")
        assert a.is_leader()
        assert (
            metrics.registry.get_sample_value("leader_election_master_status", {"name": "lease"})
            == 1
        )
        b.start()
        time.sleep(1.5)  # several lease durations: b must keep standing by
        assert not b.is_leader()
        a.stop(release=False)  # a crash: no release
        killed = time.monotonic()
        wait_for(b.is_leader, timeout=5, interval=0.01, what="b to take over")
        assert b.is_leader()
        # lease_duration + retry * jitter, plus scheduling slack
        assert time.monotonic() - killed < 1.0 + 0.12 + 0.5
    finally:
        b.stop()
        stop.set()
        watcher.join()
    assert both == []
    assert log == ["a+", "a-", "b+", "b-"]
    assert lock.record is not None
    assert lock.record.holder == ""


def test_a_lease_taken_by_someone_else_stops_the_leader() -> None:
    lock, log = MemoryLeaseLock(), list[str]()
    a = _threaded("a", lock, log)
    a.start()
    wait_for(a.is_leader, timeout=5, interval=0.01, what="a to lead")
    with lock._lock:
        assert lock.record is not None
        lock.record = LeaseRecord("intruder", 30, renew_time=time.time())
        lock.version += 1
    assert a.lost.wait(2)
    assert not a.is_leader()
    assert log == ["a+", "a-"]
    a.stop()
    assert lock.record.holder == "intruder"  # no release of a lease that is not ours


def test_a_leader_renews_with_one_update_and_no_read() -> None:
    # client-go's fast path: the record it wrote last is the Lease's current version, unless
    # someone changed it (then the update conflicts and the Lease is read).
    lock, log = MemoryLeaseLock(), list[str]()
    a = _threaded("a", lock, log)
    a.start()
    wait_for(a.is_leader, timeout=5, interval=0.01, what="a to lead")
    with lock._lock:
        reads, version = lock.reads, lock.version
    wait_for(lambda: lock.version >= version + 5, timeout=5, interval=0.01, what="renewals")
    with lock._lock:
        assert lock.reads == reads
        assert lock.record is not None
        assert lock.record.holder == "a"
    a.stop()
