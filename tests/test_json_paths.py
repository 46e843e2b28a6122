"""The collector around bulk work: pauses nest and always end, and an informer restores it on every path."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import cm, running, step_when_waiting

from kinformer import _gc, _json, collector_policy, errors
from kinformer.cache.real_fifo import RealFIFO
from kinformer.client.listerwatcher import ListOptions, ListResult, WatchEvent
from kinformer.client.listwatch import ListWatch
from kinformer.handlers import wait_for_cache_sync
from kinformer.informer import SharedIndexInformer
from kinformer.reflector.reflector import Reflector
from kinformer.testing import ChannelWatch, FakeClock, ScriptedSource, wait_for

TIMEOUT = 5.0
_permanent_at_start = 0


def frozen() -> int:
    """Objects frozen since the test began, 0 when none.

    CPython 3.12 keeps its tracked immortal objects in the permanent generation (each
    collection moves them back; ``gc.unfreeze`` takes them out), so ``gc.get_freeze_count()``
    is not 0 there with nothing frozen: count beyond what a collection leaves at the start.
    """
    return max(0, gc.get_freeze_count() - _permanent_at_start)


@pytest.fixture(autouse=True)
def collector_enabled() -> Iterator[None]:
    """Each test starts with the collector on and leaves nothing frozen behind."""
    global _permanent_at_start
    assert gc.isenabled()
    gc.unfreeze()
    gc.collect()  # no stopped informer of an earlier test still alive
    _permanent_at_start = gc.get_freeze_count()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.enable()


def test_pauses_from_two_threads_nest_and_the_last_resume_restores_the_collector() -> None:
    _gc.pause()
    other = threading.Thread(target=_gc.pause)
    other.start()
    other.join()
    _gc.resume()
    assert not gc.isenabled()
    _gc.resume()
    assert gc.isenabled()


def test_a_resume_without_a_pause_changes_nothing() -> None:
    _gc.resume()
    assert gc.isenabled()
    gc.disable()
    _gc.resume()
    assert not gc.isenabled()


def test_a_synced_informer_leaves_the_collector_on_and_its_cache_frozen() -> None:
    informer = SharedIndexInformer(ScriptedSource(cm("a"), cm("b")).lister_watcher)
    with running(informer.run, threading.Event()):
        assert informer.wait_for_sync(TIMEOUT)
        # synced (cache filled) comes first; the delta loop then freezes and resumes the collector
        assert wait_for(gc.isenabled, TIMEOUT)
        frozen_now = frozen()
    assert gc.isenabled()
    assert frozen_now > 0


def test_stopping_while_the_initial_list_is_queued_restores_the_collector() -> None:
    entered, release = threading.Event(), threading.Event()
    collector_on_inside: list[bool] = []

    def transform(obj: Any) -> Any:
        if obj["metadata"]["name"] == "b":
            collector_on_inside.append(gc.isenabled())
            entered.set()
            release.wait(TIMEOUT)
        return obj

    informer = SharedIndexInformer(ScriptedSource(cm("a"), cm("b"), cm("c")).lister_watcher)
    informer.set_transform(transform)
    with running(informer.run, threading.Event()) as stop:
        try:
            assert entered.wait(TIMEOUT)
            stop.set()
        finally:
            release.set()
    assert collector_on_inside == [False]
    assert gc.isenabled()


def test_a_transform_failing_on_a_listed_object_fails_the_list_and_ends_the_pause() -> None:
    def transform(obj: Any) -> Any:
        if obj["metadata"]["name"] == "b":
            raise ValueError("cannot transform b")
        return obj

    informer = SharedIndexInformer(ScriptedSource(cm("a"), cm("b"), cm("c")).lister_watcher)
    informer.set_transform(transform)
    with running(informer.run, threading.Event()):
        assert wait_for(lambda: informer.last_error() is not None, TIMEOUT)
        assert "transform failed on a listed object: cannot transform b" in str(
            informer.last_error())
        assert gc.isenabled()  # the reflector backs off with the collector on
        assert not informer.has_synced()
        assert informer.get_indexer().list_keys() == []  # all or nothing
    assert gc.isenabled()


def test_an_object_failing_to_index_in_the_initial_list_still_ends_the_pause(
    caplog: pytest.LogCaptureFixture,
) -> None:
    collector_on_inside: list[bool] = []

    def by_name(obj: Any) -> list[str]:
        collector_on_inside.append(gc.isenabled())
        if obj["metadata"]["name"] == "b":
            raise ValueError("cannot index b")
        return [obj["metadata"]["name"]]

    informer = SharedIndexInformer(
        ScriptedSource(cm("a"), cm("b"), cm("c")).lister_watcher, indexers={"name": by_name}
    )
    with running(informer.run, threading.Event()):
        assert informer.wait_for_sync(TIMEOUT)
    assert sorted(informer.get_indexer().list_keys()) == ["ns/a", "ns/c"]
    assert collector_on_inside and not any(collector_on_inside)
    assert gc.isenabled()


def test_a_first_list_larger_than_a_batch_reaches_cache_index_and_handler_in_list_order() -> None:
    from kinformer.appliers import INITIAL_BATCH
    from kinformer.handlers import ResourceEventHandlerDetailedFuncs

    objs = [cm(f"o{i:05d}", shard=str(i % 3)) for i in range(INITIAL_BATCH * 2 + 7)]
    seen: list[tuple[str, bool]] = []
    informer = SharedIndexInformer(
        ScriptedSource(*objs).lister_watcher, indexers={"shard": lambda o: [o["metadata"]["labels"]["shard"]]}
    )
    registration = informer.add_event_handler(
        ResourceEventHandlerDetailedFuncs(
            add_func=lambda obj, initial: seen.append((obj["metadata"]["name"], initial))
        )
    )
    with running(informer.run, threading.Event()) as stop:
        assert informer.wait_for_sync(TIMEOUT)
        assert wait_for_cache_sync(stop, registration.has_synced, timeout=TIMEOUT)
    assert seen == [(o["metadata"]["name"], True) for o in objs]
    indexer = informer.get_indexer()
    assert len(indexer) == len(objs)
    assert len(indexer.by_index("shard", "1")) == len([o for o in objs[1::3]])
    assert indexer.get_by_key("ns/o00042") is objs[42]


def test_a_queued_first_list_is_applied_a_batch_at_a_time_with_the_collector_paused_throughout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An index function failing on one object keeps the list out of the cache's one-step route."""
    from kinformer.appliers import INITIAL_BATCH
    from kinformer.handlers import ResourceEventHandlerDetailedFuncs

    objs = [cm(f"o{i:05d}") for i in range(INITIAL_BATCH * 2 + 7)]
    collector_on_inside: list[bool] = []

    def by_name(obj: Any) -> list[str]:
        collector_on_inside.append(gc.isenabled())
        if obj["metadata"]["name"] == "o00003":
            raise ValueError("cannot index o00003")
        return [obj["metadata"]["name"]]

    seen: list[tuple[str, bool]] = []
    informer = SharedIndexInformer(ScriptedSource(*objs).lister_watcher, indexers={"name": by_name})
    registration = informer.add_event_handler(
        ResourceEventHandlerDetailedFuncs(
            add_func=lambda obj, initial: seen.append((obj["metadata"]["name"], initial))
        )
    )
    with running(informer.run, threading.Event()) as stop:
        assert informer.wait_for_sync(TIMEOUT)
        assert wait_for_cache_sync(stop, registration.has_synced, timeout=TIMEOUT)
        assert wait_for(lambda: gc.isenabled() and frozen() > 0, TIMEOUT)
    kept = [o for o in objs if o["metadata"]["name"] != "o00003"]
    assert seen == [(o["metadata"]["name"], True) for o in kept]
    assert len(informer.get_indexer()) == len(kept)
    assert len(collector_on_inside) >= len(objs)  # every object indexed while queued
    assert not any(collector_on_inside)
    assert "o00003" in caplog.text and "object dropped" in caplog.text


class Cached(dict[str, Any]):
    """A cached object a test can hold a weak reference to (a plain dict cannot be)."""


def synced_then_stopped(
    *names: str, profile: str = "modern"
) -> tuple[SharedIndexInformer, list[weakref.ref[Cached]]]:
    """An informer run until synced (its cache frozen) and stopped; weak references to its objects."""
    kept: list[weakref.ref[Cached]] = []

    def transform(obj: Any) -> Any:
        cached = Cached(obj)
        kept.append(weakref.ref(cached))
        return cached

    informer = SharedIndexInformer(
        ScriptedSource(*(cm(name) for name in names)).lister_watcher, profile=profile)
    informer.set_transform(transform)
    with running(informer.run, threading.Event()):
        assert informer.wait_for_sync(TIMEOUT)
        assert wait_for(lambda: gc.isenabled() and frozen() > 0, TIMEOUT)
    return informer, kept


def test_a_stopped_informer_and_its_cache_are_reclaimed_once_dropped() -> None:
    informer, kept = synced_then_stopped("a", "b")
    assert len(kept) == 2
    assert frozen() == 0  # stopping gave the frozen objects back to the collector
    assert informer.get_indexer().get_by_key("ns/a") is kept[0]()  # still readable after stop
    owner = weakref.ref(informer)
    del informer
    gc.collect()
    # an informer is a reference cycle: frozen, neither it nor its cache would ever be freed
    assert owner() is None
    assert [ref() for ref in kept] == [None, None]


def test_no_freeze_while_a_stopped_informer_is_alive_and_none_once_it_is_dropped() -> None:
    first, first_kept = synced_then_stopped("a")
    second = SharedIndexInformer(ScriptedSource(cm("b")).lister_watcher)
    with running(second.run, threading.Event()):
        assert second.wait_for_sync(TIMEOUT)
        assert wait_for(gc.isenabled, TIMEOUT)
        # freezing now would keep the stopped informer, still held here, past its release
        assert frozen() == 0
    del first
    gc.collect()
    assert first_kept[0]() is None


def test_the_next_list_collects_a_dropped_stopped_informer_and_freezes_again() -> None:
    # the classic informer's cache is held by a reference cycle (its reflector's parts hold
    # the reflector's methods, and through its store the FIFO, whose known objects it is)
    first, first_kept = synced_then_stopped("a", profile="classic")
    owner = weakref.ref(first.get_indexer())
    gc.disable()  # no collection of its own between the drop and the next list
    del first
    gc.enable()
    assert owner() is not None  # a cycle: only a collection reclaims it
    informer, kept = synced_then_stopped("b")
    # the next list began with a collection, so the cache above was not frozen again
    assert owner() is None
    assert first_kept[0]() is None
    del informer
    gc.collect()
    assert kept[0]() is None


def test_the_list_request_runs_with_the_collector_on_and_its_first_decode_pauses_it_to_the_end() -> None:
    """A list waiting on the network must not hold the whole process's collector off."""
    in_request, answer = threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def list_func(options: ListOptions) -> ListResult:
        in_request.set()
        answer.wait(TIMEOUT)
        # what the HTTP lister decodes a list with
        body = _json.loads_bulk(b'{"items": [{"metadata": {"namespace": "ns", "name": "a"}}]}')
        seen["after the decode"] = gc.isenabled()
        return ListResult(body["items"], "10")

    def transform(obj: Any) -> Any:
        seen["while queued"] = gc.isenabled()
        return obj

    informer = SharedIndexInformer(ListWatch(list_func, lambda options: ChannelWatch()))
    informer.set_transform(transform)
    with running(informer.run, threading.Event()):
        try:
            assert in_request.wait(TIMEOUT)
            assert gc.isenabled()  # the request is in flight: nothing decoded yet
            answer.set()
            assert informer.wait_for_sync(TIMEOUT)
            assert wait_for(gc.isenabled, TIMEOUT)
        finally:
            answer.set()
    assert seen == {"after the decode": False, "while queued": False}
    assert gc.isenabled()


def test_a_bulk_decode_calls_the_hook_of_its_own_thread_the_innermost_one() -> None:
    calls: list[str] = []
    assert _json.loads_bulk(b"[1]") == [1]  # no hook: nothing called
    with _json.before_bulk_decodes(lambda: calls.append("outer")):
        _json.loads_bulk(b"{}")
        with _json.before_bulk_decodes(lambda: calls.append("inner")):
            _json.loads_bulk(b"{}")
            other = threading.Thread(target=_json.loads_bulk, args=(b"{}",))
            other.start()
            other.join(TIMEOUT)
        _json.loads_bulk(b"{}")
        _json.loads(b"{}")  # a small decode is no bulk decode
    _json.loads_bulk(b"{}")
    assert calls == ["outer", "inner", "outer"]


def test_a_relist_is_paused_from_its_decode_until_queued_and_a_failed_one_backs_off_unpaused() -> None:
    clock = FakeClock()
    source = ScriptedSource(cm("a"))
    during: list[bool] = []

    def list_func(options: ListOptions) -> ListResult:
        result = source.list(options)
        _json.loads_bulk(b"[]")  # the decode the HTTP lister makes
        during.append(gc.isenabled())
        if len(during) == 3:
            raise errors.DecodeError("a list item that does not decode")
        return result

    informer = SharedIndexInformer(ListWatch(list_func, source.watch), clock=clock)
    with running(informer.run, threading.Event()):
        assert informer.wait_for_sync(TIMEOUT)
        for lists in (2, 3):  # the relist after the second 410 fails after its decode
            source.next_watch().error({"kind": "Status", "code": 410, "reason": "Expired"})
            step_when_waiting(clock)  # the backoff before relisting
            assert wait_for(lambda: len(during) == lists, TIMEOUT)  # noqa: B023
        assert wait_for(lambda: informer.backoff_remaining() is not None, TIMEOUT)
        assert gc.isenabled()  # backing off after the failed relist: the collector is on
        step_when_waiting(clock)
        source.next_watch()
        assert wait_for(gc.isenabled, TIMEOUT)  # the relist was queued: its pause is over
    assert during == [False, False, False, False]
    assert gc.isenabled()


def test_a_watch_list_stream_is_paused_until_its_initial_state_is_queued_or_a_request_fails() -> None:
    pauses = collector_policy.ListPauses()
    source = ScriptedSource()
    lister_watcher = collector_policy.PausingListerWatcher(source.lister_watcher, pauses)
    plain = lister_watcher.watch(ListOptions(resource_version="5"))
    assert gc.isenabled()  # an ordinary watch begins no pause, and is handed on as it is
    assert plain is source.next_watch()
    stream = lister_watcher.watch(ListOptions(send_initial_events=True))
    assert not gc.isenabled()  # its initial events pile up paused
    assert stream is source.next_watch()  # handed on as it is too: no wrapper per watch type
    store = collector_policy.pausing_sink(RealFIFO(), pauses)
    store.replace([cm("a")], "7")  # the initial state, queued: the stream's pause ends
    assert not pauses.listing.held
    assert pauses.first.held and not gc.isenabled()  # the first list's, until it is applied
    pauses.end_all()
    assert gc.isenabled()
    lister_watcher.watch(ListOptions(send_initial_events=True))
    assert not gc.isenabled()
    failed = collector_policy.ending_pauses(pauses, lambda reflector, error: None)
    failed(None, errors.TransportError("the stream broke"))  # type: ignore[arg-type]
    assert gc.isenabled()  # a failed request ends the pause before the reflector backs off


def test_no_collection_runs_while_the_initial_events_of_an_informers_watch_list_pile_up() -> None:
    """As over a list: the collector would walk the growing set of initial objects again and
    again, and a large WatchList took several times as long as a list of the same objects."""
    collections: list[int] = []
    marks: dict[str, int] = {}

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    def initial_events() -> Iterator[WatchEvent]:
        marks["first event"] = len(collections)
        for i in range(3000):  # enough allocations for many young collections, if enabled
            yield WatchEvent("ADDED", cm(f"c{i}", i + 1, data={"k": str(i)}))
        yield WatchEvent("BOOKMARK", {"metadata": {
            "resourceVersion": "5000", "annotations": {"k8s.io/initial-events-end": "true"}}})

    watches = [initial_events()]

    def watch(options: ListOptions) -> Any:
        return watches.pop() if watches else ChannelWatch()  # then one open until stopped

    class Counting(RealFIFO):
        def replace(self, objs: Any, resource_version: str = "") -> None:
            marks["stored"] = len(collections)
            super().replace(objs, resource_version)

    # what an informer hands its reflector, over a stream of initial events
    pauses = collector_policy.ListPauses()
    fifo = Counting()
    reflector = Reflector(
        collector_policy.PausingListerWatcher(
            ListWatch(lambda options: ListResult([], "1"), watch), pauses),
        collector_policy.pausing_sink(fifo, pauses), name="test", use_watch_list=True)
    gc.callbacks.append(count)
    try:
        with running(reflector.run):
            assert wait_for(reflector.has_synced_once, TIMEOUT)
    finally:
        gc.callbacks.remove(count)
        pauses.end_all()
    assert len(fifo.list()) == 0 and len(fifo) == 1  # one ReplacedAll of the 3,000 objects
    assert marks["stored"] == marks["first event"]


class Chunks:
    """An ItemsTaker noting each chunk's names and each restart, keeping every item."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def restart(self) -> None:
        self.calls.append("restart")

    def __call__(self, head: dict[str, Any], items: list[Any],
                 raw: _json.ItemBytes | None = None) -> list[Any]:
        self.calls.append((head.get("kind"), [item["n"] for item in items]))
        if raw is not None:  # where a chunk lies: exactly its items, as sent
            assert _json.loads(b"[" + raw.data[raw.start:raw.end] + b"]") == items
        return items


def test_a_big_list_reaches_its_taker_a_chunk_at_a_time_and_a_bad_cut_restarts_it_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_json, "CHUNK_BYTES", 16)
    monkeypatch.setattr(_json, "KEPT_CHUNK_FACTOR", 1)  # the taker keeps them: no bigger chunks
    body = {"kind": "ThingList", "metadata": {},  # objects in arrays inside items: no cut there
            "items": [{"n": i, "pad": "x" * 10, "list": [{"a": 1}, {"a": 2}]} for i in range(6)]}
    data = _json.dumps(body)
    taker = Chunks()
    assert _json.loads_bulk(data, lambda: None, taker) == body
    assert taker.calls[0] == "restart" and len(taker.calls) > 3
    assert [n for call in taker.calls[1:] for n in call[1]] == list(range(6))
    assert {call[0] for call in taker.calls[1:]} == {"ThingList"}
    # cuts inside an item, between objects that begin as items do, tried over and over: the
    # list is decoded whole, and the taker starts over (a quote inside a string is escaped,
    # so no cut ever falls inside one)
    tricky = {"kind": "ThingList", "items": [{"n": 0, "pad": "x" * 20 + '},{"n":',
                                              "nested": [{"n": k} for k in range(10)]},
                                             {"n": 1, "pad": ""}]}
    taker = Chunks()
    assert _json.loads_bulk(_json.dumps(tricky), lambda: None, taker) == tricky
    assert taker.calls == ["restart", "restart", ("ThingList", [0, 1])]
    # no kind before the items: decoded whole, so the one call knows it
    late = {"items": [{"n": i, "pad": "x" * 10} for i in range(6)], "kind": "ThingList"}
    taker = Chunks()
    assert _json.loads_bulk(_json.dumps(late), lambda: None, taker) == late
    assert taker.calls == ["restart", ("ThingList", list(range(6)))]


def on_glibc() -> bool:
    import platform

    return platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def test_the_allocator_is_trimmed_where_glibc_offers_it() -> None:
    assert _gc.trim() is on_glibc()


def test_the_trim_is_found_among_loaded_symbols_without_a_child_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ctypes.util.find_library would run ldconfig in a child process: a fork of a process
    # that may hold a large cache, and objects left among a first list's freed ones
    import subprocess

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a child process was started")

    glibc = on_glibc()  # platform.libc_ver may read the interpreter's file, never a child
    monkeypatch.setattr(subprocess, "Popen", refuse)
    assert (_gc._find_trim() is not None) is glibc


def chunk_of(text: bytes) -> tuple[_json.ItemBytes, list[Any]]:
    """``text`` (items separated as a list's are) as :class:`ItemBytes` within a list body."""
    body = b'{"kind":"ThingList","items":[' + text + b"]}"
    start = body.index(b"[") + 1
    return _json.ItemBytes(body, start, start + len(text)), _json.loads(b"[" + text + b"]")


def test_a_chunk_is_cut_into_its_items_json_exactly_as_sent() -> None:
    text = (b'{"metadata":{"name":"a"},"data":{"x":"\\\\"},"list":[{"k":1},{"k":2}]},'
            b'{"metadata":{"name":"b","note":"},{\\"metadata\\":"}},'
            b'{"metadata":{"name":"\\u00e9"}}')
    raw, items = chunk_of(text)
    parts = raw.split(items)
    assert parts is not None and b",".join(parts) == text
    assert [_json.loads(part) for part in parts] == items
    assert parts[2] == b'{"metadata":{"name":"\\u00e9"}}'  # as sent, escapes and all
    one, single = chunk_of(b'{"metadata":{"name":"only"}}')
    assert one.split(single) == [b'{"metadata":{"name":"only"}}']


def test_a_chunk_is_cut_with_an_opening_standing_for_each_items_brace() -> None:
    text = b'{"metadata":{"name":"a"},"n":[{"metadata":1}]},{"metadata":{"name":"b"}}'
    raw, items = chunk_of(text)
    opening = b'{"kind":"Thing","apiVersion":"v1",'
    parts = raw.split(items, opening)
    assert parts == [b'{"kind":"Thing","apiVersion":"v1","metadata":{"name":"a"},"n":[{"metadata":1}]}',
                     b'{"kind":"Thing","apiVersion":"v1","metadata":{"name":"b"}}']
    assert [_json.loads(part) for part in parts] == [
        {"kind": "Thing", "apiVersion": "v1", **item} for item in items]
    assert raw.split(items) == [b'{"metadata":{"name":"a"},"n":[{"metadata":1}]}',
                                b'{"metadata":{"name":"b"}}']


def test_a_listed_chunk_is_kept_as_sent_only_when_each_item_lacks_what_the_first_lacks() -> None:
    from kinformer.client.listerwatcher import PageTransform
    from kinformer.client.resource import _ListedItems

    def taken(text: bytes) -> list[bytes] | None:
        kept: list[list[bytes] | None] = [None]

        def with_json(items: list[Any], sent: list[bytes]) -> list[Any]:
            kept[0] = sent
            return items

        raw, items = chunk_of(text)
        take = _ListedItems("configmaps", "v1", PageTransform(lambda items: items, with_json))
        take({"kind": "ConfigMapList", "apiVersion": "v1"}, items, raw)
        assert all(item["kind"] == "ConfigMap" and item["apiVersion"] == "v1" for item in items)
        return kept[0]

    a, b = b'{"metadata":{"name":"a","namespace":"d"}}', b'{"metadata":{"name":"b","namespace":"d"}}'
    assert taken(a + b"," + b) == [b'{"kind":"ConfigMap","apiVersion":"v1",' + a[1:],
                                   b'{"kind":"ConfigMap","apiVersion":"v1",' + b[1:]]
    whole = b'{"metadata":{"name":"b","namespace":"d"},"kind":"ConfigMap","apiVersion":"v1"}'
    assert taken(whole + b"," + whole.replace(b'"b"', b'"c"')) == [
        whole, whole.replace(b'"b"', b'"c"')]  # sent whole: kept as sent
    assert taken(a + b"," + whole) is None  # the second has what the first lacks: encoded


@pytest.mark.parametrize("items", [
    [{"metadata": {"name": "a"}}, {}],  # an empty item: no first key to find
    [{"metadata": {"name": "a"}}, ["metadata"]],  # not an object, though its first is the key
], ids=["empty", "not-a-dict"])
def test_a_chunk_whose_decoded_items_are_not_all_objects_with_that_first_key_is_not_cut(
        items: list[Any]) -> None:
    raw, _ = chunk_of(b'{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}')
    assert raw.split(items) is None


@pytest.mark.parametrize("text", [
    # objects inside an item that begin with the items' first key: more cuts than boundaries
    b'{"metadata":{"name":"a"},"templates":[{"metadata":{}},{"metadata":{}}]},{"metadata":{}}',
    # an item that begins with another key, and objects inside it that begin with the first
    # one: the cuts add up, but one boundary is not among them
    b'{"metadata":{"name":"a"}},{"metadata":{"name":"b"}},'
    b'{"kind":"X","t":[{"metadata":1},{"metadata":2}]}',
    # a line break after the second item, and the cuts of objects inside the third adding up
    b'{"metadata":{"name":"a"}},{"metadata":{"name":"b"}},\n'
    b'{"metadata":{"name":"c"},"t":[{"metadata":1},{"metadata":2}]}',
    # items parted by more than a comma, where the places inside one add up to the count
    b'{"metadata":{"name":"a"},"t":[{"metadata":1},{"metadata":2}]}, {"metadata":{"name":"b"}}',
    # a first key written with an escape: its text is not its name
    b'{"meta\\u0064ata":{"name":"a"}},{"meta\\u0064ata":{"name":"b"}}',
], ids=["nested", "first-keys-differ", "lines", "spaced", "escaped-key"])
def test_a_chunk_is_not_cut_where_a_cut_might_fall_inside_an_item(text: bytes) -> None:
    raw, items = chunk_of(text)
    assert raw.split(items) is None
