"""Rate limiters and RateLimitingQueue: backoff, token bucket, max-of."""

from __future__ import annotations

import pytest

from kinformer import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
    errors,
)
from kinformer.testing import FakeClock


def test_exponential_limiter_doubles_per_failure_and_starts_over_after_forget() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    assert [limiter.when("x") for _ in range(4)] == [0.001, 0.002, 0.004, 0.008]
    assert limiter.num_requeues("x") == 4
    assert limiter.when("y") == 0.001  # items are counted separately
    limiter.forget("x")
    assert limiter.num_requeues("x") == 0
    assert limiter.when("x") == 0.001


def test_exponential_limiter_caps_at_max_even_past_float_overflow() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [limiter.when("x") for _ in range(2000)]
    assert delays[17] < 1000.0
    assert delays[18] == 1000.0  # the 19th failure reaches the cap
    assert delays[-1] == 1000.0


def test_fast_slow_limiter_switches_after_max_fast_attempts() -> None:
    limiter = ItemFastSlowRateLimiter(0.01, 5.0, 2)
    assert [limiter.when("x") for _ in range(4)] == [0.01, 0.01, 5.0, 5.0]
    assert limiter.num_requeues("x") == 4
    limiter.forget("x")
    assert limiter.when("x") == 0.01


def test_bucket_limiter_allows_a_burst_then_spaces_by_rate() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10.0, burst=2, clock=clock)
    assert [limiter.when(i) for i in range(4)] == pytest.approx([0.0, 0.0, 0.1, 0.2])
    assert limiter.num_requeues(0) == 0
    clock.step(1.0)  # pays the 0.3 owed and refills up to the burst
    assert [limiter.when(i) for i in range(3)] == pytest.approx([0.0, 0.0, 0.1])


def test_bucket_limiter_rejects_a_rate_that_would_never_refill() -> None:
    with pytest.raises(errors.ConfigurationError):
        BucketRateLimiter(qps=0, burst=1)
    with pytest.raises(errors.ConfigurationError):
        BucketRateLimiter(qps=1, burst=0)


def test_max_of_limiter_takes_the_longest_delay_and_forgets_everywhere() -> None:
    fast = ItemExponentialFailureRateLimiter(0.001, 10.0)
    slow = ItemFastSlowRateLimiter(0.5, 1.0, 1)
    limiter = MaxOfRateLimiter(fast, slow)
    assert [limiter.when("x") for _ in range(3)] == [0.5, 1.0, 1.0]
    assert limiter.num_requeues("x") == 3
    limiter.forget("x")
    assert fast.num_requeues("x") == 0
    assert slow.num_requeues("x") == 0


def test_max_wait_limiter_caps_the_wrapped_delay() -> None:
    limiter = WithMaxWaitRateLimiter(ItemFastSlowRateLimiter(1.0, 60.0, 1), 5.0)
    assert [limiter.when("x") for _ in range(2)] == [1.0, 5.0]


def test_default_item_based_limiter_starts_at_one_millisecond() -> None:
    assert default_item_based_rate_limiter().when("x") == 0.001


def test_default_controller_limiter_backs_off_one_failing_item_from_five_milliseconds() -> None:
    limiter = default_controller_rate_limiter(FakeClock())
    assert [limiter.when("x") for _ in range(3)] == pytest.approx([0.005, 0.01, 0.02])
    assert limiter.num_requeues("x") == 3
    limiter.forget("x")
    assert limiter.when("x") == pytest.approx(0.005)


def test_default_controller_limiter_holds_the_hundred_and_first_new_item_for_the_bucket() -> None:
    limiter = default_controller_rate_limiter(FakeClock())
    delays = [limiter.when(i) for i in range(101)]
    assert max(delays[:100]) <= 0.005
    assert delays[100] == pytest.approx(0.1)


def test_rate_limited_queue_delays_a_failing_item_and_counts_requeues() -> None:
    clock = FakeClock()
    queue: RateLimitingQueue[str] = RateLimitingQueue(
        rate_limiter=ItemExponentialFailureRateLimiter(1.0, 60.0), clock=clock
    )
    try:
        queue.add_rate_limited("x")
        queue.add_rate_limited("x")  # still waiting: keeps the earlier ready time
        assert queue.num_requeues("x") == 2
        assert len(queue) == 0
        assert clock.wait_for_waiters()
        clock.step(1.0)
        assert queue.get(timeout=5) == ("x", False)
        queue.done("x")
        queue.forget("x")
        assert queue.num_requeues("x") == 0
    finally:
        queue.shut_down()


def test_forget_does_not_remove_a_queued_item() -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue(clock=FakeClock())
    queue.add("x")
    queue.forget("x")
    assert len(queue) == 1
    queue.shut_down()


def test_limiters_take_api_md_argument_names() -> None:
    limiter = ItemExponentialFailureRateLimiter(base=0.001, max=0.004)
    assert [limiter.when("x") for _ in range(4)] == pytest.approx([0.001, 0.002, 0.004, 0.004])
    bucket = BucketRateLimiter(qps=1, burst=1, clock=FakeClock())
    assert [bucket.when("a"), bucket.when("b")] == pytest.approx([0, 1])
    assert bucket.num_requeues("a") == 0
    queue: RateLimitingQueue[str] = RateLimitingQueue()  # the default controller limiter: 5 ms first
    queue.add_rate_limited("x")
    assert queue.get(timeout=5) == ("x", False)
    queue.shut_down()
