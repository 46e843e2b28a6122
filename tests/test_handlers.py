"""Handler adapters, the filtering handler, tombstone unwrapping and wait_for_cache_sync."""

from __future__ import annotations

import threading
from typing import Any

import helpers
import pytest

import kinformer
from kinformer import Context
from kinformer.cache.store import DeletedFinalStateUnknown
from kinformer.handlers import (
    FilteringResourceEventHandler,
    ResourceEventHandler,
    ResourceEventHandlerDetailedFuncs,
    ResourceEventHandlerFuncs,
    deleted_object,
    wait_for_cache_sync,
)
from kinformer.testing import Recorder


def is_web(obj: Any) -> bool:
    return deleted_object(obj)["metadata"]["labels"].get("app") == "web"


def test_funcs_call_only_the_functions_given_and_add_without_the_initial_flag() -> None:
    seen: list[Any] = []
    funcs = ResourceEventHandlerFuncs(add_func=lambda o: seen.append(("add", o)))
    funcs.on_add("a", True)
    funcs.on_update("a", "b")
    funcs.on_delete("a")
    assert seen == [("add", "a")]
    assert isinstance(funcs, ResourceEventHandler)


def test_detailed_funcs_pass_the_initial_list_flag() -> None:
    seen: list[Any] = []
    funcs = ResourceEventHandlerDetailedFuncs(
        add_func=lambda o, initial: seen.append((o, initial)),
        delete_func=lambda o: seen.append(("deleted", o)),
    )
    funcs.on_add("a", True)
    funcs.on_add("b", False)
    funcs.on_update("a", "b")
    funcs.on_delete("c")
    assert seen == [("a", True), ("b", False), ("deleted", "c")]


@pytest.mark.parametrize(("funcs_class", "subject"), [
    (kinformer.ResourceEventHandlerFuncs, ()),
    (kinformer.ResourceEventHandlerDetailedFuncs, ()),
    (kinformer.ClusterEventHandlerFuncs, ("east",)),
    (kinformer.GVREventHandlerFuncs, (helpers.CONFIGMAPS,)),
])
def test_every_funcs_handler_passes_its_arguments_on_and_its_repr_names_the_functions_given(
    funcs_class: Any, subject: tuple[Any, ...]
) -> None:
    seen: list[Any] = []
    funcs = funcs_class(update_func=lambda *args: seen.append(args))
    funcs.on_update(*subject, "old", "new")
    funcs.on_delete(*subject, "gone")
    assert seen == [(*subject, "old", "new")]
    assert repr(funcs) == f"<{funcs_class.__name__} update_func>"
    assert repr(funcs_class()) == f"<{funcs_class.__name__} none>"


def test_filter_turns_an_object_leaving_the_filter_into_a_delete_of_the_old_object() -> None:
    inner = Recorder()
    old, new = helpers.cm("x", 1, app="web"), helpers.cm("x", 2, app="db")
    FilteringResourceEventHandler(is_web, inner).on_update(old, new)
    assert inner.take(1) == [("delete", "x1")]
    assert inner.quiet()


def test_filter_turns_an_object_entering_the_filter_into_an_add_not_in_initial_list() -> None:
    inner = Recorder()
    old, new = helpers.cm("x", 1, app="db"), helpers.cm("x", 2, app="web")
    FilteringResourceEventHandler(is_web, inner).on_update(old, new)
    assert inner.take(1) == [("add", "x2", False)]
    assert inner.quiet()


def test_filter_forwards_updates_within_and_drops_updates_outside() -> None:
    inner = Recorder()
    handler = FilteringResourceEventHandler(is_web, inner)
    handler.on_update(helpers.cm("x", 1, app="web"), helpers.cm("x", 2, app="web"))
    handler.on_update(helpers.cm("y", 1, app="db"), helpers.cm("y", 2, app="db"))
    assert inner.take(1) == [("update", "x1", "x2")]
    assert inner.quiet()


def test_filter_keeps_the_initial_list_flag_of_adds() -> None:
    inner = Recorder()
    handler = FilteringResourceEventHandler(is_web, inner)
    handler.on_add(helpers.cm("x", app="web"), True)
    handler.on_add(helpers.cm("y", app="db"), True)
    assert inner.take(1) == [("add", "x1", True)]
    assert inner.quiet()


def test_filter_sees_the_tombstone_of_a_missed_delete() -> None:
    seen: list[Any] = []

    def web_filter(obj: Any) -> bool:
        seen.append(obj)
        return is_web(obj)

    inner = Recorder()
    tombstone = DeletedFinalStateUnknown("ns/x", helpers.cm("x", app="web"))
    FilteringResourceEventHandler(web_filter, inner).on_delete(tombstone)
    assert seen == [tombstone]
    assert inner.take(1) == [("delete", "DFSU(ns/x)")]
    assert inner.quiet()


def test_deleted_object_unwraps_a_tombstone_and_passes_objects_through() -> None:
    obj = helpers.cm("x", app="web")
    assert deleted_object(DeletedFinalStateUnknown("ns/x", obj)) is obj
    assert deleted_object(DeletedFinalStateUnknown("ns/x", None)) is None
    assert deleted_object(obj) is obj


def test_wait_for_cache_sync_is_true_at_once_when_synced_even_if_stopped() -> None:
    stop = threading.Event()
    stop.set()
    assert wait_for_cache_sync(stop, lambda: True, lambda: True)


def test_wait_for_cache_sync_is_false_when_stopped_before_sync() -> None:
    ctx = Context()
    ctx.cancel()
    assert not wait_for_cache_sync(ctx, lambda: True, lambda: False)


def test_wait_for_cache_sync_is_false_after_the_timeout() -> None:
    assert not wait_for_cache_sync(threading.Event(), lambda: False, timeout=0.05)


def test_wait_for_cache_sync_keeps_checking_until_every_cache_synced() -> None:
    calls = 0

    def synced_on_third_look() -> bool:
        nonlocal calls
        calls += 1
        return calls >= 3

    assert wait_for_cache_sync(None, synced_on_third_look, timeout=5)
    assert calls == 3


def test_sync_poll_pause_grows_with_the_wait_from_a_millisecond_to_client_gos_100_ms() -> None:
    pause = kinformer.handlers.sync_poll_pause
    assert pause(0.0) == pause(0.01) == 0.001  # never shorter than a millisecond
    assert pause(0.2) == pytest.approx(0.01)  # a twentieth of the time waited
    assert pause(1.0) == pytest.approx(0.05)
    assert pause(2.0) == pause(60.0) == 0.1  # and never longer than client-go's period


class _StopRecordingWaits(threading.Event):
    """A stop signal that notes each pause asked of it and lets a fake clock pass it at once."""

    def __init__(self, clock: list[float]) -> None:
        super().__init__()
        self.clock = clock
        self.pauses: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        self.pauses.append(timeout)
        self.clock[0] += timeout
        return self.is_set()


def test_wait_for_cache_sync_looks_soon_at_first_and_every_100_ms_once_the_wait_is_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a cache that syncs in 10 ms is seen synced about then, not at a first look 100 ms later;
    # a wait of seconds looks ten times a second, as client-go's does
    clock = [1000.0]
    monkeypatch.setattr(kinformer.handlers.time, "monotonic", lambda: clock[0])
    stop = _StopRecordingWaits(clock)
    synced_at = 1000.0 + 3.0
    assert wait_for_cache_sync(stop, lambda: clock[0] >= synced_at, timeout=10)
    assert stop.pauses[0] == 0.001
    assert sum(stop.pauses[:10]) < 0.02  # ten looks within the first 20 ms
    assert stop.pauses[-1] == 0.1
    assert clock[0] - synced_at <= 0.1  # seen within a pause of syncing
    assert all(a <= b for a, b in zip(stop.pauses, stop.pauses[1:], strict=False))


# What follows was the acceptance suite's: it calls kinformer's public names only, with the
# argument names of the public API reference.


def test_filtering_handler_passes_the_initial_list_flag_through_and_skips_what_never_matched() -> None:
    inner = Recorder()
    handler = kinformer.FilteringResourceEventHandler(
        filter_func=lambda o: o["metadata"].get("labels", {}).get("app") == "web", handler=inner
    )
    handler.on_add(helpers.cm("a", app="web"), True)
    handler.on_add(helpers.cm("b", app="db"), True)
    handler.on_update(helpers.cm("b", 1, app="db"), helpers.cm("b", 2, app="db"))
    handler.on_update(helpers.cm("a", 1, app="web"), helpers.cm("a", 2, app="web"))
    handler.on_delete(helpers.cm("b", app="db"))
    assert inner.take(2) == [("add", "a1", True), ("update", "a1", "a2")]
    assert inner.quiet()
