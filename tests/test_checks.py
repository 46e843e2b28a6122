"""Numeric arguments: NaN, infinity and out-of-range values are a ConfigurationError at once.

NaN compares false with everything, so before these checks it passed every ``<= 0`` test and
turned waits into hangs or busy loops; infinity overflowed threading's waits on a thread of its
own. Each public constructor and wait is called here the way a user would, with no server.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import pytest
from helpers import CONFIGMAPS
from kubernetes import client as k8s

import kinformer
from kinformer import _checks, _threads
from kinformer.testing import FakeAPIServer, wait_for

NAN, INF = math.nan, math.inf
API = k8s.ApiClient()  # never sends: a constructor that checks its client finds a real one


def test_a_check_names_the_argument_and_what_it_must_be() -> None:
    with pytest.raises(kinformer.ConfigurationError,
                       match=r"^resync_period must be a finite number, got nan$"):
        _checks.seconds("resync_period", NAN)
    with pytest.raises(kinformer.ConfigurationError, match=r"^retry_period must be positive, got 0$"):
        _checks.seconds("retry_period", 0, positive=True)
    with pytest.raises(kinformer.ConfigurationError, match=r"^burst must be at least 1, got 0$"):
        _checks.integer("burst", 0, minimum=1)
    with pytest.raises(kinformer.ConfigurationError, match="must be a number"):
        _checks.number("qps", "10")
    with pytest.raises(kinformer.ConfigurationError, match="must be an integer"):
        _checks.integer("workers", 2.0)
    with pytest.raises(kinformer.ConfigurationError, match="must be at most"):
        _checks.seconds("timeout", _checks.MAX_SECONDS * 2)
    assert _checks.seconds("ttl", 3) == 3.0 and isinstance(_checks.seconds("ttl", 3), float)
    assert _checks.timeout("timeout", None) is None


def _informer(**kwargs: Any) -> kinformer.SharedIndexInformer:
    return kinformer.SharedIndexInformer(kinformer.ListWatch(lambda options: None, lambda options: None),
                                         **kwargs)


def _add_handler(period: float) -> None:
    _informer().add_event_handler_with_resync_period(kinformer.ResourceEventHandlerFuncs(), period)


class _Lock:
    identity = "me"

    def get(self, timeout: float | None = None) -> None: ...
    def create(self, record: Any, timeout: float | None = None) -> None: ...
    def update(self, record: Any, timeout: float | None = None) -> None: ...
    def describe(self) -> str:
        return "lock"


# (what, call with the bad value) for every public constructor and wait that takes a number
CALLS: list[tuple[str, Callable[[float], object]]] = [
    ("Backoff(duration)", lambda v: kinformer.Backoff(duration=v)),
    ("Backoff(factor)", lambda v: kinformer.Backoff(factor=v)),
    ("Backoff(cap)", lambda v: kinformer.Backoff(cap=v)),
    ("BackoffManager(reset_after)", lambda v: kinformer.BackoffManager(reset_after=v)),
    ("SharedIndexInformer(resync)", lambda v: _informer(default_event_handler_resync_period=v)),
    ("SharedIndexInformer(mutation_check_period)",
     lambda v: _informer(detect_mutations=True, mutation_check_period=v)),
    ("add_event_handler_with_resync_period", _add_handler),
    ("SharedIndexInformer.wait_for_sync(timeout)", lambda v: _informer().wait_for_sync(timeout=v)),
    ("wait_for_cache_sync(timeout)",
     lambda v: kinformer.wait_for_cache_sync(None, lambda: False, timeout=v)),
    ("Reflector(resync_period)", lambda v: kinformer.Reflector(None, None, resync_period=v)),
    ("Reflector(initial_events_timeout)",
     lambda v: kinformer.Reflector(None, None, initial_events_timeout=v)),
    ("Reflector(min_watch_timeout)", lambda v: kinformer.Reflector(None, None, min_watch_timeout=v)),
    ("DynamicSharedInformerFactory(default_resync)",
     lambda v: kinformer.DynamicSharedInformerFactory(None, v)),
    ("InformerManager(default_resync)", lambda v: kinformer.InformerManager(None, v)),
    ("DiscoveringDynamicSharedInformerFactory(poll_interval)",
     lambda v: kinformer.DiscoveringDynamicSharedInformerFactory(API, poll_interval=v)),
    ("ControllerManager(resync_interval)",
     lambda v: kinformer.ControllerManager("x", None, {}, resync_interval=v)),
    ("Result(requeue_after)", lambda v: kinformer.Result(requeue_after=v)),
    ("Controller(workers)",
     lambda v: kinformer.Controller("c", None, workers=v)),
    ("ItemExponentialFailureRateLimiter(base)",
     lambda v: kinformer.ItemExponentialFailureRateLimiter(v, 1.0)),
    ("ItemFastSlowRateLimiter(slow_delay)", lambda v: kinformer.ItemFastSlowRateLimiter(0.1, v, 3)),
    ("BucketRateLimiter(qps)", lambda v: kinformer.BucketRateLimiter(qps=v, burst=10)),
    ("WithMaxWaitRateLimiter(max_delay)",
     lambda v: kinformer.WithMaxWaitRateLimiter(kinformer.default_item_based_rate_limiter(), v)),
    ("DelayingQueue.add_after", lambda v: kinformer.DelayingQueue().add_after("a", v)),
    ("WorkQueue.get(timeout)", lambda v: kinformer.WorkQueue().get(timeout=v)),
    ("WorkQueue.shut_down_with_drain(timeout)", lambda v: kinformer.WorkQueue().shut_down_with_drain(v)),
    ("RealFIFO.pop(timeout)", lambda v: kinformer.RealFIFO().pop(None, timeout=v)),
    ("ListWatch.for_resource(connect_timeout)",
     lambda v: kinformer.ListWatch.for_resource(API, CONFIGMAPS, connect_timeout=v)),
    ("CachedDiscoveryClient(ttl)", lambda v: kinformer.CachedDiscoveryClient(API, ttl=v)),
    ("Context.wait(timeout)", lambda v: kinformer.Context().wait(v)),
    ("LeaderElectionConfig(lease_duration)",
     lambda v: kinformer.LeaderElectionConfig(_Lock(), lease_duration=v)),
    ("LeaderElectionConfig(retry_period)",
     lambda v: kinformer.LeaderElectionConfig(_Lock(), retry_period=v)),
    ("ShardCoordinator(lease_duration)",
     lambda v: kinformer.ShardCoordinator(API, "g", "me", lease_duration=v)),
    ("ProbeServer(check_timeout)", lambda v: kinformer.ProbeServer(check_timeout=v)),
    ("leader_election_check(max_tolerable_expired_lease)",
     lambda v: kinformer.leader_election_check(None, v)),
    ("FakeAPIServer(bookmark_interval)", lambda v: FakeAPIServer(bookmark_interval=v)),
    ("FakeAPIServer.set_delay", lambda v: FakeAPIServer().set_delay(v)),
    ("wait_for(timeout)", lambda v: wait_for(lambda: False, timeout=v)),
    ("join_all(timeout)", lambda v: _threads.join_all([], v)),
]


@pytest.mark.parametrize("value", [NAN, INF, -INF], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize(("what", "call"), CALLS, ids=[what for what, _ in CALLS])
def test_a_number_that_is_not_finite_is_a_configuration_error(
    what: str, call: Callable[[float], object], value: float,
) -> None:
    result: list[BaseException] = []

    def attempt() -> None:  # on a thread of its own: a hang fails the test instead of the suite
        try:
            call(value)
        except BaseException as exc:
            result.append(exc)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), f"{what} with {value} hangs"
    assert result and isinstance(result[0], kinformer.ConfigurationError), f"{what}: {result}"


OUT_OF_RANGE: list[tuple[str, Callable[[], object]]] = [
    ("Backoff(jitter)", lambda: kinformer.Backoff(jitter=-1)),
    ("SharedIndexInformer(resync)", lambda: _informer(default_event_handler_resync_period=-5)),
    ("SharedIndexInformer(mutation_check_period)",
     lambda: _informer(detect_mutations=True, mutation_check_period=0)),
    ("ListWatch.for_resource(read_timeout)",
     lambda: kinformer.ListWatch.for_resource(API, CONFIGMAPS, read_timeout=0)),
    ("CachedDiscoveryClient(request_timeout)",
     lambda: kinformer.CachedDiscoveryClient(API, request_timeout=(5.0, -1.0))),
    ("ItemFastSlowRateLimiter(max_fast_attempts)", lambda: kinformer.ItemFastSlowRateLimiter(0.1, 1, -1)),
    ("ProbeServer(port)", lambda: kinformer.ProbeServer(port=70000)),
    ("FakeAPIServer(history_size)", lambda: FakeAPIServer(history_size=0)),
    ("ListWatch.for_resource(gvr)", lambda: kinformer.ListWatch.for_resource(API, "configmaps")),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("what", "call"), OUT_OF_RANGE, ids=[what for what, _ in OUT_OF_RANGE])
def test_a_number_out_of_range_is_a_configuration_error(what: str, call: Callable[[], object]) -> None:
    with pytest.raises(kinformer.ConfigurationError):
        call()


def test_backoff_without_a_cap_stops_growing_where_threading_stops_waiting() -> None:
    step = kinformer.Backoff(duration=1e9, factor=10.0, cap=0)
    for _ in range(5):
        step = step.next()
    assert step.duration == _checks.MAX_SECONDS
    assert step.delay(lambda: 0.99) == _checks.MAX_SECONDS


def test_a_delay_longer_than_threading_can_wait_keeps_the_delaying_queue_working() -> None:
    queue: kinformer.DelayingQueue[str] = kinformer.DelayingQueue(name="far-and-near")
    try:
        queue.add_after("far", 1e300)  # what a BucketRateLimiter with a tiny qps may ask for
        # the waiting loop clears its wake-up under the lock it reads the heap with: once clear,
        # it waits for "far"
        assert wait_for(lambda: not queue._wake.is_set())
        queue.add_after("near", 0.01)
        assert queue.get(timeout=5) == ("near", False)
    finally:
        queue.shut_down()
