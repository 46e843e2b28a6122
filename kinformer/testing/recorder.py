"""Recorder: an event handler that writes down what it is told, for a test to take in order.

A :class:`Recorder` is a :class:`~kinformer.ResourceEventHandler` that puts each callback on a
queue as a short tuple, so a test asserts on whole sequences of notifications
(``recorder.take(3) == [...]``) and blocks on the next one instead of sleeping. Beside
:class:`~kinformer.testing.ScriptedSource`, it is how kinformer's own suite tests informers.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from kinformer import _checks, meta
from kinformer.cache import store


def describe(obj: Any) -> str:
    """``name`` followed by ``resourceVersion`` (``"a1"``), or ``DFSU(key)`` for a tombstone:
    short enough to compare whole lists of events at once."""
    if isinstance(obj, store.DeletedFinalStateUnknown):
        return f"DFSU({obj.key})"
    return f"{meta.name(obj)}{meta.resource_version(obj) or ''}"


class Recorder:
    """A ResourceEventHandler that queues every call as a short tuple for the test to take.

    ``("add", describe(obj), is_in_initial_list)``, ``("update", describe(old), describe(new))``
    and ``("delete", describe(obj))``, with ``describe`` given (default :func:`describe`: name
    and resourceVersion, ``"a1"``). Callbacks run on the informer's delivery thread;
    ``entered`` is set by the first one, and with a ``gate`` every callback waits for it to be
    set before it records. With a ``probe``, every callback then calls it with its object (the
    new one of an update), still on the delivery thread, and appends the answer to ``probed``
    before the event is queued: what the cache held while a handler ran. :meth:`next` and
    :meth:`take` block for at most ``timeout`` seconds each event, then raise ``queue.Empty``.

    Example, with ``informer`` running over a :class:`~kinformer.testing.ScriptedSource` of one
    object ``a`` at resourceVersion 1::

        recorder = Recorder()
        informer.add_event_handler(recorder)
        assert recorder.next() == ("add", "a1", True)
    """

    def __init__(
        self,
        describe: Callable[[Any], str] = describe,
        gate: threading.Event | None = None,
        probe: Callable[[Any], Any] | None = None,
        timeout: float = 5.0,
    ) -> None:
        self.describe = describe
        self.gate = gate
        self.probe = probe
        self.timeout = _checks.seconds("timeout", timeout, positive=True)
        self.probed: list[Any] = []
        self.entered = threading.Event()
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()

    def _record(self, obj: Any, *event: Any) -> None:
        self.entered.set()
        if self.gate is not None:
            self.gate.wait()
        if self.probe is not None:
            self.probed.append(self.probe(obj))
        self.events.put(event)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._record(obj, "add", self.describe(obj), is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        self._record(new, "update", self.describe(old), self.describe(new))

    def on_delete(self, obj: Any) -> None:
        self._record(obj, "delete", self.describe(obj))

    def next(self) -> tuple[Any, ...]:
        """The oldest event not taken yet, waiting for it if need be."""
        return self.events.get(timeout=self.timeout)

    def take(self, count: int) -> list[tuple[Any, ...]]:
        """The next ``count`` events, in the order they were delivered."""
        return [self.next() for _ in range(count)]

    def quiet(self) -> bool:
        """True if every event delivered so far has been taken."""
        return self.events.empty()
