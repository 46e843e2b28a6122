"""Bad input from the server: each is a logged, typed error, a relist after backoff, and a clean cache.

Broken answers come over real HTTP from FakeAPIServer's fault switches: lines that are not
JSON, objects without a name, unknown event types, ERROR events other than 410, a stream cut in
the middle of a line, and list bodies that are not JSON or not a list. The informer's clock is
a FakeClock, so the backoff before the relist is visible: no list request is made until the
test steps the clock.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import helpers
import pytest
from helpers import CONFIGMAPS, cm

from kinformer import errors
from kinformer.cache.store import DeletedFinalStateUnknown
from kinformer.testing import FakeAPIServer, wait_for

TIMEOUT = 5.0
BACKOFF_STEP = 2.0  # seconds of fake time past the first backoff (0.8 s, jittered below 1.6 s)
NO_HOT_LOOP = 0.1  # real seconds during which the stopped fake clock must see no relist


def line(event: dict[str, Any]) -> bytes:
    return json.dumps(event).encode()


GHOST = {"kind": "ConfigMap", "apiVersion": "v1",
         "metadata": {"name": "ghost", "namespace": "default", "resourceVersion": "99999"}}


class Tracker:
    """Every object a handler was told about, by name."""

    def __init__(self) -> None:
        self.keys: set[str] = set()

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.keys.add(obj["metadata"]["name"])

    def on_update(self, old: Any, new: Any) -> None:
        self.keys.add(new["metadata"]["name"])

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.keys.add(obj.key.split("/")[-1])
        else:
            self.keys.add(obj["metadata"]["name"])


class Running(helpers.Running):
    """The informer over HTTP on a FakeClock with a Tracker, and what this file asks of it."""

    def __init__(self, server: FakeAPIServer, client: Any) -> None:
        self.tracker = Tracker()
        super().__init__(server, client, self.tracker, "bad-input")

    def cache(self) -> dict[str, str]:
        return {o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                for o in self.informer.get_indexer().list()}

    def server_state(self) -> dict[str, str]:
        return {o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                for o in self.server.list_objects(CONFIGMAPS, "default")}

    def relists_only_after_the_backoff(self) -> None:
        """The reflector waits on the clock and lists nothing until the backoff is stepped past."""
        assert self.clock.wait_for_waiters(1, TIMEOUT), "no backoff wait"
        lists = self.lists()
        self.server.create(CONFIGMAPS, cm("while-backing-off", None, "default"))
        assert not wait_for(lambda: self.lists() > lists, NO_HOT_LOOP), "relisted without backing off"
        self.clock.step(BACKOFF_STEP)
        assert wait_for(lambda: self.lists() > lists, TIMEOUT), "never relisted"
        assert wait_for(lambda: self.cache() == self.server_state(), TIMEOUT), (
            self.cache(), self.server_state())


@pytest.fixture
def running(apiserver: FakeAPIServer, api_client: Any) -> Iterator[Running]:
    run = Running(apiserver, api_client)
    try:
        yield run
    finally:
        run.stop()


def kinformer_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.WARNING and r.name.startswith("kinformer.")]


WATCH_FAULTS: dict[str, tuple[Callable[[FakeAPIServer], int], type[BaseException], str]] = {
    "a line that is not JSON": (
        lambda s: s.inject_watch_garbage(b'{"type": "ADDED", "object": {"metad'),
        errors.DecodeError, "malformed line"),
    "an object without metadata": (
        lambda s: s.inject_watch_garbage(line({"type": "ADDED", "object": {"kind": "ConfigMap"}})),
        errors.DecodeError, "no metadata.name"),
    "an object without a name": (
        lambda s: s.inject_watch_garbage(line({"type": "MODIFIED", "object": {
            "kind": "ConfigMap", "metadata": {"namespace": "default", "resourceVersion": "7"}}})),
        errors.DecodeError, "no metadata.name"),
    "an object whose name is not a string": (
        lambda s: s.inject_watch_garbage(line({"type": "ADDED", "object": {
            "kind": "ConfigMap", "metadata": {"name": ["ghost"], "namespace": "default",
                                              "resourceVersion": "7"}}})),
        errors.DecodeError, "metadata.name"),
    "a bookmark whose resourceVersion is not a string": (
        lambda s: s.inject_watch_garbage(line({"type": "BOOKMARK", "object": {
            "kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": {"rv": 7}}}})),
        errors.DecodeError, "resourceVersion"),
    "an object whose resourceVersion is not a string": (
        lambda s: s.inject_watch_garbage(line({"type": "MODIFIED", "object": {
            "kind": "ConfigMap", "metadata": {"name": "before", "namespace": "default",
                                              "resourceVersion": ["7"]}}})),
        errors.DecodeError, "resourceVersion"),
    "an unknown event type": (
        lambda s: s.inject_watch_garbage(line({"type": "EXPLODED", "object": GHOST})),
        errors.DecodeError, "unknown event type"),
    "an ERROR event with a 500 status": (
        lambda s: s.inject_watch_garbage(line({"type": "ERROR", "object": {
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500,
            "reason": "InternalError", "message": "etcd is unhappy"}})),
        errors.ServerError, "etcd is unhappy"),
}


@pytest.mark.parametrize("fault", list(WATCH_FAULTS))
def test_a_broken_watch_is_a_logged_typed_error_then_a_relist_after_backoff(
    running: Running, apiserver: FakeAPIServer, caplog: pytest.LogCaptureFixture, fault: str
) -> None:
    inject, error_type, words = WATCH_FAULTS[fault]
    apiserver.create(CONFIGMAPS, cm("before", None, "default"))
    assert running.informer.wait_for_sync(timeout=TIMEOUT)
    assert apiserver.wait_for_watchers(CONFIGMAPS, 1, TIMEOUT)
    with caplog.at_level(logging.WARNING):
        assert inject(apiserver) == 1
        error = running.error()
        assert isinstance(error, error_type), repr(error)
        assert running.informer.last_error() is error
        assert wait_for(lambda: any(words in w for w in kinformer_warnings(caplog)), TIMEOUT), (
            kinformer_warnings(caplog))
    assert running.cache() == running.server_state()
    running.relists_only_after_the_backoff()
    assert running.informer.last_error() is None
    assert wait_for(lambda: running.tracker.keys == {"before", "while-backing-off"}, TIMEOUT), (
        running.tracker.keys)


def test_an_event_without_a_resource_version_is_stored_and_the_watch_resumes_where_it_was(
    running: Running, apiserver: FakeAPIServer
) -> None:
    # client-go would resume from "" (every object again as ADDED); kinformer keeps the last
    # version it was given
    apiserver.create(CONFIGMAPS, cm("before", None, "default"))
    assert running.informer.wait_for_sync(timeout=TIMEOUT)
    assert apiserver.wait_for_watchers(CONFIGMAPS, 1, TIMEOUT)
    held = running.informer.last_sync_resource_version()
    unversioned = {"type": "ADDED", "object": {"kind": "ConfigMap", "apiVersion": "v1",
                                               "metadata": {"name": "plain", "namespace": "default"}}}
    assert apiserver.inject_watch_garbage(line(unversioned)) == 1
    assert wait_for(lambda: "plain" in running.tracker.keys, TIMEOUT)
    assert running.informer.last_sync_resource_version() == held
    def watches() -> list[dict[str, str]]:
        return [q for _method, _path, q, _code in apiserver.requests if q.get("watch") == "true"]

    lists, opened = running.lists(), len(watches())
    assert apiserver.end_watches() == 1
    assert wait_for(lambda: len(watches()) > opened, TIMEOUT)
    assert watches()[-1]["resourceVersion"] == held
    assert running.lists() == lists
    assert running.informer.last_error() is None


def test_a_resource_version_the_server_cannot_take_back_is_relisted_past(
    running: Running, apiserver: FakeAPIServer
) -> None:
    apiserver.create(CONFIGMAPS, cm("before", None, "default"))
    assert running.informer.wait_for_sync(timeout=TIMEOUT)
    assert apiserver.wait_for_watchers(CONFIGMAPS, 1, TIMEOUT)
    odd = {"type": "ADDED", "object": {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {
        "name": "odd", "namespace": "default", "resourceVersion": "not-a-version"}}}
    assert apiserver.inject_watch_garbage(line(odd)) == 1
    assert wait_for(lambda: running.informer.last_sync_resource_version() == "not-a-version", TIMEOUT)
    assert apiserver.end_watches() == 1  # the watch resumes at that version: 400
    error = running.error()
    assert isinstance(error, errors.BadRequestError), repr(error)
    running.relists_only_after_the_backoff()  # at that version (400 again), then at the current one
    assert "odd" not in running.cache()
    assert running.informer.last_sync_resource_version().isdigit()


LIST_BODIES = {
    "a list body that is not JSON": (b"<html>502 Bad Gateway</html>", "not JSON"),
    "a list body that is not a list": (line({"kind": "Status", "metadata": {}}), "not a list"),
    "a list holding an object without a name": (line({
        "kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "99999"},
        "items": [GHOST, {"metadata": {"namespace": "default"}}]}), "no metadata.name"),
    "a list holding an object whose name is not a string": (line({
        "kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "99999"},
        "items": [GHOST, {"metadata": {"name": {"ghost": 1}, "namespace": "default"}}]}),
        "metadata.name"),
    "a list holding an item that is not an object": (line({
        "kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "99999"},
        "items": [GHOST, "ghost"]}), "expected an object"),
    "a list holding an object whose metadata is a list": (line({
        "kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "99999"},
        "items": [GHOST, {"metadata": [{"name": "ghost"}]}]}), "no metadata.name"),
    "a list holding an object whose name is empty": (line({
        "kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "99999"},
        "items": [GHOST, {"metadata": {"name": "", "namespace": "default"}}]}),
        "no metadata.name"),
    "a list holding an object whose namespace is not a string": (line({
        "kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "99999"},
        "items": [GHOST, {"metadata": {"name": "a", "namespace": ["default"]}}]}),
        "metadata.namespace is not a string"),
    "a list holding an object whose resourceVersion is not a string": (line({
        "kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "99999"},
        "items": [GHOST, {"metadata": {"name": "a", "namespace": "default", "resourceVersion": 7}}]}),
        "metadata.resourceVersion is not a string"),
    "a list whose metadata is not an object": (line({
        "kind": "ConfigMapList", "apiVersion": "v1", "metadata": "99999", "items": [GHOST]}),
        "metadata"),
}


@pytest.mark.parametrize("verb", ["list", "watch"])
def test_a_429_is_waited_out_for_at_least_its_retry_after(
    apiserver: FakeAPIServer, api_client: Any, verb: str
) -> None:
    # kube-apiserver's 429 names the seconds to wait (Retry-After); clients wait at least that
    apiserver.fail_next(1, 429, verb=verb, resource="configmaps", retry_after=30)
    run = Running(apiserver, api_client)
    try:
        error = run.error()
        assert isinstance(error, errors.TooManyRequestsError) and error.retry_after == 30.0
        assert run.clock.wait_for_waiters(1, TIMEOUT), "no backoff wait"
        assert max(run.clock.waiters()) >= 30.0  # not the backoff's first second

        def asked() -> int:  # requests of the verb that got the 429
            watching = verb == "watch"
            return sum(1 for _, path, query, _ in apiserver.requests
                       if path.endswith("/configmaps") and (query.get("watch") == "true") == watching)

        before = asked()
        run.clock.step(29.0)
        assert not wait_for(lambda: asked() > before, NO_HOT_LOOP), "asked again before Retry-After"
        run.clock.step(1.0)
        assert wait_for(lambda: asked() > before, TIMEOUT)
        assert run.informer.wait_for_sync(timeout=TIMEOUT)
    finally:
        run.stop()


def test_a_list_whose_items_are_null_is_an_empty_list(
    apiserver: FakeAPIServer, api_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # Go's encoder writes a nil slice as null: an empty list, as client-go reads it
    apiserver.create(CONFIGMAPS, cm("before", None, "default"))
    apiserver.corrupt_next(line({"kind": "ConfigMapList", "apiVersion": "v1",
                                 "metadata": {"resourceVersion": "1"}, "items": None}),
                           verb="list", resource="configmaps")
    with caplog.at_level(logging.WARNING):
        run = Running(apiserver, api_client)
        try:
            assert run.informer.wait_for_sync(timeout=TIMEOUT)
            assert run.informer.last_error() is None and kinformer_warnings(caplog) == []
            # nothing was there as of version 1: the watch from it brings what came after
            assert wait_for(lambda: set(run.cache()) == {"before"}, TIMEOUT), run.cache()
        finally:
            run.stop()


@pytest.mark.parametrize("body", list(LIST_BODIES))
def test_a_broken_list_is_a_logged_decode_error_and_nothing_of_it_is_cached(
    apiserver: FakeAPIServer, api_client: Any, caplog: pytest.LogCaptureFixture, body: str
) -> None:
    data, words = LIST_BODIES[body]
    apiserver.create(CONFIGMAPS, cm("before", None, "default"))
    apiserver.corrupt_next(data, verb="list", resource="configmaps")
    with caplog.at_level(logging.WARNING):
        run = Running(apiserver, api_client)
        try:
            error = run.error()
            assert isinstance(error, errors.DecodeError), repr(error)
            assert run.informer.last_error() is error
            assert any(words in w for w in kinformer_warnings(caplog)), kinformer_warnings(caplog)
            assert not run.informer.has_synced() and run.cache() == {}
            run.relists_only_after_the_backoff()
            assert run.informer.has_synced() and run.informer.last_error() is None
            assert wait_for(lambda: run.tracker.keys == {"before", "while-backing-off"}, TIMEOUT), (
                run.tracker.keys)
        finally:
            run.stop()
