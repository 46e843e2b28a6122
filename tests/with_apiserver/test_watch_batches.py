"""A watch read a socket read at a time: what one read holds reaches the cache as one event at a
time would.

The server answers the watch with a body the test writes (``FakeAPIServer.corrupt_next``): events
split over many reads, a malformed line or an ERROR after good events in one read, bookmarks
among changes, a WatchList stream whose initial events end in the middle of a read. The informer
lists and watches through the official client; its clock is a FakeClock, so after a broken watch
nothing moves until the test steps past the backoff.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import helpers
import pytest
from helpers import CONFIGMAPS, Running, cm

from kinformer import errors
from kinformer.cache.store import Indexer
from kinformer.client.listerwatcher import INITIAL_EVENTS_END_ANNOTATION
from kinformer.client.listwatch import ListWatch
from kinformer.reflector.reflector import Reflector
from kinformer.testing import FakeAPIServer, FakeClock, Recorder, wait_for

TIMEOUT = 5.0
BACKOFF_STEP = 2.0  # fake seconds past any first backoff


def event(kind: str, name: str, rv: int, payload: str = "") -> bytes:
    obj = {"kind": "ConfigMap", "apiVersion": "v1", "data": {"v": str(rv), "payload": payload},
           "metadata": {"name": name, "namespace": "default", "resourceVersion": str(rv)}}
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def bookmark(rv: int, initial_end: bool = False) -> bytes:
    metadata: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        metadata["annotations"] = {INITIAL_EVENTS_END_ANNOTATION: "true"}
    obj = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": metadata}
    return json.dumps({"type": "BOOKMARK", "object": obj}).encode() + b"\n"


def error_event(code: int, reason: str) -> bytes:
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
              "reason": reason, "message": f"{reason} for this test"}
    return json.dumps({"type": "ERROR", "object": status}).encode() + b"\n"


@pytest.fixture
def running(apiserver: FakeAPIServer, api_client: Any) -> Iterator[Running]:
    """A modern informer (RealFIFO) over HTTP recording every notification; started by the test."""
    run = Running(apiserver, api_client, Recorder(), "batches", start=False)
    try:
        yield run
    finally:
        run.stop()


def start(running: Running) -> Recorder:
    """Start ``running`` and wait until it synced; its Recorder."""
    running.start()
    assert running.informer.wait_for_sync(timeout=TIMEOUT)
    recorder: Recorder = running.handler
    return recorder


def test_events_split_across_many_reads_all_arrive_in_order(
    running: Running, apiserver: FakeAPIServer
) -> None:
    base = int(apiserver.current_resource_version())
    payload = "x" * 3000  # about 3 KB a line: the body takes several reads, cut mid-line
    lines = [event("ADDED", f"cm-{i}", base + 1 + i, payload) for i in range(100)]
    lines += [event("MODIFIED", f"cm-{i % 100}", base + 101 + i, payload) for i in range(200)]
    apiserver.corrupt_next(b"".join(lines), verb="watch", resource="configmaps")
    recorder = start(running)
    expected: list[tuple[Any, ...]] = [("add", f"cm-{i}{base + 1 + i}", False) for i in range(100)]
    # each update names the version it replaced, written 100 versions before its own
    expected += [("update", f"cm-{i % 100}{base + 1 + i}", f"cm-{i % 100}{base + 101 + i}")
                 for i in range(200)]
    assert recorder.take(300) == expected


def test_a_malformed_line_mid_read_delivers_the_events_before_it_then_backs_off(
    running: Running, apiserver: FakeAPIServer
) -> None:
    base = int(apiserver.current_resource_version())
    body = (event("ADDED", "a", base + 1) + event("ADDED", "b", base + 2) + b'{"type": "ADDED", "obj\n'
            + event("ADDED", "c", base + 3))
    apiserver.corrupt_next(body, verb="watch", resource="configmaps")
    lists = running.lists()
    recorder = start(running)
    assert isinstance(running.error(), errors.DecodeError), repr(running.errors[0])
    assert recorder.take(2) == [("add", f"a{base + 1}", False), ("add", f"b{base + 2}", False)]
    assert running.informer.last_sync_resource_version() == str(base + 2)
    assert running.relisted(lists, BACKOFF_STEP)  # only after the backoff: then the server's (empty) state
    assert recorder.take(2) == [("delete", "DFSU(default/a)"), ("delete", "DFSU(default/b)")]
    assert recorder.quiet()


def test_an_event_type_that_is_not_a_string_mid_read_is_a_decode_error(
    running: Running, apiserver: FakeAPIServer
) -> None:
    base = int(apiserver.current_resource_version())
    odd = json.loads(event("ADDED", "b", base + 2))
    odd["type"] = ["ADDED"]
    body = event("ADDED", "a", base + 1) + json.dumps(odd).encode() + b"\n"
    apiserver.corrupt_next(body, verb="watch", resource="configmaps")
    start(running)
    error = running.error()
    assert isinstance(error, errors.DecodeError), repr(error)
    assert "unknown event type" in str(error)
    assert running.informer.last_sync_resource_version() == str(base + 1)


def test_an_expired_error_after_good_events_in_one_read_delivers_them_then_relists(
    running: Running, apiserver: FakeAPIServer
) -> None:
    base = int(apiserver.current_resource_version())
    body = (event("ADDED", "a", base + 1) + event("MODIFIED", "a", base + 2)
            + error_event(410, "Expired") + event("ADDED", "c", base + 3))
    apiserver.corrupt_next(body, verb="watch", resource="configmaps")
    lists = running.lists()
    recorder = start(running)
    error = running.error()
    assert errors.is_expired(error), repr(error)
    assert running.relisted(lists, BACKOFF_STEP)
    assert recorder.take(3) == [
        ("add", f"a{base + 1}", False), ("update", f"a{base + 1}", f"a{base + 2}"),
        ("delete", "DFSU(default/a)")]
    assert recorder.quiet()


def test_bookmarks_among_changes_in_one_read_move_the_version_in_order(
    running: Running, apiserver: FakeAPIServer
) -> None:
    base = int(apiserver.current_resource_version())
    body = (event("ADDED", "a", base + 1) + bookmark(base + 2) + event("ADDED", "b", base + 3)
            + bookmark(base + 7) + b"not json\n")
    apiserver.corrupt_next(body, verb="watch", resource="configmaps")
    recorder = start(running)
    error = running.error()  # the line after: the watch stops there
    assert isinstance(error, errors.DecodeError), repr(error)
    assert running.informer.last_sync_resource_version() == str(base + 7)
    assert recorder.take(2) == [("add", f"a{base + 1}", False), ("add", f"b{base + 3}", False)]
    assert recorder.quiet()
    indexer = running.informer.get_indexer()
    assert wait_for(lambda: indexer.last_store_sync_resource_version() == str(base + 7), TIMEOUT)


def test_a_watch_list_read_holding_the_end_of_the_initial_events_applies_what_follows(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    base = int(apiserver.current_resource_version())
    apiserver.create(CONFIGMAPS, cm("unseen", None, "default"))  # the server's; not in the body
    body = (event("ADDED", "a", base + 1) + event("ADDED", "b", base + 2)
            + bookmark(base + 2, initial_end=True) + event("MODIFIED", "a", base + 3)
            + event("DELETED", "b", base + 4) + b"not json\n")
    apiserver.corrupt_next(body, verb="watch", resource="configmaps")
    store = Indexer()
    failures: list[BaseException] = []
    reflector = Reflector(ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"),
                          store, name="configmaps", clock=FakeClock(), use_watch_list=True,
                          watch_error_handler=lambda r, e: failures.append(e))
    with helpers.running(reflector.run):
        assert wait_for(lambda: failures, TIMEOUT)
        assert isinstance(failures[0], errors.DecodeError), repr(failures[0])
        assert {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in store.list()} == {
            "a": str(base + 3)}
        assert reflector.last_sync_resource_version() == str(base + 4)
