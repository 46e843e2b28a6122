"""Sharded lists and watches over HTTP: the fake server's feature gate, and informers on shards.

With ``ShardedListAndWatch`` on, FakeAPIServer filters lists and watches by ``shardSelector``
and echoes it as ``shardInfo``; off, it ignores the parameter and the reflector filters on the
client with the same hash. Either way two informers on halves of the hash space hold every
object exactly once, and an informer moved to another shard ends up holding exactly it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import CONFIGMAPS, create_cm, delete_cm, request, running

from kinformer import (
    DynamicSharedInformerFactory,
    ListWatch,
    ShardSelector,
    SharedIndexInformer,
)
from kinformer.cache.store import DeletedFinalStateUnknown
from kinformer.testing import FakeAPIServer, Recorder
from kinformer.testing.waiting import wait_for

TIMEOUT = 10.0
HALVES = [ShardSelector.for_shard(0, 2), ShardSelector.for_shard(1, 2)]
PATH = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(params=[True, False], ids=["server-side", "client-side"])
def gate(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture
def apiserver(gate: bool) -> Iterator[FakeAPIServer]:
    """The package's ``apiserver`` fixture with the sharding gate on or off (``api_client``,
    from the package's conftest, talks to this one)."""
    with FakeAPIServer(bookmark_interval=0.2, feature_gates={"ShardedListAndWatch": gate}) as server:
        yield server


def names(informer: SharedIndexInformer) -> set[str]:
    return {o["metadata"]["name"] for o in informer.get_indexer().list()}


def owner(server: FakeAPIServer, name: str) -> int:
    """Which half of the hash space the ConfigMap ``name`` belongs to."""
    obj = server.get(CONFIGMAPS, "default", name)
    return next(i for i, half in enumerate(HALVES) if half.matches(obj))


def expected(server: FakeAPIServer, index: int) -> set[str]:
    return {o["metadata"]["name"] for o in server.list_objects(CONFIGMAPS, "default")
            if HALVES[index].matches(o)}


# -- the server ---------------------------------------------------------------------------------


def test_a_sharded_list_holds_only_its_shard_and_every_page_echoes_the_selector() -> None:
    with FakeAPIServer(feature_gates={"ShardedListAndWatch": True}) as server:
        client = server.api_client()
        try:
            for i in range(12):
                create_cm(client, f"cm-{i}")
            selector = str(HALVES[0])
            query = [("shardSelector", selector), ("limit", "4")]
            status, body = request(client, "GET", PATH, query=query)
            assert status == 200
            seen = [o["metadata"]["name"] for o in body["items"]]
            assert body["metadata"]["shardInfo"] == {"selector": selector}
            while body["metadata"].get("continue"):
                status, body = request(client, "GET", PATH,
                                       query=[*query, ("continue", body["metadata"]["continue"])])
                assert body["metadata"]["shardInfo"] == {"selector": selector}
                seen += [o["metadata"]["name"] for o in body["items"]]
            assert sorted(seen) == sorted(expected(server, 0))
            assert 0 < len(seen) < 12
        finally:
            client.close()


def test_a_bad_selector_is_a_500_with_the_parsers_reason_only_when_the_gate_is_on(
    apiserver: FakeAPIServer, api_client: Any, gate: bool
) -> None:
    create_cm(api_client, "a")
    bad = "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')"
    status, body = request(api_client, "GET", PATH, query=[("shardSelector", bad)])
    if gate:
        assert status == 500
        assert body["message"] == (
            'invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" '
            '(did you mean "0x0000000000000000"?)')
    else:  # ignored, even malformed: the whole list and no shardInfo
        assert status == 200
        assert [o["metadata"]["name"] for o in body["items"]] == ["a"]
        assert "shardInfo" not in body["metadata"]


@pytest.mark.parametrize("verb", ["list", "watch"])
def test_a_selector_of_blanks_is_a_500_and_an_empty_one_counts_as_absent(
    apiserver: FakeAPIServer, api_client: Any, gate: bool, verb: str
) -> None:
    create_cm(api_client, "a")
    watch = [("watch", "true"), ("timeoutSeconds", "1")] if verb == "watch" else []
    status, body = request(api_client, "GET", PATH, query=[*watch, ("shardSelector", "   ")])
    if gate:
        assert status == 500
        assert body["message"] == ("invalid shard selector: empty shard selector is not allowed; "
                                   "omit the parameter for unfiltered lists")
    else:
        assert status == 200
    if verb == "list":  # shardSelector= is a plain list: everything, without shardInfo
        status, body = request(api_client, "GET", PATH, query=[("shardSelector", "")])
        assert status == 200
        assert [o["metadata"]["name"] for o in body["items"]] == ["a"]
        assert "shardInfo" not in body["metadata"]


def test_an_unknown_feature_gate_is_refused() -> None:
    with pytest.raises(ValueError, match="unrecognized feature gate"):
        FakeAPIServer(feature_gates={"NoSuchGate": True})


# -- informers on shards -------------------------------------------------------------------------


def test_two_informers_on_halves_hold_every_object_exactly_once(
    apiserver: FakeAPIServer, api_client: Any, gate: bool, caplog: pytest.LogCaptureFixture
) -> None:
    for i in range(10):
        create_cm(api_client, f"before-{i}")
    informers = [
        SharedIndexInformer(ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default",
                                                   shard_selector=half), name=f"half-{i}")
        for i, half in enumerate(HALVES)]
    caplog.set_level(logging.INFO, logger="kinformer.reflector")
    with running(informers[0].run), running(informers[1].run):
        assert all(inf.wait_for_sync(timeout=TIMEOUT) for inf in informers)
        assert [inf.server_side_sharding() for inf in informers] == [gate, gate]
        for i in range(10):
            create_cm(api_client, f"after-{i}")
        for i in range(0, 10, 3):
            delete_cm(api_client, f"before-{i}")

        def settled() -> bool:
            return all(names(inf) == expected(apiserver, i) for i, inf in enumerate(informers))

        assert wait_for(settled, TIMEOUT)
    everything = {o["metadata"]["name"] for o in apiserver.list_objects(CONFIGMAPS, "default")}
    assert names(informers[0]) | names(informers[1]) == everything
    assert not names(informers[0]) & names(informers[1])
    said = [r for r in caplog.records if "filtering" in r.getMessage()]
    assert len(said) == (0 if gate else 2)  # once per informer, only where the server did not shard


def test_moving_an_informer_to_another_shard_reports_who_left_and_who_joined(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    for i in range(12):
        create_cm(api_client, f"cm-{i}")
    informer = SharedIndexInformer(
        ListWatch.for_resource(api_client, CONFIGMAPS, namespace="default"), name="mover")
    informer.set_shard_selector(HALVES[0])
    recorder = Recorder(lambda o: str((o.obj if isinstance(o, DeletedFinalStateUnknown)
                                      else o)["metadata"]["name"]))
    informer.add_event_handler(recorder)
    first, second = expected(apiserver, 0), expected(apiserver, 1)
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert {e[1] for e in recorder.take(len(first))} == first
        informer.set_shard_selector(HALVES[1])
        assert informer.shard_selector() == HALVES[1]
        events = recorder.take(len(first) + len(second))
        assert wait_for(lambda: names(informer) == second, TIMEOUT)
    assert {e[1] for e in events if e[0] == "delete"} == first
    assert {e[1] for e in events if e[0] == "add"} == second
    assert all(e[2] is False for e in events if e[0] == "add")


def test_a_factory_moves_all_its_informers_to_a_new_shard(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    for i in range(8):
        create_cm(api_client, f"cm-{i}")
    factory = DynamicSharedInformerFactory(api_client, namespace="default", shard_selector=HALVES[0])
    informer = factory.for_resource(CONFIGMAPS).informer()
    factory_stop = threading.Event()
    try:
        factory.start(factory_stop)
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert names(informer) == expected(apiserver, 0)
        factory.set_shard_selector(HALVES[1])
        assert wait_for(lambda: names(informer) == expected(apiserver, 1), TIMEOUT)
        factory.set_shard_selector(None)
        assert wait_for(lambda: names(informer) == {f"cm-{i}" for i in range(8)}, TIMEOUT)
        assert informer.server_side_sharding() is None
    finally:
        factory_stop.set()
        factory.shutdown()
