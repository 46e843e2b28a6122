"""Context: cancellation flows down, never up; callbacks run once; bridges leave nothing behind."""

from __future__ import annotations

import threading

import pytest

from kinformer import Context, _threads, context_for_channel
from kinformer.context import as_context


def test_cancel_reaches_grandchildren() -> None:
    root = Context()
    child = root.child()
    grandchild = child.child()
    assert not grandchild.done.is_set()
    root.cancel()
    assert child.cancelled() and grandchild.cancelled()
    assert grandchild.wait(0)
    assert grandchild.done.is_set()  # the threading.Event others can wait on


def test_cancelling_a_child_leaves_parent_and_siblings_running() -> None:
    root = Context()
    a, b = root.child(), root.child()
    a.cancel()
    assert a.cancelled()
    assert not root.cancelled() and not b.cancelled()


def test_cancelled_children_do_not_accumulate_on_the_parent() -> None:
    root = Context()
    for _ in range(100):
        root.child().cancel()
    assert root._callbacks is not None and len(root._callbacks) == 0


def test_callbacks_run_once_even_when_cancelled_twice() -> None:
    ctx = Context()
    calls: list[str] = []
    ctx.on_cancel(lambda: calls.append("a"))
    ctx.cancel()
    ctx.cancel()
    assert calls == ["a"]


def test_callback_registered_after_cancel_runs_at_once() -> None:
    ctx = Context()
    ctx.cancel()
    calls: list[int] = []
    ctx.on_cancel(lambda: calls.append(1))
    assert calls == [1]


def test_removed_callback_never_runs() -> None:
    ctx = Context()
    calls: list[int] = []
    handle = ctx.on_cancel(lambda: calls.append(1))
    handle.remove()
    ctx.cancel()
    assert calls == []


def test_a_raising_callback_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    ctx = Context()
    calls: list[int] = []

    def boom() -> None:
        raise RuntimeError("boom")

    ctx.on_cancel(boom)
    ctx.on_cancel(lambda: calls.append(1))
    ctx.cancel()
    assert calls == [1]
    assert "boom" in caplog.text


def test_wait_returns_false_on_timeout_and_true_once_cancelled() -> None:
    ctx = Context()
    assert ctx.wait(0.01) is False
    threading.Timer(0.01, ctx.cancel).start()
    assert ctx.wait(5) is True


def _bridge_threads() -> list[threading.Thread]:
    return [t for t in _threads.kinformer_threads() if t.name.startswith("kinformer-context-")]


def test_context_for_channel_cancels_when_parent_event_is_set() -> None:
    parent = threading.Event()
    ctx, cancel = context_for_channel(parent)
    assert not ctx.cancelled()
    parent.set()
    assert ctx.wait(5)
    for thread in _bridge_threads():
        thread.join(5)
    assert not _bridge_threads()
    cancel()  # still safe afterwards


def test_context_for_channel_cancel_first_leaves_no_helper_thread() -> None:
    parent = threading.Event()
    ctx, cancel = context_for_channel(parent)
    cancel()
    assert ctx.cancelled()
    for thread in _bridge_threads():
        thread.join(5)
    assert not _bridge_threads()
    assert not parent.is_set(), "cancelling the child must not set the parent"


def test_context_for_channel_with_an_already_set_parent_is_cancelled_at_once() -> None:
    parent = threading.Event()
    parent.set()
    ctx, _cancel = context_for_channel(parent)
    assert ctx.cancelled()
    assert not _bridge_threads()


def test_context_for_channel_of_a_context_is_a_child() -> None:
    parent = Context()
    ctx, cancel = context_for_channel(parent)
    cancel()
    assert ctx.cancelled() and not parent.cancelled()
    ctx2, _ = context_for_channel(parent)
    parent.cancel()
    assert ctx2.cancelled()


def test_context_for_channel_rejects_other_types() -> None:
    with pytest.raises(TypeError):
        context_for_channel("stop")  # type: ignore[arg-type]


def test_as_context_returns_contexts_unchanged_and_wraps_events() -> None:
    ctx = Context()
    assert as_context(ctx) is ctx
    event = threading.Event()
    wrapped = as_context(event)
    event.set()
    assert wrapped.wait(5)
    assert not as_context(None).cancelled()
