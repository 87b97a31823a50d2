"""Backoff arithmetic: per-key doubling with a cap, a global token bucket, and their maximum."""

from __future__ import annotations

import pytest

from pivoter.runtime import (
    BucketRateLimiter,
    ExponentialBackoff,
    MaxOfRateLimiter,
    default_rate_limiter,
)
from tests.runtime.fakes import FakeClock


def test_exponential_backoff_doubles_per_key_up_to_the_cap() -> None:
    backoff = ExponentialBackoff(base=0.005, cap=1.0)
    delays = [backoff.when("a") for _ in range(10)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[-1] == 1.0
    assert max(delays) == 1.0
    assert backoff.retries("a") == 10
    # Keys are independent.
    assert backoff.when("b") == 0.005


def test_forget_resets_a_key() -> None:
    backoff = ExponentialBackoff(base=1.0, cap=100.0)
    backoff.when("a")
    backoff.when("a")
    backoff.forget("a")
    assert backoff.retries("a") == 0
    assert backoff.when("a") == 1.0


def test_backoff_survives_thousands_of_failures() -> None:
    backoff = ExponentialBackoff(base=0.005, cap=1000.0)
    for _ in range(3000):
        delay = backoff.when("k")
    assert delay == 1000.0


def test_bucket_allows_a_burst_then_paces_at_qps() -> None:
    clock = FakeClock()
    bucket = BucketRateLimiter(qps=10.0, burst=3, clock=clock)
    assert [bucket.when(i) for i in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.when(3) == pytest.approx(0.1)
    assert bucket.when(4) == pytest.approx(0.2)
    clock.advance(10.0)  # refills, but never beyond the burst
    assert [bucket.when(i) for i in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.when(3) > 0


def test_max_of_takes_the_longest_delay_and_forgets_everywhere() -> None:
    limiter = MaxOfRateLimiter(ExponentialBackoff(1.0, 8.0), ExponentialBackoff(2.0, 4.0))
    assert [limiter.when("k") for _ in range(4)] == [2.0, 4.0, 4.0, 8.0]
    limiter.forget("k")
    assert limiter.retries("k") == 0


def test_default_limiter_is_client_go_shaped() -> None:
    limiter = default_rate_limiter()
    assert limiter.when("k") == 0.005


@pytest.mark.parametrize(("base", "cap"), [(0.0, 1.0), (2.0, 1.0)])
def test_nonsense_backoff_is_refused(base: float, cap: float) -> None:
    with pytest.raises(ValueError, match="backoff needs"):
        ExponentialBackoff(base, cap)
