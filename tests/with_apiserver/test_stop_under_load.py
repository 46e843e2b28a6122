"""Stopping under load: an informer with a deep backlog, or a stuck handler, still stops promptly.

Ten thousand objects arrive on an open watch while a slow handler works through them one at a
time; stopping drops the backlog instead of delivering it. A handler that never returns is
named in a warning and left behind rather than waited for.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import CONFIGMAPS, cm, running

from kinformer import _threads, processor
from kinformer.client.listwatch import ListWatch
from kinformer.context import Context
from kinformer.handlers import ResourceEventHandlerFuncs
from kinformer.informer import SharedIndexInformer
from kinformer.testing import FakeAPIServer, wait_for

EVENTS = 10_000
STOP_DEADLINE = 2.0  # run() must have returned this long after stop
TIMEOUT = 10.0


def configmaps(count: int) -> Iterator[dict[str, Any]]:
    for i in range(count):
        yield cm(f"cm-{i}", None, "default", data={"v": str(i)})


class Gate:
    """A handler that blocks on ``release`` (for at most ``hold`` seconds) in every callback."""

    def __init__(self, hold: float | None) -> None:
        self.hold = hold
        self.release = threading.Event()
        self.entered = threading.Event()
        self.calls = 0

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.calls += 1
        self.entered.set()
        self.release.wait(self.hold)

    def on_update(self, old: Any, new: Any) -> None:
        self.on_add(new, False)

    def on_delete(self, obj: Any) -> None:
        self.on_add(obj, False)


def test_stop_with_ten_thousand_events_in_flight_returns_within_two_seconds(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    informer = SharedIndexInformer(ListWatch.for_resource(api_client, CONFIGMAPS), name="load")
    slow = Gate(hold=0.01)
    registration = informer.add_event_handler(slow)
    delivered = threading.Event()

    def on_add(obj: Any) -> None:
        if obj["metadata"]["name"] == f"cm-{EVENTS - 1}":
            delivered.set()

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=on_add))
    with running(informer.run, deadline=STOP_DEADLINE):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        apiserver.bulk_create(CONFIGMAPS, configmaps(EVENTS))
        assert delivered.wait(TIMEOUT), "the fast handler never saw the last object"
        assert registration.pending() > EVENTS // 2, "the slow handler has no backlog to drop"
    assert slow.calls < EVENTS // 2
    assert not [t.name for t in _threads.kinformer_threads() if t.name.endswith(("-load", "-load-1"))]


def test_stop_with_events_still_on_the_watch_returns_within_two_seconds(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    informer = SharedIndexInformer(ListWatch.for_resource(api_client, CONFIGMAPS), name="flood")
    slow = Gate(hold=0.01)
    registration = informer.add_event_handler(slow)
    with running(informer.run, deadline=STOP_DEADLINE):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        apiserver.bulk_create(CONFIGMAPS, configmaps(EVENTS))
        assert wait_for(lambda: registration.pending() > 100, TIMEOUT)
    assert slow.calls < EVENTS


def test_a_handler_stuck_forever_is_named_in_a_warning_and_not_waited_for(
    apiserver: FakeAPIServer, api_client: Any, caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the bounded wait for handlers after stop is 5 s; half a second shows the same thing
    monkeypatch.setattr(processor, "LISTENER_JOIN_TIMEOUT", 0.5)
    apiserver.create(CONFIGMAPS, next(configmaps(1)))
    informer = SharedIndexInformer(ListWatch.for_resource(api_client, CONFIGMAPS), name="stuck")
    stuck = Gate(hold=None)
    informer.add_event_handler(stuck)
    stop = Context()
    thread = threading.Thread(target=informer.run, args=(stop,), name="test-informer-run")
    thread.start()
    try:
        assert stuck.entered.wait(TIMEOUT)
        with caplog.at_level(logging.WARNING):
            stop.cancel()
            thread.join(TIMEOUT)
            assert not thread.is_alive(), "run() waited for a stuck handler"
        stuck_threads = [t for t in _threads.kinformer_threads() if t.name.startswith(
            "kinformer-handler-stuck-")]
        assert len(stuck_threads) == 1
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any(stuck_threads[0].name in w and "still running" in w for w in warnings), warnings
    finally:
        stuck.release.set()
        stop.cancel()
        thread.join(TIMEOUT)
