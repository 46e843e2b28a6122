"""Reflector against a scripted ListerWatcher and a fake clock: client-go's request sequences.

The ListerWatcher is a real ``ListWatch`` whose two functions hand every request to the test
and block until the test answers it, so each test reads as the exact sequence of requests the
reflector sends: the first list and watch, relists, re-watches and backoff, pagination, the
WatchList initial sync and the resync timer, with the backoff waits visible on the FakeClock.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import clock_waits, cm, names, running, step_when_waiting
from kubernetes.client import V1ConfigMap, V1ObjectMeta

from kinformer import errors
from kinformer.cache.delta_fifo import DeltaFIFO, DeltaType
from kinformer.cache.store import Indexer
from kinformer.client.listerwatcher import ListOptions, ListResult, WatchEvent
from kinformer.client.listwatch import ListWatch
from kinformer.context import Context
from kinformer.reflector import watch_list
from kinformer.reflector.reflector import Reflector
from kinformer.testing import ChannelWatch
from kinformer.testing.clock import FakeClock
from kinformer.testing.waiting import wait_for

TIMEOUT = 5.0


def bookmark(rv: str, end: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"resourceVersion": rv}
    if end:
        metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


def status(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason}


class Script:
    """Hands each list/watch request to the test and blocks until the test answers it."""

    def __init__(self) -> None:
        self.requests: queue.Queue[tuple[str, ListOptions]] = queue.Queue()
        self.answers: queue.Queue[Any] = queue.Queue()
        self.closed = threading.Event()
        self.lister_watcher = ListWatch(self._list, self._watch)

    def _answer(self, verb: str, options: ListOptions) -> Any:
        self.requests.put((verb, options))
        while not self.closed.is_set():
            try:
                answer = self.answers.get(timeout=0.05)
            except queue.Empty:
                continue
            if isinstance(answer, BaseException):
                raise answer
            return answer
        raise ConnectionRefusedError("script closed")

    def _list(self, options: ListOptions) -> ListResult:
        result: ListResult = self._answer("list", options)
        return result

    def _watch(self, options: ListOptions) -> ChannelWatch:
        watch: ChannelWatch = self._answer("watch", options)
        return watch

    def expect(self, verb: str) -> ListOptions:
        """The next request, which must be a ``verb``."""
        got, options = self.requests.get(timeout=TIMEOUT)
        assert got == verb, f"expected a {verb} request, got {got} {options}"
        return options

    def answer(self, answer: Any) -> None:
        self.answers.put(answer)

    def list_and_answer(self, items: list[Any], rv: str) -> ListOptions:
        options = self.expect("list")
        self.answer(ListResult(items, rv))
        return options

    def watch_and_answer(self) -> tuple[ListOptions, ChannelWatch]:
        options = self.expect("watch")
        watch = ChannelWatch()
        self.answer(watch)
        return options, watch

    def no_request_yet(self) -> bool:
        return self.requests.empty()


class Harness:
    def __init__(self, store: Any = None, **kwargs: Any) -> None:
        self.clock = FakeClock()
        self.script = Script()
        self.store = store if store is not None else Indexer()
        kwargs.setdefault("random", lambda: 0.0)
        self.reflector = Reflector(
            self.script.lister_watcher, self.store, name="test", clock=self.clock, **kwargs
        )
        self.ctx = Context()
        self.thread = threading.Thread(target=self.reflector.run, args=(self.ctx,), name="test-run")

    def start(self) -> Harness:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.ctx.cancel()
        self.script.closed.set()
        self.thread.join(TIMEOUT)
        assert not self.thread.is_alive(), "run did not return after stop"


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = Harness()
    yield h.start()
    h.stop()


def rv_of(store: Indexer, key: str) -> str:
    obj = store.get_by_key(key)
    assert obj is not None, f"{key} not in the store"
    return str(obj["metadata"]["resourceVersion"])


def test_first_list_is_at_zero_and_the_watch_starts_at_the_list_version(harness: Harness) -> None:
    listed = harness.script.list_and_answer([cm("a", "90"), cm("b", "95")], "100")
    assert listed.resource_version == "0"
    assert listed.limit == 500
    options, _watch = harness.script.watch_and_answer()
    assert options.resource_version == "100"
    assert options.allow_watch_bookmarks is True
    assert options.timeout_seconds is not None and 300 <= options.timeout_seconds < 600
    assert names(harness.store.list()) == ["a", "b"]
    assert harness.store.last_store_sync_resource_version() == "100"
    assert harness.reflector.last_sync_resource_version() == "100"
    assert harness.reflector.has_synced_once()


def test_listed_objects_without_a_name_are_logged_and_left_out_of_the_store(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    nameless = {"metadata": {"namespace": "ns", "resourceVersion": "91"}}
    blank = cm("", "92")
    with caplog.at_level(logging.WARNING, logger="kinformer"):
        harness.script.list_and_answer([cm("a", "90"), nameless, blank, cm("b", "95")], "100")
        harness.script.watch_and_answer()
    assert names(harness.store.list()) == ["a", "b"]
    assert "2 listed objects without metadata.name; skipped" in caplog.text


def test_listed_model_objects_are_kept_by_name_and_a_name_that_is_not_a_string_is_skipped(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    named = V1ConfigMap(metadata=V1ObjectMeta(name="model", namespace="ns", resource_version="91"))
    unnamed = V1ConfigMap(metadata=V1ObjectMeta(namespace="ns", resource_version="92"))
    numbered = {"metadata": {"name": 5, "namespace": "ns", "resourceVersion": "93"}}
    with caplog.at_level(logging.WARNING, logger="kinformer"):
        harness.script.list_and_answer([cm("a", "90"), named, unnamed, numbered], "100")
        harness.script.watch_and_answer()
    assert sorted(harness.store.list_keys()) == ["ns/a", "ns/model"]
    assert "2 listed objects without metadata.name; skipped" in caplog.text


def test_watch_events_without_a_name_metadata_or_known_type_are_skipped_and_keep_the_version(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    harness.script.list_and_answer([], "100")
    _options, watch = harness.script.watch_and_answer()
    with caplog.at_level(logging.WARNING, logger="kinformer"):
        watch.add(cm("a", "103"))
        watch.add({"metadata": {"namespace": "ns", "resourceVersion": "150"}})
        watch.send(WatchEvent("ADDED", "not an object"))
        watch.send(WatchEvent("SHRUG", cm("b", "160")))
        harness.clock.step(2.0)
        watch.end()
        rewatch = harness.script.expect("watch")
    assert rewatch.resource_version == "103"
    assert names(harness.store.list()) == ["a"]
    assert "ADDED event without a name; skipped" in caplog.text
    assert "ADDED event without metadata; skipped" in caplog.text
    assert "SHRUG event of unknown type; skipped" in caplog.text


def test_watch_timeouts_are_randomized_between_min_and_twice_min() -> None:
    h = Harness(random=lambda: 0.999, min_watch_timeout=400.0).start()
    try:
        h.script.list_and_answer([], "1")
        options, _watch = h.script.watch_and_answer()
        assert options.timeout_seconds == 799
    finally:
        h.stop()


def test_watch_events_reach_the_store_and_advance_the_version(harness: Harness) -> None:
    harness.script.list_and_answer([cm("a", "90")], "100")
    _options, watch = harness.script.watch_and_answer()
    watch.add(cm("b", "101"))
    watch.modify(cm("a", "102"))
    watch.delete(cm("b", "103"))
    watch.bookmark(bookmark("110"))
    watch.end()
    options, _next = harness.script.watch_and_answer()
    assert options.resource_version == "110"
    assert names(harness.store.list()) == ["a"]
    assert rv_of(harness.store, "ns/a") == "102"


def test_a_store_error_on_one_event_is_logged_and_the_watch_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def refuse_bad(obj: Any) -> Any:
        if obj["metadata"]["name"] == "bad":
            raise ValueError("cannot transform")
        return obj

    fifo = DeltaFIFO(transformer=refuse_bad)
    h = Harness(store=fifo).start()
    try:
        with caplog.at_level(logging.ERROR, logger="kinformer"):
            h.script.list_and_answer([], "100")
            _options, watch = h.script.watch_and_answer()
            watch.add(cm("bad", "101"))
            watch.add(cm("good", "102"))
            watch.end()
            h.clock.step(2.0)
            assert h.script.expect("watch").resource_version == "102"
        assert fifo.list_keys() == ["ns/good"]
        assert "store failed on ADDED event" in caplog.text
    finally:
        h.stop()


class VersionTakingStore(Indexer):
    """A store that also takes each watched resourceVersion (client-go's ResourceVersionUpdater)."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.versions: list[str] = []
        self.fail = fail

    def update_resource_version(self, rv: str) -> None:
        self.versions.append(rv)
        if self.fail:
            raise RuntimeError("cannot take it")


def test_every_watched_version_reaches_a_store_that_takes_resource_versions() -> None:
    store = VersionTakingStore()
    h = Harness(store=store).start()
    try:
        h.script.list_and_answer([], "100")
        _options, watch = h.script.watch_and_answer()
        watch.add(cm("a", "101"))
        watch.modify(cm("a", "102"))
        watch.bookmark(bookmark("110"))
        assert wait_for(lambda: store.versions == ["101", "102", "110"], TIMEOUT), store.versions
        assert h.reflector.last_sync_resource_version() == "110"
    finally:
        h.stop()


def test_a_store_failing_to_take_a_version_is_logged_and_the_version_still_advances(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = VersionTakingStore(fail=True)
    h = Harness(store=store).start()
    try:
        with caplog.at_level(logging.ERROR, logger="kinformer"):
            h.script.list_and_answer([], "100")
            _options, watch = h.script.watch_and_answer()
            watch.add(cm("a", "101"))
            assert wait_for(lambda: h.reflector.last_sync_resource_version() == "101", TIMEOUT)
            assert wait_for(lambda: "failed to take rv 101" in caplog.text, TIMEOUT)
        assert names(store.list()) == ["a"]
    finally:
        h.stop()


def test_a_clean_close_after_a_second_rewatches_at_the_last_version_without_backoff(
    harness: Harness,
) -> None:
    harness.script.list_and_answer([], "100")
    _options, watch = harness.script.watch_and_answer()
    watch.modify(cm("a", "105"))
    harness.clock.step(2.0)
    watch.end()
    options, _next = harness.script.watch_and_answer()
    assert options.resource_version == "105"
    assert not harness.clock.has_waiters()


def test_a_clean_close_after_a_second_without_events_rewatches_too(harness: Harness) -> None:
    harness.script.list_and_answer([], "100")
    _options, watch = harness.script.watch_and_answer()
    harness.clock.step(1.5)
    watch.end()
    options, _next = harness.script.watch_and_answer()
    assert options.resource_version == "100"


@pytest.mark.parametrize(
    "broken",
    [
        ConnectionResetError(104, "Connection reset by peer"),
        BrokenPipeError(32, "Broken pipe"),
        errors.TransportError("watch configmaps: read timed out after 60s"),
        TimeoutError("timed out"),
    ],
    ids=repr,
)
def test_a_watch_whose_connection_broke_resumes_at_the_last_version_without_a_list(
    harness: Harness, broken: BaseException
) -> None:
    harness.script.list_and_answer([cm("a", "90")], "100")
    _options, watch = harness.script.watch_and_answer()
    watch.modify(cm("a", "105"))
    watch.fail(broken)
    options, _next = harness.script.watch_and_answer()  # a watch, not a list
    assert options.resource_version == "105"
    assert not harness.clock.has_waiters()  # at once, without a backoff
    assert harness.reflector.last_error() is None  # nothing went wrong with the data
    assert rv_of(harness.store, "ns/a") == "105"


def test_a_watch_whose_connection_broke_at_once_without_events_is_very_short(
    harness: Harness,
) -> None:
    harness.script.list_and_answer([], "100")
    _options, watch = harness.script.watch_and_answer()
    watch.fail(ConnectionResetError(104, "Connection reset by peer"))
    assert step_when_waiting(harness.clock) == pytest.approx(0.8)
    assert isinstance(harness.reflector.last_error(), errors.VeryShortWatchError)
    assert harness.script.list_and_answer([], "100").resource_version == "100"


def test_a_line_that_does_not_decode_ends_the_watch_with_a_relist(harness: Harness) -> None:
    harness.script.list_and_answer([], "100")
    _options, watch = harness.script.watch_and_answer()
    watch.modify(cm("a", "105"))
    watch.fail(errors.DecodeError("watch configmaps: malformed line"))
    assert step_when_waiting(harness.clock) == pytest.approx(0.8)
    assert isinstance(harness.reflector.last_error(), errors.DecodeError)
    assert harness.script.list_and_answer([], "105").resource_version == "105"


def test_an_expired_watch_relists_at_the_last_version_then_at_empty_if_that_expired_too(
    harness: Harness,
) -> None:
    harness.script.list_and_answer([cm("a", "90")], "100")
    _options, watch = harness.script.watch_and_answer()
    watch.modify(cm("a", "105"))
    watch.error(status(410, "Expired"))
    assert step_when_waiting(harness.clock) == pytest.approx(0.8)
    relist = harness.script.expect("list")
    assert relist.resource_version == "105"
    assert relist.limit is None  # a list at a real version is served whole from the watch cache
    harness.script.answer(errors.GoneError(410, "Expired", "too old"))
    fresh = harness.script.expect("list")
    assert fresh.resource_version in ("", None)
    assert not harness.clock.has_waiters()
    harness.script.answer(ListResult([cm("c", "300")], "300"))
    options, _watch = harness.script.watch_and_answer()
    assert options.resource_version == "300"
    assert names(harness.store.list()) == ["c"]


def test_a_version_the_server_refuses_is_listed_past_at_the_current_version(
    harness: Harness,
) -> None:
    harness.script.list_and_answer([cm("a", "90")], "100")
    _options, watch = harness.script.watch_and_answer()
    watch.modify(cm("a", "not-a-version"))  # a string, but not one the server takes back
    harness.clock.step(2.0)
    watch.end()
    rewatch = harness.script.expect("watch")
    assert rewatch.resource_version == "not-a-version"
    harness.script.answer(errors.BadRequestError(400, "BadRequest", "invalid resource version"))
    assert step_when_waiting(harness.clock) == pytest.approx(0.8)
    relist = harness.script.expect("list")
    assert relist.resource_version == "not-a-version"
    harness.script.answer(errors.BadRequestError(400, "BadRequest", "invalid resource version"))
    fresh = harness.script.expect("list")  # at once, without a backoff
    assert fresh.resource_version in ("", None)
    harness.script.answer(ListResult([cm("a", "300")], "300"))
    options, _watch = harness.script.watch_and_answer()
    assert options.resource_version == "300"
    assert rv_of(harness.store, "ns/a") == "300"


def test_a_very_short_watch_relists_after_backoff(harness: Harness) -> None:
    harness.script.list_and_answer([], "100")
    _options, watch = harness.script.watch_and_answer()
    watch.end()
    assert step_when_waiting(harness.clock) == pytest.approx(0.8)
    assert isinstance(harness.reflector.last_error(), errors.VeryShortWatchError)
    assert harness.script.list_and_answer([], "100").resource_version == "100"
    harness.script.watch_and_answer()
    assert harness.reflector.last_error() is None


def test_a_refused_watch_start_backs_off_and_watches_again_without_listing(
    harness: Harness,
) -> None:
    harness.script.list_and_answer([], "100")
    harness.script.expect("watch")
    harness.script.answer(errors.ConnectionRefusedAPIError("connection refused"))
    assert step_when_waiting(harness.clock) == pytest.approx(0.8)
    assert harness.script.expect("watch").resource_version == "100"
    harness.script.answer(ChannelWatch())


def test_429_on_watch_start_or_mid_watch_backs_off_and_watches_again(harness: Harness) -> None:
    harness.script.list_and_answer([], "100")
    harness.script.expect("watch")
    harness.script.answer(errors.TooManyRequestsError(429, "TooManyRequests"))
    assert step_when_waiting(harness.clock) == pytest.approx(0.8)
    _options, watch = harness.script.watch_and_answer()
    watch.modify(cm("a", "101"))
    watch.error(status(429, "TooManyRequests"))
    assert step_when_waiting(harness.clock) == pytest.approx(1.6)
    options, _watch = harness.script.watch_and_answer()
    assert options.resource_version == "101"
    assert isinstance(harness.reflector.last_error(), errors.TooManyRequestsError)


def test_backoff_doubles_to_the_cap_while_the_list_keeps_failing(harness: Harness) -> None:
    waits = []
    for _ in range(8):
        harness.script.expect("list")
        harness.script.answer(errors.ServerError(500, "InternalError"))
        waits.append(step_when_waiting(harness.clock))
    assert waits == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0])


def test_backoff_starts_over_after_two_quiet_minutes(harness: Harness) -> None:
    harness.script.expect("list")
    harness.script.answer(errors.ServerError(500, "InternalError"))
    step_when_waiting(harness.clock)
    harness.script.list_and_answer([], "100")
    _options, watch = harness.script.watch_and_answer()
    watch.modify(cm("a", "101"))
    harness.clock.step(121.0)
    watch.error(status(500, "InternalError"))
    assert step_when_waiting(harness.clock) == pytest.approx(0.8)


def test_a_continuation_page_that_expired_falls_back_to_one_full_list(harness: Harness) -> None:
    first = harness.script.expect("list")
    assert (first.resource_version, first.limit) == ("0", 500)
    harness.script.answer(ListResult([cm("a", "1")], "100", "token-1"))
    second = harness.script.expect("list")
    assert second.continue_token == "token-1"
    assert second.resource_version in ("", None)
    harness.script.answer(errors.GoneError(410, "Expired", "continue token expired"))
    full = harness.script.expect("list")
    assert (full.resource_version, full.limit, full.continue_token) == ("0", None, None)
    harness.script.answer(ListResult([cm("a", "1"), cm("b", "2")], "120"))
    assert harness.script.watch_and_answer()[0].resource_version == "120"
    assert names(harness.store.list()) == ["a", "b"]


def test_all_pages_are_stored_with_the_first_pages_version(harness: Harness) -> None:
    harness.script.expect("list")
    harness.script.answer(ListResult([cm("a", "1")], "100", "token-1"))
    harness.script.expect("list")
    harness.script.answer(ListResult([cm("b", "2")], "100", "token-2"))
    harness.script.expect("list")
    harness.script.answer(ListResult([cm("c", "3")], "100", ""))
    assert harness.script.watch_and_answer()[0].resource_version == "100"
    assert names(harness.store.list()) == ["a", "b", "c"]
    assert harness.store.last_store_sync_resource_version() == "100"


def marking(calls: list[str]) -> Any:
    """A transform that records each object's name and version and marks what it returns."""

    def mark(obj: Any) -> Any:
        calls.append(f"{obj['metadata']['name']}{obj['metadata']['resourceVersion']}")
        return {**obj, "marked": True}

    return mark


def test_the_transform_takes_each_page_as_it_comes_and_the_expired_fallbacks_whole_list() -> None:
    calls: list[str] = []
    h = Harness(transform=marking(calls)).start()
    try:
        h.script.expect("list")
        h.script.answer(ListResult([cm("a", "1"), {"metadata": {"namespace": "ns"}}], "100",
                                   "token-1"))
        h.script.expect("list")
        assert calls == ["a1"]  # the nameless object is left for the check after the list
        h.script.answer(errors.GoneError(410, "Expired", "continue token expired"))
        h.script.list_and_answer([cm("a", "1"), cm("b", "2")], "120")
        _options, watch = h.script.watch_and_answer()
        watch.add(cm("c", "121"))
        watch.bookmark(bookmark("122"))
        assert wait_for(lambda: len(h.store.list()) == 3, TIMEOUT)
        assert calls == ["a1", "a1", "b2", "c121"]
        assert all(obj["marked"] for obj in h.store.list())
    finally:
        h.stop()


def test_watch_list_initial_events_are_transformed_once_each() -> None:
    calls: list[str] = []
    h = Harness(use_watch_list=True, transform=marking(calls)).start()
    try:
        _options, watch = h.script.watch_and_answer()
        watch.add(cm("a", "10"))
        watch.modify(cm("a", "11"))
        watch.send(WatchEvent("BOOKMARK", bookmark("20", end=True)))
        assert wait_for(h.reflector.has_synced_once, TIMEOUT)
        assert calls == ["a10", "a11"]
        assert h.store.get_by_key("ns/a")["marked"]
    finally:
        h.stop()


def test_a_transform_failing_on_a_listed_object_fails_the_list_which_is_tried_again() -> None:
    failures = [ValueError("cannot transform")]

    def transform(obj: Any) -> Any:
        if failures:
            raise failures.pop()
        return obj

    h = Harness(transform=transform).start()
    try:
        h.script.list_and_answer([cm("a", "1")], "100")
        assert wait_for(lambda: h.reflector.last_error() is not None, TIMEOUT)
        error = h.reflector.last_error()
        assert isinstance(error, errors.KinformerError)
        assert "transform failed on a listed object: cannot transform" in str(error)
        assert h.store.list() == []
        assert step_when_waiting(h.clock) == pytest.approx(0.8)
        h.script.list_and_answer([cm("a", "1")], "100")
        assert h.script.watch_and_answer()[0].resource_version == "100"
        assert names(h.store.list()) == ["a"]
    finally:
        h.stop()


def test_after_a_paginated_list_at_zero_relists_keep_paging(harness: Harness) -> None:
    harness.script.expect("list")
    harness.script.answer(ListResult([cm("a", "1")], "100", "token-1"))
    harness.script.list_and_answer([cm("b", "2")], "100")
    _options, watch = harness.script.watch_and_answer()
    watch.end()
    step_when_waiting(harness.clock)
    relist = harness.script.list_and_answer([], "100")
    assert (relist.resource_version, relist.limit) == ("100", 500)


def test_versions_of_a_watch_started_at_empty_wait_for_a_non_added_event(
    harness: Harness,
) -> None:
    harness.script.list_and_answer([], "")
    options, watch = harness.script.watch_and_answer()
    assert options.resource_version in ("", None)
    watch.add(cm("b", "30"))
    watch.add(cm("a", "20"))
    watch.modify(cm("a", "40"))
    harness.clock.step(2.0)
    watch.end()
    assert harness.script.watch_and_answer()[0].resource_version == "40"


def test_list_errors_reach_the_handler_and_last_error_until_the_next_list() -> None:
    seen: list[BaseException] = []

    def handler(reflector: Reflector, error: BaseException) -> None:
        seen.append(error)
        raise RuntimeError("a broken handler must not stop the reflector")

    h = Harness(watch_error_handler=handler).start()
    try:
        h.script.expect("list")
        h.script.answer(errors.ForbiddenError(403, "Forbidden", "configmaps is forbidden"))
        step_when_waiting(h.clock)
        assert [type(e) for e in seen] == [errors.ForbiddenError]
        assert isinstance(h.reflector.last_error(), errors.ForbiddenError)
        h.script.list_and_answer([], "7")
        h.script.watch_and_answer()
        assert h.reflector.last_error() is None
    finally:
        h.stop()


class ErrorSeeingStore(Indexer):
    """Notes the reflector's ``last_error()`` as each list is handed to it."""

    def __init__(self) -> None:
        super().__init__()
        self.reflector: Reflector | None = None
        self.errors_seen: list[BaseException | None] = []

    def replace(self, items: Any, resource_version: str) -> None:
        assert self.reflector is not None
        self.errors_seen.append(self.reflector.last_error())
        super().replace(items, resource_version)


def test_the_last_error_is_cleared_before_the_store_takes_the_list_that_recovered() -> None:
    # once the store has the list, the cache reports itself synced: it must not still report
    # the error the list recovered from
    store = ErrorSeeingStore()
    h = Harness(store=store)
    store.reflector = h.reflector
    h.start()
    try:
        h.script.expect("list")
        h.script.answer(errors.ForbiddenError(403, "Forbidden", "configmaps is forbidden"))
        step_when_waiting(h.clock)
        h.script.list_and_answer([cm("a", "5")], "7")
        h.script.watch_and_answer()
        assert store.errors_seen == [None]
    finally:
        h.stop()


def test_the_handler_cannot_be_replaced_after_run(harness: Harness) -> None:
    with pytest.raises(errors.AlreadyStartedError):
        harness.reflector.set_watch_error_handler(lambda r, e: None)
    with pytest.raises(errors.AlreadyStartedError):
        harness.reflector.run(Context())


def test_an_unexpected_crash_is_logged_and_the_reflector_retries_after_backoff(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="kinformer.reflector.reflector"):
        harness.script.expect("list")
        harness.script.answer(RuntimeError("bug in a list function"))
        assert step_when_waiting(harness.clock) == pytest.approx(0.8)
        harness.script.list_and_answer([cm("a", "1")], "5")
    assert any("unexpected" in r.getMessage() and r.exc_info for r in caplog.records)
    assert harness.script.watch_and_answer()[0].resource_version == "5"


def test_stop_closes_a_blocked_watch_and_run_returns(harness: Harness) -> None:
    harness.script.list_and_answer([], "100")
    _options, watch = harness.script.watch_and_answer()
    harness.ctx.cancel()
    harness.thread.join(TIMEOUT)
    assert not harness.thread.is_alive()
    assert watch.closed


def test_run_accepts_a_threading_event_as_stop() -> None:
    h = Harness()
    try:
        with running(h.reflector.run, threading.Event()):
            h.script.list_and_answer([], "1")
            h.script.watch_and_answer()
    finally:
        h.script.closed.set()


def test_the_resync_timer_resyncs_the_fifo_every_period_while_watching() -> None:
    known = Indexer()
    fifo = DeltaFIFO(known_objects=known, emit_delta_type_replaced=True)
    asked: list[int] = []

    def should_resync() -> bool:
        asked.append(1)
        return len(asked) >= 2

    h = Harness(store=fifo, resync_period=10.0, should_resync=should_resync).start()
    try:
        h.script.list_and_answer([cm("a", "1")], "1")
        h.script.watch_and_answer()
        popped = fifo.pop(lambda deltas, initial: known.add(deltas[-1].object), timeout=TIMEOUT)
        assert popped[-1].type == DeltaType.REPLACED
        assert step_when_waiting(h.clock) == pytest.approx(10.0)  # first check: should_resync says no
        assert wait_for(lambda: len(asked) == 1)
        assert clock_waits(h.clock, 10.0)
        assert fifo.list_keys() == []
        h.clock.step(10.0)  # second check: yes
        popped = fifo.pop(None, timeout=TIMEOUT)
        assert [d.type for d in popped] == [DeltaType.SYNC]
        assert len(asked) == 2
    finally:
        h.stop()


def test_watch_list_streams_the_initial_state_then_keeps_watching_without_a_list() -> None:
    h = Harness(use_watch_list=True).start()
    try:
        options, watch = h.script.watch_and_answer()
        assert options.send_initial_events is True
        assert options.resource_version_match == "NotOlderThan"
        assert options.resource_version in ("", None)
        assert options.allow_watch_bookmarks is True
        watch.add(cm("a", "10"))
        watch.add(cm("b", "20"))
        watch.send(WatchEvent("BOOKMARK", bookmark("50", end=True)))
        watch.modify(cm("a", "60"))
        watch.bookmark(bookmark("70"))
        h.clock.step(2.0)
        watch.end()
        next_watch = h.script.expect("watch")
        assert next_watch.resource_version == "70"
        assert not next_watch.send_initial_events
        h.script.answer(ChannelWatch())
        assert names(h.store.list()) == ["a", "b"]
        assert rv_of(h.store, "ns/a") == "60"
        assert h.store.last_store_sync_resource_version() in ("50", "60", "70")
    finally:
        h.stop()


def test_watch_list_falls_back_to_a_list_when_the_end_bookmark_never_comes() -> None:
    h = Harness(use_watch_list=True, initial_events_timeout=30.0).start()
    try:
        _options, watch = h.script.watch_and_answer()
        watch.add(cm("a", "10"))
        # the stream stalls after "a": it is given up on 30 s after the timer saw "a" arrive,
        # which it may see at its start or at its next look, a quarter of the timeout later
        assert 30.0 <= step_until_listing(h) <= 37.5
        listed = h.script.expect("list")
        assert listed.resource_version == "0"
        assert watch.closed
        assert isinstance(h.reflector.last_error(), errors.SyncTimeoutError)
        assert "no object for 30s after 1 objects" in str(h.reflector.last_error())
        h.script.answer(ListResult([cm("a", "10"), cm("b", "11")], "80"))
        assert h.script.watch_and_answer()[0].resource_version == "80"
        assert h.reflector.last_error() is None
        assert names(h.store.list()) == ["a", "b"]
    finally:
        h.stop()


def step_until_listing(h: Harness, most: float = 1000.0) -> float:
    """Step the clock, a wait at a time, until the reflector asks for a list; the time stepped.

    Each step is the shortest wait with time left; fails past ``most`` seconds.
    """
    stepped = 0.0
    while True:
        assert wait_for(
            lambda: not h.script.no_request_yet() or any(w > 0 for w in h.clock.waiters()), TIMEOUT
        ), "neither a request nor a wait on the clock"
        if not h.script.no_request_yet():
            return stepped
        waits = [w for w in h.clock.waiters() if w > 0]
        if not waits:
            continue  # a waiter woke between the two looks
        assert stepped < most, f"no list after {stepped}s"
        h.clock.step(min(waits))
        stepped += min(waits)


def feed_initial_events(h: Harness, watch: ChannelWatch, seen: list[str], steps: int) -> float:
    """Send two initial events per step of the clock (a step is the shortest wait on it).

    The second of each pair is waited for by the transform (``seen``), so the first was
    counted before the clock moves. Returns the time stepped; stops early, with the time
    stepped, when the reflector asks for something else (a list).
    """
    stepped = 0.0
    for i in range(steps):
        watch.add(cm(f"a{i}", str(2 * i + 1)))
        watch.add(cm(f"b{i}", str(2 * i + 2)))
        assert wait_for(lambda i=i: f"b{i}" in seen or not h.script.no_request_yet(), TIMEOUT)
        if not h.script.no_request_yet():
            return stepped
        stepped += step_when_waiting(h.clock)
    return stepped


def seen_by(seen: list[str]) -> Any:
    """A transform that records each object's name."""

    def record(obj: Any) -> Any:
        seen.append(obj["metadata"]["name"])
        return obj

    return record


def test_a_watch_list_slower_than_the_timeout_but_flowing_completes() -> None:
    seen: list[str] = []
    h = Harness(use_watch_list=True, transform=seen_by(seen)).start()
    try:
        _options, watch = h.script.watch_and_answer()
        assert feed_initial_events(h, watch, seen, 15) >= 120.0  # twice the 60 s timeout
        assert h.script.no_request_yet()  # no list: the stream was never given up on
        assert not watch.closed
        watch.send(WatchEvent("BOOKMARK", bookmark("100", end=True)))
        assert wait_for(h.reflector.has_synced_once, TIMEOUT)
        assert len(h.store.list()) == 30
        assert h.reflector.last_sync_resource_version() == "100"
        assert h.reflector.last_error() is None
    finally:
        h.stop()


def test_a_watch_list_that_stalls_after_flowing_falls_back_a_timeout_after_its_last_event() -> None:
    seen: list[str] = []
    h = Harness(use_watch_list=True, transform=seen_by(seen)).start()
    try:
        _options, watch = h.script.watch_and_answer()
        assert feed_initial_events(h, watch, seen, 9) == pytest.approx(90.0)
        assert h.script.no_request_yet()
        # the last two came after the step to 80 s, and nothing more: given up on 60 s after
        # the look that saw them arrive (at 80 s or at 90 s), and no later
        assert 50.0 <= step_until_listing(h) <= 60.0
        h.script.expect("list")
        assert watch.closed
        assert "no object for 60s after 18 objects" in str(h.reflector.last_error())
    finally:
        h.stop()


def test_a_watch_list_flowing_forever_without_its_end_bookmark_falls_back_at_its_timeout_seconds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[str] = []
    h = Harness(use_watch_list=True, transform=seen_by(seen)).start()
    try:
        with caplog.at_level(logging.WARNING, logger="kinformer"):
            options, watch = h.script.watch_and_answer()
            assert options.timeout_seconds == 300  # min_watch_timeout, with random() = 0
            assert feed_initial_events(h, watch, seen, 100) == pytest.approx(300.0)
            h.script.expect("list")
        assert watch.closed
        error = h.reflector.last_error()
        assert isinstance(error, errors.SyncTimeoutError)
        assert "not within 300s, the watch's timeoutSeconds" in str(error)
        waiting = [r.getMessage() for r in caplog.records if "still waiting" in r.getMessage()]
        assert len(waiting) == 29  # every 10 s until 300 s
        # the count at each: the events that came by then (the next two may have come already)
        first = "reflector test: still waiting for the initial events (10s, {} objects so far)"
        assert waiting[0] in (first.format(2), first.format(4))
    finally:
        h.stop()


def test_a_watch_list_the_server_ends_at_its_timeout_seconds_without_the_bookmark_falls_back() -> None:
    seen: list[str] = []
    h = Harness(use_watch_list=True, transform=seen_by(seen)).start()
    try:
        _options, watch = h.script.watch_and_answer()
        assert feed_initial_events(h, watch, seen, 29) == pytest.approx(290.0)
        assert clock_waits(h.clock, 10.0)
        h.clock.set(h.clock.now() + 10.0)  # the server's own timeout, as the timer's wakes
        watch.end()
        h.script.expect("list")  # not another stream, which would end the same way
        assert isinstance(h.reflector.last_error(), errors.SyncTimeoutError)
    finally:
        h.stop()


def test_after_a_watch_list_without_its_end_bookmark_relists_list_for_a_while() -> None:
    h = Harness(use_watch_list=True).start()
    try:
        _options, watch = h.script.watch_and_answer()
        watch.add(cm("a", "10"))
        step_until_listing(h)  # a server that ignores sendInitialEvents: no end bookmark
        h.script.list_and_answer([cm("a", "10")], "20")
        _options, watch = h.script.watch_and_answer()
        watch.error(status(410, "Expired"))
        expired_and_backing_off(h)
        # the relist lists at once: no minute spent on a stream that would end the same way
        h.script.list_and_answer([cm("a", "10")], "30")
        _options, watch = h.script.watch_and_answer()
        h.clock.step(watch_list.LIST_AFTER_NO_END)
        watch.error(status(410, "Expired"))
        assert wait_for(lambda: h.clock.waiters() != [], TIMEOUT)
        step_when_waiting(h.clock)
        again = h.script.expect("watch")  # long enough: the server may have been upgraded
        assert again.send_initial_events is True
        h.script.answer(ChannelWatch())
    finally:
        h.stop()


def test_after_a_watch_list_refused_relists_stream_again() -> None:
    h = Harness(use_watch_list=True).start()
    try:
        h.script.expect("watch")
        h.script.answer(errors.ForbiddenError(403, "Forbidden", "watch is not allowed"))
        h.script.list_and_answer([cm("a", "1")], "9")
        _options, watch = h.script.watch_and_answer()
        watch.error(status(410, "Expired"))
        expired_and_backing_off(h)
        assert h.script.expect("watch").send_initial_events is True  # as client-go does
        h.script.answer(ChannelWatch())
    finally:
        h.stop()


def test_watch_list_falls_back_to_a_list_on_an_error_event() -> None:
    h = Harness(use_watch_list=True).start()
    try:
        _options, watch = h.script.watch_and_answer()
        watch.error(status(500, "InternalError"))
        h.script.list_and_answer([cm("a", "1")], "9")
        assert h.script.watch_and_answer()[0].resource_version == "9"
    finally:
        h.stop()


def expired_and_backing_off(h: Harness) -> None:
    """Wait until the watch a WatchList went on as has ended with 410, then step its backoff.

    Until then the stream's initial-events timer may still wait on the clock, and stepping
    that wait instead of the backoff's would time the stream out.
    """
    assert wait_for(lambda: errors.is_expired(h.reflector.last_error()), TIMEOUT)
    assert step_when_waiting(h.clock) == pytest.approx(0.8)


def test_watch_list_stores_the_final_state_of_its_initial_events() -> None:
    h = Harness(use_watch_list=True).start()
    try:
        _options, watch = h.script.watch_and_answer()
        watch.add(cm("a", "10"))
        watch.add(cm("b", "11"))
        watch.modify(cm("a", "12"))
        watch.delete(cm("b", "13"))
        assert h.store.list() == []  # nothing is stored before the end bookmark
        watch.send(WatchEvent("BOOKMARK", bookmark("20", end=True)))
        assert wait_for(h.reflector.has_synced_once, TIMEOUT)
        assert names(h.store.list()) == ["a"]
        assert rv_of(h.store, "ns/a") == "12"
        assert h.reflector.last_sync_resource_version() == "20"
    finally:
        h.stop()


def test_watch_list_initial_events_are_checked_as_watch_events_are(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = Harness(use_watch_list=True).start()
    try:
        with caplog.at_level(logging.WARNING, logger="kinformer"):
            _options, watch = h.script.watch_and_answer()
            watch.add({"metadata": {"namespace": "ns", "resourceVersion": "5"}})
            watch.add(cm("a", "10"))
            watch.send(WatchEvent("BOOKMARK", bookmark("20", end=True)))
            assert wait_for(h.reflector.has_synced_once, TIMEOUT)
        assert names(h.store.list()) == ["a"]
        assert "ADDED event without a name; skipped" in caplog.text
    finally:
        h.stop()


def test_watch_list_initial_events_get_one_debug_line_not_one_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = Harness(use_watch_list=True).start()
    try:
        with caplog.at_level(logging.DEBUG, logger="kinformer"):
            _options, watch = h.script.watch_and_answer()
            for i in range(200):
                watch.add(cm(f"c{i}", str(i + 1)))
            watch.send(WatchEvent("BOOKMARK", bookmark("300", end=True)))
            assert wait_for(h.reflector.has_synced_once, TIMEOUT)
            watch.add(cm("later", "301"))
            assert wait_for(lambda: len(h.store.list()) == 201, TIMEOUT)
        lines = [r.getMessage() for r in caplog.records if r.name.startswith("kinformer")]
        assert "reflector test: watch-list synced 200 items at rv=300" in lines
        assert [line for line in lines if "ADDED rv=" in line] == ["reflector test: ADDED rv=301"]
        assert len(lines) < 10
    finally:
        h.stop()


def test_a_refused_watch_list_backs_off_and_streams_again_without_a_list() -> None:
    h = Harness(use_watch_list=True).start()
    try:
        h.script.expect("watch")
        h.script.answer(errors.ConnectionRefusedAPIError("connection refused"))
        assert step_when_waiting(h.clock) == pytest.approx(0.8)
        assert h.script.expect("watch").send_initial_events is True
        h.script.answer(ChannelWatch())
        assert isinstance(h.reflector.last_error(), errors.ConnectionRefusedAPIError)
    finally:
        h.stop()


def test_a_watch_list_from_an_expired_version_streams_again_from_the_current_one() -> None:
    h = Harness(use_watch_list=True).start()
    try:
        _options, watch = h.script.watch_and_answer()
        watch.send(WatchEvent("BOOKMARK", bookmark("50", end=True)))
        watch.error(status(410, "Expired"))  # the watch the stream went on as
        expired_and_backing_off(h)
        again = h.script.expect("watch")
        assert (again.resource_version, again.send_initial_events) == ("50", True)
        h.script.answer(errors.GoneError(410, "Expired", "too old"))
        fresh = h.script.expect("watch")
        assert fresh.resource_version in ("", None) and fresh.send_initial_events is True
        h.script.answer(ChannelWatch())
    finally:
        h.stop()


def test_an_expired_error_event_in_the_initial_events_streams_again_from_the_current_version() -> None:
    h = Harness(use_watch_list=True).start()
    try:
        _options, watch = h.script.watch_and_answer()
        watch.send(WatchEvent("BOOKMARK", bookmark("50", end=True)))
        watch.error(status(410, "Expired"))
        expired_and_backing_off(h)
        _again, stream = h.script.watch_and_answer()
        stream.add(cm("a", "60"))
        stream.error(status(410, "Expired"))
        assert stream.closed or wait_for(lambda: stream.closed, TIMEOUT)
        fresh, final = h.script.watch_and_answer()
        assert fresh.resource_version in ("", None) and fresh.send_initial_events is True
        final.add(cm("b", "70"))
        final.send(WatchEvent("BOOKMARK", bookmark("80", end=True)))
        assert wait_for(lambda: names(h.store.list()) == ["b"], TIMEOUT)
    finally:
        h.stop()


def test_a_watch_list_start_refused_for_good_falls_back_to_a_list() -> None:
    h = Harness(use_watch_list=True).start()
    try:
        h.script.expect("watch")
        h.script.answer(errors.ForbiddenError(403, "Forbidden", "watch is not allowed"))
        h.script.list_and_answer([cm("a", "1")], "9")
        assert h.script.watch_and_answer()[0].resource_version == "9"
        assert names(h.store.list()) == ["a"]
    finally:
        h.stop()


def test_a_watch_list_closed_before_its_end_bookmark_streams_again() -> None:
    h = Harness(use_watch_list=True).start()
    try:
        _options, watch = h.script.watch_and_answer()
        watch.add(cm("a", "10"))
        watch.end()
        again, stream = h.script.watch_and_answer()
        assert again.send_initial_events is True
        assert h.store.list() == []  # the half stream was not stored
        stream.add(cm("b", "11"))
        stream.send(WatchEvent("BOOKMARK", bookmark("20", end=True)))
        assert wait_for(lambda: names(h.store.list()) == ["b"], TIMEOUT)
    finally:
        h.stop()


def test_a_watch_list_dropped_before_its_end_bookmark_streams_again() -> None:
    h = Harness(use_watch_list=True).start()
    try:
        _options, watch = h.script.watch_and_answer()
        watch.add(cm("a", "10"))
        watch.fail(ConnectionResetError(104, "Connection reset by peer"))
        again, stream = h.script.watch_and_answer()  # no list
        assert again.send_initial_events is True
        assert not h.clock.has_waiters()
        stream.add(cm("b", "11"))
        stream.send(WatchEvent("BOOKMARK", bookmark("20", end=True)))
        assert wait_for(lambda: names(h.store.list()) == ["b"], TIMEOUT)
    finally:
        h.stop()


def test_internal_errors_on_a_watch_are_retried_in_place_within_the_configured_window() -> None:
    h = Harness(max_internal_error_retry_duration=30.0).start()
    try:
        h.script.list_and_answer([], "100")
        _options, watch = h.script.watch_and_answer()
        watch.error(status(500, "InternalError"))
        _options, watch = h.script.watch_and_answer()  # at once: no backoff, no list
        assert not h.clock.has_waiters()
        h.clock.step(31.0)
        watch.error(status(500, "InternalError"))
        assert step_when_waiting(h.clock) == pytest.approx(0.8)  # past the window: relist
        assert h.script.list_and_answer([], "100").resource_version == "100"
    finally:
        h.stop()


def test_internal_errors_on_a_watch_relist_by_default(harness: Harness) -> None:
    harness.script.list_and_answer([], "100")
    _options, watch = harness.script.watch_and_answer()
    watch.error(status(500, "InternalError"))
    assert step_when_waiting(harness.clock) == pytest.approx(0.8)
    harness.script.list_and_answer([], "100")


def test_a_failing_resync_check_ends_the_watch_and_relists() -> None:
    def should_resync() -> bool:
        raise RuntimeError("cannot decide")

    h = Harness(resync_period=5.0, should_resync=should_resync).start()
    try:
        h.script.list_and_answer([], "1")
        _options, watch = h.script.watch_and_answer()
        assert step_when_waiting(h.clock) == pytest.approx(5.0)
        assert step_when_waiting(h.clock) == pytest.approx(0.8)
        assert watch.closed
        assert isinstance(h.reflector.last_error(), RuntimeError)
        h.script.list_and_answer([], "1")
    finally:
        h.stop()


def test_an_unnamed_reflector_is_named_after_the_line_that_built_it() -> None:
    reflector = Reflector(ListWatch(lambda o: ListResult([], ""), lambda o: []), Indexer())
    assert reflector.name.startswith("test_reflector.py:")


def test_a_lister_watcher_with_a_ctx_parameter_gets_the_run_context_and_one_without_does_not() -> None:
    seen: list[Any] = []

    class KeywordOnly:
        def list(self, options: ListOptions, *, ctx: Context | None = None) -> ListResult:
            seen.append(ctx)
            return ListResult([], "5")

        def watch(self, options: ListOptions, *, ctx: Context | None = None) -> ChannelWatch:
            seen.append(ctx)
            return ChannelWatch()

    class OptionsOnly:
        def list(self, options: ListOptions) -> ListResult:
            seen.append("list")
            return ListResult([], "5")

        def watch(self, options: ListOptions) -> ChannelWatch:
            seen.append("watch")
            return ChannelWatch()

    for lister_watcher in (KeywordOnly(), OptionsOnly()):
        seen.clear()
        reflector = Reflector(lister_watcher, Indexer(), name="ctx")
        with running(reflector.run) as ctx:
            assert wait_for(lambda: len(seen) == 2, TIMEOUT)
        assert seen == ([ctx, ctx] if isinstance(lister_watcher, KeywordOnly) else ["list", "watch"])


def test_fail_round_ends_the_open_watch_with_its_error_and_relists_after_backoff(
    harness: Harness,
) -> None:
    harness.script.list_and_answer([cm("a", "100")], "100")
    harness.script.watch_and_answer()
    failure = errors.ClustersMergedError("ns/a", ["root:a", "root:b"])
    harness.reflector.fail_round(failure)
    assert step_when_waiting(harness.clock) == pytest.approx(0.8)
    assert harness.reflector.last_error() is failure
    assert harness.script.list_and_answer([cm("a", "100")], "100").resource_version == "100"
    harness.script.watch_and_answer()
    assert harness.reflector.last_error() is None  # the relist came whole


def test_fail_round_between_rounds_ends_the_next_round_once_its_list_is_done(harness: Harness) -> None:
    harness.script.expect("list")  # the first round's list waits for its answer: no round open
    failure = errors.ClustersMergedError("ns/a", ["root:a", "root:b"])
    harness.reflector.fail_round(failure)
    harness.script.answer(ListResult([cm("a", "100")], "100"))
    assert step_when_waiting(harness.clock) == pytest.approx(0.8)  # no watch started
    assert harness.reflector.last_error() is failure
    assert harness.script.list_and_answer([cm("a", "100")], "100").resource_version == "100"
    harness.script.watch_and_answer()  # this round goes on
