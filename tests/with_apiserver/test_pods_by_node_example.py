"""docs/examples/pods_by_node.py (docs/indexes.md) over FakeAPIServer: the custom indexes answer
by node and by owner from the cache, follow creates and deletes, and an index added while the
informer runs covers the pods already cached."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import TIMEOUT, load_example

from kinformer import Context, SharedIndexInformer
from kinformer.testing import FakeAPIServer, wait_for

example = load_example("pods_by_node")


@pytest.fixture
def informer(apiserver: FakeAPIServer, api_client: Any) -> Iterator[SharedIndexInformer]:
    for manifest in (example.pod("web-1", "node-a", "rs-1"), example.pod("web-2", "node-b", "rs-1"),
                     example.pod("db-1", "node-a"), example.pod("pending")):
        apiserver.create(example.PODS, manifest)
    informer = example.pods_informer(api_client)
    ctx = Context("test")
    thread = threading.Thread(target=informer.run, args=(ctx,), name="test-pods-informer")
    thread.start()
    try:
        assert informer.wait_for_sync(timeout=TIMEOUT)
        yield informer
    finally:
        ctx.cancel()
        thread.join(TIMEOUT)


def test_pods_are_found_by_node_and_by_owner(informer: SharedIndexInformer) -> None:
    pods = example.PodIndex(informer)
    assert pods.on_node("node-a") == ["default/db-1", "default/web-1"]
    assert pods.on_node("node-c") == []
    assert sorted(p["metadata"]["name"] for p in pods.owned_by("rs-1")) == ["web-1", "web-2"]
    assert pods.busy_nodes() == ["node-a", "node-b"]  # the pending pod is on none


def test_the_indexes_follow_the_pods_as_they_come_and_go(
    apiserver: FakeAPIServer, informer: SharedIndexInformer,
) -> None:
    pods = example.PodIndex(informer)
    apiserver.create(example.PODS, example.pod("web-3", "node-c", "rs-1"))
    apiserver.delete(example.PODS, "default", "db-1")
    assert wait_for(lambda: pods.on_node("node-c") == ["default/web-3"], TIMEOUT)
    assert wait_for(lambda: pods.on_node("node-a") == ["default/web-1"], TIMEOUT)
    assert sorted(p["metadata"]["name"] for p in pods.owned_by("rs-1")) == ["web-1", "web-2", "web-3"]
    assert pods.busy_nodes() == ["node-a", "node-b", "node-c"]


def test_an_index_added_while_the_informer_runs_covers_the_cached_pods(
    informer: SharedIndexInformer,
) -> None:
    informer.add_indexers({"image": lambda pod: [c["image"] for c in pod["spec"]["containers"]]})
    assert len(informer.get_indexer().by_index("image", "busybox")) == 4
