"""The HTTP ListerWatcher: list and watch of one resource collection over the request path.

:meth:`~kinformer.ListWatch.for_resource` builds a :class:`~kinformer.ListWatch` over an
:class:`HTTPResource`, which sends its GET requests through a :class:`~kinformer.client.rest.Client`
(so host, credentials, TLS, proxy and cancellation all come from there), decodes the JSON
itself (objects stay dicts) and checks what it decoded with :mod:`kinformer.meta`.
:class:`HTTPWatch` reads one chunked watch response and splits it into events itself. The value
types it returns are those of :mod:`kinformer.client.listerwatcher`.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kinformer import _checks, _json, errors, meta
from kinformer import context as _context
from kinformer import gvr as _gvr
from kinformer.client import cadence as _cadence
from kinformer.client import listerwatcher, rest

log = logging.getLogger(__name__)

_READ_CHUNK = 256 * 1024  # bytes per read of a watch stream; a read returns as soon as data arrives
_EVENT_TYPES = listerwatcher.EVENT_TYPES
_WatchEvent = listerwatcher.WatchEvent
_new_event = tuple.__new__  # builds a WatchEvent without NamedTuple.__new__'s frame
_CHANGES = frozenset(("ADDED", "MODIFIED", "DELETED"))


def _runs(starts: list[tuple[str, int]], total: int) -> meta.NamespaceRuns:
    """``(namespace, first index)`` per run, then the item count -> ``(namespace, run length)``."""
    if not starts:
        return []
    ends = [first for _, first in starts[1:]]
    ends.append(total)
    return [(namespace, end - first) for (namespace, first), end in zip(starts, ends, strict=True)]


def _stopper(ctx: _context.Context, what: str) -> Callable[[], None]:
    """What a list's decode calls between chunks: raises once ``ctx`` is cancelled, as a
    request broken off does, so a stop does not wait for a big list to be decoded."""

    def check() -> None:
        if ctx.cancelled():
            raise errors.TransportError(f"{what}: request cancelled")

    return check


class _ListedItems:
    """A list's items checked, completed (``kind``, ``apiVersion``) and keyed a decoded chunk at
    a time (a :class:`kinformer._json.ItemsTaker`), then put through the transform of
    :func:`~kinformer.client.listerwatcher.transforming_pages` when the caller set one: what it
    drops is freed before the next chunk is decoded."""

    __slots__ = ("api_version", "error", "keys", "run_namespace", "starts", "transform", "what",
                 "with_json")

    def __init__(self, what: str, api_version: str,
                 transform: listerwatcher.PageTransform | None) -> None:
        self.what = what
        self.api_version = api_version
        self.transform = None if transform is None else transform.items
        self.with_json = None if transform is None else transform.with_json
        self.error: BaseException | None = None  # what an item raised, told from bad JSON
        self.restart()

    def restart(self) -> None:
        self.keys: list[str] = []  # each item's store key, made while the item is fresh
        self.starts: list[tuple[str, int]] = []  # (namespace, index of its first item), per run
        self.run_namespace: str | None = None

    def __call__(self, head: dict[str, Any], items: list[Any],
                 raw: _json.ItemBytes | None = None) -> list[Any]:
        try:
            return self._take(head, items, raw)
        except Exception as exc:
            self.error = exc
            raise

    def _take(self, head: dict[str, Any], items: list[Any], raw: _json.ItemBytes | None
              ) -> list[Any]:
        what = self.what
        kind = head.get("kind")
        item_kind = kind[:-4] if isinstance(kind, str) and kind.endswith("List") else None
        api_version = head.get("apiVersion") or self.api_version
        keys = self.keys
        add_key, add_start = keys.append, self.starts.append
        run_namespace = self.run_namespace
        # keys of objects a transform may rename are not made; a JSONTransform (a compact
        # cache's packer) keeps every object's name
        transformed = self.transform is not None and self.with_json is None
        # each item's JSON as sent, cut before the items are completed below, and begun with
        # the kind and apiVersion the loop gives them when the first item lacks them (checked
        # after it: all items must lack what the first lacks)
        sent = None
        lacks_kind = lacks_version = False
        if raw is not None and self.with_json is not None and items and type(items[0]) is dict:
            lacks_kind = bool(item_kind) and "kind" not in items[0]
            lacks_version = "apiVersion" not in items[0]
            opening = _opening(item_kind if lacks_kind else None,
                               api_version if lacks_version else None)
            sent = raw.split(items, opening)
        kinds = versions = 0  # items completed with a kind, with an apiVersion
        object_key = meta.object_key
        try:
            for item in items:
                # meta.is_well_formed, inline and by subscript: the item is read from memory once
                # here, for its check and its key together (a third of this loop's time)
                try:
                    metadata = item["metadata"]
                    name = metadata["name"]
                    namespace = metadata.get("namespace")
                    fit = (type(item) is dict and type(metadata) is dict
                           and type(name) is str and name != ""
                           and (namespace is None or type(namespace) is str)
                           and type(metadata.get("resourceVersion", "")) is str)
                except (KeyError, TypeError, AttributeError):
                    fit = False
                if not fit:
                    meta.check(item, what)  # raises, saying what is wrong
                if item_kind and "kind" not in item:
                    item["kind"] = item_kind
                    kinds += 1
                if "apiVersion" not in item:
                    item["apiVersion"] = api_version
                    versions += 1
                if transformed:  # keys of objects a transform may rename: not made
                    continue
                add_key(object_key(namespace, name))
                namespace = namespace or ""
                if namespace != run_namespace:  # a list comes in key order: rarely true
                    run_namespace = namespace
                    add_start((namespace, len(keys) - 1))
        except errors.DecodeError as exc:
            log.warning("%s", exc)
            raise
        self.run_namespace = run_namespace
        if self.transform is None:
            return items
        if sent is not None and self.with_json is not None:
            count = len(items)
            if kinds == (count if lacks_kind else 0) and versions == (count if lacks_version else 0):
                return self.with_json(items, sent)
        return self.transform(items)


def _opening(kind: str | None, api_version: str | None) -> bytes:
    """What stands for an item's ``{`` in its JSON as kept, when the lister gives it the
    ``kind`` and ``apiVersion`` it was sent without (each None when it was sent with it): the
    fields put first, as they are in every object the server sends whole."""
    opening = b"{"
    if kind is not None:
        opening += b'"kind":' + _json.dumps(kind) + b","
    if api_version is not None:
        opening += b'"apiVersion":' + _json.dumps(api_version) + b","
    return opening


class HTTPResource:
    """List and watch of one resource collection through the request path.

    Thread-safe: each call sends its own request. ``list`` reads the whole response and
    returns a :class:`~kinformer.ListResult`; ``watch`` returns an open
    :class:`HTTPWatch`. Both raise typed errors (HTTP statuses, transport failures, responses
    that do not decode to what Kubernetes sends). Both take an optional ``ctx``: cancelling it
    breaks off the request, even one the server has not answered yet, and the call raises
    :class:`~kinformer.TransportError`. Every request waits at most the ``(connect, read)``
    timeouts for its answer; with ``watch_margin``, a watch asking the server to end it after
    ``timeoutSeconds`` then waits up to ``timeoutSeconds + watch_margin`` for each read of its
    events (the member clusters' informers read so), else the read timeout again. With
    ``bookmark_timeout`` too, a watch that asked for bookmarks waits only that long once the
    server proved it sends them at least that often (a :class:`~kinformer.client.cadence.BookmarkCadence`
    shared by this collection's watches, one after another), so a connection that dies silently
    is noticed within ``bookmark_timeout`` instead of at the watch's end.
    """

    def __init__(
        self,
        client: rest.Client,
        gvr: _gvr.GroupVersionResource,
        namespace: str,
        label_selector: str | None,
        field_selector: str | None,
        read_timeout: float,
        connect_timeout: float,
        tweak: Callable[[listerwatcher.ListOptions], listerwatcher.ListOptions | None] | None,
        shard_selector: str = "",
        cluster_prefix: str = "",
        *,
        watch_margin: float | None = None,
        bookmark_timeout: float | None = None,
    ) -> None:
        self._client = client
        self._gvr = gvr
        self._path = cluster_prefix + rest.resource_path(gvr, namespace)
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._timeout = (_checks.seconds("connect_timeout", connect_timeout, positive=True),
                         _checks.seconds("read_timeout", read_timeout, positive=True))
        self._tweak = tweak
        # None: a watch's events wait the read timeout, as its headers do; else a watch with a
        # server-side timeout waits for its events that timeout plus this margin, so an idle
        # watch without bookmarks is never cut short by the client
        self._watch_margin = (None if watch_margin is None
                              else _checks.seconds("watch_margin", watch_margin, positive=True))
        # what this collection's watches learned of the server's bookmarks (None: not asked)
        self._cadence = (None if bookmark_timeout is None
                         else _cadence.BookmarkCadence(bookmark_timeout, gvr.group_resource))
        self._shard_selector = shard_selector
        self._api_version = gvr.version if gvr.group == "" else f"{gvr.group}/{gvr.version}"

    def _options(self, options: listerwatcher.ListOptions) -> listerwatcher.ListOptions:
        options = dataclasses.replace(options)
        if self._label_selector is not None and options.label_selector is None:
            options.label_selector = self._label_selector
        if self._field_selector is not None and options.field_selector is None:
            options.field_selector = self._field_selector
        if self._shard_selector and not options.shard_selector:
            options.shard_selector = self._shard_selector
        if self._tweak is not None:
            tweaked = self._tweak(options)
            if tweaked is not None:
                options = tweaked
        return options

    def list(
        self, options: listerwatcher.ListOptions, ctx: _context.Context | None = None
    ) -> listerwatcher.ListResult:
        """One list request; cancelling ``ctx`` breaks it off, its decode included (it raises
        TransportError)."""
        options = self._options(options)
        what = f"list {self._gvr.group_resource}"  # once: the request, the error messages, item checks
        data = self._client.request(
            "GET", self._path, query=options.query(), timeout=self._timeout, ctx=ctx, what=what
        ).read()
        pages = listerwatcher.page_transform()
        taker = _ListedItems(what, self._api_version, pages)
        try:
            body = _json.loads_bulk(data, None if ctx is None else _stopper(ctx, what), taker,
                                    kept=pages is None or pages.kept)
        except ValueError as exc:
            if exc is taker.error:  # an item, not the JSON: raised as it is
                raise
            log.warning("%s: response is not JSON: %s", what, exc)
            raise errors.DecodeError(f"{what}: response is not JSON") from exc
        if isinstance(body, dict) and "items" in body and body["items"] is None:
            body["items"] = []  # an empty list as Go writes a nil slice; client-go reads it so
        if not isinstance(body, dict) or not isinstance(body.get("items"), list):
            log.warning("%s: response is not a list (no items)", what)
            raise errors.DecodeError(f"{what}: response is not a list (no items)")
        items: list[Any] = body["items"]
        metadata = body.get("metadata") or {}
        is_dict = isinstance(metadata, dict)
        rv = (metadata.get("resourceVersion") or "") if is_dict else None
        token = (metadata.get("continue") or "") if is_dict else None
        if not isinstance(rv, str) or not isinstance(token, str):
            log.warning("%s: response metadata is not an object of strings", what)
            raise errors.DecodeError(f"{what}: response metadata is not an object of strings")
        shard_info = None
        if options.shard_selector and is_dict:
            info = metadata.get("shardInfo")
            if isinstance(info, dict) and isinstance(info.get("selector"), str):
                shard_info = info["selector"]
        if taker.transform is not None and taker.with_json is None:  # the keys may not fit
            return listerwatcher.ListResult(items, rv, token, shard_info, checked=True,
                                            transformed=True)
        return listerwatcher.ListResult(items, rv, token, shard_info, checked=True, keys=taker.keys,
                                        namespace_runs=_runs(taker.starts, len(taker.keys)),
                                        transformed=taker.transform is not None)

    def watch(
        self, options: listerwatcher.ListOptions, ctx: _context.Context | None = None
    ) -> HTTPWatch:
        """Open a watch; cancelling ``ctx`` before the response arrives breaks the request off.

        Once open, the watch is the caller's to close (cancelling ``ctx`` no longer does).
        """
        options = self._options(options)
        response = self._client.request(
            "GET", self._path, query=[("watch", "true"), *options.query()], timeout=self._timeout,
            ctx=ctx, what=f"watch {self._gvr.group_resource}",
        )
        response.keep_open()
        patient = self._timeout[1]
        if self._watch_margin is not None and options.timeout_seconds:
            patient = max(patient, options.timeout_seconds + self._watch_margin)
        cadence = None
        if self._cadence is not None and options.allow_watch_bookmarks:
            cadence = self._cadence.watch(patient)
        read_timeout = patient if cadence is None else cadence.read_timeout
        if read_timeout != self._timeout[1]:
            response.set_read_timeout(read_timeout)
        return HTTPWatch(response, self._gvr.group_resource, cadence)


class HTTPWatch:
    """A watch stream over one chunked HTTP response: one JSON event per line.

    Iterate once, on one thread. ``close()`` is thread-safe and idempotent: it shuts the socket
    down so a blocked read wakes at once, and the iteration then ends quietly. A malformed line,
    an unknown event type or an object without a string ``metadata.name`` is logged and raised as
    :class:`~kinformer.DecodeError`; an event cut off by the end of the stream ends it quietly;
    a broken connection, or silence for longer than the read timeout, raises
    :class:`~kinformer.TransportError`. ERROR events are yielded (see
    :func:`~kinformer.client.listerwatcher.error_from_event`). ``silent`` says whether it
    ended so, by silence. With a ``cadence``, a bookmark that proves the server's cadence
    tightens the read timeout of the reads after it (:mod:`kinformer.client.cadence`).

    Or read it a socket read at a time with :meth:`batches` (a
    :class:`~kinformer.client.listerwatcher.BatchWatch`), as the reflector does.
    ``checked`` is True: every other event it yields is of a known type with a metadata dict
    whose ``resourceVersion`` is a string, and, unless a bookmark, fit for a cache
    (:func:`kinformer.meta.is_well_formed`), so the reflector need not look again.
    """

    checked = True

    def __init__(self, response: rest.Response, subject: str,
                 cadence: _cadence.WatchCadence | None = None) -> None:
        self._response = response
        self._subject = subject
        self._cadence = cadence
        self._closed = threading.Event()
        self._lock = threading.Lock()  # guards _iterating: who releases the response on close
        self._iterating = False

    @property
    def silent(self) -> bool:
        """Whether a read waited its whole read timeout for nothing: the server, or the
        connection to it, went quiet."""
        return self._response.silent

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        self._response.shutdown()
        with self._lock:
            iterating = self._iterating
        if not iterating:  # else the reading thread releases the connection on its way out
            self._response.release()

    def __iter__(self) -> Iterator[listerwatcher.WatchEvent]:
        closed = self._closed.is_set
        for types, objects in self.batches():
            for event in map(_new_event, itertools.repeat(_WatchEvent), zip(types, objects, strict=True)):
                if closed():  # nothing more once closed, not even the rest of a read
                    return
                yield event

    def batches(self) -> Iterator[listerwatcher.WatchBatch]:
        """The events of each read of the stream, decoded and checked, as one batch.

        A read takes what the socket holds (up to 256 KiB); its complete lines make one batch,
        and what follows the last newline waits for the next read. A line that fails ends the
        batch before it; the error is raised when the next batch is asked for.
        """
        pending = b""
        with self._lock:
            self._iterating = True
        read1 = self._response.read1
        closed = self._closed.is_set
        cadence = self._cadence
        try:
            while not closed():
                try:
                    chunk = read1(_READ_CHUNK)
                except errors.TransportError:
                    if closed():
                        return
                    if cadence is not None and self._response.silent:
                        cadence.silent()
                    raise
                if not chunk:
                    if pending.strip() and not closed():
                        event = self._decode_tail(pending)
                        if event is not None:
                            yield listerwatcher.WatchBatch([event.type], [event.object])
                    return
                if b"\n" not in chunk:
                    pending += chunk
                    continue
                lines = (pending + chunk).split(b"\n") if pending else chunk.split(b"\n")
                pending = lines.pop()
                if closed():
                    return
                batch, error = self._decode_lines(lines)
                if cadence is not None:
                    tightened = cadence.heard(batch.types, batch.objects)
                    if tightened is not None:
                        self._response.set_read_timeout(tightened)
                if batch.types:
                    yield batch
                if error is not None:
                    raise error
        finally:
            self._response.release()

    def _decode_lines(
        self, lines: list[bytes]
    ) -> tuple[listerwatcher.WatchBatch, errors.DecodeError | None]:
        """The events of complete ``lines`` in order, up to the first that fails, and its error.

        The usual read, every line a well-formed change, is decoded and checked a list at a
        time; anything else (a blank line, a bookmark, an ERROR, a line that fails) line by line.
        """
        try:
            raws = list(map(_json.loader(), lines))
            types = [raw["type"] for raw in raws]
            objects = [raw["object"] for raw in raws]
            usual = _CHANGES.issuperset(types)  # raises for a type that cannot be hashed
        except (ValueError, KeyError, TypeError):
            pass
        else:
            if usual and all(map(meta.is_well_formed, objects)):
                return listerwatcher.WatchBatch(types, objects), None
        types, objects = [], []
        try:
            for line in lines:
                if line and not line.isspace():  # blank lines (keep-alives) are skipped
                    event_type, obj = self._decode(line)
                    types.append(event_type)
                    objects.append(obj)
        except errors.DecodeError as exc:
            return listerwatcher.WatchBatch(types, objects), exc
        return listerwatcher.WatchBatch(types, objects), None

    def _decode_tail(self, tail: bytes) -> listerwatcher.WatchEvent | None:
        """The event in what followed the last newline when the stream ended, if it is whole.

        The server ends every event with a newline; text after the last one that is not JSON
        is an event cut off by a dropped connection, and the stream simply ends there: None.
        """
        try:
            _json.loads(tail)
        except ValueError:
            log.info("watch %s: stream cut off mid-event (%d bytes); ending", self._subject, len(tail))
            return None
        return self._decode(tail)

    def _decode(self, line: bytes) -> listerwatcher.WatchEvent:
        try:
            raw = _json.loads(line)
        except ValueError as exc:
            log.warning("watch %s: malformed line: %.200r", self._subject, line)
            raise errors.DecodeError(f"watch {self._subject}: malformed line") from exc
        if not isinstance(raw, dict):
            log.warning("watch %s: event is not an object: %.200r", self._subject, line)
            raise errors.DecodeError(f"watch {self._subject}: event is not an object")
        event_type = raw.get("type")
        obj = raw.get("object")
        if type(event_type) is not str or event_type not in _EVENT_TYPES:  # a list cannot be hashed
            log.warning("watch %s: unknown event type %.50r", self._subject, event_type)
            raise errors.DecodeError(f"watch {self._subject}: unknown event type {event_type!r}")
        if event_type == "ERROR":
            if not isinstance(obj, dict):
                raise errors.DecodeError(f"watch {self._subject}: ERROR event without a Status")
        elif event_type == "BOOKMARK":
            metadata = obj.get("metadata") if isinstance(obj, dict) else None
            if not isinstance(metadata, dict):
                log.warning("watch %s: bookmark without metadata", self._subject)
                raise errors.DecodeError(f"watch {self._subject}: bookmark without metadata")
            if not isinstance(metadata.get("resourceVersion", ""), str):
                # the reflector would resume, and relist, from this version forever
                log.warning("watch %s: bookmark resourceVersion is not a string", self._subject)
                raise errors.DecodeError(
                    f"watch {self._subject}: bookmark resourceVersion is not a string")
        elif not meta.is_well_formed(obj):
            try:
                meta.check(obj, f"watch {self._subject}: {event_type}")  # raises, saying why
            except errors.DecodeError as exc:
                log.warning("%s", exc)
                raise
        return _new_event(_WatchEvent, (event_type, obj))
