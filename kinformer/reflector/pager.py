"""The reflector's paginated list: the page size to ask for and every page of one list.

Like client-go's ``tools/pager`` as its reflector uses it: a list is asked for in pages of
``limit`` objects and the pages are joined into one :class:`~kinformer.ListResult`
at the first page's resourceVersion. A continuation token that expired (410) falls back to one
full list at the original version. :mod:`kinformer.reflector.reflector` calls it for every list and
relist; the requests go through the reflector's :class:`~kinformer.ListerWatcher`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kinformer import context as _context
from kinformer import errors
from kinformer.client import listwatch

log = logging.getLogger("kinformer.reflector.reflector")  # one logger for all of the reflector's parts

DEFAULT_PAGE_SIZE = 500  # client-go's pager default


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
    lister: listwatch.ListerWatcher,
    rv: str,
    limit: int,
    cancelled: Callable[[], bool],
    name: str,
    ctx: _context.Context | None = None,
) -> tuple[listwatch.ListResult, bool] | None:
    """All pages of one list at ``rv``, and whether it came in pages; None once ``cancelled()``.

    Blocks on the requests, on the caller's thread; ``cancelled`` is checked between pages, and
    cancelling ``ctx`` breaks off a request in flight when the lister takes a context (the
    request then raises). A continuation page that expired falls back to one full list at
    ``rv``; any other error propagates. ``name`` is the reflector's, for the log line.
    """
    def page(options: listwatch.ListOptions) -> listwatch.ListResult:
        return listwatch.list_with_context(lister, options, ctx)

    first = page(listwatch.ListOptions(resource_version=rv, limit=limit or None))
    if not first.continue_token:
        return first, False
    items = list(first.items)
    token = first.continue_token
    while token:
        if cancelled():
            return None
        try:
            page_result = page(listwatch.ListOptions(limit=limit or None, continue_token=token))
        except Exception as exc:
            if not errors.is_expired(exc):
                raise
            log.warning(
                "reflector %s: continuation page expired; listing everything at rv=%r",
                name,
                rv,
            )
            full = page(listwatch.ListOptions(resource_version=rv))
            return full, True
        items.extend(page_result.items)
        token = page_result.continue_token
    return listwatch.ListResult(items, first.resource_version, ""), True
