"""The test fakes kinformer ships: ScriptedSource answers what it is given, Recorder what it heard."""

from __future__ import annotations

import queue

import pytest
from helpers import cm

from kinformer import ConfigurationError, DeletedFinalStateUnknown, ListOptions
from kinformer.testing import Recorder, ScriptedSource


def test_a_scripted_source_lists_its_items_raises_its_error_and_hands_out_each_watch_once() -> None:
    source = ScriptedSource(cm("a", 1), rv=7, timeout=0.01)
    listed = source.lister_watcher.list(ListOptions())
    assert (listed.items, listed.resource_version, listed.continue_token) == ([cm("a", 1)], "7", "")
    assert (listed.shard_info, listed.checked, listed.transformed) == (None, False, False)
    source.items.append(cm("b", 2))
    assert [o["metadata"]["name"] for o in source.lister_watcher.list(ListOptions()).items] == ["a", "b"]
    source.list_error = ConnectionRefusedError("down")
    with pytest.raises(ConnectionRefusedError):
        source.lister_watcher.list(ListOptions())
    first = source.lister_watcher.watch(ListOptions())
    assert source.next_watch() is first
    with pytest.raises(queue.Empty):  # no second watch was opened
        source.next_watch()


def test_a_recorder_queues_each_notification_in_order_as_a_short_tuple() -> None:
    recorder = Recorder(timeout=0.01)
    recorder.on_add(cm("a", 1), True)
    recorder.on_update(cm("a", 1), cm("a", 2))
    recorder.on_delete(DeletedFinalStateUnknown("ns/a", cm("a", 2)))
    assert recorder.take(3) == [("add", "a1", True), ("update", "a1", "a2"), ("delete", "DFSU(ns/a)")]
    assert recorder.quiet() and recorder.entered.is_set()
    with pytest.raises(queue.Empty):
        recorder.next()


def test_the_fakes_refuse_a_timeout_that_is_not_positive_seconds() -> None:
    with pytest.raises(ConfigurationError):
        Recorder(timeout=0)
    with pytest.raises(ConfigurationError):
        ScriptedSource(timeout=float("inf"))
