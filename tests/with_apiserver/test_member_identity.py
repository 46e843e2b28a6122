"""A member replaced behind its address: the kube-system namespace's uid names the cluster, and
a new one there relists every informer of that member from scratch. Real servers through the
official client: a member's FakeAPIServer stopped and a new one, with storage of its own,
started on the same port."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from _fleet import SECRETS, ClusterRecorder, cluster_id
from helpers import CONFIGMAPS, TIMEOUT, cm

from kinformer import DeletedFinalStateUnknown, MultiClusterInformerFactory, StaticClusterProvider
from kinformer.testing import FakeAPIServer, wait_for

Fleet = dict[str, FakeAPIServer]
SHORT = (1.0, 1.0)


@contextmanager
def started(factory: MultiClusterInformerFactory) -> Iterator[MultiClusterInformerFactory]:
    factory.start(threading.Event())
    try:
        yield factory
    finally:
        factory.shutdown()


class Recorder(ClusterRecorder):
    """A ClusterRecorder that names an object deleted by a relist (a DeletedFinalStateUnknown,
    as client-go hands an object that was missing from a list) by its key."""

    def on_delete(self, cluster: str, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self._record("delete", cluster, obj.key.rpartition("/")[2])
        else:
            super().on_delete(cluster, obj)


def names(server: FakeAPIServer, gvr: Any = CONFIGMAPS) -> set[str]:
    return {o["metadata"]["name"] for o in server.list_objects(gvr)}


def test_a_member_rebuilt_behind_its_address_is_relisted_from_scratch(
    kube_fleet: Fleet, clients: dict[str, Any], caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    old = kube_fleet["member-2"]
    for name in ("gone-1", "gone-2", "gone-3", "app"):
        old.create(CONFIGMAPS, cm(name, None, "default", data={"server": "old"}))
    old.create(SECRETS, {"metadata": {"name": "old-secret", "namespace": "default"}})
    kube_fleet["member-1"].create(CONFIGMAPS, cm("app", None, "default", data={"server": "member-1"}))
    factory = MultiClusterInformerFactory(
        StaticClusterProvider({"member-1": clients["member-1"], "member-2": clients["member-2"]}),
        request_timeout=SHORT)
    configmaps = factory.for_resource(CONFIGMAPS)
    secrets = factory.for_resource(SECRETS)
    recorder = Recorder()
    configmaps.add_event_handler(recorder)
    secret_events = Recorder()
    secrets.add_event_handler(secret_events)
    new = FakeAPIServer(port=old.port)
    try:
        with started(factory):
            assert factory.wait_for_cache_sync(timeout=TIMEOUT)
            assert sorted(recorder.take(5)) == sorted(
                [("add", "member-2", n) for n in ("gone-1", "gone-2", "gone-3", "app")]
                + [("add", "member-1", "app")])
            assert secret_events.next() == ("add", "member-2", "old-secret")
            assert configmaps.cluster_status()["member-2"].cluster_id == cluster_id(old)
            # the new cluster: its own storage and kube-system uid, other objects, lower versions
            new.create(CONFIGMAPS, cm("app", None, "default", data={"server": "new"}))
            new.create(CONFIGMAPS, cm("fresh", None, "default"))
            old.stop()
            new.start()
            assert new.port == old.port and cluster_id(new) != cluster_id(old)
            expected = [("delete", "member-2", "gone-1"), ("delete", "member-2", "gone-2"),
                        ("delete", "member-2", "gone-3"), ("update", "member-2", "app"),
                        ("add", "member-2", "fresh")]
            assert sorted(recorder.take(5)) == sorted(expected)
            assert secret_events.next() == ("delete", "member-2", "old-secret")
            lister = configmaps.lister().cluster("member-2")
            assert {o["metadata"]["name"] for o in lister.list()} == names(new)
            assert lister.by_namespace("default").get("app")["data"] == {"server": "new"}
            assert configmaps.lister().cluster("member-1").by_namespace("default").get("app")["data"] == {
                "server": "member-1"}
            new.create(CONFIGMAPS, cm("created-later", None, "default"))
            assert recorder.next() == ("add", "member-2", "created-later")
            status = configmaps.cluster_status()["member-2"]
            assert status.cluster_id == cluster_id(new) and status.state == "synced"
            assert secrets.cluster_status()["member-2"].cluster_id == cluster_id(new)
            assert recorder.drained() == []
    finally:
        new.stop()
    replaced = [r for r in caplog.records if "replaced" in r.getMessage()]
    assert len(replaced) == 1 and "member-2" in replaced[0].getMessage()
    assert replaced[0].levelno == logging.WARNING and replaced[0].exc_info is None


def test_a_member_back_with_the_same_identity_resumes_without_relisting_from_scratch(
    kube_fleet: Fleet, clients: dict[str, Any], caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    server = kube_fleet["member-1"]
    server.create(CONFIGMAPS, cm("kept", None, "default"))
    factory = MultiClusterInformerFactory(
        StaticClusterProvider({"member-1": clients["member-1"]}), request_timeout=SHORT)
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = Recorder()
    configmaps.add_event_handler(recorder)
    with started(factory):
        assert recorder.next() == ("add", "member-1", "kept")
        server.stop()
        assert wait_for(lambda: configmaps.cluster_status()["member-1"].state == "failing", TIMEOUT)
        server.start()  # the same storage: the same cluster
        server.create(CONFIGMAPS, cm("after", None, "default"))
        assert recorder.until(("add", "member-1", "after"))
        assert all(event[0] != "delete" for event in recorder.drained())
        # every list after the first asked for a version: none from scratch
        lists = [q for m, p, q, _s in server.requests
                 if m == "GET" and p == "/api/v1/configmaps" and q.get("watch") not in ("true", "1")]
        assert all(q.get("resourceVersion") not in (None, "") for q in lists)
    assert not [r for r in caplog.records if "replaced" in r.getMessage()]


def test_a_member_whose_identity_cannot_be_read_is_not_checked_and_says_so_once(
    kube_fleet: Fleet, clients: dict[str, Any], caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    server = kube_fleet["member-1"]
    server.create(CONFIGMAPS, cm("app", None, "default"))
    server.fail_next(1, 403, verb="get", resource="namespaces")  # kube-system forbidden, once
    factory = MultiClusterInformerFactory(
        StaticClusterProvider({"member-1": clients["member-1"]}), request_timeout=SHORT)
    configmaps = factory.for_resource(CONFIGMAPS)
    secrets = factory.for_resource(SECRETS)
    recorder = Recorder()
    configmaps.add_event_handler(recorder)
    with started(factory):
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert recorder.next() == ("add", "member-1", "app")
        assert configmaps.cluster_status()["member-1"].cluster_id is None
        server.end_watches()  # a watch ends: a readable identity would be read again now
        server.create(CONFIGMAPS, cm("later", None, "default"))
        assert recorder.until(("add", "member-1", "later"))
        assert secrets.cluster_status()["member-1"].state == "synced"
    reads = [p for m, p, _q, _s in server.requests if p == "/api/v1/namespaces/kube-system"]
    assert len(reads) == 1
    said = [r for r in caplog.records if "identity cannot be read" in r.getMessage()]
    assert len(said) == 1 and "member-1" in said[0].getMessage() and "403" in said[0].getMessage()


def test_a_member_whose_identity_was_read_stays_checked_through_a_moment_without_one(
    kube_fleet: Fleet, clients: dict[str, Any], caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    old = kube_fleet["member-1"]
    old.create(CONFIGMAPS, cm("gone", None, "default"))
    factory = MultiClusterInformerFactory(
        StaticClusterProvider({"member-1": clients["member-1"]}), request_timeout=SHORT)
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = Recorder()
    configmaps.add_event_handler(recorder)
    new = FakeAPIServer(port=old.port)
    new.create(CONFIGMAPS, cm("fresh", None, "default"))
    # rebuilt behind the address, its kube-system not there for a moment: not a cluster without
    # an identity, whose rebuilds would never be noticed again
    new.fail_next(1, 404, verb="get", resource="namespaces")
    try:
        with started(factory):
            assert factory.wait_for_cache_sync(timeout=TIMEOUT)
            assert recorder.next() == ("add", "member-1", "gone")
            old.stop()
            new.start()
            # the reflector backs off through the outage and once more after the 404: three
            # backoff steps (0.8, 1.6, 3.2 s, jittered up to twice that) may pass first
            assert sorted(recorder.take(2, timeout=3 * TIMEOUT)) == [
                ("add", "member-1", "fresh"), ("delete", "member-1", "gone")]
            assert configmaps.cluster_status()["member-1"].cluster_id == cluster_id(new)
    finally:
        new.stop()
    assert not [r for r in caplog.records if "identity cannot be read" in r.getMessage()]


def test_informers_waiting_for_another_ones_identity_read_stop_at_once() -> None:
    from helpers import SilentServer, client_for

    from kinformer import Context, TransportError
    from kinformer.client import rest
    from kinformer.clusters.identity import Identity

    silent = SilentServer()
    api_client = client_for(f"http://127.0.0.1:{silent.port}")
    identity = Identity("hung", rest.Client(api_client), (60.0, 60.0))
    reader, waiter = Context("reader"), Context("waiter")
    outcomes: dict[str, BaseException] = {}

    def read(ctx: Context, name: str) -> None:
        try:
            identity.current(ctx)
        except TransportError as exc:
            outcomes[name] = exc

    threads = [threading.Thread(target=read, args=(reader, "reader"), name="test-reader")]
    threads[0].start()
    try:
        assert silent.accepted.wait(TIMEOUT)  # the reader's request waits for an answer
        threads.append(threading.Thread(target=read, args=(waiter, "waiter"), name="test-waiter"))
        threads[1].start()
        waiter.cancel()  # the waiter returns without waiting for the reader's minute
        threads[1].join(TIMEOUT)
        assert not threads[1].is_alive() and "cancelled" in str(outcomes["waiter"])
        assert threads[0].is_alive()
        reader.cancel()  # and the reader's request is broken off
        threads[0].join(TIMEOUT)
        assert not threads[0].is_alive() and "reader" in outcomes
    finally:
        reader.cancel()
        waiter.cancel()
        for thread in threads:
            thread.join(TIMEOUT)
        api_client.close()
        silent.close()


def test_a_member_streaming_its_initial_state_relists_a_rebuilt_cluster_from_scratch(
    kube_fleet: Fleet,
) -> None:
    # the member informer's ListerWatcher under a WatchList reflector: the initial state comes
    # from a watch stream, never a list, and a new identity makes that stream start over
    from kinformer import Backoff, BackoffManager, Context, Indexer, ListWatch, Reflector
    from kinformer.client import resource, rest
    from kinformer.clusters.health import InformerHealth, MemberHealth, ReportingListerWatcher
    from kinformer.clusters.identity import Identity

    old = kube_fleet["member-1"]
    for name in ("gone-1", "gone-2"):
        old.create(CONFIGMAPS, cm(name, None, "default"))
    api_client = old.api_client()
    http = resource.HTTPResource(rest.Client(api_client), CONFIGMAPS, "", None, None, 1.0, 1.0,
                                 None, watch_margin=30.0)
    inner = ListWatch(http.list, http.watch)
    health = InformerHealth()
    identity = Identity("member-1", rest.Client(api_client), SHORT)
    lw = ReportingListerWatcher(inner, CONFIGMAPS, MemberHealth("member-1"), identity, health)
    cache = Indexer()
    reflector = Reflector(lw, cache, name="streamed", use_watch_list=True,
                          backoff=BackoffManager(Backoff(duration=0.05, cap=0.2)))
    ctx = Context("streamed")
    thread = threading.Thread(target=reflector.run, args=(ctx,), name="test-streamed")
    thread.start()
    new = FakeAPIServer(port=old.port)
    try:
        assert wait_for(lambda: set(cache.list_keys()) == {"default/gone-1", "default/gone-2"})
        assert health.snapshot()[0] == "synced" and identity.uid == cluster_id(old)
        new.create(CONFIGMAPS, cm("fresh", None, "default"))
        old.stop()
        new.start()
        assert wait_for(lambda: set(cache.list_keys()) == {"default/fresh"}, 3 * TIMEOUT)
        assert identity.uid == cluster_id(new)
        assert not [q for m, p, q, _s in new.requests
                    if p == "/api/v1/configmaps" and q.get("watch") not in ("true", "1")]
    finally:
        ctx.cancel()
        thread.join(TIMEOUT)
        new.stop()
        api_client.close()
