"""The listed batch through its seams: a lister's keys and namespace runs ride on ListResult,
the pager joins them across pages, the reflector hands them to a store that takes them
(Sink.replace_listed, found once), and the informer's cache indexes namespaces from them."""

from __future__ import annotations

import hashlib
from typing import Any

from helpers import cm, running

from kinformer import NAMESPACE_INDEX, ShardSelector, context, meta_namespace_index_func
from kinformer.cache.real_fifo import RealFIFO
from kinformer.cache.store import Indexer
from kinformer.client.listerwatcher import ListOptions, ListResult, with_context
from kinformer.client.listwatch import ListWatch
from kinformer.informer import SharedIndexInformer
from kinformer.reflector import pager, shard_state, sink
from kinformer.testing import ChannelWatch

TIMEOUT = 10.0


class Pages:
    """A ListerWatcher listing ``pages`` (each a ListResult without its token) one per request;
    its watches stay open until closed."""

    def __init__(self, *pages: ListResult) -> None:
        self.pages = pages
        self.lister_watcher = ListWatch(self.list, lambda options: ChannelWatch())

    def list(self, options: ListOptions) -> ListResult:
        at = int(options.continue_token or 0)
        page = self.pages[at]
        token = str(at + 1) if at + 1 < len(self.pages) else ""
        return page._replace(continue_token=token)


def _no_meta(n: int) -> dict[str, Any]:
    """An object no key function can key: only the keys its list carries make it storable."""
    return {"data": {"n": str(n)}}


def test_the_pager_joins_keys_and_namespace_runs_across_pages_as_it_joins_the_items() -> None:
    a, b, c = _no_meta(1), _no_meta(2), _no_meta(3)
    source = Pages(ListResult([a, b], "5", keys=["x/a", "x/b"], namespace_runs=[("x", 2)], checked=True),
                   ListResult([c], "6", keys=["x/c"], namespace_runs=[("x", 1)], checked=True))
    pages = pager.list_all(with_context(source.lister_watcher), "0", 2, context.Context("t"), "t")
    assert pages is not None and pages.paginated
    joined = pages.result
    assert joined.items == [a, b, c] and joined.resource_version == "5"
    assert joined.keys == ["x/a", "x/b", "x/c"]
    assert joined.namespace_runs == [("x", 3)]  # a namespace continued on the next page: one run
    unkeyed_page = Pages(ListResult([a], "5", keys=["x/a"], namespace_runs=[("x", 1)]),
                         ListResult([b], "6"))
    pages = pager.list_all(with_context(unkeyed_page.lister_watcher), "0", 1, context.Context("t"), "t")
    assert pages is not None and pages.result.keys is None and pages.result.namespace_runs is None


def test_a_store_that_takes_listed_keys_is_found_once_and_gets_them() -> None:
    fifo = RealFIFO()
    found = sink.Sink.of(fifo)
    assert found.replace_listed is not None
    assert sink.Sink.of(found) is found  # a ready Sink is taken as it is
    assert sink.Sink.of(Indexer()).replace_listed is None  # a cache replaces as usual
    a, b = _no_meta(1), _no_meta(2)
    found.take_list(ListResult([a, b], "7", keys=["ns/a", "ns/b"], namespace_runs=[("ns", 2)]))
    popped: list[Any] = []
    fifo.pop(lambda deltas, initial: popped.extend(deltas), timeout=1)
    [(_, info)] = popped
    assert info.items == {"ns/a": a, "ns/b": b} and info.namespace_runs == [("ns", 2)]


def test_an_informer_caches_a_keyed_list_under_its_listers_keys_and_namespaces() -> None:
    """The keys and runs a lister made reach the cache through every layer: objects no key
    function could key are stored and indexed, which only the carried keys make possible."""
    a, b, c = _no_meta(1), _no_meta(2), _no_meta(3)
    source = Pages(
        ListResult([a, b], "5", keys=["x/a", "y/b"], namespace_runs=[("x", 1), ("y", 1)], checked=True),
        ListResult([c], "6", keys=["y/c"], namespace_runs=[("y", 1)], checked=True))
    for profile in ("modern", "classic"):
        informer = SharedIndexInformer(
            source.lister_watcher, indexers={NAMESPACE_INDEX: meta_namespace_index_func},
            profile=profile)
        with running(informer.run):
            assert informer.wait_for_sync(TIMEOUT)
            indexer = informer.get_indexer()
            assert indexer.list_keys() == ["x/a", "y/b", "y/c"]
            assert indexer.by_index(NAMESPACE_INDEX, "y") == [b, c]


def test_a_list_filtered_on_the_client_drops_its_keys_with_the_objects_it_leaves_out() -> None:
    """A shard filtered by the reflector changes the items: the keys made for the whole list
    no longer describe them, and must not travel on."""
    objs = [cm(f"o{i}") for i in range(20)]
    for i, obj in enumerate(objs):
        obj["metadata"]["uid"] = hashlib.sha256(str(i).encode()).hexdigest()  # spread over the hash
    listed = ListResult(objs, "5", keys=[f"ns/o{i}" for i in range(20)],
                        namespace_runs=[("ns", 20)], checked=True)
    shard = ShardSelector.parse(
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')")
    state = shard_state.ShardState("t", None, shard)
    filtered = state.in_shard(listed)
    assert 0 < len(filtered.items) < 20
    assert filtered.keys is None and filtered.namespace_runs is None
    sharded = listed._replace(shard_info=str(shard))  # the server sharded it: kept as it is
    assert state.in_shard(sharded) is sharded
