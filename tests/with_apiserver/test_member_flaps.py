"""Members that leave and come back while a controller or a replica works on them, through the
official client over HTTP: a member's engagement that ended takes nothing of it along into the
next (a write's staleness record, a replica's shard)."""

from __future__ import annotations

import json
import queue
import threading
from typing import Any

import pytest
from helpers import CONFIGMAPS, TIMEOUT, cm

from kinformer import (
    CachedClient,
    ConfigurationError,
    ControllerBuilder,
    KubeconfigContextsProvider,
    MultiClusterInformerFactory,
    Request,
    ShardSelector,
    StaticClusterProvider,
)
from kinformer.testing import FakeAPIServer

Fleet = dict[str, FakeAPIServer]


def test_a_write_the_member_had_no_time_to_show_does_not_hold_its_next_engagement(
    kube_fleet: Fleet, clients: dict[str, Any],
) -> None:
    """A reconcile writes to member-1, and member-1 leaves the shard and comes back before its
    informer saw the write: the request is reconciled again on the new engagement's cache, which
    listed after the write, instead of waiting forever for the stopped informer to show it."""
    server = kube_fleet["member-1"]
    server.create(CONFIGMAPS, cm("app", None, "default"))
    factory = MultiClusterInformerFactory(StaticClusterProvider({"member-1": clients["member-1"]}))
    writer = CachedClient(factory)
    seen: queue.Queue[Request] = queue.Queue()

    class WriteThenFlap:
        flapped = False

        def reconcile(self, request: Request) -> None:
            seen.put(request)
            if self.flapped:
                return
            self.flapped = True
            assert server.wait_for_watchers(CONFIGMAPS, timeout=TIMEOUT)
            server.set_delay(10 * TIMEOUT, "watch")  # the informer's next watch waits...
            server.drop_watches()  # ...and its open one ends: it sees no event from now on
            writer.patch(CONFIGMAPS, "app", {"data": {"written": "yes"}}, "default", cluster="member-1")
            factory.set_cluster_shard(ShardSelector.empty())  # the shard moves away and back
            server.set_delay(0, "watch")
            factory.set_cluster_shard(None)

    stop = threading.Event()
    controller = ControllerBuilder("flaps", factory).for_resource(CONFIGMAPS).complete(WriteThenFlap())
    controller.start(stop)
    try:
        assert seen.get(timeout=TIMEOUT) == Request("app", "default", "member-1")
        again = seen.get(timeout=TIMEOUT)  # the new engagement's initial list queued it
        assert again == Request("app", "default", "member-1")
        assert factory.for_resource(CONFIGMAPS).lister().get("member-1|default/app")["data"] == {
            "written": "yes"}
    finally:
        stop.set()
        assert controller.join(TIMEOUT)
        factory.shutdown()


def test_a_member_whose_name_would_break_its_keys_is_refused_and_the_others_engage(
    kube_fleet: Fleet, clients: dict[str, Any], tmp_path: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    """A kubeconfig context may be named anything, ``prod|eu`` too; engaged, its objects' keys
    (``prod|eu|default/app``) could not be split into cluster, namespace and name, so every
    request a controller queued for it failed, and ``lister.get`` of them raised."""
    with pytest.raises(ConfigurationError, match=r"'prod\|eu'.*\|"):
        StaticClusterProvider({"prod|eu": clients["member-1"]})
    document: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [],
                                "contexts": []}
    for context, member in (("prod|eu", "member-1"), ("member-2", "member-2")):
        one = kube_fleet[member].kubeconfig()
        document["clusters"].append({"name": member, "cluster": one["clusters"][0]["cluster"]})
        document["users"].append({"name": member, "user": one["users"][0]["user"]})
        document["contexts"].append({"name": context, "context": {"cluster": member, "user": member}})
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(document))
    provider = KubeconfigContextsProvider(path)
    factory = MultiClusterInformerFactory(provider)
    factory.for_resource(CONFIGMAPS)
    factory.start(threading.Event())
    try:
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert factory.clusters() == ["member-2"]
    finally:
        factory.shutdown()
    refused = [r for r in caplog.records if r.levelname == "ERROR" and "prod|eu" in r.getMessage()]
    assert len(refused) == 1 and "skipped" in refused[0].getMessage()
    assert refused[0].exc_info is None  # said, not a crash with a traceback
