"""One bad member hurts no other, and says so once: member clusters that never answer, go down
and come back, through the official client over HTTP to FakeAPIServers (kube_fleet) and a
listener that accepts connections and never answers."""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import urllib3
from _fleet import ClusterRecorder, DrivenProvider, cluster_id, lists_served
from helpers import CONFIGMAPS, TIMEOUT, SilentServer, client_for, cm

from kinformer import MultiClusterInformerFactory, StaticClusterProvider, TransportError
from kinformer.testing import FakeAPIServer, wait_for

Fleet = dict[str, FakeAPIServer]
SHORT = (1.0, 1.0)  # (connect, read) seconds: a member that never answers fails its list after 1 s


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


@contextmanager
def started(factory: MultiClusterInformerFactory) -> Iterator[MultiClusterInformerFactory]:
    factory.start(threading.Event())
    try:
        yield factory
    finally:
        factory.shutdown()


def watches_served(server: FakeAPIServer, path: str = "/api/v1/configmaps") -> int:
    return sum(1 for method, p, query, _status in server.requests
               if method == "GET" and p == path and query.get("watch") in ("true", "1"))


def naming(records: list[logging.LogRecord], cluster: str, level: int) -> list[logging.LogRecord]:
    return [r for r in records if r.levelno >= level and cluster in r.getMessage()]


def test_a_member_that_never_answers_fails_with_an_error_and_is_retried(
    kube_fleet: Fleet, clients: dict[str, Any], silent: SilentServer,
) -> None:
    hung = client_for(f"http://127.0.0.1:{silent.port}")
    kube_fleet["member-1"].create(CONFIGMAPS, cm("app", None, "default"))
    factory = MultiClusterInformerFactory(
        StaticClusterProvider({"hung": hung, "member-1": clients["member-1"]}), request_timeout=SHORT)
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder()
    configmaps.add_event_handler(recorder)
    try:
        with started(factory):
            assert recorder.next() == ("add", "member-1", "app")
            before = time.time()
            assert wait_for(lambda: configmaps.cluster_status()["hung"].state == "failing", TIMEOUT)
            status = configmaps.cluster_status()["hung"]
            assert isinstance(status.last_error, TransportError)
            assert "no answer in time" in str(status.last_error)
            assert not status.synced and status.cluster_id is None
            assert status.since <= time.time() and status.since >= before - TIMEOUT
            # the first list is retried with backoff: another connection, another silence
            assert wait_for(lambda: silent.connections >= 2, TIMEOUT + 2 * SHORT[1])
            assert configmaps.cluster_status()["member-1"].state == "synced"
            kube_fleet["member-1"].create(CONFIGMAPS, cm("later", None, "default"))
            assert recorder.next() == ("add", "member-1", "later")
            assert not factory.has_synced()
    finally:
        hung.close()


def test_a_member_that_never_answers_delays_no_other_members_sync_events_or_handlers(
    kube_fleet: Fleet, clients: dict[str, Any], silent: SilentServer,
) -> None:
    # the hung member is engaged first and keeps its requests waiting far longer than the test:
    # everything the others do happens while it still waits
    hung = client_for(f"http://127.0.0.1:{silent.port}")
    for name, server in kube_fleet.items():
        server.create(CONFIGMAPS, cm("app", None, "default", data={"cluster": name}))
    provider = DrivenProvider()
    factory = MultiClusterInformerFactory(provider, request_timeout=(60.0, 60.0))
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder()
    configmaps.add_event_handler(recorder)
    try:
        with started(factory):
            provider.engage("hung", hung)
            assert silent.accepted.wait(TIMEOUT)
            for name in kube_fleet:
                provider.engage(name, clients[name])
            assert sorted(recorder.take(3)) == [("add", name, "app") for name in kube_fleet]
            for name, server in kube_fleet.items():
                server.create(CONFIGMAPS, cm("new", None, "default"))
                assert recorder.next() == ("add", name, "new")
            status = configmaps.cluster_status()
            assert status["hung"].state == "syncing" and status["hung"].last_error is None
            assert all(status[name].state == "synced" for name in kube_fleet)
            assert silent.connections >= 1  # still waiting on its first request
            late = ClusterRecorder()  # a handler added now is served by the synced members too
            configmaps.add_event_handler(late)
            assert sorted(late.take(6)) == sorted(
                [("add", name, obj) for name in kube_fleet for obj in ("app", "new")])
    finally:
        hung.close()


def test_an_idle_members_watch_outlives_the_read_timeout(kube_fleet: Fleet, clients: dict[str, Any]) -> None:
    # a read timeout of 0.5 s for answers; the watch waits for its events as long as it asked
    # the server to keep it open (5 to 10 minutes) plus a margin, so silence does not cut it
    server = kube_fleet["member-1"]
    factory = MultiClusterInformerFactory(
        StaticClusterProvider({"member-1": clients["member-1"]}), request_timeout=(5.0, 0.5))
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder()
    configmaps.add_event_handler(recorder)
    with started(factory):
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert wait_for(lambda: watches_served(server) == 1)
        assert not wait_for(lambda: watches_served(server) > 1, timeout=2.0)  # 4 read timeouts
        server.create(CONFIGMAPS, cm("after-silence", None, "default"))
        assert recorder.next() == ("add", "member-1", "after-silence")
        assert watches_served(server) == 1


def test_an_idle_members_watch_over_tls_outlives_the_read_timeout() -> None:
    server = FakeAPIServer(token="member-token").start()  # HTTPS: the timeout is the TLS socket's
    api_client = client_for(server.url, "member-token", server.ca_file)
    factory = MultiClusterInformerFactory(StaticClusterProvider({"tls": api_client}),
                                          request_timeout=(5.0, 0.5))
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder()
    configmaps.add_event_handler(recorder)
    try:
        with started(factory):
            assert factory.wait_for_cache_sync(timeout=TIMEOUT)
            assert wait_for(lambda: watches_served(server) == 1)
            assert not wait_for(lambda: watches_served(server) > 1, timeout=2.0)
            server.create(CONFIGMAPS, cm("after-silence", None, "default"))
            assert recorder.next() == ("add", "tls", "after-silence")
    finally:
        api_client.close()
        server.stop()


def test_a_member_going_down_and_back_logs_one_warning_and_one_recovery(
    kube_fleet: Fleet, clients: dict[str, Any], caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    for name, server in kube_fleet.items():
        server.create(CONFIGMAPS, cm("app", None, "default", data={"cluster": name}))
    down = kube_fleet["member-3"]
    factory = MultiClusterInformerFactory(StaticClusterProvider(clients), request_timeout=SHORT)
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder()
    configmaps.add_event_handler(recorder)
    with started(factory):
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert sorted(recorder.take(3)) == [("add", name, "app") for name in kube_fleet]
        down.stop()
        assert wait_for(lambda: configmaps.cluster_status()["member-3"].state == "failing", TIMEOUT)
        failing = configmaps.cluster_status()["member-3"]
        assert failing.last_error is not None and failing.synced
        # several retries fail while it is down: each would have been a WARNING
        retries = len([r for r in caplog.records if "member-3" in r.getMessage()])
        assert wait_for(lambda: len([r for r in caplog.records
                                     if "member-3" in r.getMessage()]) >= retries + 2, TIMEOUT)
        kube_fleet["member-1"].create(CONFIGMAPS, cm("meanwhile", None, "default"))
        assert recorder.next() == ("add", "member-1", "meanwhile")
        down.start()
        assert wait_for(lambda: configmaps.cluster_status()["member-3"].state == "synced", 3 * TIMEOUT)
        recovered = configmaps.cluster_status()["member-3"]
        assert recovered.last_error is None and recovered.since > failing.since
        assert recovered.cluster_id == cluster_id(down)
        down.create(CONFIGMAPS, cm("back", None, "default"))
        assert recorder.until(("add", "member-3", "back"))  # after updates, if it relisted
    records = caplog.records
    loud = naming(records, "member-3", logging.WARNING)
    assert 1 <= len(loud) <= 2, [r.getMessage() for r in loud]
    assert all(r.exc_info is None for r in records if r.levelno >= logging.WARNING)
    assert not [r for r in records if r.name.startswith("urllib3") and r.levelno >= logging.WARNING]
    back = [r for r in naming(records, "member-3", logging.INFO)
            if r.levelno == logging.INFO and "recovered" in r.getMessage()]
    assert len(back) == 1 and back[0].getMessage().startswith("cluster member-3 recovered after ")
    assert not naming(records, "member-1", logging.WARNING)


def test_the_error_clears_when_a_watch_opens_again_without_a_list(
    kube_fleet: Fleet, clients: dict[str, Any],
) -> None:
    server = kube_fleet["member-1"]
    factory = MultiClusterInformerFactory(StaticClusterProvider({"member-1": clients["member-1"]}))
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder()
    configmaps.add_event_handler(recorder)
    with started(factory):
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        server.create(CONFIGMAPS, cm("seen", None, "default"))
        assert recorder.next() == ("add", "member-1", "seen")  # the watch had an event: not short
        lists = lists_served(server)
        server.fail_next(1, 429, verb="watch", resource="configmaps")  # the next watch backs off
        server.end_watches()  # as the server-side timeout ends it: the informer watches again
        assert wait_for(lambda: any(status == 429 for _m, _p, _q, status in server.requests))
        assert wait_for(lambda: watches_served(server) >= 3, TIMEOUT)  # dropped, 429, open again
        assert wait_for(lambda: configmaps.cluster_status()["member-1"].last_error is None)
        status = configmaps.cluster_status()["member-1"]
        assert status.state == "synced" and lists_served(server) == lists


def test_a_watch_line_that_does_not_decode_shows_as_failing_until_the_relist(
    kube_fleet: Fleet, clients: dict[str, Any],
) -> None:
    from kinformer import DecodeError

    server = kube_fleet["member-1"]
    factory = MultiClusterInformerFactory(StaticClusterProvider({"member-1": clients["member-1"]}))
    configmaps = factory.for_resource(CONFIGMAPS)
    with started(factory):
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert wait_for(lambda: watches_served(server) == 1)
        lists = lists_served(server)
        assert server.inject_watch_garbage() == 1
        assert wait_for(lambda: configmaps.cluster_status()["member-1"].state == "failing")
        assert isinstance(configmaps.cluster_status()["member-1"].last_error, DecodeError)
        assert wait_for(lambda: lists_served(server) > lists, TIMEOUT)  # relisted after a backoff step
        assert wait_for(lambda: configmaps.cluster_status()["member-1"].state == "synced")
        assert configmaps.cluster_status()["member-1"].last_error is None


def test_a_member_refusing_connections_from_the_start_logs_once_until_it_answers(
    kube_fleet: Fleet, clients: dict[str, Any], caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    late = kube_fleet["member-2"]
    late.stop()
    factory = MultiClusterInformerFactory(
        StaticClusterProvider({"member-2": clients["member-2"]}), request_timeout=SHORT)
    configmaps = factory.for_resource(CONFIGMAPS)
    with started(factory):
        assert wait_for(lambda: getattr(configmaps.cluster_status().get("member-2"), "state", "")
                        == "failing", TIMEOUT)
        assert wait_for(lambda: naming(caplog.records, "member-2", logging.WARNING))
        late.start()  # on the same port
        assert factory.wait_for_cache_sync(timeout=3 * TIMEOUT)
        status = configmaps.cluster_status()["member-2"]
        assert status.state == "synced" and status.last_error is None
    loud = naming(caplog.records, "member-2", logging.WARNING)
    assert len(loud) == 1 and "is not answering" in loud[0].getMessage()
    assert loud[0].exc_info is None
    assert len([r for r in caplog.records if "recovered" in r.getMessage()]) == 1


def test_request_timeouts_are_checked() -> None:
    from kinformer import ConfigurationError

    for bad in ((0, 1), (1, float("inf")), (1,), "1"):
        with pytest.raises(ConfigurationError):
            MultiClusterInformerFactory(StaticClusterProvider({}), request_timeout=bad)  # type: ignore[arg-type]


def test_clients_the_providers_make_send_no_urllib3_retries(
    kube_fleet: Fleet, tmp_path: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    from kubernetes import client as k8s

    from kinformer import Context, KubeconfigContextsProvider
    from kinformer.clusters.kubeconfig import client_from_kubeconfig

    caplog.set_level(logging.WARNING)
    server = kube_fleet["member-1"]
    path = server.write_kubeconfig(tmp_path / "config")
    engaged: queue.Queue[Any] = queue.Queue()
    stop = Context("provider")
    provider = KubeconfigContextsProvider(path)
    thread = threading.Thread(target=provider.run, name="test-provider",
                              args=(stop, lambda _name, api_client: engaged.put(api_client), print))
    thread.start()
    try:
        api_client = engaged.get(timeout=TIMEOUT)
        from_secret = client_from_kubeconfig(json.dumps(server.kubeconfig()))
        server.stop()
        for made in (api_client, from_secret):
            assert made.configuration.retries is False
            with pytest.raises(urllib3.exceptions.HTTPError):  # at once, with no retry
                k8s.CoreV1Api(made).list_namespaced_config_map("default", _request_timeout=SHORT)
        from_secret.close()
    finally:
        stop.cancel()
        thread.join(TIMEOUT)
    assert not [r for r in caplog.records if r.name.startswith("urllib3")]
