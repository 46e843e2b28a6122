"""The reflector's paginated list: the page size to ask for, and every page of one list.

client-go's ``tools/pager`` (``ListPager.ListWithAlloc`` with ``FullListIfExpired``) as its
reflector uses it, with the page-size rule of the reflector's ``list``: a list is asked for in
pages of ``limit`` objects and the pages are joined into one :class:`~kinformer.ListResult` at
the first page's resourceVersion; a continuation token that expired (410) falls back to one full
list at the original version. :mod:`kinformer.reflector.listing` calls :func:`list_all` for every
list and relist; the requests go through the reflector's :class:`~kinformer.ListerWatcher`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NamedTuple

from kinformer import context as _context
from kinformer import errors
from kinformer.client import listerwatcher

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # errors of any ListerWatcher: none may quote a token

DEFAULT_PAGE_SIZE = 500  # client-go's pager default


class Pages(NamedTuple):
    """One whole list: its result, and whether it came in more than one page."""

    result: listerwatcher.ListResult
    paginated: bool


def page_size(configured: int, paginated_before: bool, rv: str) -> int:
    """The ``limit`` of a list at ``rv``; 0 means one unpaginated request.

    A configured size wins. Otherwise lists at "0" and "" get the default size. A list at a
    specific version is asked for whole, so the server can serve it from its watch cache and
    spare etcd (client-go's rule), unless an earlier list at "0" came in pages, which means
    there is no watch cache to spare it.
    """
    if configured:
        return configured
    if paginated_before:
        return DEFAULT_PAGE_SIZE
    if rv not in ("", "0"):
        return 0
    return DEFAULT_PAGE_SIZE


def list_all(
    lister: listerwatcher.ContextListerWatcher,
    rv: str,
    limit: int,
    ctx: _context.Context,
    name: str,
    shard_selector: str = "",
    on_page: Callable[[listerwatcher.ListResult], list[Any]] | None = None,
) -> Pages | None:
    """Every page of one list at ``rv`` (``limit`` 0: one request); None once ``ctx`` is cancelled.

    Blocks on the requests, on the caller's thread. ``ctx`` is looked at between pages, and
    cancelling it breaks off a request in flight when the lister takes it (the request then
    raises). A continuation page that expired falls back to one full list at ``rv``; any
    other error propagates. ``name`` is the reflector's, for the log line. Every request
    carries ``shard_selector``; the joined result keeps the first page's ``shard_info``, and
    the pages' keys and namespace runs joined when every page carried them.
    ``on_page``, when given, makes the objects each page contributes, as the page arrives
    (the joined result then carries keys only where ``on_page`` handed a page's own items
    back: a lister that transformed them as it decoded them and kept their keys).
    """

    def request(options: listerwatcher.ListOptions) -> listerwatcher.ListResult:
        page = lister.list(options, ctx=ctx)
        if on_page is None:
            return page
        items = on_page(page)
        return page if items is page.items else page.unkeyed(items)

    first = request(listerwatcher.ListOptions(
        resource_version=rv, limit=limit or None, shard_selector=shard_selector))
    if not first.continue_token:
        return Pages(first, False)
    joined = _Joined(first)
    token = first.continue_token
    while token:
        if ctx.cancelled():
            return None
        options = listerwatcher.ListOptions(
            limit=limit or None, continue_token=token, shard_selector=shard_selector)
        try:
            page = request(options)
        except Exception as exc:
            if not errors.is_expired(exc):
                raise
            log.warning(
                "reflector %s: continuation page expired; listing everything at rv=%r", name, rv
            )
            return Pages(request(listerwatcher.ListOptions(
                resource_version=rv, shard_selector=shard_selector)), True)
        joined.add(page)
        token = page.continue_token
    return Pages(joined.result(), True)


class _Joined:
    """The pages of one list joined as they come: items, whether all were checked, and the keys
    and namespace runs while every page carries them (a run continued across pages stays one)."""

    __slots__ = ("checked", "first", "items", "keys", "runs")

    def __init__(self, first: listerwatcher.ListResult) -> None:
        self.first = first
        self.items = list(first.items)
        self.checked = first.checked
        keys = first.item_keys()
        self.keys: list[str] | None = None if keys is None else list(keys)
        self.runs = list(first.namespace_runs) if first.namespace_runs is not None else None

    def add(self, page: listerwatcher.ListResult) -> None:
        self.items.extend(page.items)
        self.checked = self.checked and page.checked
        more_keys = page.item_keys()
        if self.keys is not None and more_keys is not None:
            self.keys.extend(more_keys)
        else:
            self.keys = None
        runs, more = self.runs, page.namespace_runs
        if runs is None or more is None:
            self.runs = None
        elif runs and more and runs[-1][0] == more[0][0]:
            runs[-1] = (runs[-1][0], runs[-1][1] + more[0][1])
            runs.extend(more[1:])
        else:
            runs.extend(more)

    def result(self) -> listerwatcher.ListResult:
        first = self.first
        keys = self.keys
        return listerwatcher.ListResult(
            self.items, first.resource_version, "", first.shard_info, self.checked,
            keys=keys, namespace_runs=None if keys is None else self.runs)
