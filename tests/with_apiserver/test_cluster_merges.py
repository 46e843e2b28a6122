"""An informer that does not know it spans logical clusters, keyed ``namespace/name``, never merges
two clusters' ``default/app`` silently: its list fails, it reports itself unsynced, and says why
once at ERROR; through the official client over HTTP to FakeAPIServer(logical_clusters=True)."""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable
from typing import Any

import pytest
from helpers import CONFIGMAPS, TIMEOUT, cm, running

from kinformer import ClustersMergedError, ListWatch, ResourceEventHandlerFuncs, SharedIndexInformer
from kinformer.testing import FakeAPIServer, wait_for


@pytest.fixture
def server(logical_clusters_server: FakeAPIServer) -> FakeAPIServer:
    return logical_clusters_server  # and client_of(cluster): see conftest


def seed(server: FakeAPIServer, *clusters: str) -> None:
    """``default/app`` in each of ``clusters``, its data naming the cluster."""
    for cluster in clusters:
        server.create(CONFIGMAPS, cm("app", None, "default", data={"cluster": cluster}), cluster=cluster)


class Watched:
    """An informer over every logical cluster through a ListWatch of the user's own, which does
    not say it spans clusters, with a recording handler and watch error handler."""

    def __init__(self, client: Any, profile: str, **options: Any) -> None:
        wildcard = ListWatch.for_resource(client, CONFIGMAPS, cluster="*")
        self.informer = SharedIndexInformer(
            ListWatch(wildcard.list, wildcard.watch), profile=profile, **options)
        assert not self.informer.cluster_aware
        self.errors: queue.Queue[BaseException] = queue.Queue()
        self.informer.set_watch_error_handler(lambda _, error: self.errors.put(error))
        self.calls: queue.Queue[tuple[str, str]] = queue.Queue()
        self.informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=lambda o: self.calls.put(("add", o["data"]["cluster"])),
            update_func=lambda old, new: self.calls.put(("update", new["data"]["cluster"])),
            delete_func=lambda o: self.calls.put(("delete", "")),
        ))

    def next_merge_error(self) -> ClustersMergedError:
        """The next error the watch error handler got, which must be a ClustersMergedError."""
        error = self.errors.get(timeout=TIMEOUT)
        assert isinstance(error, ClustersMergedError), error
        return error

    def heard(self) -> list[tuple[str, str]]:
        """What the handler was told so far."""
        heard = []
        while not self.calls.empty():
            heard.append(self.calls.get_nowait())
        return heard


def merge_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.ERROR and "share the key" in r.getMessage()]


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_a_list_holding_two_clusters_objects_under_one_key_never_syncs_and_says_why_once(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], profile: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    seed(server, "root:a", "root:b")
    watched = Watched(client_of(None), profile)
    informer = watched.informer
    with caplog.at_level(logging.ERROR), running(informer.run):
        first = watched.next_merge_error()
        assert (first.key, first.clusters) == ("default/app", ["root:a", "root:b"])
        watched.next_merge_error()  # the reflector lists again after a backoff step, and fails again
        assert isinstance(informer.last_error(), ClustersMergedError)
        assert not informer.has_synced()
        assert len(informer.get_indexer()) == 0  # neither object taken for the other
        assert watched.heard() == []
        [record] = merge_records(caplog)  # once per informer, naming the key and both clusters
        message = record.getMessage()
        assert "default/app" in message and "'root:a'" in message and "'root:b'" in message
        # one of them gone, the next list is taken whole and the informer syncs
        server.delete(CONFIGMAPS, "default", "app", cluster="root:b")
        assert informer.wait_for_sync(TIMEOUT)
        assert informer.last_error() is None
        assert [o["data"]["cluster"] for o in informer.get_indexer().list()] == ["root:a"]


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_a_watched_object_of_another_cluster_under_a_cached_key_unsyncs_the_informer(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], profile: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    seed(server, "root:a")
    watched = Watched(client_of(None), profile)
    informer = watched.informer
    with caplog.at_level(logging.ERROR), running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        assert watched.calls.get(timeout=TIMEOUT) == ("add", "root:a")
        server.wait_for_watchers(CONFIGMAPS, count=1, timeout=TIMEOUT)
        seed(server, "root:b")  # ADDED default/app of root:b, with root:a's cached under its key
        error = watched.next_merge_error()  # the watch ends with it, and the relist fails with it
        assert (error.key, error.clusters) == ("default/app", ["root:a", "root:b"])
        assert wait_for(lambda: not informer.has_synced(), TIMEOUT)
        watched.next_merge_error()
        assert isinstance(informer.last_error(), ClustersMergedError)
        assert watched.heard() == []  # no handler told of an update that is two objects
        assert len(merge_records(caplog)) == 1


@pytest.mark.parametrize("profile", ["modern", "classic"])
def test_one_clusters_objects_through_a_plain_list_watch_sync_as_ever(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], profile: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    seed(server, "root:a")
    server.create(CONFIGMAPS, cm("other", None, "default", data={"cluster": "root:b"}), cluster="root:b")
    watched = Watched(client_of(None), profile)
    informer = watched.informer
    with caplog.at_level(logging.ERROR), running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        assert sorted(informer.get_indexer().list_keys()) == ["default/app", "default/other"]
        server.wait_for_watchers(CONFIGMAPS, count=1, timeout=TIMEOUT)
        server.update(CONFIGMAPS, cm("app", None, "default", data={"cluster": "root:a", "v": "2"}),
                      cluster="root:a")
        assert wait_for(lambda: ("update", "root:a") in watched.calls.queue, TIMEOUT)
        assert informer.has_synced() and informer.last_error() is None
        assert merge_records(caplog) == []


@pytest.mark.parametrize("options", [{"use_watch_list": True}, {"compact": True}])
def test_a_streamed_or_compact_informer_unaware_of_logical_clusters_fails_alike(
    server: FakeAPIServer, client_of: Callable[[str | None], Any], options: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    seed(server, "root:a", "root:b")
    watched = Watched(client_of(None), "modern", **options)
    informer = watched.informer
    with caplog.at_level(logging.ERROR), running(informer.run):
        error = watched.next_merge_error()
        assert (error.key, error.clusters) == ("default/app", ["root:a", "root:b"])
        assert not informer.has_synced() and watched.heard() == []
        server.delete(CONFIGMAPS, "default", "app", cluster="root:b")
        assert informer.wait_for_sync(TIMEOUT)
        seed(server, "root:b")  # through the watch: a change of another cluster under a cached key
        assert wait_for(lambda: not informer.has_synced(), TIMEOUT)
        # unsynced as the applier finds the merge; recorded once the reflector's thread ends its round
        assert wait_for(lambda: isinstance(informer.last_error(), ClustersMergedError), TIMEOUT)
        assert [c for c in watched.heard() if c[0] == "update"] == []
        assert len(merge_records(caplog)) == 1


def test_one_object_whose_cluster_annotation_is_edited_is_updated_not_refused(
    apiserver: FakeAPIServer, api_client: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    apiserver.create(CONFIGMAPS, cm("app", None, "default", annotations={"kcp.io/cluster": "x"}))
    informer = SharedIndexInformer(ListWatch.for_resource(api_client, CONFIGMAPS))
    updates: queue.Queue[str] = queue.Queue()
    informer.add_event_handler(ResourceEventHandlerFuncs(
        update_func=lambda old, new: updates.put(new["metadata"]["annotations"]["kcp.io/cluster"])))
    with caplog.at_level(logging.ERROR), running(informer.run):
        assert informer.wait_for_sync(TIMEOUT)
        apiserver.wait_for_watchers(CONFIGMAPS, count=1, timeout=TIMEOUT)
        edited = cm("app", None, "default", annotations={"kcp.io/cluster": "y"})
        apiserver.update(CONFIGMAPS, edited)  # a plain server: the annotation is the user's own
        assert updates.get(timeout=TIMEOUT) == "y"  # the same uid: one object, updated
        assert informer.has_synced() and informer.last_error() is None
        assert merge_records(caplog) == []
