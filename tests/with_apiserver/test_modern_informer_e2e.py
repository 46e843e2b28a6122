"""The modern informer over HTTP: a relist is atomic for handlers, a blocked handler holds up
nothing. Both run against FakeAPIServer through the official client."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from helpers import CONFIGMAPS, create_cm, running

from kinformer import ListWatch, SharedIndexInformer
from kinformer.testing import FakeAPIServer, Recorder
from kinformer.testing.clock import FakeClock
from kinformer.testing.waiting import wait_for

TIMEOUT = 20.0
COUNT = 1_200  # more than one batch of deltas: a classic relist reaches the cache in parts
LAST = f"cm-{COUNT - 1:04d}"


class Probe:
    """A handler that, on every update, counts the cached objects already at their new version."""

    def __init__(self, informer: SharedIndexInformer, first_new_rv: list[int]) -> None:
        self.informer = informer
        self.first_new_rv = first_new_rv  # one element, set before the relist
        self.seen: list[int] = []
        self.lock = threading.Lock()

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        pass

    def on_update(self, old: Any, new: Any) -> None:
        cutoff = self.first_new_rv[0]
        cached = self.informer.get_indexer().list()
        updated = sum(1 for o in cached if int(o["metadata"]["resourceVersion"]) >= cutoff)
        with self.lock:
            self.seen.append(updated)

    def on_delete(self, obj: Any) -> None:
        pass

    def count(self) -> int:
        with self.lock:
            return len(self.seen)


def test_handlers_never_see_part_of_the_old_list_and_part_of_the_new_one(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    apiserver.bulk_create(CONFIGMAPS, [
        {"metadata": {"name": f"cm-{i:04d}", "namespace": "default"}, "data": {"v": "0"}}
        for i in range(COUNT)])
    armed, gated, release = threading.Event(), threading.Event(), threading.Event()

    def by_name(obj: Any) -> list[str]:
        name: str = obj["metadata"]["name"]
        if armed.is_set() and name == LAST:
            gated.set()  # the relist is being applied: hold it here
            assert release.wait(TIMEOUT)
        return [name]

    clock = FakeClock()
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"),
        indexers={"name": by_name}, clock=clock, name="atomic")
    first_new_rv = [0]
    probe = Probe(informer, first_new_rv)
    registration = informer.add_event_handler(probe)
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        apiserver.stop()
        first_new_rv[0] = int(apiserver.current_resource_version()) + 1
        for obj in apiserver.list_objects(CONFIGMAPS, "default"):
            apiserver.update(CONFIGMAPS, {**obj, "data": {"v": "1"}})
        apiserver.compact()  # the informer must relist
        armed.set()
        apiserver.start()

        def step() -> bool:
            if clock.has_waiters():
                clock.step(60)  # through the backoff steps
            return gated.is_set()

        assert wait_for(step, TIMEOUT)
        # whatever the handler was given before the relist finished has been handled
        assert wait_for(lambda: registration.pending() == 0, TIMEOUT)
        release.set()
        assert wait_for(lambda: probe.count() == COUNT, TIMEOUT)
    assert probe.seen == [COUNT] * COUNT


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_a_handler_blocked_on_an_event_holds_up_neither_the_watch_nor_the_cache(
    apiserver: FakeAPIServer, api_client: Any, profile: str
) -> None:
    gate = threading.Event()
    blocked = Recorder(lambda obj: str(obj["metadata"]["name"]), gate=gate)
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"),
        name="blocked", profile=profile)
    informer.add_event_handler(blocked)
    names = [f"cm-{i}" for i in range(20)]
    try:
        with running(informer.run):
            assert informer.wait_for_sync(timeout=TIMEOUT)
            for name in names:
                create_cm(api_client, name)
            assert blocked.entered.wait(TIMEOUT)  # stuck in its first callback
            assert wait_for(lambda: sorted(informer.get_indexer().list_keys())
                            == sorted(f"default/{n}" for n in names), TIMEOUT)
            # the version of the last event is noted once the store took it, a moment after
            assert wait_for(lambda: informer.last_sync_resource_version()
                            == apiserver.current_resource_version(), TIMEOUT)
            gate.set()
            assert [event[1] for event in blocked.take(len(names))] == names
    finally:
        gate.set()


@pytest.mark.parametrize("compact", [False, True], ids=["dict", "compact"])
def test_an_informer_with_use_watch_list_streams_its_first_state_and_never_lists(
    apiserver: FakeAPIServer, api_client: Any, compact: bool,
) -> None:
    """client-go's WatchList, opt-in: the first state comes as the watch's initial events, the
    same stream then carries the changes, and no LIST is sent."""
    for name in ("a", "b"):
        create_cm(api_client, name)
    informer = SharedIndexInformer(ListWatch.for_resource(api_client, CONFIGMAPS),
                                   use_watch_list=True, compact=compact)
    handler = Recorder()
    informer.add_event_handler(handler)
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        assert sorted(informer.get_indexer().list_keys()) == ["default/a", "default/b"]
        create_cm(api_client, "c")
        assert wait_for(lambda: "default/c" in informer.get_indexer().list_keys(), TIMEOUT)
    reads = [(query.get("watch"), query.get("sendInitialEvents")) for method, path, query, _
             in apiserver.requests if method == "GET" and path.endswith("/configmaps")]
    assert reads == [("true", "true")]
    assert [event[0] for event in handler.take(3)] == ["add", "add", "add"]
