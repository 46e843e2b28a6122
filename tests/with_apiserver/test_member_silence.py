"""A member whose open watches go silent is seen as down within its bookmark cadence, not at the
watch's end 5-10 minutes later: through the official client over HTTP to FakeAPIServers that
send bookmarks every 0.2 s, with the tight read timeout scaled down to 2 s. Where no bookmarks
come, the providers' clients probe idle connections with TCP keepalive."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from _fleet import ClusterRecorder
from helpers import CONFIGMAPS, TIMEOUT, cm

from kinformer import MultiClusterInformerFactory, StaticClusterProvider, TransportError
from kinformer.clusters import member
from kinformer.testing import FakeAPIServer, wait_for

BOOKMARK_INTERVAL = 0.2  # seconds between the servers' bookmarks on a quiet watch
TIGHT = 2.0  # seconds a member's watch waits once its server proved that cadence (90 s for real)
SHORT = (1.0, 1.0)  # (connect, read) seconds of every other request to a member
HUNG = 10 * TIMEOUT  # seconds a hung server keeps each new request waiting


@pytest.fixture
def servers() -> Iterator[dict[str, FakeAPIServer]]:
    made = {name: FakeAPIServer(bookmark_interval=BOOKMARK_INTERVAL) for name in ("member-1", "member-2")}
    try:
        for server in made.values():
            server.start()
        yield made
    finally:
        for server in made.values():
            server.stop()


@pytest.fixture
def api_clients(servers: dict[str, FakeAPIServer]) -> Iterator[dict[str, Any]]:
    made = {name: server.api_client() for name, server in servers.items()}
    yield made
    for api_client in made.values():
        api_client.close()


@pytest.fixture
def tight(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(member, "BOOKMARK_READ_TIMEOUT", TIGHT)
    caplog.set_level(logging.DEBUG)


@contextmanager
def started(factory: MultiClusterInformerFactory) -> Iterator[MultiClusterInformerFactory]:
    factory.start(threading.Event())
    try:
        yield factory
    finally:
        factory.shutdown()


def proven(caplog: pytest.LogCaptureFixture, cluster: str) -> bool:
    """Whether ``cluster``'s configmaps watch saw its server keep the bookmark cadence."""
    return any(r.name == "kinformer.client.cadence" and "sends bookmarks" in r.getMessage()
               and r.threadName.endswith(f"@{cluster}") for r in caplog.records)


def lines(caplog: pytest.LogCaptureFixture, cluster: str, level: int, words: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == level and f"cluster {cluster} " in r.getMessage() and words in r.getMessage()]


def test_a_member_whose_watch_freezes_is_failing_within_the_bookmark_cadence_and_recovers_once(
    servers: dict[str, FakeAPIServer], api_clients: dict[str, Any], tight: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """member-1's server hangs with its watch open (no reset, nothing more written, new requests
    unanswered): it shows as failing within about a second, the tight read timeout, though its
    watch asked to be kept open 5-10 minutes; member-2 delivers all along; member-1 logs one
    WARNING, no traceback, and one INFO when it answers again, and its informer catches up."""
    frozen = servers["member-1"]
    factory = MultiClusterInformerFactory(StaticClusterProvider(api_clients), request_timeout=SHORT)
    configmaps = factory.for_resource(CONFIGMAPS)
    recorder = ClusterRecorder()
    configmaps.add_event_handler(recorder)
    with started(factory):
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert wait_for(lambda: proven(caplog, "member-1"), TIMEOUT)
        frozen.set_delay(HUNG)  # new requests get no answer...
        assert frozen.freeze_watches() == 1  # ...and the open watch no byte more
        # within the wait's TIMEOUT: the watch's own read timeout is minutes, not seconds
        assert wait_for(lambda: configmaps.cluster_status()["member-1"].state == "failing", TIMEOUT)
        failing = configmaps.cluster_status()["member-1"]
        assert isinstance(failing.last_error, TransportError)
        servers["member-2"].create(CONFIGMAPS, cm("meanwhile", None, "default"))
        assert recorder.next() == ("add", "member-2", "meanwhile")
        assert configmaps.cluster_status()["member-2"].state == "synced"
        frozen.create(CONFIGMAPS, cm("while-hung", None, "default"))
        frozen.clear_faults()
        assert recorder.next(3 * TIMEOUT) == ("add", "member-1", "while-hung")
        assert wait_for(lambda: configmaps.cluster_status()["member-1"].state == "synced", TIMEOUT)
    assert len(lines(caplog, "member-1", logging.WARNING, "not answering")) == 1
    assert len(lines(caplog, "member-1", logging.INFO, "recovered after")) == 1
    assert all(r.exc_info is None for r in caplog.records if r.levelno >= logging.WARNING)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "member-2" in r.getMessage()]


def test_a_watch_after_a_proven_one_is_tight_from_its_start(
    servers: dict[str, FakeAPIServer], api_clients: dict[str, Any], tight: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The member remembers that its server bookmarks: the watch that follows one ended by the
    server waits only the tight timeout before any bookmark of its own, so a freeze right after
    it opened is seen as quickly."""
    server = servers["member-1"]
    factory = MultiClusterInformerFactory(
        StaticClusterProvider({"member-1": api_clients["member-1"]}), request_timeout=SHORT)
    configmaps = factory.for_resource(CONFIGMAPS)
    with started(factory):
        assert factory.wait_for_cache_sync(timeout=TIMEOUT)
        assert wait_for(lambda: proven(caplog, "member-1"), TIMEOUT)
        watches = len(watch_requests(server))
        assert server.end_watches() == 1  # the server-side timeout: a clean end, watched again
        assert wait_for(lambda: len(watch_requests(server)) > watches, TIMEOUT)
        server.freeze_watches()  # within a bookmark interval of its start: nothing proved yet
        # the server answers the next watch at once: the WARNING stays, "failing" may not; seen
        # within the wait's TIMEOUT, where an untightened watch would wait minutes
        assert wait_for(lambda: lines(caplog, "member-1", logging.WARNING, "not answering"), TIMEOUT)
        assert wait_for(lambda: configmaps.cluster_status()["member-1"].state == "synced", TIMEOUT)
    assert len(lines(caplog, "member-1", logging.WARNING, "not answering")) == 1
    assert len(lines(caplog, "member-1", logging.INFO, "recovered after")) == 1


def watch_requests(server: FakeAPIServer) -> list[tuple[str, str, dict[str, str], int]]:
    return [r for r in server.requests if r[2].get("watch") in ("true", "1")]


def test_clients_the_providers_make_probe_idle_connections(servers: dict[str, FakeAPIServer]) -> None:
    """TCP keepalive, as client-go dials: a watch whose peer vanished without a reset breaks
    within minutes on a server that sends no bookmarks, on kinformer's connections and on the
    official client's alike."""
    from kinformer.client import pool
    from kinformer.clusters.kubeconfig import client_from_kubeconfig

    made = client_from_kubeconfig(json.dumps(servers["member-1"].kubeconfig()))
    try:
        keepalive = (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        assert keepalive in pool.pool_manager(made.configuration).connection_pool_kw["socket_options"]
        assert keepalive in made.rest_client.pool_manager.connection_pool_kw["socket_options"]
    finally:
        made.close()
