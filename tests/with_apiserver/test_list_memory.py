"""A first list is never held decoded whole when a transform or a compact cache shrinks it.

An informer's first list asks resourceVersion "0", which the server answers in one page however
big. The HTTP lister decodes such a body a chunk of items at a time, and hands each chunk to the
informer's transform (and a compact informer's packing) as soon as it is decoded, so what they
drop is freed before the next chunk is decoded. Measured with tracemalloc, through the official
client's configuration to a FakeAPIServer, with chunks made small so a small list has many.
"""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import CONFIGMAPS, TIMEOUT, running

from kinformer import ListWatch, SharedIndexInformer, _json
from kinformer.testing import FakeAPIServer
from kinformer.transforms import strip_managed_fields

OBJECTS = 600


def bulky(i: int) -> dict[str, Any]:
    """A ConfigMap whose managedFields are most of it (about 6 KB of them as JSON), with two
    owners: objects in an array inside an item, where no chunk may end."""
    fields = {f"f:key-{k:03d}": {} for k in range(150)}
    owners = [{"apiVersion": "v1", "kind": "Thing", "name": f"t{k}", "uid": f"u{k}"} for k in (1, 2)]
    return {"metadata": {"name": f"cm-{i:04d}", "namespace": "default", "ownerReferences": owners,
                         "managedFields": [
        {"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:data": fields}}]},
        "data": {"k": str(i)}}


@pytest.fixture
def loaded(apiserver: FakeAPIServer, monkeypatch: pytest.MonkeyPatch) -> FakeAPIServer:
    apiserver.preload(CONFIGMAPS, (bulky(i) for i in range(OBJECTS)))
    monkeypatch.setattr(_json, "CHUNK_BYTES", 64 * 1024)  # about 10 objects a chunk,
    monkeypatch.setattr(_json, "KEPT_CHUNK_FACTOR", 1)  # whether the cache keeps them or not
    return apiserver


@pytest.fixture
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def decoded_size() -> int:
    """What the list's objects take decoded, with their managedFields (traced bytes)."""
    before = tracemalloc.get_traced_memory()[0]
    objs = [_json.loads(_json.dumps(bulky(i))) for i in range(OBJECTS)]
    size = tracemalloc.get_traced_memory()[0] - before
    del objs
    return size


def sync(api_client: Any, transform: Any, compact: bool = False) -> SharedIndexInformer:
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), compact=compact)
    informer.set_transform(transform)
    with running(informer.run, threading.Event()):
        assert informer.wait_for_sync(TIMEOUT)
    return informer


@pytest.mark.usefixtures("traced")
@pytest.mark.parametrize("compact", [False, True], ids=["dict", "compact"])
def test_the_transform_takes_a_one_page_first_list_a_decoded_chunk_at_a_time(
    loaded: FakeAPIServer, api_client: Any, compact: bool
) -> None:
    whole = decoded_size()
    held: list[int] = []  # traced memory above the start, at each object the transform sees
    start = tracemalloc.get_traced_memory()[0]

    def watching(obj: Any) -> Any:
        held.append(tracemalloc.get_traced_memory()[0] - start)
        return strip_managed_fields(obj)

    informer = sync(api_client, watching, compact)
    assert len(held) == OBJECTS and len(informer.get_indexer()) == OBJECTS
    lists = [q for _, path, q, _ in loaded.requests if path.endswith("/configmaps") and "watch" not in q]
    assert [q.get("resourceVersion") for q in lists] == ["0"]  # one page, one request
    # the first object is transformed long before the list is decoded whole: the memory then
    # held is the body's bytes (read whole, a fifth of the decoded list; the server's copy may
    # not be freed yet) and one chunk; a list decoded whole first holds all of it
    assert held[0] < whole / 2, (held[0], whole)
    # and the transform's cuts are freed as it goes: never the whole list decoded at once
    assert max(held) < whole / 2, (max(held), whole)
    obj = informer.get_indexer().get_by_key("default/cm-0007")
    assert obj is not None and "managedFields" not in obj["metadata"]
    assert obj["kind"] == "ConfigMap" and obj["apiVersion"] == "v1"  # completed before packing


@pytest.mark.usefixtures("kept_as_json")  # the form a listed object's JSON is kept in as sent
def test_a_compact_cache_keeps_each_listed_objects_json_as_the_server_sent_it(
    loaded: FakeAPIServer, api_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def objects(compact: bool) -> dict[str, Any]:
        informer = SharedIndexInformer(
            ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), compact=compact)
        with running(informer.run, threading.Event()):
            assert informer.wait_for_sync(TIMEOUT)
        indexer = informer.get_indexer()
        return {key: indexer.get_by_key(key) for key in indexer.list_keys()}

    expected = objects(compact=False)
    encode = _json.dumps_to_keep
    encoded: list[Any] = []

    def counting(obj: Any, *prefix: bytes) -> bytes:
        encoded.append(obj)
        return encode(obj, *prefix)

    monkeypatch.setattr(_json, "dumps_to_keep", counting)
    kept = objects(compact=True)
    assert len(kept) == OBJECTS and kept == expected  # kind and apiVersion completed too
    # cut out of the body, not encoded again: only the last chunk's objects are (the rest of
    # the body is decoded with them)
    assert 0 < len(encoded) < OBJECTS / 10, len(encoded)


def decode_with_the_standard_library(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``use_stdlib()`` sets, put back as it was after the test (``use_stdlib(False)``
    would choose orjson even in a run told ``KINFORMER_JSON=stdlib``)."""
    monkeypatch.setattr(_json, "_use_orjson", False)


def preload_a_mib(apiserver: FakeAPIServer) -> None:
    """1,000 ConfigMaps of about 1 KB in ``default``: a list body of about a MiB."""
    apiserver.preload(CONFIGMAPS, (
        {"metadata": {"name": f"cm-{i:04d}", "namespace": "default"}, "data": {"v": "x" * 800}}
        for i in range(1000)))


@pytest.mark.parametrize("decoder", ["default", "stdlib"])
@pytest.mark.parametrize("cache", ["compact", "compact+transform", "dict", "dict+transform"])
def test_a_first_list_is_decoded_in_chunks_sized_for_what_the_cache_keeps(
    apiserver: FakeAPIServer, api_client: Any, monkeypatch: pytest.MonkeyPatch, decoder: str,
    cache: str
) -> None:
    """What a cache keeps of each decoded chunk (keys, stubs, bytes) is made among that chunk's
    objects, in the allocator's arenas they fill: small chunks keep those survivors in few
    arenas. A compact cache, which keeps none of the decoded objects, has a one-page list of 1 KB
    ConfigMaps decoded about 32 KiB at a time, with either decoder; a dict cache, which keeps
    them, eight times that (their keys are shared more widely, and a relist leaves less). A
    transform of your own before the packer changes neither."""
    if decoder == "stdlib":
        decode_with_the_standard_library(monkeypatch)
    preload_a_mib(apiserver)
    decode = _json.loader()
    chunks: list[int] = []

    def recording() -> Any:
        def recorded(text: bytes) -> Any:
            if text[:1] == b"[":  # a chunk of a list's items, as ``[`` items ``]``
                chunks.append(len(text))
            return decode(text)
        return recorded

    monkeypatch.setattr(_json, "loader", recording)
    compact = cache.startswith("compact")
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), compact=compact)
    if cache.endswith("+transform"):
        informer.set_transform(strip_managed_fields)
    with running(informer.run, threading.Event()):
        assert informer.wait_for_sync(TIMEOUT)
    assert len(informer.get_indexer()) == 1000
    obj = informer.get_indexer().get_by_key("default/cm-0500")
    assert obj is not None and obj["data"] == {"v": "x" * 800}
    # the body is about a MiB: a compact cache's in some thirty chunks, each at most 32 KiB and
    # the item it ends in; a dict cache's in three or four of 256 KiB
    if compact:
        assert len(chunks) >= 20, chunks
        assert max(chunks) <= _json.CHUNK_BYTES + 2048 <= 34 * 1024, chunks
    else:
        assert 2 <= len(chunks) <= 4, chunks
        assert min(chunks) >= _json.CHUNK_BYTES * _json.KEPT_CHUNK_FACTOR >= 256 * 1024, chunks


def test_with_the_standard_library_a_dict_caches_listed_objects_share_their_keys(
    apiserver: FakeAPIServer, api_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The standard library's decoder makes one string per distinct key per decode, so the
    objects a dict cache keeps share their keys only with those decoded beside them: a list
    whose objects are kept is decoded in bigger chunks there than a compact cache's."""
    decode_with_the_standard_library(monkeypatch)
    preload_a_mib(apiserver)
    informer = SharedIndexInformer(ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"))
    with running(informer.run, threading.Event()):
        assert informer.wait_for_sync(TIMEOUT)
    indexer = informer.get_indexer()
    assert len(indexer) == 1000
    first, later = indexer.get_by_key("default/cm-0000"), indexer.get_by_key("default/cm-0100")
    # a hundred objects (about 100 KiB of the list) apart: decoded together, one "metadata"
    assert first is not None and later is not None and first["data"] == later["data"]
    assert next(k for k in first if k == "metadata") is next(k for k in later if k == "metadata")
    assert next(k for k in first if k == "data") is next(k for k in later if k == "data")
