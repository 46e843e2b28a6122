"""What a relist or a run of deletions freed goes back to the system once the handlers have it.

A relist replaces every cached object, and the replaced ones live on in the notifications until
every handler has been handed them; so do the objects of a run of deletions. Once they are all
delivered, the informer trims the C allocator (``kinformer._gc.trim``, glibc's
``malloc_trim``), so the free pages do not stay in the process. The C allocator's trim is what
these tests replace (it is outside kinformer: the libc call itself), counting the calls, over
HTTP to a FakeAPIServer through the official client.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers import CONFIGMAPS, TIMEOUT, cm, running

from kinformer import ListWatch, ResourceEventHandlerFuncs, SharedIndexInformer, _gc, appliers
from kinformer.testing import FakeAPIServer, wait_for

OBJECTS = 1000  # a list this big is followed by a trim


class Trims:
    """Stands in for libc's ``malloc_trim``: counts the calls, and notes ``seen()`` and the
    calling thread at each."""

    def __init__(self) -> None:
        self.calls = 0
        self.seen: Callable[[], Any] = lambda: None
        self.saw: list[Any] = []
        self.threads: list[str] = []

    def __call__(self, pad: int) -> int:
        self.calls += 1
        self.saw.append(self.seen())
        self.threads.append(threading.current_thread().name)
        return 1

    def on_delivery_threads(self) -> int:
        """The calls made by a handler's delivery thread: once every handler had what it was
        handed (a synced cache's freeze trims on the thread that applied the list)."""
        return sum(name.startswith("kinformer-handler-") for name in self.threads)


@pytest.fixture
def trims(monkeypatch: pytest.MonkeyPatch) -> Iterator[Trims]:
    fake = Trims()
    monkeypatch.setattr(_gc, "_trim", fake)
    yield fake


def list_requests(server: FakeAPIServer) -> list[Any]:
    return [r for r in server.requests if r[1].endswith("/configmaps") and "watch" not in r[2]]


def relist(server: FakeAPIServer) -> None:
    """Make the informer list again: its watch resumes and is told 410 Gone."""
    server.fail_next(status=410, verb="watch", resource="configmaps")
    server.drop_watches()


@pytest.mark.parametrize("profile", ["modern", "classic"])
@pytest.mark.parametrize("compact", [False, True], ids=["dict", "compact"])
def test_a_first_list_trims_the_allocator_once_every_handler_has_it(
    apiserver: FakeAPIServer, api_client: Any, trims: Trims, compact: bool, profile: str
) -> None:
    # what a compact cache's first list leaves (its stubs, each handler's copies) is freed as
    # the handlers are handed it, after the list itself was applied
    apiserver.preload(CONFIGMAPS, (cm(f"cm-{i:04d}", None, "default") for i in range(OBJECTS)))
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), compact=compact,
        profile=profile)
    entered, release = threading.Event(), threading.Event()
    added: list[Any] = []

    def held_add(obj: Any) -> None:  # holds the first add
        entered.set()
        assert release.wait(TIMEOUT)
        added.append(obj)

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=held_add))
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        assert entered.wait(TIMEOUT)
        assert trims.on_delivery_threads() == 0
        release.set()
        assert wait_for(lambda: trims.on_delivery_threads() == 1, TIMEOUT), trims.threads
        assert len(added) == OBJECTS


@pytest.mark.parametrize("profile", ["modern", "classic"])
@pytest.mark.parametrize("compact", [False, True], ids=["dict", "compact"])
def test_a_relist_trims_the_allocator_once_every_handler_has_the_replaced_objects(
    apiserver: FakeAPIServer, api_client: Any, trims: Trims, compact: bool, profile: str
) -> None:
    apiserver.preload(CONFIGMAPS, (cm(f"cm-{i:04d}", None, "default", app=f"a{i}")
                                   for i in range(OBJECTS)))
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), compact=compact,
        profile=profile)
    holding, entered, release = threading.Event(), threading.Event(), threading.Event()
    olds: list[Any] = []

    def held_update(old: Any, new: Any) -> None:  # once holding, holds the first update
        if not holding.is_set():
            olds.append(old)
            return
        entered.set()
        assert release.wait(TIMEOUT)
        olds.append(old)

    informer.add_event_handler(ResourceEventHandlerFuncs(
        update_func=held_update))
    quick: list[Any] = []
    informer.add_event_handler(ResourceEventHandlerFuncs(
        update_func=lambda old, new: quick.append(old)))
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        # an update both handlers deliver: each has come past the first list, and so has
        # whatever follows it (a trim once the list is delivered, the synced cache's freeze)
        apiserver.update(CONFIGMAPS, cm("cm-0000", None, "default", app="a0", touched="yes"))
        assert wait_for(lambda: len(olds) == len(quick) == 1, TIMEOUT)
        settled, olds[:], quick[:] = trims.calls, [], []
        holding.set()
        relist(apiserver)
        assert entered.wait(TIMEOUT)
        assert wait_for(lambda: len(quick) == OBJECTS, TIMEOUT)
        # one handler has every replaced object, the other holds the first: no trim yet
        assert trims.calls == settled
        release.set()
        assert wait_for(lambda: trims.calls > settled, TIMEOUT)
        assert len(olds) == OBJECTS
        # the replaced objects reached the handlers whole (a compact cache's as stubs of their
        # bytes, each decoded afresh for its handler)
        assert sorted(old["metadata"]["labels"]["app"] for old in olds) == sorted(
            f"a{i}" for i in range(OBJECTS))


@pytest.mark.parametrize("profile", ["modern", "classic"])
@pytest.mark.parametrize("compact", [False, True], ids=["dict", "compact"])
def test_a_run_of_deletions_trims_the_allocator_once_every_handler_has_them(
    apiserver: FakeAPIServer, api_client: Any, trims: Trims, compact: bool, profile: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # fewer deletions than a real run, so that the server keeps up the watch for each
    monkeypatch.setattr(appliers, "_TRIM_AFTER", 50)
    apiserver.preload(CONFIGMAPS, (cm(f"cm-{i:03d}", None, "default") for i in range(60)))
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), compact=compact,
        profile=profile)
    deleted: list[Any] = []
    registration = informer.add_event_handler(ResourceEventHandlerFuncs(delete_func=deleted.append))
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        assert wait_for(registration.has_synced, TIMEOUT)
        lists = len(list_requests(apiserver))
        trims.seen = lambda: len(deleted)
        for i in range(60):
            apiserver.delete(CONFIGMAPS, "default", f"cm-{i:03d}")
        assert wait_for(lambda: len(deleted) == 60, TIMEOUT)
        assert wait_for(lambda: any(n is not None and n >= 50 for n in trims.saw), TIMEOUT)
        assert len(list_requests(apiserver)) == lists  # each came as a DELETED event
        assert all(obj["metadata"]["name"].startswith("cm-") for obj in deleted)


@pytest.mark.usefixtures("kept_as_json")  # what a relist encodes, counted at the JSON encoder
@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_a_compact_relist_hands_over_the_replaced_objects_without_encoding_them_again(
    apiserver: FakeAPIServer, api_client: Any, profile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kinformer import _json

    apiserver.preload(CONFIGMAPS, (cm(f"cm-{i:03d}", None, "default", app=f"a{i}")
                                   for i in range(200)))
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), compact=True,
        profile=profile)
    olds: list[Any] = []
    registration = informer.add_event_handler(ResourceEventHandlerFuncs(
        update_func=lambda old, new: olds.append(old)))
    encode = _json.dumps_to_keep
    encoded: list[Any] = []
    with running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        assert wait_for(registration.has_synced, TIMEOUT)
        monkeypatch.setattr(_json, "dumps_to_keep",
                            lambda obj, *prefix: encoded.append(obj) or encode(obj, *prefix))
        relist(apiserver)
        assert wait_for(lambda: len(olds) == 200, TIMEOUT)
    assert sorted(old["metadata"]["labels"]["app"] for old in olds) == sorted(
        f"a{i}" for i in range(200))
    # each listed object packed once; each replaced one decoded from the bytes cached, for the
    # handler, never read whole and encoded again for it
    assert len(encoded) <= 200, len(encoded)
