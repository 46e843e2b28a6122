"""One watch response on the wire: chunked JSON lines fed from a watcher's queue.

:class:`WatchStream` owns the writing side of one open watch: events filtered by the
watcher's selectors (leaving a selector is DELETED with the previous object, entering it is
ADDED), periodic bookmarks, the clean end after ``timeoutSeconds`` or once the watcher falls too
far behind, and the fault switches' abrupt ends and freeze. It runs on the connection's thread;
only a slow client, or a freeze, makes it wait.
"""

from __future__ import annotations

import contextlib
import io
import queue
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from kinformer.testing._apiserver import status
from kinformer.testing._apiserver.records import DELETED, Entry, Event, dumps, served
from kinformer.testing._apiserver.storage import watchers as w
from kinformer.testing._apiserver.storage.storage import Storage

MAX_BATCH = 512  # watch events written per chunk when a watcher has a backlog
IDLE_WAIT = 3600.0  # seconds to wait for an item when neither bookmarks nor a timeout are due
FROZEN_POLL = 0.05  # seconds between a frozen stream's looks at its client and its queue


def bookmark_line(kind: str, api_version: str, rv: int, initial_end: bool = False) -> bytes:
    """A BOOKMARK event line: exactly kind, apiVersion and metadata.resourceVersion."""
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return dumps({"type": "BOOKMARK", "object": {
        "kind": kind, "apiVersion": api_version, "metadata": meta}}) + b"\n"


def error_line(err: status.StatusError) -> bytes:
    """An ERROR event line carrying ``err``'s Status."""
    return b'{"type":"ERROR","object":' + dumps(err.body()) + b"}\n"


class WatchStream:
    """Writes one watch response body to ``wfile`` (headers already sent).

    :meth:`run` returns True after a clean end (terminating chunk written, the connection may
    be reused) and False after an abrupt one (the connection is shut down).
    """

    def __init__(
        self,
        wfile: io.BufferedIOBase,
        connection: socket.socket,
        storage: Storage,
        watcher: w.Watcher,
        bookmark_interval: float,
        render: Callable[[Entry], bytes] | None = None,
        bookmark_type: tuple[str, str] | None = None,
        pacing: tuple[float, bool] = (0.0, True),
        stopping: threading.Event | None = None,
    ) -> None:
        self._wfile = wfile
        self._render = render
        self._bookmark_type = bookmark_type or (watcher.rt.kind, watcher.rt.api_version)
        self._connection = connection
        self._storage = storage
        self._watcher = watcher
        self._interval = bookmark_interval
        self._pace, self._initial_end = pacing  # FakeAPIServer.pace_initial_events
        self._stopping = stopping or threading.Event()

    def write_chunk(self, data: bytes) -> None:
        self._wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end(self) -> None:
        """Write the terminating chunk: a clean end of the stream."""
        self._wfile.write(b"0\r\n\r\n")

    def abort(self) -> None:
        """Shut the connection down without a terminating chunk."""
        with contextlib.suppress(OSError):
            self._connection.shutdown(socket.SHUT_RDWR)

    def freeze(self) -> None:
        """Write nothing more, and keep the connection open, until the client closes it or the
        server drops it (``drop_watches()``, ``stop()``): a hung server, or a
        network path that went silent, as the client sees it. Items queued meanwhile are lost."""
        connection, get_nowait = self._connection, self._watcher.queue.get_nowait
        while True:
            try:
                readable, _, _ = select.select([connection], [], [], FROZEN_POLL)
            except (OSError, ValueError):  # closed under it
                return
            if readable:  # a watch's client sends nothing more: it closed, or the server shut it
                return
            try:
                while True:
                    if get_nowait()[0] == w.DROP:
                        return
            except queue.Empty:
                pass

    def bookmark(self, rv: int, initial_end: bool = False) -> bytes:
        """A bookmark line of this watch (its objects' kind, or PartialObjectMetadata)."""
        kind, api_version = self._bookmark_type
        return bookmark_line(kind, api_version, rv, initial_end)

    def run(self, timeout: int, bookmarks: bool) -> bool:
        """Write the watcher's items until a timeout, a stop, a drop or a dead client."""
        storage, watcher = self._storage, self._watcher
        interval = self._interval
        started = time.monotonic()
        deadline = started + timeout if timeout > 0 else None
        next_bookmark = started + interval
        get = watcher.queue.get
        get_nowait = watcher.queue.get_nowait
        while True:
            if watcher.overflowed:  # kube-apiserver ends an unresponsive watcher: no ERROR event
                self.end()
                return True
            now = time.monotonic()
            wait = next_bookmark - now if bookmarks else IDLE_WAIT
            if deadline is not None:
                wait = min(wait, deadline - now)
            try:
                item = get(timeout=max(0.0, wait))
            except queue.Empty:
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    version = storage.bookmark_version(watcher) if bookmarks else None
                    if version is not None:
                        self.write_chunk(self.bookmark(version))
                    self.end()
                    return True
                if bookmarks and now >= next_bookmark:
                    version = storage.bookmark_version(watcher)
                    if version is not None:
                        self.write_chunk(self.bookmark(version))
                    next_bookmark = now + interval
                continue
            out: list[bytes] = []
            ending = ""
            while True:
                tag, payload = item
                if tag == w.EVENT:
                    line = self.event_line(payload)
                    if line:
                        out.append(line)
                    watcher.last_rv = payload.rv
                elif tag == w.INITIAL:
                    watcher.initial_left -= 1
                    if watcher.matches(payload.obj):
                        out.append(b'{"type":"ADDED","object":' + self.object_data(payload)
                                   + b"}\n")
                        if self._pace:
                            break  # paced: each on its own, the next after a pause
                elif tag == w.INITIAL_END:
                    if self._initial_end:
                        out.append(self.bookmark(payload, initial_end=True))
                elif tag == w.GARBAGE:
                    out.append(payload if payload.endswith(b"\n") else payload + b"\n")
                else:
                    ending = tag
                    break
                if len(out) >= MAX_BATCH:
                    break
                try:
                    item = get_nowait()
                except queue.Empty:
                    break
            now = time.monotonic()
            if not ending and deadline is not None and now >= deadline:
                ending = w.STOP
                if bookmarks and not watcher.initial_left:
                    out.append(self.bookmark(watcher.last_rv))
            elif not ending and bookmarks and now >= next_bookmark and not watcher.initial_left:
                # a busy stream: every event up to last_rv has been taken, so it may be promised
                out.append(self.bookmark(watcher.last_rv))
                next_bookmark = now + interval
            if out:
                self.write_chunk(b"".join(out))
                if self._pace and watcher.initial_left and self._stopping.wait(self._pace):
                    ending = w.DROP  # the server stops
            if ending == w.STOP:
                self.end()
                return True
            if ending == w.DROP:
                self.abort()
                return False
            if ending == w.FREEZE:
                self.freeze()
                self.abort()
                return False
            if ending == w.CUT:
                line = self.bookmark(watcher.last_rv)
                self.write_chunk(line[: len(line) // 2])
                self.abort()
                return False

    def object_data(self, entry: Entry) -> bytes:
        """How this watch writes an object: as the type's JSON, or rendered (a Table)."""
        if self._render is not None:
            return self._render(entry)
        entry = served(self._watcher.rt, entry)
        return entry.head + entry.tail

    def event_line(self, ev: Event) -> bytes | None:
        """The line this watcher sees for ``ev`` (None when its selectors hide it)."""
        watcher = self._watcher
        if not watcher.filtering:
            rt = watcher.rt
            if self._render is None and (
                    not rt.custom or ev.entry.obj.get("apiVersion") == rt.api_version):
                return ev.line()  # the common case: one line shared by every such watcher
            return b'{"type":"' + ev.type.encode() + b'","object":' \
                + self.object_data(ev.entry) + b"}\n"
        if ev.type == DELETED:
            if watcher.matches(ev.entry.obj):
                return b'{"type":"DELETED","object":' + self.object_data(ev.entry) + b"}\n"
            return None
        now_in = watcher.matches(ev.entry.obj)
        was_in = ev.prev is not None and watcher.matches(ev.prev.obj)
        if now_in:
            kind = b"MODIFIED" if was_in else b"ADDED"
            return b'{"type":"' + kind + b'","object":' + self.object_data(ev.entry) + b"}\n"
        if was_in:
            return b'{"type":"DELETED","object":' + self.object_data(ev.left()) + b"}\n"
        return None
