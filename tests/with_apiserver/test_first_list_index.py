"""A first list's namespace index, through the official client to a FakeAPIServer.

The HTTP lister hands each item's namespace on beside its key, and the cache's standard namespace
index takes them as listed; a transform that moves objects makes the index read them again.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import CONFIGMAPS, TIMEOUT, create_cm, running

from kinformer import NAMESPACE_INDEX, ListWatch, SharedIndexInformer, meta_namespace_index_func


def sync(api_client: Any, **kwargs: Any) -> dict[str, list[str]]:
    """Sync an informer over every namespace; its namespace index: value -> sorted names."""
    transform = kwargs.pop("transform", None)
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS),
        indexers={NAMESPACE_INDEX: meta_namespace_index_func}, name="cms", **kwargs)
    if transform is not None:
        informer.set_transform(transform)
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        indexer = informer.get_indexer()
        return {value: sorted(o["metadata"]["name"] for o in indexer.by_index(NAMESPACE_INDEX, value))
                for value in indexer.list_index_func_values(NAMESPACE_INDEX)}


@pytest.fixture
def listed(api_client: Any) -> Any:
    for name, namespace in (("a", "default"), ("b", "default"), ("c", "kube-system")):
        create_cm(api_client, name, namespace)
    return api_client


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_a_first_list_is_indexed_by_namespace(listed: Any, profile: str, compact: bool) -> None:
    assert sync(listed, profile=profile, compact=compact) == {"default": ["a", "b"], "kube-system": ["c"]}


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_a_transformed_first_list_is_indexed_by_the_transformed_objects(listed: Any, profile: str) -> None:
    def move(obj: Any) -> Any:
        obj["metadata"]["namespace"] = "moved-" + obj["metadata"]["namespace"]
        return obj

    assert sync(listed, profile=profile, transform=move) == {
        "moved-default": ["a", "b"], "moved-kube-system": ["c"]}
