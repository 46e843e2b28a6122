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
    carries ``shard_selector``; the joined result keeps the first page's ``shard_info``.
    ``on_page``, when given, makes the objects each page contributes, as the page arrives.
    """
    first = lister.list(
        listerwatcher.ListOptions(resource_version=rv, limit=limit or None, shard_selector=shard_selector),
        ctx=ctx,
    )
    if not first.continue_token:
        return Pages(first if on_page is None else first._replace(items=on_page(first)), False)
    items = list(first.items) if on_page is None else on_page(first)
    token = first.continue_token
    checked = first.checked
    while token:
        if ctx.cancelled():
            return None
        options = listerwatcher.ListOptions(
            limit=limit or None, continue_token=token, shard_selector=shard_selector)
        try:
            page = lister.list(options, ctx=ctx)
        except Exception as exc:
            if not errors.is_expired(exc):
                raise
            log.warning(
                "reflector %s: continuation page expired; listing everything at rv=%r", name, rv
            )
            full = lister.list(
                listerwatcher.ListOptions(resource_version=rv, shard_selector=shard_selector), ctx=ctx)
            return Pages(full if on_page is None else full._replace(items=on_page(full)), True)
        items.extend(page.items if on_page is None else on_page(page))
        token = page.continue_token
        checked = checked and page.checked
    return Pages(
        listerwatcher.ListResult(items, first.resource_version, "", first.shard_info, checked), True)
