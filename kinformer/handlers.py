"""Event handlers: what a SharedIndexInformer calls when its cache changes.

A handler is anything with ``on_add(obj, is_in_initial_list)``, ``on_update(old, new)`` and
``on_delete(obj)`` (the :class:`ResourceEventHandler` protocol). :class:`ResourceEventHandlerFuncs`
and :class:`ResourceEventHandlerDetailedFuncs` adapt plain functions, and
:class:`FilteringResourceEventHandler` turns objects moving in and out of a filter into adds and
deletes. The informer (``informer.py``) delivers to each handler on its own thread
(``processor.py``); :func:`wait_for_cache_sync` waits for informers or registrations to sync.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, runtime_checkable

from kinformer import _checks, context
from kinformer.cache import store

log = logging.getLogger(__name__)

SYNC_POLL_INTERVAL = 0.1  # the longest pause between checks: client-go's WaitForCacheSync period
SYNC_POLL_SHARE = 0.05  # else a pause is this share of the time waited so far (sync_poll_pause)
SYNC_POLL_FIRST = 0.001  # and never shorter than this


@runtime_checkable
class ResourceEventHandler(Protocol):
    """Receives notifications about one resource type, in order per handler.

    ``on_delete`` may receive a :class:`~kinformer.DeletedFinalStateUnknown` when the
    delete itself was missed (see :func:`deleted_object`).
    """

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None: ...

    def on_update(self, old: Any, new: Any) -> None: ...

    def on_delete(self, obj: Any) -> None: ...


class FuncsHandler:
    """The one shape of every handler made of functions (the ``*Funcs`` classes).

    Each notification calls its optional function with the notification's arguments; a missing
    function means the notification is ignored. :class:`ResourceEventHandlerFuncs`,
    :class:`ResourceEventHandlerDetailedFuncs`, :class:`~kinformer.ClusterEventHandlerFuncs` and
    :class:`~kinformer.GVREventHandlerFuncs` are it, each declaring its functions' types and
    its own notification methods, which go through :meth:`_call`. The repr names the functions
    given (``<ClusterEventHandlerFuncs add_func>``).
    """

    __slots__ = ("add_func", "delete_func", "update_func")

    FUNCS: ClassVar[tuple[str, ...]] = ("add_func", "update_func", "delete_func")  # for the repr

    def __init__(
        self,
        add_func: Callable[..., object] | None,
        update_func: Callable[..., object] | None,
        delete_func: Callable[..., object] | None,
    ) -> None:
        self.add_func = add_func
        self.update_func = update_func
        self.delete_func = delete_func

    @staticmethod
    def _call(func: Callable[..., object] | None, *args: Any) -> None:
        if func is not None:
            func(*args)

    def __repr__(self) -> str:
        given = [name for name in self.FUNCS if getattr(self, name) is not None]
        return f"<{type(self).__name__} {', '.join(given) or 'none'}>"


class _ObjectFuncs(FuncsHandler):
    """What both object handlers of functions share: ``update_func(old, new)``, ``delete_func(obj)``."""

    __slots__ = ()

    def on_update(self, old: Any, new: Any) -> None:
        self._call(self.update_func, old, new)

    def on_delete(self, obj: Any) -> None:
        self._call(self.delete_func, obj)


class ResourceEventHandlerFuncs(_ObjectFuncs):
    """A handler made of optional functions; ``add_func(obj)`` does not see ``is_in_initial_list``.

    A missing function means the notification is ignored.
    """

    __slots__ = ()

    def __init__(
        self,
        add_func: Callable[[Any], object] | None = None,
        update_func: Callable[[Any, Any], object] | None = None,
        delete_func: Callable[[Any], object] | None = None,
    ) -> None:
        super().__init__(add_func, update_func, delete_func)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._call(self.add_func, obj)


class ResourceEventHandlerDetailedFuncs(_ObjectFuncs):
    """Like :class:`ResourceEventHandlerFuncs`, but ``add_func(obj, is_in_initial_list)``."""

    __slots__ = ()

    def __init__(
        self,
        add_func: Callable[[Any, bool], object] | None = None,
        update_func: Callable[[Any, Any], object] | None = None,
        delete_func: Callable[[Any], object] | None = None,
    ) -> None:
        super().__init__(add_func, update_func, delete_func)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._call(self.add_func, obj, is_in_initial_list)


class FilteringResourceEventHandler:
    """Forwards to ``handler`` only what passes ``filter_func``, as client-go does.

    An update whose new object passes but old does not becomes ``on_add(new, False)``; one whose
    old object passes but new does not becomes ``on_delete(old)`` (the old object, not a
    tombstone). Deletes are filtered on exactly what was delivered, a
    ``DeletedFinalStateUnknown`` included. The filter runs on the handler's delivery thread.
    """

    __slots__ = ("filter_func", "handler")

    def __init__(self, filter_func: Callable[[Any], bool], handler: ResourceEventHandler) -> None:
        self.filter_func = filter_func
        self.handler = handler

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if self.filter_func(obj):
            self.handler.on_add(obj, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        new_passes = self.filter_func(new)
        old_passes = self.filter_func(old)
        if new_passes and old_passes:
            self.handler.on_update(old, new)
        elif new_passes:
            self.handler.on_add(new, False)
        elif old_passes:
            self.handler.on_delete(old)

    def on_delete(self, obj: Any) -> None:
        if self.filter_func(obj):
            self.handler.on_delete(obj)

    def for_cluster(self, cluster: str) -> ResourceEventHandler:
        """This filter before ``handler``'s own handler for member ``cluster`` when ``handler``
        makes one per member cluster (a :class:`~kinformer.cluster_handlers.PerClusterHandler`,
        such as a controller's event handler), else before ``handler`` itself: a filter never
        hides from a multi-cluster informer which member a notification came from."""
        make = getattr(self.handler, "for_cluster", None)
        made = self.handler if make is None else make(cluster)
        return self if made is self.handler else FilteringResourceEventHandler(self.filter_func, made)


def deleted_object(obj: Any) -> Any:
    """The object an ``on_delete`` was about: a tombstone's last known state, else ``obj`` itself.

    A :class:`~kinformer.DeletedFinalStateUnknown` may carry ``None`` when nothing was
    known about the object; its ``.key`` always names it.
    """
    if isinstance(obj, store.DeletedFinalStateUnknown):
        return obj.obj
    return obj


def wait_for_cache_sync(
    stop: context.StopSignal | None,
    *has_synced: Callable[[], bool],
    timeout: float | None = None,
) -> bool:
    """Wait until every ``has_synced()`` returns True (True), ``stop`` fires or ``timeout`` passes (False).

    Checks at once, so an already synced cache gives True even with a set ``stop``; then checks
    again and again, waiting on ``stop`` in between (:func:`sync_poll_pause`): soon at first, so
    a cache that syncs in 10 ms is seen synced about then, not at client-go's first 100 ms
    check, and every 100 ms once a wait is long. ``timeout`` is in real seconds; None waits for
    as long as ``stop`` allows (anything but None or finite seconds raises
    :class:`~kinformer.ConfigurationError`). Blocks the calling thread only.
    """
    timeout = _checks.timeout("timeout", timeout)
    began = time.monotonic()
    deadline = None if timeout is None else began + timeout
    pause = stop if stop is not None else threading.Event()
    while True:
        if all(fn() for fn in has_synced):
            return True
        if _is_set(pause):
            log.debug("stopped while waiting for caches to sync")
            return False
        wait = sync_poll_pause(time.monotonic() - began)
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                log.warning("caches did not sync within %.1fs", timeout)
                return False
            wait = min(wait, remaining)
        pause.wait(wait)


def sync_poll_pause(waited: float) -> float:
    """The pause before the next look at ``has_synced`` after ``waited`` seconds of waiting: a
    twentieth of the time waited (:data:`SYNC_POLL_SHARE`), at least 1 ms and at most 100 ms
    (:data:`SYNC_POLL_INTERVAL`).

    A cache is seen synced within about 5% of the time it took (plus a millisecond), and a wait
    of ``T`` seconds looks about ``20 ln(T / 20 ms)`` times in its first 2 s, then ten times a
    second, as client-go's does throughout.
    """
    return min(SYNC_POLL_INTERVAL, max(SYNC_POLL_FIRST, waited * SYNC_POLL_SHARE))


def _is_set(stop: context.StopSignal) -> bool:
    if isinstance(stop, context.Context):
        return stop.cancelled()
    return stop.is_set()
