"""A watch that breaks resumes where it was: no relist, and handlers see only what they missed.

Dropped connections, streams cut off mid-event and a server restarting on the same port with its
state re-open the watch at the last resourceVersion, with no LIST; only a server that lost the
history answers 410, and only then does the informer list again. Each test runs over HTTP
against FakeAPIServer, in both informer profiles, and counts the LIST requests the server saw.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import CONFIGMAPS, create_cm

from kinformer import ListWatch, SharedIndexInformer
from kinformer.context import Context
from kinformer.testing import FakeAPIServer, Recorder
from kinformer.testing.clock import FakeClock
from kinformer.testing.waiting import wait_for

TIMEOUT = 10.0


def describe(obj: Any) -> str:
    return str(obj["metadata"]["name"])


class Watching:
    """An informer on a FakeClock over HTTP, recording every notification, until the test ends."""

    def __init__(self, server: FakeAPIServer, client: Any, profile: str) -> None:
        self.server = server
        self.clock = FakeClock()
        self.recorder = Recorder(describe)
        self.informer = SharedIndexInformer(
            ListWatch.for_resource(client, CONFIGMAPS, namespace="default"),
            clock=self.clock, name="resume", profile=profile)
        self.informer.add_event_handler(self.recorder)
        self.stop = Context()
        self.thread = threading.Thread(target=self.informer.run, args=(self.stop,),
                                       name="test-informer-run")
        self.thread.start()
        assert self.informer.wait_for_sync(timeout=TIMEOUT)

    def lists(self) -> int:
        return sum(1 for method, path, query, _status in self.server.requests
                   if method == "GET" and path.endswith("/configmaps")
                   and query.get("watch") != "true")

    def cache(self) -> dict[str, str]:
        return {o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                for o in self.informer.get_indexer().list()}

    def server_state(self) -> dict[str, str]:
        return {o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                for o in self.server.list_objects(CONFIGMAPS, "default")}

    def added(self, count: int, *, skip_resyncs: bool = False) -> list[str]:
        """The names of the next ``count`` notifications, which must all be adds.

        With ``skip_resyncs``, updates that change nothing (a relist of an unchanged object)
        are passed over.
        """
        names = []
        while len(names) < count:
            event = self.recorder.events.get(timeout=TIMEOUT)
            if skip_resyncs and event[0] == "update" and event[1] == event[2]:
                continue
            assert event[0] == "add", event
            names.append(event[1])
        return names

    def delivered(self, api_client: Any, name: str) -> None:
        """Write ConfigMap ``name`` and wait until the handler has it: the open watch delivered
        an event, so ending it now is not a very short watch."""
        assert self.server.wait_for_watchers(CONFIGMAPS, 1, TIMEOUT)
        create_cm(api_client, name)
        assert self.added(1) == [name]

    def restart_server(self, *, forget_history: bool) -> None:
        """Stop the server, write ``while-down`` meanwhile, and start it again on the same port."""
        self.server.stop()
        self.server.create(CONFIGMAPS, {"metadata": {"name": "while-down", "namespace": "default"}})
        if forget_history:
            self.server.compact()  # the watch's version is gone: 410 Gone
        self.server.start()

    def step_through_backoff(self) -> bool:
        """Move the clock past any backoff wait; for use inside ``wait_for`` conditions."""
        if self.clock.has_waiters():
            self.clock.step(60)
        return True

    def caught_up(self) -> bool:
        return self.cache() == self.server_state()


@pytest.fixture(params=["modern", "classic"])
def watching(request: pytest.FixtureRequest, apiserver: FakeAPIServer,
             api_client: Any) -> Iterator[Watching]:
    run = Watching(apiserver, api_client, request.param)
    try:
        yield run
    finally:
        run.stop.cancel()
        run.thread.join(TIMEOUT)
        assert not run.thread.is_alive()


def test_watches_dropped_again_and_again_while_writing_cost_one_list(
    watching: Watching, apiserver: FakeAPIServer, api_client: Any
) -> None:
    created = []
    for i in range(6):
        watching.delivered(api_client, f"seen-{i}")
        assert apiserver.drop_watches() == 1
        create_cm(api_client, f"gap-{i}")  # written while the watch may be down
        assert watching.added(1) == [f"gap-{i}"]
        created += [f"seen-{i}", f"gap-{i}"]
    assert wait_for(watching.caught_up, TIMEOUT)
    assert watching.lists() == 1
    assert sorted(watching.cache()) == sorted(created)
    assert watching.recorder.events.empty()  # nothing was replayed


def test_a_stream_cut_off_mid_event_resumes_without_a_list(
    watching: Watching, apiserver: FakeAPIServer, api_client: Any
) -> None:
    watching.delivered(api_client, "before")
    assert apiserver.cut_watches_midline() == 1
    create_cm(api_client, "after")
    assert watching.added(1) == ["after"]
    assert watching.lists() == 1
    assert watching.informer.last_error() is None


def test_a_server_restarting_with_its_state_resumes_the_watch_without_a_list(
    watching: Watching, apiserver: FakeAPIServer, api_client: Any
) -> None:
    watching.delivered(api_client, "before")
    watching.restart_server(forget_history=False)  # the same port, objects and history
    # a watch refused meanwhile backs off, then watches again
    assert wait_for(lambda: watching.step_through_backoff() and watching.caught_up(), TIMEOUT)
    assert watching.added(1) == ["while-down"]
    assert watching.lists() == 1
    assert wait_for(watching.caught_up, TIMEOUT)


def test_a_server_restarting_without_its_history_answers_410_and_only_then_a_list(
    watching: Watching, apiserver: FakeAPIServer, api_client: Any
) -> None:
    watching.delivered(api_client, "before")
    watching.restart_server(forget_history=True)
    # through the backoff of a refused watch and of the 410
    assert wait_for(lambda: watching.step_through_backoff() and watching.lists() == 2, TIMEOUT)
    assert watching.added(1, skip_resyncs=True) == ["while-down"]
    assert wait_for(watching.caught_up, TIMEOUT)
    assert watching.lists() == 2
