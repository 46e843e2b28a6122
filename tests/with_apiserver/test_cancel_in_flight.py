"""Stopping breaks off a list or watch start the server holds before answering.

The server sits on the request for far longer than the test may take; the informer's ``run``
must still return soon after the stop, with no reflector thread left, over plain HTTP and over
HTTPS with a DynamicClient, and the client's connection pool must serve the next request.
"""

from __future__ import annotations

import threading
from typing import Any

import kubernetes
import pytest
from helpers import CONFIGMAPS, running

from kinformer import _json, errors
from kinformer.client.listerwatcher import ListOptions
from kinformer.client.listwatch import ListWatch
from kinformer.context import Context
from kinformer.informer import SharedIndexInformer
from kinformer.testing import FakeAPIServer

HOLD = 30.0  # how long the server sits on the held request; far beyond the deadline below
STOP_DEADLINE = 5.0  # run() must have returned this long after stop
TIMEOUT = 10.0


class Announcing:
    """The HTTP ListerWatcher, announcing each list and watch start just before sending it."""

    def __init__(self, inner: ListWatch) -> None:
        self.inner = inner
        self.listing = threading.Event()
        self.list_ctx: Context | None = None  # what the last list was given
        self.watching = threading.Event()

    def list(self, options: ListOptions, ctx: Context | None = None) -> Any:
        self.list_ctx = ctx
        self.listing.set()
        return self.inner.list(options, ctx=ctx)

    def watch(self, options: ListOptions, ctx: Context | None = None) -> Any:
        self.watching.set()
        return self.inner.watch(options, ctx=ctx)


def reflector_threads() -> list[str]:
    """Names of the live reflector threads."""
    return [t.name for t in threading.enumerate() if t.name.startswith("kinformer-reflector")]


def test_stop_breaks_off_a_list_the_server_holds(apiserver: FakeAPIServer, api_client: Any) -> None:
    apiserver.set_delay(HOLD, verb="list")
    lw = Announcing(ListWatch.for_resource(api_client, CONFIGMAPS))
    informer = SharedIndexInformer(lw, name="held")
    with running(informer.run, deadline=STOP_DEADLINE):
        assert lw.listing.wait(TIMEOUT)
    assert reflector_threads() == []


def test_stop_breaks_off_a_watch_start_the_server_holds(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    apiserver.set_delay(HOLD, verb="watch")
    lw = Announcing(ListWatch.for_resource(api_client, CONFIGMAPS))
    informer = SharedIndexInformer(lw, name="held")
    with running(informer.run, deadline=STOP_DEADLINE):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert lw.watching.wait(TIMEOUT)
    assert reflector_threads() == []


def test_the_client_lists_normally_after_a_cancelled_list(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    apiserver.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "default"}})
    apiserver.set_delay(HOLD, verb="list")
    lw = ListWatch.for_resource(api_client, CONFIGMAPS)
    ctx = Context()
    outcome: list[BaseException] = []

    def held_list() -> None:
        try:
            lw.list(ListOptions(), ctx=ctx)
        except Exception as exc:
            outcome.append(exc)

    lister = threading.Thread(target=held_list, name="test-held-list")
    lister.start()
    ctx.cancel()
    lister.join(STOP_DEADLINE)
    assert not lister.is_alive()
    assert len(outcome) == 1
    apiserver.set_delay(0, verb="list")
    for _ in range(3):  # more lists than the pool could hand out broken connections
        names = [obj["metadata"]["name"] for obj in lw.list(ListOptions()).items]
        assert names == ["a"]


@pytest.mark.parametrize("verb", ["list", "watch"])
def test_stop_breaks_off_a_held_request_over_https_through_a_dynamic_client(verb: str) -> None:
    with FakeAPIServer(token="s3cret", bookmark_interval=0.2) as server:
        api = server.api_client()
        try:
            dynamic = kubernetes.dynamic.DynamicClient(api)  # type: ignore[no-untyped-call]
            server.set_delay(HOLD, verb=verb)
            lw = Announcing(ListWatch.for_resource(dynamic, CONFIGMAPS))
            informer = SharedIndexInformer(lw, name="held")
            with running(informer.run, deadline=STOP_DEADLINE):
                assert (lw.listing if verb == "list" else lw.watching).wait(TIMEOUT)
            assert reflector_threads() == []
        finally:
            api.close()


def test_a_stop_breaks_off_the_decode_of_a_big_list(apiserver: FakeAPIServer, api_client: Any) -> None:
    # a list of several decode chunks; the stop comes once the body is read, as it is decoded
    apiserver.preload(CONFIGMAPS, ({"metadata": {"name": f"cm-{i}", "namespace": "default"},
                                    "data": {"k": "v" * 300}} for i in range(20_000)))
    lw = ListWatch.for_resource(api_client, CONFIGMAPS)
    ctx = Context()
    with _json.before_bulk_decodes(ctx.cancel), pytest.raises(errors.TransportError, match="cancelled"):
        lw.list(ListOptions(), ctx=ctx)
    assert len(lw.list(ListOptions()).items) == 20_000  # the next list is whole


def test_cancelling_the_run_context_cancels_the_list_in_flight_as_it_is_cancelled(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    # not once the informer's thread wakes up to stop its reflector: on a busy interpreter that
    # can be long after, and meanwhile the list goes on (a big one decoding, holding the lock)
    apiserver.set_delay(HOLD, verb="list")
    lw = Announcing(ListWatch.for_resource(api_client, CONFIGMAPS))
    informer = SharedIndexInformer(lw, name="held")
    stop = Context()
    with running(informer.run, stop, deadline=STOP_DEADLINE):
        assert lw.listing.wait(TIMEOUT)
        assert lw.list_ctx is not None and not lw.list_ctx.cancelled()
        stop.cancel()
        assert lw.list_ctx.cancelled()
    assert reflector_threads() == []
