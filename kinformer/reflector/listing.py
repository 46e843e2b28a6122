"""A reflector's list: which version to list at, the pages and their transform, and the relist rules.

client-go's ``reflector.list`` and ``relistResourceVersion``. :class:`Lister` lists the whole
resource (its shard, :mod:`kinformer.reflector.shard_state`) page by page through
:mod:`kinformer.reflector.pager`, at resourceVersion "0" first, at the last version seen on a
relist, and at "" (the current version) once a version is gone, too new or refused; it applies the
informer's transform to each page as it arrives (to each chunk of one as the HTTP lister decodes
it: ``listerwatcher.transforming_pages``), leaves out objects unfit for a cache, and
replaces the store's content with the result. The :class:`~kinformer.Reflector` runs it at the
start of every round that does not stream its initial state (:mod:`kinformer.reflector.watch_list`).
"""

from __future__ import annotations

import logging
from typing import Any

from kinformer import context as _context
from kinformer import errors, meta, transforms
from kinformer.client import listerwatcher
from kinformer.reflector import failures, pager
from kinformer.reflector import shared as _shared

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # errors of any ListerWatcher: none may quote a token


def named_items(items: list[Any], name: str) -> list[Any]:
    """The listed objects fit for the cache: those with a string metadata.name, each other logged.

    ``items`` itself when every one is well formed (the usual case: one pass, no copy); a
    model object passes when it has a name.
    """
    if all(map(meta.is_well_formed, items)):
        return items
    kept = [obj for obj in items if meta.is_well_formed(obj) or meta.has_name(obj)]
    if len(kept) != len(items):
        log.warning(
            "reflector %s: %d listed objects without metadata.name; skipped",
            name,
            len(items) - len(kept),
        )
    return kept


class Lister:
    """Lists the resource and replaces the store's content with it; one per reflector.

    Runs on the reflector's thread only; its state (whether lists come in pages) is that
    thread's. Every list that reached the store is reported as ``shared.synced(rv)``.
    """

    __slots__ = ("_kept", "_page_size", "_paginated_result", "_shared", "_with_json", "name")

    def __init__(self, shared: _shared.Shared, page_size: int) -> None:
        self._shared = shared
        self.name = shared.name
        self._page_size = page_size
        self._paginated_result = False  # a list at "0" came in pages: keep paging relists
        # the transform given an object with its JSON as sent, when it takes that
        transform = shared.transform
        self._with_json = (transform.with_json
                           if isinstance(transform, transforms.JSONTransform) else None)
        # whether what it returns keeps the decoded objects (a packer keeps none of them)
        self._kept = not isinstance(transform, transforms.Packer)

    def relist_resource_version(self) -> str:
        """The version a list asks for: "" after one was gone or too new, "0" at first, else the last."""
        version = self._shared.version
        if version.unavailable:
            return ""
        return version.value or "0"

    def sync(self, ctx: _context.Context) -> None:
        """List everything and replace the store's content with it; raises what the list failed
        with, :class:`~kinformer.reflector.failures.StopRequested` when stopped meanwhile."""
        self._list_and_replace(ctx, self.relist_resource_version())

    def _list_and_replace(self, ctx: _context.Context, rv: str) -> None:
        """List at ``rv`` (at "" once more when ``rv`` is gone, too new or refused), then replace."""
        try:
            pages = self._pages(ctx, rv)
        except failures.StopRequested:
            raise
        except Exception as exc:
            if ctx.cancelled():
                raise failures.StopRequested() from exc
            if not (failures.version_unavailable(exc) or failures.refused_version(exc, rv)):
                log.log(self._shared.level(exc), "reflector %s: list at rv=%r failed: %s",
                        self.name, rv, exc)
                raise
            log.log(
                self._shared.level(exc),
                "reflector %s: list at rv=%r: %s; listing again at the current version",
                self.name,
                rv,
                exc,
            )
            self._shared.version.unavailable = True
            rv = ""
            try:
                pages = self._pages(ctx, rv)
            except Exception as exc2:
                if ctx.cancelled():
                    raise failures.StopRequested() from exc2
                log.log(self._shared.level(exc2), "reflector %s: list at rv='' failed: %s",
                        self.name, exc2)
                raise
        if ctx.cancelled():
            raise failures.StopRequested()
        result = pages.result
        if rv == "0" and pages.paginated:
            self._paginated_result = True
        self._shared.version.unavailable = False
        log.debug(
            "reflector %s: listed %d items at rv=%s", self.name, len(result.items), result.resource_version
        )
        result = self._shared.shard.in_shard(result)
        if not result.checked:  # the HTTP lister checked every item already
            items = named_items(result.items, self.name)
            if items is not result.items:
                result = result.unkeyed(items)
        self._shared.listed()  # before the store: once it is synced, the error is gone
        try:
            self._shared.store.take_list(result)
        except errors.ClustersMergedError as exc:  # kept as it is: the informer tells it apart
            log.warning("reflector %s: unable to sync list result: %s", self.name, exc)
            raise
        except Exception as exc:
            log.warning("reflector %s: unable to sync list result: %s", self.name, exc)
            raise errors.KinformerError(
                f"reflector {self.name}: unable to sync list result: {exc}"
            ) from exc
        self._shared.synced(result.resource_version)

    def _pages(self, ctx: _context.Context, rv: str) -> pager.Pages:
        """All pages of one list at ``rv``; raises StopRequested when stopped between pages."""
        limit = pager.page_size(self._page_size, self._paginated_result, rv)
        shared = self._shared
        if shared.transform is None:
            pages = pager.list_all(shared.lw, rv, limit, ctx, self.name, shared.shard.text())
        else:  # a lister that can transforms each chunk of a page as it is decoded
            with_json = None if self._with_json is None else self._transformed_with_json
            with listerwatcher.transforming_pages(self._transformed_items, with_json,
                                                  kept=self._kept):
                pages = pager.list_all(shared.lw, rv, limit, ctx, self.name, shared.shard.text(),
                                       self._transformed)
        if pages is None:
            raise failures.StopRequested()
        return pages

    def _transformed(self, page: listerwatcher.ListResult) -> list[Any]:
        """A page's objects through the transform, as the page arrives (unless its lister
        transformed them as it decoded them); an object without a name is left as it is, for
        the check after the list to skip."""
        if page.transformed:
            return page.items
        if page.checked:  # the usual HTTP page: every object checked already
            return self._transformed_items(page.items)
        transform = self._shared.transform
        assert transform is not None
        try:
            fit = meta.is_well_formed
            return [transform(obj) if fit(obj) or meta.has_name(obj) else obj
                    for obj in page.items]
        except Exception as exc:
            raise errors.KinformerError(
                f"reflector {self.name}: transform failed on a listed object: {exc}") from exc

    def _transformed_with_json(self, items: list[Any], sent: list[bytes]) -> list[Any]:
        """:meth:`_transformed_items`, the transform given each object's JSON as it was sent
        (``sent``, in order; a :class:`~kinformer.transforms.JSONTransform`)."""
        with_json = self._with_json
        assert with_json is not None
        try:
            return list(map(with_json, items, sent))
        except Exception as exc:
            raise errors.KinformerError(
                f"reflector {self.name}: transform failed on a listed object: {exc}") from exc

    def _transformed_items(self, items: list[Any]) -> list[Any]:
        """Checked objects through the transform: a page's, or a chunk of one as the HTTP
        lister decodes it (``listerwatcher.transforming_pages``)."""
        transform = self._shared.transform
        assert transform is not None
        try:
            return [transform(obj) for obj in items]
        except Exception as exc:
            raise errors.KinformerError(
                f"reflector {self.name}: transform failed on a listed object: {exc}") from exc
