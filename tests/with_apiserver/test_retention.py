"""What a long-running process lets go of, through the official client over HTTP: members that
come and go, and the state kept per request, leave nothing behind that grows with churn."""

from __future__ import annotations

import gc
import queue
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from _fleet import DrivenProvider
from helpers import CONFIGMAPS, TIMEOUT, cm

from kinformer import (
    BuiltController,
    CachedClient,
    ControllerBuilder,
    DynamicSharedInformerFactory,
    MultiClusterInformerFactory,
    Request,
    StaticClusterProvider,
)
from kinformer.testing import FakeAPIServer, Recorder, wait_for


class WritesAChild:
    """Patches ``<name>-child`` for each request of an object not named ``*-child``: a write the
    request's own object never shows, so nothing brings the request round again."""

    def __init__(self, writer: CachedClient) -> None:
        self.writer = writer
        self.done: queue.Queue[Request] = queue.Queue()

    def reconcile(self, request: Request) -> None:
        if request.name.endswith("-child"):
            return
        self.writer.patch(CONFIGMAPS, f"{request.name}-child", {"data": {"by": request.cluster}},
                          request.namespace, cluster=request.cluster)
        self.done.put(request)


class Churn:
    """A controller over members the test engages and disengages, all served by one server."""

    def __init__(self, server: FakeAPIServer) -> None:
        server.create(CONFIGMAPS, cm("app", None, "default"))
        server.create(CONFIGMAPS, cm("app-child", None, "default"))
        self.server = server
        self.provider = DrivenProvider()
        self.factory = MultiClusterInformerFactory(self.provider)
        self.reconciler = WritesAChild(CachedClient(self.factory))
        self.controller: BuiltController = (
            ControllerBuilder("churn", self.factory).for_resource(CONFIGMAPS).complete(self.reconciler))
        self.clients: list[Any] = []
        self.stop = threading.Event()

    def engage_and_write(self, cluster: str) -> weakref.ref[Any]:
        """Engage ``cluster``, wait for its write; a weak reference to its informer."""
        self.clients.append(self.server.api_client())
        self.provider.engage(cluster, self.clients[-1])
        assert self.reconciler.done.get(timeout=TIMEOUT) == Request("app", "default", cluster)
        informer = self.factory.for_resource(CONFIGMAPS).informer_for(cluster)
        assert informer is not None
        return weakref.ref(informer)

    def close(self) -> None:
        self.stop.set()
        assert self.controller.join(TIMEOUT)
        self.factory.shutdown()
        for api_client in self.clients:
            api_client.close()


@pytest.fixture
def churn(apiserver: FakeAPIServer) -> Iterator[Churn]:
    made = Churn(apiserver)
    made.controller.start(made.stop)
    yield made
    made.close()


def collected(ref: weakref.ref[Any]) -> bool:
    gc.collect()
    return ref() is None


def test_a_member_that_left_is_not_kept_by_the_writes_made_to_it(churn: Churn) -> None:
    """A write's staleness record holds the cache it waits on: while it lived, a member that
    left after a write kept its informer, cache and client (with its open connections) for
    good, one more with every member that came and went."""
    first = churn.engage_and_write("a")
    assert churn.controller.tracker.written(Request("app", "default", "a")) is not None
    churn.provider.disengage("a")
    churn.engage_and_write("b")  # the next write lets go of the records of stopped caches
    assert collected(first)
    assert churn.controller.tracker.written(Request("app", "default", "a")) is None


def test_a_request_of_a_member_that_left_drops_its_write_records(churn: Churn) -> None:
    """A request of a member no longer engaged is dropped, and its write records (each holding
    the member's stopped cache) with it, even when no other write comes to let go of them."""
    churn.engage_and_write("a")
    churn.provider.disengage("a")
    request = Request("app", "default", "a")
    assert churn.controller.tracker.written(request) is not None
    churn.controller.queue.add(request.key)
    assert wait_for(lambda: churn.controller.tracker.written(request) is None, timeout=TIMEOUT)


def test_controllers_started_and_stopped_over_members_are_let_go(
    apiserver: FakeAPIServer, api_client: Any,
) -> None:
    """A multi-cluster informer kept every handler ever removed from it (to join its delivery
    thread at shutdown): each controller started and stopped over a long-lived factory stayed
    in memory with its queue, tracker and reconciler. Only deliveries whose threads may still
    run are kept now."""
    apiserver.create(CONFIGMAPS, cm("app", None, "default"))
    apiserver.create(CONFIGMAPS, cm("app-child", None, "default"))
    factory = MultiClusterInformerFactory(StaticClusterProvider({"a": api_client}))
    multi = factory.for_resource(CONFIGMAPS)
    factory.start(threading.Event())

    def delivering() -> bool:
        return any(t.name.startswith("kinformer-clusterhandler-") for t in threading.enumerate())

    def run_once() -> None:
        """Run a controller until it reconciled, stop it and wait for its delivery thread."""
        reconciler = WritesAChild(CachedClient(factory))
        controller = ControllerBuilder("restarted", factory).for_resource(CONFIGMAPS).complete(reconciler)
        stop = threading.Event()
        controller.start(stop)
        try:
            assert reconciler.done.get(timeout=TIMEOUT) == Request("app", "default", "a")
        finally:
            stop.set()
            assert controller.join(TIMEOUT)
        assert wait_for(lambda: not delivering(), timeout=TIMEOUT)

    try:
        for _ in range(3):
            run_once()
        # the last one's, kept until the next handler comes or goes; the others' are let go
        assert [d.handler._controller.name for d in multi._retired] == ["restarted"]
    finally:
        factory.shutdown()


def test_handlers_added_and_removed_leave_no_threads_behind(api_client: Any, ctx: Any) -> None:
    """An informer kept the thread of every handler ever added to it, to join at stop: one
    more per controller started and stopped on a long-lived informer (about 2 KiB each)."""
    factory = DynamicSharedInformerFactory(api_client)
    informer = factory.for_resource(CONFIGMAPS).informer()
    factory.start(ctx)
    assert all(factory.wait_for_cache_sync(ctx).values())

    def handler_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("kinformer-handler-")]

    kept = []
    try:
        for _ in range(5):
            registration = informer.add_event_handler(Recorder())
            [thread] = handler_threads()
            kept.append(weakref.ref(thread))
            informer.remove_event_handler(registration)
            del thread, registration
            assert wait_for(lambda: not handler_threads(), timeout=TIMEOUT)
        informer.add_event_handler(Recorder())
        gc.collect()
        assert [ref() for ref in kept] == [None] * 5
    finally:
        factory.shutdown()
